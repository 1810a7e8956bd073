"""Hogwild: several processes train one model in shared memory, without locks.

    python examples/hogwild.py --procs 4 --epochs 10 --compare

The model's parameters are moved to shared memory (``model.share_memory()``)
and the model is handed to each worker process; every worker runs its own
optimizer over its own share of the data and writes its updates straight
into the shared parameters.  Workers see each other's updates as they
happen.  ``--compare`` also trains the same model in one process on the same
number of samples and prints both accuracies.

Data: the 8x8 digits that ship with scikit-learn (no download), or
``--synthetic`` Gaussian blobs when scikit-learn is missing.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import ember
import ember.multiprocessing as mp
import ember.nn as nn
import ember.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _needs import need  # noqa: E402


def load_data(synthetic: bool, seed: int = 0, dtype=np.float32):
    """``(x_train, y_train, x_test, y_test)``: features of ``dtype`` and int64 labels (80/20 split)."""
    rng = np.random.default_rng(seed)
    if synthetic:
        centers = rng.standard_normal((10, 64)) * 2
        y = rng.integers(0, 10, 2000)
        x = centers[y] + rng.standard_normal((2000, 64))
    else:
        load_digits = need("sklearn.datasets").load_digits

        digits = load_digits()
        x, y = digits.data / 16.0, digits.target
    order = rng.permutation(len(y))
    x, y = x[order].astype(dtype), y[order].astype(np.int64)
    cut = int(0.8 * len(y))
    return (ember.from_numpy(x[:cut]), ember.from_numpy(y[:cut]),
            ember.from_numpy(x[cut:]), ember.from_numpy(y[cut:]))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train(rank: int, model: nn.Module, x, y, args) -> None:
    """One worker: SGD over its share of the data, updating the shared parameters in place."""
    ember.manual_seed(args.seed + rank)
    opt = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    n = len(y)
    for _ in range(args.epochs):
        for idx in ember.randperm(n, device=x.device).split(args.batch_size):
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()


def accuracy(model, x, y) -> float:
    with ember.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def hogwild(args, data) -> tuple:
    x, y, xt, yt = data
    ember.manual_seed(args.seed)
    model = Net().to(x.device)  # where the data is: the CPU (shared memory), whatever the default device
    model.share_memory()
    ctx = mp.get_context(args.start_method)
    shares = [(x[r::args.procs], y[r::args.procs]) for r in range(args.procs)]
    start = time.perf_counter()
    procs = [ctx.Process(target=train, args=(r, model, *shares[r], args)) for r in range(args.procs)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"a worker failed: exit codes {[p.exitcode for p in procs]}")
    return accuracy(model, xt, yt), time.perf_counter() - start


def single(args, data) -> tuple:
    x, y, xt, yt = data
    ember.manual_seed(args.seed)
    model = Net().to(x.device)
    start = time.perf_counter()
    train(0, model, x, y, args)
    return accuracy(model, xt, yt), time.perf_counter() - start


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--procs", type=int, default=2, help="worker processes")
    p.add_argument("--epochs", type=int, default=10, help="passes of each worker over its share")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-method", default="spawn", choices=["spawn", "forkserver", "fork"])
    p.add_argument("--synthetic", action="store_true", help="Gaussian blobs instead of the digits")
    p.add_argument("--compare", action="store_true", help="also train in one process and compare")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    data = load_data(args.synthetic, args.seed)
    acc, secs = hogwild(args, data)
    print(f"hogwild, {args.procs} processes: test accuracy {acc:.4f} ({secs:.1f} s)")
    result = {"hogwild": acc}
    if args.compare:
        acc1, secs1 = single(args, data)
        print(f"single process, same samples: test accuracy {acc1:.4f} ({secs1:.1f} s)")
        result["single"] = acc1
    return result


if __name__ == "__main__":
    main()
