"""Datasets: map-style (``__getitem__``/``__len__``) and iterable, their combinations, and splits.

>>> import ember
>>> from ember.utils.data import TensorDataset, random_split
>>> ds = TensorDataset(ember.arange(10), ember.arange(10) * 2)
>>> ds[3]
(tensor(3), tensor(6))
>>> [len(s) for s in random_split(ds, [0.7, 0.3])]
[7, 3]
"""
from __future__ import annotations

import bisect
import math
import warnings
from typing import Generic, Sequence, TypeVar

from ...ops.creation import randperm
from ...random import default_generator


T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses implement ``__getitem__`` (and usually ``__len__``); generic in its
    sample type, as PyTorch's (``Dataset[int]``)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset that is a stream: subclasses implement ``__iter__``; use ``get_worker_info`` to shard."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of tensors of equal first dimension: ``ds[i] == (a[i], b[i], ...)``."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].size(0)
        if any(t.size(0) != n for t in tensors):
            sizes = [tuple(t.shape) for t in tensors]
            raise ValueError(f"Size mismatch between tensors: TensorDataset needs equal first dimensions, got {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Samples zipped from datasets of equal length, as a tuple (positional) or a dict (keywords)."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        parts = list(args) or list(kwargs.values())
        n = len(parts[0])
        if any(len(p) != n for p in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs
        self._length = n

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        inner = getattr(self.dataset, "__getitems__", None)
        if callable(inner):
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(n: int, lengths: Sequence) -> list:
    """Fractions summing to 1 become counts (the remainder dealt round-robin), as in PyTorch."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=3)
        return counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    return list(lengths)


def random_split(dataset: Dataset, lengths: Sequence, generator=None) -> list:
    """Split ``dataset`` into random non-overlapping subsets of the given lengths (or fractions)."""
    counts = _split_lengths(len(dataset), lengths)
    order = randperm(sum(counts), generator=generator or default_generator("cpu"), device="cpu").tolist()
    out, offset = [], 0
    for c in counts:
        out.append(Subset(dataset, order[offset:offset + c]))
        offset += c
    return out
