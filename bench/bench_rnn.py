#!/usr/bin/env python3
"""LSTM training step (2 layers, hidden 256, sequence 64, batch 32): ember vs PyTorch CPU, one process.

    python bench/bench_rnn.py [--repeat 5] [--threads 1]

Each step: forward over the sequence, MSE loss against a fixed target, backward, SGD update.
Prints the median milliseconds per step and the ratio ember/PyTorch.
"""
import argparse
import json
import os
import statistics
import time


def timed(step, repeat, warmup=2):
    for _ in range(warmup):
        step()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        step()
        out.append(time.perf_counter() - t)
    return statistics.median(out) * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import numpy as np

    import ember

    T, B, H, L = 64, 32, 256, 2
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, B, H)).astype(np.float32)
    y = rng.standard_normal((T, B, H)).astype(np.float32)

    em = ember.nn.LSTM(H, H, L)
    eopt = ember.optim.SGD(em.parameters(), lr=0.01)
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)

    def e_step():
        out, _ = em(ex)
        loss = ((out - ey) ** 2).mean()
        eopt.zero_grad()
        loss.backward()
        eopt.step()

    te = timed(e_step, args.repeat)
    print(f"ember  LSTM step: {te:8.1f} ms")
    try:
        import torch
    except ImportError:
        print("torch not installed: no reference")
        _write(args.json, {"ember_ms": te})
        return
    torch.set_num_threads(args.threads)
    tm = torch.nn.LSTM(H, H, L)
    topt = torch.optim.SGD(tm.parameters(), lr=0.01)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def t_step():
        out, _ = tm(tx)
        loss = ((out - ty) ** 2).mean()
        topt.zero_grad()
        loss.backward()
        topt.step()

    tt = timed(t_step, args.repeat)
    print(f"torch  LSTM step: {tt:8.1f} ms")
    print(f"ember / torch   : {te / tt:8.2f}x")
    _write(args.json, {"ember_ms": te, "torch_ms": tt, "ratio": te / tt})


def _write(path, figures):
    if path:
        with open(path, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
