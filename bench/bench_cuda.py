#!/usr/bin/env python3
"""Training steps on CUDA: ember vs PyTorch in one process, reported as ratios.

    python bench/bench_cuda.py [--steps 30] [--batch 256] [--json out.json]

Cases: an MLP training step (784-512-256-10, SGD with momentum), a CNN training step
(two conv+relu+maxpool blocks and a linear head on 1x28x28, Adam) at ``--batch``, and the
optimizer update alone (Adam over 8 x 1M float32 parameters: ember's fused kernel vs
``torch.optim.Adam(fused=True)``).  Each number is the median milliseconds per step over
``--steps`` steps after warm-up, with the device synchronised around each step.  Targets: CNN
at most 1.5x PyTorch, fused Adam at most 1.2x.  Exits with a message and status 0 where no
GPU (or no CuPy) is present.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

import ember


def timed(step, sync, steps, warmup=5):
    for _ in range(warmup):
        step()
    sync()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def mlp(nn):
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def train_step(lib, model, opt, x, y):
    loss_fn = lib.nn.functional.cross_entropy

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def copy_weights(src, dst, torch):
    """Start both frameworks from the same weights."""
    for p, q in zip(src.parameters(), dst.parameters()):
        q.data.copy_(torch.from_numpy(p.detach().cpu().numpy()))


def cases(torch, batch):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((batch, 1, 28, 28)).astype(np.float32)
    ys = rng.integers(0, 10, batch)
    rows = {}
    for name, build, opt_name, opt_kw in (("MLP step", mlp, "SGD", {"lr": 0.01, "momentum": 0.9}),
                                          ("CNN step", cnn, "Adam", {"lr": 1e-3})):
        em = build(ember.nn).to("cuda")
        e_opt = getattr(ember.optim, opt_name)(em.parameters(), **opt_kw)
        e_step = train_step(ember, em, e_opt, ember.tensor(xs, device="cuda"), ember.tensor(ys, device="cuda"))
        t_step = None
        if torch is not None:
            tm = build(torch.nn)
            copy_weights(em, tm, torch)
            tm = tm.cuda()
            t_opt = getattr(torch.optim, opt_name)(tm.parameters(), **opt_kw)
            t_step = train_step(torch, tm, t_opt, torch.tensor(xs, device="cuda"), torch.tensor(ys, device="cuda"))
        rows[f"{name} (batch {batch})"] = (e_step, t_step)

    shapes = [(1024, 1024)] * 8
    e_params = [ember.zeros(s, device="cuda", requires_grad=True) for s in shapes]
    for p in e_params:
        p.grad = ember.randn(p.shape, device="cuda")
    e_adam = ember.optim.Adam(e_params, lr=1e-3)
    t_step = None
    if torch is not None:
        t_params = [torch.zeros(s, device="cuda", requires_grad=True) for s in shapes]
        for p in t_params:
            p.grad = torch.randn(p.shape, device="cuda")
        t_step = torch.optim.Adam(t_params, lr=1e-3, fused=True).step
    rows["Adam update, 8 x 1M params (fused)"] = (e_adam.step, t_step)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if not ember.cuda.is_available():
        reason = ember.plugins.REGISTRY.backends["cuda"].unavailable_reason()
        print(f"bench_cuda: skipped, CUDA is not available to ember here ({reason})")
        return 0
    try:
        import torch

        if not torch.cuda.is_available():
            print("bench_cuda: PyTorch has no CUDA here; ember timings only")
            torch = None
    except ImportError:
        torch = None
    print(f"ember on {ember.cuda.get_device_name()} ({ember.plugins.REGISTRY.backends['cuda'].version()})")
    results = {}
    print(f"{'case':44s} {'ember ms':>10s} {'torch ms':>10s} {'ratio':>7s}")
    for name, (e_step, t_step) in cases(torch, args.batch).items():
        e_ms = timed(e_step, ember.cuda.synchronize, args.steps)
        t_ms = timed(t_step, torch.cuda.synchronize, args.steps) if t_step is not None else float("nan")
        results[name] = {"ember_ms": e_ms, "torch_ms": t_ms, "ratio": e_ms / t_ms}
        print(f"{name:44s} {e_ms:10.3f} {t_ms:10.3f} {e_ms / t_ms:7.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
