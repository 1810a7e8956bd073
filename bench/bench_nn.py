#!/usr/bin/env python3
"""Training-step benchmarks of ember.nn, in one process, as ratios:

  MLP 784-512-512-10, ReLU, cross-entropy, SGD momentum 0.9, batch 128:
      ember vs a zero-overhead hand-written NumPy step (target <= 1.15x)
  LeNet-style CNN on 1x28x28 (conv5-relu-pool-conv5-relu-pool-fc120-fc84-fc10), batch 64:
      ember vs PyTorch CPU (target <= 1.5x)

    python bench/bench_nn.py [--repeat 7] [--min-time 0.3] [--threads 1] [--timer wall|process] [--json out.json]

Medians of --repeat timed runs, each calibrated to last --min-time seconds (timeit, gc on).
--threads 1 (default) pins OpenBLAS and torch to one thread so the ratios compare frameworks.
"""
import argparse
import json
import os
import statistics
import sys
import time
import timeit

_threads = "1"
for i, a in enumerate(sys.argv):
    if a == "--threads" and i + 1 < len(sys.argv):
        _threads = sys.argv[i + 1]
if _threads != "0":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", _threads)
    os.environ.setdefault("OMP_NUM_THREADS", _threads)

import numpy as np  # noqa: E402

import ember  # noqa: E402

LR, MOMENTUM = 0.01, 0.9


TIMER = timeit.default_timer


def bench(fn, repeat, min_time):
    t = timeit.Timer(fn, setup="import gc; gc.enable()", timer=TIMER)
    number = 1
    while t.timeit(number) < min_time:
        number *= 2
    return statistics.median(t.repeat(repeat, number)) / number


def batch(shape, n, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n,) + shape, dtype=np.float32), rng.integers(0, 10, n)


# ----------------------------------------------------------------------------- NumPy floor
def numpy_mlp_step_fn(x, y):
    """The MLP step by hand: forward, softmax cross-entropy gradient, backward, momentum update."""
    rng = np.random.default_rng(0)
    sizes = (784, 512, 512, 10)
    params = []
    for fi, fo in zip(sizes[:-1], sizes[1:]):
        b = fi ** -0.5
        params += [rng.uniform(-b, b, (fi, fo)).astype(np.float32), rng.uniform(-b, b, fo).astype(np.float32)]
    bufs = [np.zeros_like(p) for p in params]
    n = x.shape[0]
    rows = np.arange(n)

    def step():
        acts, h = [], x
        for i in range(3):
            z = h @ params[2 * i] + params[2 * i + 1]
            acts.append((h, z))
            h = np.maximum(z, 0) if i < 2 else z
        e = np.exp(h - h.max(axis=1, keepdims=True))
        g = e / e.sum(axis=1, keepdims=True)
        g[rows, y] -= 1.0
        g /= n
        grads = [None] * 6
        for i in reversed(range(3)):
            a, z = acts[i]
            if i < 2:
                g = g * (z > 0)
            grads[2 * i], grads[2 * i + 1] = a.T @ g, g.sum(axis=0)
            if i:
                g = g @ params[2 * i].T
        for p, gr, v in zip(params, grads, bufs):
            v *= MOMENTUM
            v += gr
            p -= LR * v
    return step


# ----------------------------------------------------------------------------- models
def mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def lenet(nn):
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84),
                         nn.ReLU(), nn.Linear(84, 10))


def framework_step_fn(lib, build, x, y):
    """One training step of ``build(lib.nn)`` with lib's SGD and CrossEntropyLoss (ember or torch)."""
    model = build(lib.nn)
    opt = lib.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    loss_fn = lib.nn.CrossEntropyLoss()
    xt, yt = lib.from_numpy(x), lib.from_numpy(y)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xt), yt)
        loss.backward()
        opt.step()
        return loss
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--threads", default="1", help="BLAS/torch threads (0: library defaults)")
    ap.add_argument("--timer", choices=["wall", "process"], default="wall",
                    help="process: CPU time of this process (steadier on a loaded machine with one thread)")
    ap.add_argument("--json")
    args = ap.parse_args()
    global TIMER
    TIMER = time.process_time if args.timer == "process" else timeit.default_timer
    try:
        import torch
        if args.threads != "0":
            torch.set_num_threads(int(args.threads))
    except ImportError:
        torch = None

    res = {}
    xm, ym = batch((784,), 128)
    res["mlp numpy"] = bench(numpy_mlp_step_fn(xm, ym), args.repeat, args.min_time)
    res["mlp ember"] = bench(framework_step_fn(ember, mlp, xm, ym), args.repeat, args.min_time)
    xc, yc = batch((1, 28, 28), 64)
    res["cnn ember"] = bench(framework_step_fn(ember, lenet, xc, yc), args.repeat, args.min_time)
    if torch is not None:
        res["mlp torch"] = bench(framework_step_fn(torch, mlp, xm, ym), args.repeat, args.min_time)
        res["cnn torch"] = bench(framework_step_fn(torch, lenet, xc, yc), args.repeat, args.min_time)

    for k, v in res.items():
        print(f"{k:<12} {v * 1e3:8.2f} ms/step")
    ratios = {"mlp ember/numpy (target <= 1.15)": res["mlp ember"] / res["mlp numpy"]}
    if torch is not None:
        ratios["mlp ember/torch"] = res["mlp ember"] / res["mlp torch"]
        ratios["cnn ember/torch (target <= 1.5)"] = res["cnn ember"] / res["cnn torch"]
    for k, v in ratios.items():
        print(f"{k:<34} {v:6.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seconds": res, "ratios": ratios, "threads": args.threads, "timer": args.timer}, f, indent=1)


if __name__ == "__main__":
    main()
