"""``DistributedSampler``: each rank of a distributed job visits its own share of a dataset."""
from __future__ import annotations

import math
from typing import Iterator

from ... import distributed as dist
from ...ops.creation import randperm
from ...random import Generator
from .sampler import Sampler


class DistributedSampler(Sampler):
    """Rank ``rank``'s indices out of ``num_replicas`` disjoint shares; together they cover the dataset once.

    Without ``drop_last`` the index list is padded (wrapping around) to a multiple of ``num_replicas``; with it
    the tail is dropped.  Call ``set_epoch(e)`` before each epoch so the shuffle changes (the same on every rank).

    >>> from ember.utils.data.distributed import DistributedSampler
    >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
    [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            if not dist.is_available() or not dist.is_initialized():
                raise RuntimeError("Requires distributed package to be available (and the process group "
                                   "initialized) when num_replicas or rank is not given")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, shuffle, seed, drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g, device="cpu").tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            pad = self.total_size - len(indices)
            indices += (indices * math.ceil(pad / max(len(indices), 1)))[:pad]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the shuffle seed, so each epoch is a new permutation (identical on all ranks)."""
        self.epoch = epoch
