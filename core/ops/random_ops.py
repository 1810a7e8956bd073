"""Random sampling ops: in-place fillers (``uniform_``, ``normal_``, ...) and ``bernoulli``, ``multinomial``,
``normal``, ``poisson``, ``randint_like``.  Every draw comes from a device generator (the default one, or
``generator=``), so ``ember.manual_seed`` reproduces it."""
from __future__ import annotations

from .. import dtypes
from ..random import native
from ..tensor import Tensor, _wrap
from .inplace import Fill, copy_  # noqa: F401 - Fill documents the in-place contract used here

__all__ = ["bernoulli", "multinomial", "normal", "poisson", "randint_like"]


def _fill_from(self, arr, op):
    """Write sampled values into ``self`` (a leaf requiring grad is refused, as for every in-place op)."""
    from ..dispatch import check_inplace

    check_inplace(self, op)
    from ..autograd.grad_mode import no_grad

    with no_grad():
        self._dev.kernels["copy_"](self._data, arr)
    self._bump()
    return self


def _draw(self, kernel, generator, *args):
    dev = self._dev
    return dev.kernels[kernel](native(generator, dev), self._data.shape, self._data.dtype, *args)


def uniform_(self, from_=0.0, to=1.0, *, generator=None):
    """Fill with samples uniform on ``[from_, to)``."""
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _fill_from(self, _draw(self, "uniform", generator, from_, to), "uniform_")


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with normal samples."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_from(self, _draw(self, "normal", generator, mean, std), "normal_")


def exponential_(self, lambd=1.0, *, generator=None):
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill_from(self, _draw(self, "exponential", generator, lambd), "exponential_")


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill_from(self, _draw(self, "geometric", generator, p), "geometric_")


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    return _fill_from(self, _draw(self, "cauchy", generator, median, sigma), "cauchy_")


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    return _fill_from(self, _draw(self, "log_normal", generator, mean, std), "log_normal_")


def random_(self, from_=0, to=None, *, generator=None):
    """Fill with integers uniform on ``[from_, to)`` (``[0, from_)`` with one argument)."""
    if to is None:
        from_, to = 0, from_ if from_ else (2 ** 24 if self.is_floating_point() else dtypes.iinfo(self.dtype).max)
    return _fill_from(self, _draw(self, "randint", generator, from_, to), "random_")


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples with probability ``p`` (a number or a tensor)."""
    dev = self._dev
    probs = p._data if isinstance(p, Tensor) else \
        dev.kernels["full"](self._data.shape, p, dev.backend.array_dtype(dtypes.float64))
    if probs.shape != self._data.shape:
        probs = dev.kernels["expand"](probs, self._data.shape)
    return _fill_from(self, dev.kernels["bernoulli"](native(generator, dev), probs, self._data.dtype), "bernoulli_")


def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002
    """0/1 samples with the probabilities in ``input`` (or a fixed ``p``)."""
    if p is not None:
        return bernoulli_(input.new_empty(input.shape), p, generator=generator)
    if input.numel() and (float(input.min()) < 0 or float(input.max()) > 1):
        raise RuntimeError("bernoulli: all elements of input should be between 0 and 1")
    return _wrap(input._dev.kernels["bernoulli"](native(generator, input._dev), input._data, input._data.dtype),
                 input._dev)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):  # noqa: A002
    """Indices sampled from the rows of ``input`` (non-negative weights)."""
    if input.dim() not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.dim()}")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if input.numel() and float(input.min()) < 0:
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    dev = input._dev
    rows = input.detach().to(dtypes.float64).reshape(-1, input.shape[-1])
    idx = dev.kernels["multinomial"](native(generator, dev), rows._data, num_samples, replacement)
    out = _wrap(dev.kernels["astype"](idx, dev.backend.array_dtype(dtypes.int64)), dev)
    return out.reshape(tuple(input.shape[:-1]) + (num_samples,))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples: tensor or scalar ``mean``/``std`` (broadcast), or scalars with ``size``."""
    from .creation import empty

    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        shape = (mean * 0 + std * 0).shape if isinstance(mean, Tensor) and isinstance(std, Tensor) else ref.shape
        z = normal_(empty(shape, dtype=ref.dtype, device=ref.device), 0.0, 1.0, generator=generator)
        return z * std + mean
    if size is None:
        raise TypeError("normal(): with scalar mean and std, the size argument is required")
    t = normal_(empty(*size if isinstance(size, (tuple, list)) else (size,), dtype=dtype, device=device),
                mean, std, generator=generator)
    return t.requires_grad_() if requires_grad else t


def poisson(input, generator=None):  # noqa: A002
    """Poisson samples with rates ``input``."""
    return _wrap(input._dev.kernels["poisson"](native(generator, input._dev), input._data), input._dev)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None,  # noqa: A002
                 requires_grad=False, memory_format=None):
    from .creation import randint

    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device)


METHODS = {"uniform_": uniform_, "normal_": normal_, "exponential_": exponential_, "geometric_": geometric_,
           "cauchy_": cauchy_, "log_normal_": log_normal_, "random_": random_, "bernoulli_": bernoulli_,
           "bernoulli": bernoulli, "multinomial": multinomial}
