"""Data-parallel training on several processes with DistributedDataParallel (MPI underneath).

    python -m ember.distributed.run --nproc 2 examples/ddp_train.py --epochs 5 --check

Every rank holds a replica of the model and trains on its own share of each
epoch (``DistributedSampler``); ``backward`` averages the gradients over the
ranks, so N ranks with batch B take the same steps as one process with batch
N*B.  ``--check`` proves it: rank 0 also trains a model alone on the
concatenated batches and prints the largest parameter difference.  Data: the
scikit-learn 8x8 digits, or ``--synthetic`` blobs (loaded as in ``hogwild.py``).  Across machines, add
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
from ember.utils.data import DataLoader, DistributedSampler, TensorDataset
from hogwild import load_data  # the same digits and split as the Hogwild example


def make_model(seed: int) -> nn.Module:
    ember.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)).double()


def loader(x, y, batch_size: int, rank: int, world: int):
    """Rank ``rank``'s DataLoader: its share of every epoch, in batches."""
    sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world, rank=rank, seed=1)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, sampler=sampler, drop_last=True)


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
    x, y, xt, yt = load_data(args.synthetic, dtype=np.float64)  # float64: the --check is exact
    model = DistributedDataParallel(make_model(seed=rank))  # replicas start from rank 0's weights
    opt = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    mine = loader(x, y, args.batch_size, rank, world)
    if args.check and rank == 0:  # every rank's loader, to rebuild the concatenated batches
        ref = make_model(seed=0)
        ref_opt = ember.optim.SGD(ref.parameters(), lr=args.lr, momentum=0.9)
        everyone = [loader(x, y, args.batch_size, r, world) for r in range(world)]
    start = time.perf_counter()
    for epoch in range(args.epochs):
        mine.sampler.set_epoch(epoch)
        for xb, yb in mine:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
        if args.check and rank == 0:
            for batches in zip(*everyone):
                ref_opt.zero_grad()
                F.cross_entropy(ref(ember.cat([b[0] for b in batches])), ember.cat([b[1] for b in batches])).backward()
                ref_opt.step()
            for ld in everyone:
                ld.sampler.set_epoch(epoch + 1)
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
