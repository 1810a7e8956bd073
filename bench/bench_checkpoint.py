#!/usr/bin/env python3
"""Memory saved by activation checkpointing on a deep MLP: peak memory of one forward+backward.

    python bench/bench_checkpoint.py [--depth 32] [--width 256] [--batch 2048] [--segments 4]

Each configuration (ember and PyTorch CPU, plain and ``checkpoint_sequential`` in ``segments`` segments) runs in a
fresh process; the figure is the growth of the process's peak resident memory over one forward+backward of a
``depth``-layer Linear+ReLU MLP, measured after the model and input exist.
"""
import argparse
import json
import resource
import subprocess
import sys
import time


def run_one(lib_name, segments, depth, width, batch):
    if lib_name == "ember":
        import ember as lib
        from ember.utils.checkpoint import checkpoint_sequential as cp
    else:
        import torch as lib
        from torch.utils.checkpoint import checkpoint_sequential as cp
    lib.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.ReLU()]
    net = lib.nn.Sequential(*layers)
    for p in net.parameters():
        p.grad = lib.zeros_like(p)  # gradients exist before the step: the peak measures activations
    x = lib.randn(batch, width)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    out = cp(net, segments, x, use_reentrant=False) if segments else net(x)
    out.sum().backward()
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_mib": (after - before) / 1024, "ms": dt * 1e3}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=32)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--segments", type=int, default=4)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        return run_one(args.one[0], int(args.one[1]), args.depth, args.width, args.batch)
    act = args.batch * args.width * 4 / 2**20
    print(f"MLP {args.depth} x (Linear({args.width}) + ReLU), batch {args.batch} (one activation {act:.1f} MiB); "
          f"checkpointed in {args.segments} segments")
    for lib in ("ember", "torch"):
        res = {}
        for seg in (0, args.segments):
            p = subprocess.run([sys.executable, __file__, "--one", lib, str(seg), "--depth", str(args.depth),
                                "--width", str(args.width), "--batch", str(args.batch)], capture_output=True,
                               text=True)
            if p.returncode:
                print(f"  {lib}: failed: {p.stderr.strip().splitlines()[-1]}")
                break
            res[seg] = json.loads(p.stdout)
        else:
            plain, ck = res[0], res[args.segments]
            print(f"  {lib:6s} plain {plain['peak_mib']:7.1f} MiB ({plain['ms']:6.1f} ms)   checkpointed "
                  f"{ck['peak_mib']:7.1f} MiB ({ck['ms']:6.1f} ms)   memory saved "
                  f"{100 * (1 - ck['peak_mib'] / plain['peak_mib']):4.1f}%")


if __name__ == "__main__":
    main()
