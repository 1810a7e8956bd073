#!/usr/bin/env python3
"""Winograd F(2x2, 3x3) against im2col on ResNet-18's 3x3 stride-1 convolutions, in one process, interleaved.

    python bench/bench_winograd.py [--threads 2] [--repeat 15] [--shapes 8x128x28,16x64x16] [--no-split]

Each shape ``NxCxS`` is a C -> C convolution of an S x S map, batch N, padding 1 (by default the four stages
of ``resnet_infer``, 224 px batch 8, and of ``resnet_step``, 64 px batch 16).  For the forward under
``no_grad`` and for forward + backward, the two paths (``ember.kernels.conv.WINOGRAD`` forced off and on)
alternate call by call, so that load from other processes falls on both alike; the figures are the fastest
call of each (wall and process CPU time) and the Winograd/im2col ratios, with "rule" saying which path the
automatic rule picks.  Run it with and without ``OPENBLAS_CORETYPE`` to see both BLAS kernel families.
``--no-split`` keeps the Winograd transforms and im2col copies on one thread (the CPU backend's block runner,
``ember_cpu_numpy.threads``, making one call; BLAS keeps --threads): the gain of the thread split is the
difference to a plain run.
OpenBLAS's idle workers spin for a while after each GEMM (``OPENBLAS_THREAD_TIMEOUT``, default 2**28 cycles)
and take the core the split would use: with two cores the split pays about 1.6x on the transforms alone, and
far less between GEMMs unless ``OPENBLAS_THREAD_TIMEOUT`` is small (e.g. 4).
"""
import argparse
import os
import time

import numpy as np

RESNET18 = ["8x64x56", "8x128x28", "8x256x14", "8x512x7", "16x64x16", "16x128x8", "16x256x4", "16x512x2"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--shapes", default=",".join(RESNET18))
    ap.add_argument("--no-split", action="store_true", help="the transforms and copies on one thread")
    args = ap.parse_args(argv)
    import ember
    import ember.kernels.conv as conv_kernels
    ember.set_num_threads(args.threads)
    if args.no_split:
        from ember_cpu_numpy import threads
        threads._run_blocks = lambda body, n, parts: body(0, n)
    rng = np.random.default_rng(0)
    print(f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}, {args.threads} threads, "
          f"fastest of {args.repeat}{', transforms and copies on one thread' if args.no_split else ''}")
    print(f"{'N x C @ S':<14}{'rule':>9}{'fwd ms im2col/wino':>20}{'wall':>6}{'cpu':>6}"
          f"{'f+b ms im2col/wino':>20}{'wall':>6}{'cpu':>6}")
    for shape in args.shapes.split(","):
        n, c, s = (int(v) for v in shape.split("x"))
        x = ember.tensor(rng.standard_normal((n, c, s, s), dtype=np.float32), requires_grad=True)
        w = ember.tensor(rng.standard_normal((c, c, 3, 3), dtype=np.float32) * 0.05, requires_grad=True)
        gy = ember.tensor(rng.standard_normal((n, c, s, s), dtype=np.float32))
        conv_kernels.WINOGRAD = None
        rule = "winograd" if ember.nn.functional.conv2d(x, w, padding=1).grad_fn.cols.ndim == 5 else "im2col"

        def forward(x=x, w=w):
            with ember.no_grad():
                ember.nn.functional.conv2d(x, w, padding=1)

        def step(x=x, w=w, gy=gy):
            ember.nn.functional.conv2d(x, w, padding=1).backward(gy)

        line = f"{n}x{c}@{s:<9}{rule:>9}"
        for fn in (forward, step):
            best = {}
            for force in (False, True):
                conv_kernels.WINOGRAD = force
                fn()
            for _ in range(args.repeat):
                for force in (False, True):
                    conv_kernels.WINOGRAD = force
                    t, cpu = time.perf_counter(), time.process_time()
                    fn()
                    t, cpu = time.perf_counter() - t, time.process_time() - cpu
                    old = best.get(force, (float("inf"), float("inf")))
                    best[force] = (min(old[0], t), min(old[1], cpu))
            (iw, ic), (ww, wc) = best[False], best[True]
            line += f"{1e3 * iw:11.2f}/{1e3 * ww:<8.2f}{ww / iw:6.2f}{wc / ic:6.2f}"
        conv_kernels.WINOGRAD = None
        print(line, flush=True)


if __name__ == "__main__":
    main()
