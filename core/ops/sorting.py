"""Sorting and selection (``sort``, ``argsort``, ``topk``, ``kthvalue``, ``median``, ``mode``, ``unique``),
comparisons of whole tensors (``equal``, ``allclose``, ``isclose``), and the in-place forms of the
pointwise ops (``exp_``, ``clamp_``, ``pow_``, ...)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..tensor import Tensor, _wrap, _wrap_dim
from . import pointwise, reduction
from .reduction import return_types

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "unique",
           "unique_consecutive", "equal", "allclose", "isclose"]


def _gather_values(x, idx, dim):
    """Values of ``x`` at ``idx`` along ``dim``: differentiable through ``gather``."""
    return x.gather(dim, idx)


def sort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """Sorted values and their indices along ``dim`` (a named tuple)."""
    if input.dim() == 0:
        return return_types.sort(input.clone(), input.new_zeros((), dtype=dtypes.int64))
    d = _wrap_dim(dim, input.dim(), "sort")
    _, idx = input._dev.kernels["sort"](input._data, d, descending, True)
    idx = _wrap(idx, input._dev)
    return return_types.sort(_gather_values(input, idx, d), idx)


def argsort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """Indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


def msort(input):  # noqa: A002
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    d = _wrap_dim(dim, max(input.dim(), 1), "topk")
    n = input.shape[d] if input.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, size {n} along dim {d})")
    s = sort(input, d, descending=largest)
    return return_types.topk(s.values.narrow(d, 0, k), s.indices.narrow(d, 0, k))


