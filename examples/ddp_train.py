"""Data-parallel training on several processes with DistributedDataParallel (MPI underneath).

    python -m ember.distributed.run --nproc 2 examples/ddp_train.py --epochs 5 --check

Every rank holds a replica of the model and trains on its own share of each
epoch (``DistributedSampler``); ``backward`` averages the gradients over the
ranks, so N ranks with batch B take the same steps as one process with batch
N*B.  ``--check`` proves it: rank 0 also trains a model alone on the
concatenated batches and prints the largest parameter difference.  Data: the
scikit-learn 8x8 digits, or ``--synthetic`` blobs.  Across machines, add
``--hostfile hosts`` to the launcher (see the README).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel
from ember.utils.data.distributed import DistributedSampler


def load_data(synthetic: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    if synthetic:
        centers = rng.standard_normal((10, 64)) * 2
        y = rng.integers(0, 10, 2000)
        x = centers[y] + rng.standard_normal((2000, 64))
    else:
        from sklearn.datasets import load_digits

        digits = load_digits()
        x, y = digits.data / 16.0, digits.target
    order = rng.permutation(len(y))
    x, y = x[order].astype(np.float64), y[order].astype(np.int64)
    cut = int(0.8 * len(y))
    return (ember.from_numpy(x[:cut]), ember.from_numpy(y[:cut]),
            ember.from_numpy(x[cut:]), ember.from_numpy(y[cut:]))


def make_model(seed: int) -> nn.Module:
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).double()


def batches(sampler, epoch: int, batch_size: int):
    sampler.set_epoch(epoch)
    idx = list(sampler)
    return [ember.tensor(idx[i:i + batch_size]) for i in range(0, len(idx) - batch_size + 1, batch_size)]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=16, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--check", action="store_true", help="rank 0 also trains alone on the concatenated batches")
    args = p.parse_args(argv)

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y, xt, yt = load_data(args.synthetic)
    model = DistributedDataParallel(make_model(seed=rank))  # replicas start from rank 0's weights
    opt = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sampler = DistributedSampler(range(len(y)), num_replicas=world, rank=rank, seed=1)
    if args.check and rank == 0:
        ref = make_model(seed=0)
        ref_opt = ember.optim.SGD(ref.parameters(), lr=args.lr, momentum=0.9)
        samplers = [DistributedSampler(range(len(y)), num_replicas=world, rank=r, seed=1) for r in range(world)]
    start = time.perf_counter()
    for epoch in range(args.epochs):
        for step, idx in enumerate(batches(sampler, epoch, args.batch_size)):
            opt.zero_grad()
            F.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
            if args.check and rank == 0:
                if step == 0:
                    every = [batches(s, epoch, args.batch_size) for s in samplers]
                whole = ember.cat([b[step] for b in every])
                ref_opt.zero_grad()
                F.cross_entropy(ref(x[whole]), y[whole]).backward()
                ref_opt.step()
        with ember.no_grad():
            acc = (model(xt).argmax(1) == yt).double().mean().item()
        if rank == 0:
            print(f"epoch {epoch + 1}: test accuracy {acc:.4f} ({world} ranks, {time.perf_counter() - start:.1f} s)")
    if args.check and rank == 0:
        diff = max((p - q).abs().max().item() for p, q in zip(model.module.parameters(), ref.parameters()))
        print(f"largest difference to single-process training on the concatenated batches: {diff:.3g}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
