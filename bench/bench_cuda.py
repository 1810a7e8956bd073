#!/usr/bin/env python3
"""Training steps and kernels on CUDA: ember vs PyTorch in one process, reported as ratios.

    python bench/bench_cuda.py [--steps 20] [--only resnet18_b32,sdpa] [--json out.json]

Rows (each the median milliseconds per step over ``--steps`` steps after warm-up, the device
synchronised around each step; both sides start from the same weights and inputs):

    resnet18_b32, resnet18_b128  ResNet-18 at 224 px, cross-entropy, SGD momentum step, with peak memory
    conv3x3        a 3x3 convolution 64->64 on 32x64x56x56, forward + backward
    batchnorm      BatchNorm2d(64) on 32x64x56x56 in training mode, forward + backward
    sdpa           scaled_dot_product_attention, 8x8 heads x 512 x 64, causal, forward + backward
    lstm           a 2-layer LSTM, 256 -> 512, 50 steps x batch 64, forward + backward
    transformer    nn.TransformerEncoder (2 layers, d 512, 8 heads) on 32 x 128 tokens, Adam step
    mlp            a 4096-wide MLP (4 layers) on batch 512, SGD step (GEMM bound)
    add4x4         a + b on 4x4 (per-op overhead)
    cnn, adam      the small CNN step and Adam over 8 x 1M parameters (fused on both sides)

Targets (issue 41): ResNet-18 step, conv, BN, SDPA within 1.3x of PyTorch CUDA; LSTM and Transformer
within 1.5x; peak memory within 1.3x.  A row that fails is reported with its error and the others go
on; ``--json`` writes every row, errors included.  Exits with a message and status 0 where no GPU (or
no CuPy) is present.
"""
import argparse
import json
import statistics
import sys
import time
import traceback

import numpy as np

import ember

DEV = "cuda"  # --device cpu: a dry run of every row on the CPU (no GPU needed), to check the script itself


def sync_of(lib):
    """The device synchronisation of ``lib`` (nothing to wait for on the CPU)."""
    return lib.cuda.synchronize if DEV == "cuda" else (lambda: None)


def timed(step, sync, steps):
    for _ in range(min(3, steps)):  # warm-up
        step()
    sync()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def same_weights(src, dst, torch):
    """Give PyTorch's module ``dst`` the weights (and buffers) of ember's module ``src``."""
    state = {k: torch.from_numpy(v.detach().cpu().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def training(lib, model, opt, x, y, loss="cross_entropy"):
    loss_fn = getattr(lib.nn.functional, loss)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    return step


def fwd_bwd(fn, *xs):
    """forward of ``fn`` on ``xs`` (tensors needing gradients) and a backward of its sum."""
    def step():
        for x in xs:
            x.grad = None
        fn(*xs).sum().backward()

    return step


# --------------------------------------------------------------------------- rows
def resnet(batch):
    def row(torch):
        rng = np.random.default_rng(0)
        xs = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
        ys = rng.integers(0, 1000, batch)
        from ember_vision.models import resnet18

        em = resnet18().to(DEV)
        e_opt = ember.optim.SGD(em.parameters(), lr=0.01, momentum=0.9)
        e = training(ember, em, e_opt, ember.tensor(xs, device=DEV), ember.tensor(ys, device=DEV))
        t = None
        if torch is not None:
            import torchvision

            tm = torchvision.models.resnet18()
            same_weights(em, tm, torch)
            tm = tm.to(DEV)
            t_opt = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
            t = training(torch, tm, t_opt, torch.tensor(xs, device=DEV), torch.tensor(ys, device=DEV))
        return e, t

    row.memory = True
    return row


def model_row(build, shape, classes, opt_name, opt_kw, loss="cross_entropy"):
    def row(torch):
        rng = np.random.default_rng(0)
        xs = rng.standard_normal(shape).astype(np.float32)
        ys = rng.integers(0, classes, shape[0])
        em = build(ember.nn).to(DEV)
        e = training(ember, em, getattr(ember.optim, opt_name)(em.parameters(), **opt_kw),
                     ember.tensor(xs, device=DEV), ember.tensor(ys, device=DEV), loss)
        t = None
        if torch is not None:
            tm = build(torch.nn)
            same_weights(em, tm, torch)
            tm = tm.to(DEV)
            t = training(torch, tm, getattr(torch.optim, opt_name)(tm.parameters(), **opt_kw),
                         torch.tensor(xs, device=DEV), torch.tensor(ys, device=DEV), loss)
        return e, t

    return row


def op_row(shapes, call, layer=None):
    """``call(lib, layer, *inputs)`` forward + backward on inputs of ``shapes`` (and a layer built by
    ``layer(nn)`` with the same weights on both sides)."""
    def row(torch):
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]

        def side(lib, mod):
            xs = [lib.tensor(a, device=DEV, requires_grad=True) for a in arrays]
            return fwd_bwd(lambda *x: call(lib, mod, *x), *xs)

        em = layer(ember.nn).to(DEV) if layer else None
        e = side(ember, em)
        t = None
        if torch is not None:
            tm = None
            if layer:
                tm = layer(torch.nn)
                same_weights(em, tm, torch)
                tm = tm.to(DEV)
            t = side(torch, tm)
        return e, t

    return row


def add4x4(torch):
    a, b = ember.ones(4, 4, device=DEV), ember.ones(4, 4, device=DEV)
    e = lambda: a + b  # noqa: E731
    t = None
    if torch is not None:
        ta, tb = torch.ones(4, 4, device=DEV), torch.ones(4, 4, device=DEV)
        t = lambda: ta + tb  # noqa: E731
    return e, t


def adam(torch):
    shapes = [(1024, 1024)] * 8
    e_params = [ember.zeros(s, device=DEV, requires_grad=True) for s in shapes]
    for p in e_params:
        p.grad = ember.randn(p.shape, device=DEV)
    e = ember.optim.Adam(e_params, lr=1e-3).step
    t = None
    if torch is not None:
        t_params = [torch.zeros(s, device=DEV, requires_grad=True) for s in shapes]
        for p in t_params:
            p.grad = torch.randn(p.shape, device=DEV)
        t = torch.optim.Adam(t_params, lr=1e-3, fused=True).step
    return e, t


def cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def mlp(nn):
    return nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                         nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1000))