def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    """The ``k``-th smallest value (1-based) along ``dim`` and its index."""
    d = _wrap_dim(dim, input.dim(), "kthvalue")
    if not 1 <= k <= input.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    s = sort(input, d)
    v, i = s.values.narrow(d, k - 1, 1), s.indices.narrow(d, k - 1, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return return_types.kthvalue(v, i)


def median(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median (of all elements, or along ``dim`` with its index), as PyTorch defines it."""
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return flat.new_full((), float("nan"))
        s = sort(flat).values  # NaN sorts last; PyTorch's median is NaN when there is one
        return pointwise.where(s[-1].isnan(), s[-1], s[(flat.numel() - 1) // 2])
    d = _wrap_dim(dim, input.dim(), "median")
    if input.dim() == 0:
        return return_types.median(input.clone(), input.new_zeros((), dtype=dtypes.int64))
    r = kthvalue(input, (input.shape[d] + 1) // 2, d, True)
    idx = r.indices
    if input.dtype.is_floating_point and input.shape[d]:  # a row with NaN: its first NaN, as PyTorch
        nan = input.isnan()
        idx = pointwise.where(nan.any(d, keepdim=True), nan.to(dtypes.uint8).argmax(d, keepdim=True), idx)
    values = input.gather(d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return return_types.median(values, idx)


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median of the non-NaN values (NaN only where all are NaN).

    >>> import ember
    >>> ember.tensor([1.0, float("nan"), 3.0, 2.0]).nanmedian()
    tensor(2.)
    """
    if not input.dtype.is_floating_point or input.dim() == 0:
        r = median(input, dim, keepdim)
        return r if dim is None else return_types.nanmedian(*r)
    flat = dim is None
    x = input.reshape(-1) if flat else input
    if flat and x.numel() == 0:
        return x.new_full((), float("nan"))
    d = 0 if flat else _wrap_dim(dim, input.dim(), "nanmedian")
    s = sort(x, d)  # NaN sorts last: the lower median of the first `count` entries
    at = (x.isnan().logical_not().sum(d, keepdim=True) - 1).clamp(min=0) // 2
    values, idx = s.values.gather(d, at), s.indices.gather(d, at)
    if flat:
        return values.reshape(())
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return return_types.nanmedian(values, idx)


def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """The most frequent value along ``dim`` (the smallest among ties) and the last index where it occurs.

    Runs of equal values in the sorted rows give every count at once; the values are gathered from
    ``input``, so they carry its gradient.

    >>> import ember
    >>> ember.tensor([1, 2, 2, 3, 2]).mode()
    mode(values=tensor(2), indices=tensor(4))
    """
    from .creation import arange
    from .shape import cat

    if input.dim() == 0:
        return return_types.mode(input.clone(), input.new_zeros((), dtype=dtypes.int64))
    d = _wrap_dim(dim, input.dim(), "mode")
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    x = input.detach().movedim(d, -1)
    s = x.sort(-1).values
    pos = arange(n, device=input.device)
    differs = s[..., 1:] != s[..., :-1]
    edge = (s[..., :1] == s[..., :1])  # all True, shaped (..., 1)
    where = pointwise.where
    start = where(cat([edge, differs], -1), pos, 0).cummax(-1).values
    end = where(cat([differs, edge], -1), pos, n).flip(-1).cummin(-1).values.flip(-1)
    best = (end - start).argmax(-1, keepdim=True)  # the first longest run: the smallest value among ties
    idx = where(x == s.gather(-1, best), pos, -1).amax(-1, keepdim=True).movedim(-1, d)
    vals = input.gather(d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return return_types.mode(vals, idx)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (sorted), optionally with the inverse indices and counts."""
    host = input.detach().cpu().numpy()
    if dim is None:
        u, inv, cnt = np.unique(host, return_inverse=True, return_counts=True)
        inv = inv.reshape(host.shape)
    else:
        d = _wrap_dim(dim, input.dim(), "unique")
        u, inv, cnt = np.unique(host, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    from .creation import tensor

    out = [tensor(u, device=input.device)]
    if return_inverse:
        out.append(tensor(inv.astype(np.int64), device=input.device))
    if return_counts:
        out.append(tensor(cnt.astype(np.int64), device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    host = input.detach().cpu().numpy().reshape(-1) if dim is None else None
    if host is None:
        raise NotImplementedError("unique_consecutive with dim is not supported yet")
    keep = np.ones(host.shape[0], bool)
    keep[1:] = host[1:] != host[:-1]
    from .creation import tensor

    out = [tensor(host[keep], device=input.device)]
    if return_inverse:
        out.append(tensor((np.cumsum(keep) - 1).reshape(input.shape), device=input.device))
    if return_counts:
        starts = np.nonzero(keep)[0]
        out.append(tensor(np.diff(np.append(starts, host.shape[0])), device=input.device))
    return out[0] if len(out) == 1 else tuple(out)


def equal(input, other) -> bool:  # noqa: A002
    """True when both have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (a bool tensor)."""
    from ..autograd.grad_mode import no_grad

    with no_grad():
        a, b = input.detach(), other.detach() if isinstance(other, Tensor) else other
        close = (a - b).abs() <= atol + rtol * (b.abs() if isinstance(b, Tensor) else abs(b))
        close = close.logical_or(a == b)
        if equal_nan:
            close = close.logical_or(a.isnan().logical_and(b.isnan() if isinstance(b, Tensor) else False))
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:  # noqa: A002
    """Whether every element is close (see :func:`isclose`)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


# --------------------------------------------------------------------------- in-place forms
def _inplace_of(fn, name):
    """``name_``: compute ``fn`` out of place, then write it into self (history through the result)."""

    def method(self, *args, **kwargs):
        from .inplace import copy_

        r = fn(self, *args, **kwargs)
        if r.dtype.category > self.dtype.category:
            raise RuntimeError(f"{name}_: result type {r.dtype} can't be cast to the desired output type "
                               f"{self.dtype}")
        return copy_(self, r)

    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}``; returns self."
    return method


_INPLACE = ["exp", "log", "sqrt", "abs", "neg", "sign", "relu", "pow", "clamp", "clip", "clamp_min", "clamp_max",
            "lerp", "fmod", "remainder", "floor_divide", "masked_fill", "nan_to_num", "minimum", "maximum",
            "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
            "bitwise_not", "atan2", "true_divide", "multiply", "subtract", "divide", "where"] + \
    list(pointwise.UNARY) + ["cumsum"]

METHODS = {"sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
           "median": median, "nanmedian": nanmedian, "mode": mode, "unique": unique,
           "unique_consecutive": unique_consecutive, "equal": equal, "allclose": allclose, "isclose": isclose}
for _n in _INPLACE:
    _f = pointwise.METHODS.get(_n) or reduction.METHODS.get(_n)
    if _f is not None and _n + "_" not in METHODS:
        METHODS[_n + "_"] = _inplace_of(_f, _n)
METHODS["__ipow__"] = METHODS["pow_"]
METHODS["__ifloordiv__"] = METHODS["floor_divide_"]
METHODS["__imod__"] = METHODS["remainder_"]
METHODS["__iand__"] = METHODS["bitwise_and_"]
METHODS["__ior__"] = METHODS["bitwise_or_"]
METHODS["__ixor__"] = METHODS["bitwise_xor_"]
