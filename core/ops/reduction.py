"""Reductions: ``sum``, ``mean`` (the full set with dims, keepdim and dtype)."""
from __future__ import annotations

from .. import dtypes
from ..autograd.function import Op
from ..dispatch import cast, unary
from ..tensor import Tensor, _wrap_dim


__all__ = ["mean", "sum"]


def dims_arg(dim, ndim, op):
    """``dim`` (None, int or sequence) as a sorted tuple of non-negative axes, or None for all."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        axes = tuple(sorted(_wrap_dim(d, ndim, op) for d in dim))
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"{op}(): dim {list(dim)} appears multiple times in the list of dims")
        return axes
    return (_wrap_dim(dim, ndim, op),)


def _restore(g, in_shape, axes, keepdim):
    """Broadcast a reduced gradient back to ``in_shape``."""
    if axes is None:
        return g.expand(in_shape) if in_shape else g
    if not keepdim:
        shape = list(in_shape)
        for a in axes:
            shape[a] = 1
        g = g.reshape(shape)
    return g.expand(in_shape)


class Sum(Op):
    @staticmethod
    def forward(ctx, k, x, axes, keepdim, dtype):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return k["sum"](x, axes, keepdim, dtype)

    @staticmethod
    def backward(ctx, g):
        return _restore(g, ctx.in_shape, ctx.axes, ctx.keepdim)


class Mean(Op):
    @staticmethod
    def forward(ctx, k, x, axes, keepdim, dtype):
        ctx.in_shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        n = 1
        for a in (range(x.ndim) if axes is None else axes):
            n *= x.shape[a]
        ctx.n = n
        return k["mean"](x, axes, keepdim, dtype)

    @staticmethod
    def backward(ctx, g):
        return _restore(g / ctx.n, ctx.in_shape, ctx.axes, ctx.keepdim)


class SumTo(Op):
    backward_name = "SumBackward1"

    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k["sum_to"](x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.in_shape)


def _sum_dtype(t, dtype):
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    if t.dtype.category <= dtypes.INT:
        return dtypes.int64
    return None


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A001,A002
    """Sum of all elements, or over ``dim`` (int or tuple).

    >>> import ember
    >>> ember.tensor([[1., 2.], [3., 4.]]).sum(0)
    tensor([4., 6.])
    """
    if dim is None and dtype is None and out is None and isinstance(input, Tensor) \
            and input._data.dtype.kind in "fc":
        return unary(Sum, input, None, False, None)
    if not isinstance(input, Tensor):
        raise TypeError(f"sum(): argument 'input' must be Tensor, not {type(input).__name__}")
    axes = dims_arg(dim, input.dim(), "sum")
    d = _sum_dtype(input, dtype)
    if d is not None:
        input = cast(input, d)
    r = unary(Sum, input, axes, keepdim, None)
    return _out(r, out)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """Mean of all elements, or over ``dim``; needs a floating (or complex) dtype."""
    if dtype is not None:
        input = cast(input, dtypes.as_dtype(dtype))
    if input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {input.dtype.name.capitalize()}")
    axes = dims_arg(dim, input.dim(), "mean")
    return _out(unary(Mean, input, axes, keepdim, None), out)


def _out(r, out):
    if out is None:
        return r
    from .inplace import copy_into_out

    return copy_into_out(out, r)


METHODS = {"sum": sum, "mean": mean}
