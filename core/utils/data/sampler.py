"""Samplers: the order in which a DataLoader visits a map-style dataset.

>>> import ember
>>> from ember.utils.data import BatchSampler, SequentialSampler
>>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
[[0, 1], [2, 3], [4]]
"""
from __future__ import annotations

from typing import Generic, Iterator, Sequence, TypeVar

import numpy as np

from ... import dtypes
from ...ops.creation import rand, randint, randperm
from ...random import Generator


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: an iterable of indices (or of index lists, for batch samplers); generic in what it yields,
    as PyTorch's (``Sampler[int]``)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


def _fresh_generator(generator):
    """The generator to draw from: the given one, else a new one seeded from ember's default stream."""
    if generator is not None:
        return generator
    seed = int(randint(0, 2 ** 62, (1,), device="cpu").item())
    return Generator().manual_seed(seed)


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or ``num_samples`` draws with replacement), reproducible from ``manual_seed``."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = _fresh_generator(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), generator=g, device="cpu").tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), generator=g, device="cpu").tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=g, device="cpu").tolist()
        yield from randperm(n, generator=g, device="cpu").tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order."""

    def __init__(self, indices: Sequence[int], generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator, device="cpu").tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability proportional to ``weights``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise RuntimeError("WeightedRandomSampler: invalid multinomial distribution (weights must be finite, "
                               "non-negative and not all zero)")
        if not replacement and num_samples > int((w > 0).sum()):
            raise RuntimeError("WeightedRandomSampler: cannot sample n_sample > prob_dist.size(-1) samples without "
                               "replacement")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        u = rand(self.num_samples if self.replacement else len(self.weights), dtype=dtypes.float64,
                 generator=self.generator, device="cpu").numpy()
        if self.replacement:
            cdf = np.cumsum(self.weights)
            idx = np.searchsorted(cdf, u * cdf[-1], side="right")
            return iter(np.minimum(idx, len(cdf) - 1).tolist())
        # Efraimidis-Spirakis: the largest u ** (1 / w) keys are a weighted sample without replacement
        with np.errstate(divide="ignore"):
            keys = np.log(u) / self.weights
        return iter(np.argsort(-keys, kind="stable")[:self.num_samples].tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