def encoder(nn):
    layer = nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True)
    return nn.Sequential(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), nn.Flatten(),
                         nn.Linear(128 * 512, 10))


class LSTMSum:
    """nn.LSTM whose output is the sequence of hidden states (summed by the row)."""

    @staticmethod
    def build(nn):
        return nn.LSTM(256, 512, num_layers=2)

    @staticmethod
    def call(lib, mod, x):
        return mod(x)[0]


ROWS = {
    "resnet18_b32": resnet(32),
    "resnet18_b128": resnet(128),
    "conv3x3": op_row([(32, 64, 56, 56)], lambda lib, m, x: m(x), lambda nn: nn.Conv2d(64, 64, 3, padding=1)),
    "batchnorm": op_row([(32, 64, 56, 56)], lambda lib, m, x: m(x), lambda nn: nn.BatchNorm2d(64)),
    "sdpa": op_row([(8, 8, 512, 64)] * 3,
                   lambda lib, m, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)),
    "lstm": op_row([(50, 64, 256)], LSTMSum.call, LSTMSum.build),
    "transformer": model_row(encoder, (32, 128, 512), 10, "Adam", {"lr": 1e-4}),
    "mlp": model_row(mlp, (512, 4096), 1000, "SGD", {"lr": 0.01, "momentum": 0.9}),
    "add4x4": add4x4,
    "cnn": model_row(cnn, (256, 1, 28, 28), 10, "Adam", {"lr": 1e-3}),
    "adam": adam,
}


def measure(name, row, torch, steps):
    """One row: times (and, for rows marked so, the peak memory of) each side."""
    res = {}
    e_step, t_step = row(torch)
    memory = getattr(row, "memory", False) and DEV == "cuda"
    if memory:
        ember.cuda.synchronize()
        ember.cuda.reset_peak_memory_stats()
    res["ember_ms"] = timed(e_step, sync_of(ember), steps)
    if memory:
        res["ember_peak_mib"] = ember.cuda.max_memory_allocated() / 2**20
    if t_step is not None:
        if memory:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        res["torch_ms"] = timed(t_step, sync_of(torch), steps)
        res["ratio"] = res["ember_ms"] / res["torch_ms"]
        if memory:
            res["torch_peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
            res["memory_ratio"] = res["ember_peak_mib"] / res["torch_peak_mib"]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--only", default="", help="comma-separated rows (default: all)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: a dry run of the script")
    args = ap.parse_args()
    global DEV
    DEV = args.device
    if DEV == "cuda" and not ember.cuda.is_available():
        reason = ember.plugins.REGISTRY.backends["cuda"].unavailable_reason()
        print(f"bench_cuda: skipped, CUDA is not available to ember here ({reason})")
        return 0
    try:
        import torch

        if DEV == "cuda" and not torch.cuda.is_available():
            print("bench_cuda: PyTorch has no CUDA here; ember timings only")
            torch = None
    except ImportError:
        torch = None
    names = [n for n in args.only.split(",") if n] or list(ROWS)
    unknown = sorted(set(names) - set(ROWS))
    if unknown:
        ap.error(f"unknown rows {unknown}; rows are {list(ROWS)}")
    if DEV == "cuda":
        print(f"ember on {ember.cuda.get_device_name()} ({ember.plugins.REGISTRY.backends['cuda'].version()})")
    print(f"{'row':16s} {'ember ms':>10s} {'torch ms':>10s} {'ratio':>7s} {'peak MiB e/t':>16s}")
    results = {}
    for name in names:
        try:
            res = measure(name, ROWS[name], torch, args.steps)
        except Exception as exc:  # a failing row is reported; the others still run
            res = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}
            print(f"{name:16s} FAILED {res['error']}", flush=True)
        else:
            mem = (f"{res['ember_peak_mib']:.0f}/{res.get('torch_peak_mib', float('nan')):.0f}"
                   if "ember_peak_mib" in res else "")
            print(f"{name:16s} {res['ember_ms']:10.3f} {res.get('torch_ms', float('nan')):10.3f} "
                  f"{res.get('ratio', float('nan')):7.2f} {mem:>16s}", flush=True)
        results[name] = res
        if args.json:  # written after every row, so a hang later keeps what was measured
            with open(args.json, "w") as f:
                json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
