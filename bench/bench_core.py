#!/usr/bin/env python3
"""Per-op overhead on 4x4 float32: ember vs PyTorch (CPU) vs raw NumPy, in one process.

    python bench/bench_core.py [--repeat 9] [--min-time 0.2] [--timer wall|thread] [--json out.json]

Prints microseconds per call (median of --repeat timed runs, each calibrated to last
--min-time seconds) and the ratios ember/torch and ember/numpy.  The three contenders' runs
are interleaved (ember, torch, numpy, ember, ...) so that a change in the machine's load
falls on all of them alike; ``--timer thread`` counts this thread's CPU time only, which
steadies the figures on a shared machine.  Single BLAS/OpenMP thread for all three so that
the comparison is of framework overhead, not threading.
"""
import argparse
import json
import os
import statistics
import sys
import time
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import ember  # noqa: E402


def bench(fns, repeat, min_time, timer):
    """Median microseconds per call of each of ``fns``, their timed runs interleaved."""
    timers, numbers = [], []
    for fn in fns:
        t = timeit.Timer(fn, timer=timer)
        number = 1
        while t.timeit(number) < min_time / repeat:
            number *= 2
        timers.append(t)
        numbers.append(number)
    runs = [[] for _ in fns]
    for _ in range(repeat):
        for t, number, r in zip(timers, numbers, runs):
            r.append(t.timeit(number) / number * 1e6)
    return [statistics.median(r) for r in runs]


def cases(np_mod, torch):
    rng = np.random.default_rng(0)
    na, nb = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    ea, eb = ember.from_numpy(na.copy()), ember.from_numpy(nb.copy())
    ex, ey = ember.from_numpy(na.copy()).requires_grad_(), ember.from_numpy(nb.copy()).requires_grad_()

    def e_fb():
        ((ex * ey) + ex).relu().sum().backward()

    def n_fb():  # the same forward and backward written by hand in NumPy: the zero-overhead floor
        p = na * nb
        s = p + na
        r = np.maximum(s, 0)
        r.sum()
        g = (s > 0).astype(np.float32)
        ga = g * nb + g
        gb = g * na
        return ga, gb

    rows = {
        "add": (lambda: ea + eb, lambda: na + nb),
        "mul": (lambda: ea * eb, lambda: na * nb),
        "matmul": (lambda: ea @ eb, lambda: na @ nb),
        "relu": (lambda: ea.relu(), lambda: np.maximum(na, 0)),
        "sum": (lambda: ea.sum(), lambda: na.sum()),
        "fwd+bwd ((a*b)+a).relu().sum()": (e_fb, n_fb),
        "add, requires_grad (graph recorded)": (lambda: ex + ey, lambda: na + nb),
        "mul by a number, requires_grad": (lambda: ex * 0.5, lambda: na * 0.5),
    }
    if torch is not None:
        ta, tb = torch.from_numpy(na.copy()), torch.from_numpy(nb.copy())
        tx, ty = torch.from_numpy(na.copy()).requires_grad_(), torch.from_numpy(nb.copy()).requires_grad_()

        def t_fb():
            ((tx * ty) + tx).relu().sum().backward()

        tf = {"add": lambda: ta + tb, "mul": lambda: ta * tb, "matmul": lambda: ta @ tb, "relu": lambda: ta.relu(),
              "sum": lambda: ta.sum(), "fwd+bwd ((a*b)+a).relu().sum()": t_fb,
              "add, requires_grad (graph recorded)": lambda: tx + ty,
              "mul by a number, requires_grad": lambda: tx * 0.5}
    else:
        tf = {}
    return [(name, e, tf.get(name), n) for name, (e, n) in rows.items()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per contender and case, over all repeats")
    ap.add_argument("--timer", choices=["wall", "thread"], default="wall")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        torch = None
        print("(torch not installed: PyTorch columns empty)", file=sys.stderr)
    out = {}
    print(f"{'us per call':34s} {'ember':>9s} {'torch':>9s} {'numpy':>9s} {'e/torch':>8s} {'e/numpy':>8s}")
    timer = time.thread_time if args.timer == "thread" else timeit.default_timer
    for name, e, t, n in cases(np, torch):
        if t:
            te, tt, tn = bench([e, t, n], args.repeat, args.min_time, timer)
        else:
            (te, tn), tt = bench([e, n], args.repeat, args.min_time, timer), float("nan")
        out[name] = {"ember": te, "torch": tt, "numpy": tn}
        print(f"{name:34s} {te:9.2f} {tt:9.2f} {tn:9.2f} {te / tt:7.2f}x {te / tn:7.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
