#!/usr/bin/env python3
"""Per-sample gradients with vmap, as ratios measured in one process:

  a small MLP (64-128-128-10, ReLU, cross-entropy), batch 64:
      ember vmap(grad(loss)) over the batch  vs  one batched forward+backward in ember (target <= 2x)
      ember vmap(grad(loss))                 vs  torch.func's vmap(grad(loss)) (when torch is installed)
      ember vmap(grad(loss))                 vs  a per-example loop in ember (what vmap replaces)
      ember vmap(grad(loss)) and the batched step  vs  a NumPy floor: the same per-sample gradients by hand
                                             (batched GEMMs forward and back, one broadcast multiply per
                                             weight gradient), no framework at all

    python bench/bench_vmap.py [--batch 64] [--repeat 7] [--min-time 0.3] [--threads 1] [--timer wall|process]
                               [--json out.json]

Medians of --repeat timed runs, each calibrated to last --min-time seconds.  --threads 1 (default) pins
OpenBLAS and torch to one thread so the ratios compare frameworks.
"""
import argparse
import json
import time

import bench_nn
from bench_nn import _threads, bench  # first: it pins the BLAS threads (--threads) before NumPy loads

import numpy as np

import ember

SIZES = (64, 128, 128, 10)


def mlp(nn):
    layers = []
    for i, (fi, fo) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        layers.append(nn.Linear(fi, fo))
        if i < len(SIZES) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def steps(lib, func, model, x, y):
    """(batched forward+backward, vmap per-sample gradients, per-example loop) for library ``lib``."""
    F = lib.nn.functional
    params = {k: v.detach() for k, v in model.named_parameters()}

    def batched():
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()

    def loss(params, sample, target):
        out = func.functional_call(model, params, (sample.unsqueeze(0),))
        return F.cross_entropy(out, target.unsqueeze(0))

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))

    def vmapped():
        return per_sample(params, x, y)

    def loop():
        for i in range(x.shape[0]):
            model.zero_grad()
            F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()

    return batched, vmapped, loop


def numpy_per_sample_fn(model, x, y):
    """The per-sample gradients by hand in NumPy (float32, the model's shapes): one GEMM per layer forward
    and per input gradient, the softmax cross-entropy gradient, and each sample's weight gradient as the
    outer product of its output gradient and its input, written (sample, out, in) as the result is laid out."""
    params = [p.detach().numpy() for p in model.parameters()]
    ws, bs = params[0::2], params[1::2]
    names = [n for n, _ in model.named_parameters()]
    onehot = np.eye(SIZES[-1], dtype=np.float32)[y]

    def step():
        acts, pre = [x], []
        for i, (w, b) in enumerate(zip(ws, bs)):
            z = acts[-1] @ w.T + b
            pre.append(z)
            if i < len(ws) - 1:
                acts.append(np.maximum(z, 0))
        z = pre[-1]
        e = np.exp(z - z.max(1, keepdims=True))
        g = e / e.sum(1, keepdims=True) - onehot  # d(per-sample CE)/dz: softmax - onehot
        grads = [None] * len(params)
        for i in range(len(ws) - 1, -1, -1):
            grads[2 * i] = g[:, :, None] * acts[i][:, None, :]
            grads[2 * i + 1] = g
            if i:
                g = (g @ ws[i]) * (pre[i - 1] > 0)
        return dict(zip(names, grads))

    return step


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--threads", default="1", help="BLAS/torch threads (0: leave as is)")
    p.add_argument("--timer", choices=["wall", "process"], default="wall",
                   help="process: CPU time of this process (steadier on a loaded machine with one thread)")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    if args.timer == "process":
        bench_nn.TIMER = time.process_time

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((args.batch, SIZES[0])).astype(np.float32)
    ys = rng.integers(0, SIZES[-1], args.batch)
    ember.manual_seed(0)
    model = mlp(ember.nn)
    batched, vmapped, loop = steps(ember, ember.func, model, ember.tensor(xs), ember.tensor(ys))
    res = {"batch": args.batch,
           "ember_batched_s": bench(batched, args.repeat, args.min_time),
           "ember_vmap_s": bench(vmapped, args.repeat, args.min_time),
           "ember_loop_s": bench(loop, args.repeat, args.min_time)}
    floor = numpy_per_sample_fn(model, xs, ys)
    res["numpy_floor_s"] = bench(floor, args.repeat, args.min_time)
    res["vmap_over_batched"] = res["ember_vmap_s"] / res["ember_batched_s"]
    res["vmap_over_floor"] = res["ember_vmap_s"] / res["numpy_floor_s"]
    res["batched_over_floor"] = res["ember_batched_s"] / res["numpy_floor_s"]
    res["loop_over_vmap"] = res["ember_loop_s"] / res["ember_vmap_s"]
    try:
        import torch
        import torch.func
    except ImportError:
        torch = None
    if torch is not None:
        if _threads != "0":
            torch.set_num_threads(int(_threads))
        tmodel = mlp(torch.nn)
        tb, tv, _ = steps(torch, torch.func, tmodel, torch.tensor(xs), torch.tensor(ys))
        res["torch_batched_s"] = bench(tb, args.repeat, args.min_time)
        res["torch_vmap_s"] = bench(tv, args.repeat, args.min_time)
        res["vmap_over_torch_vmap"] = res["ember_vmap_s"] / res["torch_vmap_s"]
    for k, v in res.items():
        print(f"{k:22s} {v * 1e6:10.1f} us" if k.endswith("_s") else f"{k:22s} {v:10.2f}")
    print(f"target: vmap_over_batched <= 2.0 -> {'met' if res['vmap_over_batched'] <= 2.0 else 'NOT met'}")
    room = 2 * res["ember_batched_s"]
    print(f"floor:  the NumPy floor alone is {1 / res['batched_over_floor']:.2f}x the batched step; the target "
          f"leaves {room * 1e6:.0f} us, {room / res['numpy_floor_s']:.2f}x the floor "
          f"(ember vmap: {res['vmap_over_floor']:.2f}x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
