"""In-place ops and the history they rewrite.

An in-place op computes its result like the out-of-place op, writes it into
the tensor's storage and bumps the shared version counter.  Under autograd
the tensor takes the op's node as its new history; when it is a view, the
base's history is rewritten with a :class:`CopySlices` node, as PyTorch does.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..autograd.function import Op, composite_node, rename_node
from ..dispatch import apply
from ..dtypes import SCALARS as _SCALARS
from ..writes import check_overlap, inplace
from ..registry import export
from ..tensor import Tensor, _wrap
from . import pointwise as pw
from .creation import tensor
from .indexing import _check_bounds, _convert_index, _ints_first, _is_basic, getitem, keep_indices
from .shape import Getitem, expand

TENSOR = ("Tensor",)

# --------------------------------------------------------------------------- ops used only in place
class Copy(Op):
    tags = ("pointwise",)
    backward_name = "CopyBackwards"

    def name(self) -> str:
        n = type(self).__name__  # (another name where the node was renamed: fill_ with a tensor's FillBackward3)
        return "torch::autograd::CopyBackwards" if n == "CopyBackwards" else n  # PyTorch's name() of its copy_ node

    @staticmethod
    def forward(ctx, k, x, src):
        return k["expand"](src, x.shape)

    @staticmethod
    def backward(ctx, g):
        return _overwritten(ctx, g), g


def _overwritten(ctx, g):
    """The gradient of a written tensor's old value, which the write replaced: zeros where that value has a
    history (PyTorch's ``zeros_like(grad)``, so a leaf behind it gets a zero ``.grad``, not None), else none."""
    return g.new_zeros(g.shape) if ctx.next_functions[0][0] is not None else None


class Fill(Op):
    tags = ("pointwise",)
    @staticmethod
    def forward(ctx, k, x, value):
        return k["full"](x.shape, value, x.dtype)

    @staticmethod
    def backward(ctx, g):
        return _overwritten(ctx, g), None  # (the scalar fill value gets no gradient)


class IndexPut(Op):
    """``x[index] = v`` for advanced indices (as a new array; written back in place)."""

    inplace_name = "index_put_"
    _saved = ()  # (see Getitem: its index tensors count as saved)

    @staticmethod
    def forward(ctx, k, x, v, index):
        out = k["copy"](x)
        try:
            k["setitem"](out, index, v)
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to indexing "
                               f"result of shape {list(k['getitem'](x, index).shape)}") from None
        keep = k["full"](x.shape, 1, x.dtype)  # 1 where x survives, 0 where it is overwritten
        k["setitem"](keep, index, 0)
        ctx.index, ctx.keep, ctx.v_shape = index, keep, v.shape
        return out

    @staticmethod
    def backward(ctx, g):
        keep = _wrap(ctx.keep, g._dev)
        gv = apply(Getitem, g, ctx.index) if ctx.next_functions[1][0] is not None else None
        if gv is not None and tuple(gv.shape) != tuple(ctx.v_shape):
            gv = gv.sum_to_size(ctx.v_shape)
        return g * keep, gv, None


# --------------------------------------------------------------------------- methods
@export(to=TENSOR)
def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, any dtype, any device) into ``self``."""
    if not isinstance(src, Tensor):
        src = tensor(src, dtype=self.dtype, device=self.device)
    if src._dev is not self._dev:
        src = src.to(self.device, non_blocking=non_blocking)
    if src.dtype is not self.dtype:
        src = src.to(self.dtype)
    if self._data.shape != src._data.shape:
        expand(src, self.shape)  # clear error when src does not broadcast
    if self._data is src._data:
        return self
    return inplace(Copy, self, src)


@export(to=("torch", "Tensor"))
def fill_(self, value):
    """Fill with a scalar (or a one-element tensor)."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               f"dimensions.")
        check_overlap(self)  # a tensor value is copied, and PyTorch's copy refuses shared memory (a number fills)
        if value._rg:  # (its gradient: the sum of the result's)
            return _fill_node(copy_(self, value), "FillBackward3")
        return _fill_node(inplace(Fill, self, dtypes.fill_value(value.item(), self.dtype)), "FillBackward3")
    return _fill_node(inplace(Fill, self, dtypes.fill_value(value, self.dtype)), "FillBackward2")


def _fill_node(t, name):
    """``t``, whose history is now a Fill or Copy node (not a view's), under PyTorch's name for the in-place
    form."""
    return rename_node(t, name) if type(t._fn) in (Fill, Copy) else t


@export(to=("torch", "Tensor"))
def zero_(self):
    """Fill with zeros."""
    return _fill_node(inplace(Fill, self, 0), "ZeroBackward0")


@export(to=("torch",))
def fill(input, value):  # noqa: A002
    """A tensor like ``input`` filled with ``value`` (a number or a 0-d tensor, which receives the gradient).

    >>> import ember
    >>> ember.fill(ember.zeros(2), 3.)
    tensor([3., 3.])
    """
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               f"dimensions.")
        value, node = value.to(input.dtype), "FillBackward1"
    else:
        value, node = tensor(value, dtype=input.dtype, device=input.device), "FillBackward0"
    return composite_node(pw.where(input.new_zeros(input.shape, dtype=dtypes.bool), input, value), node)


def _arith_(Cls, name):
    def method(self, other, **kw):
        alpha = kw.pop("alpha", 1)
        if kw:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kw)}")
        if alpha != 1 or type(alpha) is bool:
            other = pw.scaled_other(name[:-1], self, other, alpha)
        if Cls.promotion != "default" and self.dtype.category < dtypes.FLOAT:  # div_ on an integer tensor
            dtypes.check_out_cast(name, dtypes.computation_dtype(Cls.promotion, self.dtype), self.dtype)
        if not isinstance(other, (Tensor,) + _SCALARS):
            raise TypeError(f"{name}(): argument 'other' must be Tensor or Number, not {type(other).__name__}")
        return inplace(Cls, self, other)

    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``; returns self."
    return method


def _fills_by_mask(idx, value, backend) -> bool:
    """Whether PyTorch writes ``value`` through masked_fill, which casts it: one element, and one bool mask the
    only advanced index (else its index_put_ refuses a value of another dtype).  ``idx`` is converted (the
    advanced entries are arrays of ``backend``)."""
    adv = [i for i in idx if not (i is None or i is Ellipsis or isinstance(i, (int, slice)))]
    return value.numel() == 1 and len(adv) == 1 and backend.dtype_of(adv[0]) is dtypes.bool


def _whole(t, index) -> bool:
    """Whether basic ``index`` (slices and one Ellipsis) selects every element of ``t``: PyTorch's setitem then
    writes into ``t`` itself, not into a view of it."""
    items = index if type(index) is tuple else (index,)
    for i in items:
        if type(i) is not slice and i is not Ellipsis:  # (the common case: an integer first)
            return False
    shape = t._data.shape
    k = next((j for j, i in enumerate(items) if i is Ellipsis), None)
    slices = [i for i in items if i is not Ellipsis]
    if len(slices) > len(shape) or len(slices) < len(items) - 1:
        return False
    dims = range(len(slices)) if k is None else [*range(k), *range(len(shape) - len(slices) + k, len(shape))]
    try:
        return all(s.indices(shape[d]) == (0, shape[d], 1) for d, s in zip(dims, slices))
    except TypeError:  # (bounds that are not integers: getitem reports them)
        return False


@export(name="__setitem__", to=TENSOR)
def setitem(self, index, value):
    """``self[index] = value`` (differentiable with respect to ``value``)."""
    split = _ints_first(index)
    if split is not None:  # integers select first, as in getitem (PyTorch's rule)
        return setitem(getitem(self, split[0]), split[1], value)
    idx = _convert_index(self, index, "index_put_")
    _check_bounds(self, idx)
    given = isinstance(value, Tensor)
    if not given:
        if not isinstance(value, _SCALARS) and not isinstance(value, (list, tuple)):
            raise TypeError(f"can't assign a {type(value).__name__} to a {self.type()}")
        value = tensor(value, dtype=self.dtype, device=self.device)
    if _is_basic(idx):
        dst = self if _whole(self, index) else getitem(self, index)
        if value.dim() == 0 and dst.dim() != 0 and (not given or value.device.type == "cpu"):
            fill_(dst, value)  # (PyTorch's setitem fills with a number or a 0-d CPU tensor: FillBackward3)
            return
        if value.dim() > dst.dim():  # a value's leading ones are dropped first, as PyTorch's setitem does
            lead = next((i for i, n in enumerate(value.shape) if n != 1), value.dim())
            value = value.view(value.shape[lead:])
        copy_(dst, value)
        return
    if value.dtype is not self.dtype:
        if given and not _fills_by_mask(idx, value, self._dev.backend):
            raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                               f"{dtypes.type_name(self.dtype)} for the destination and "
                               f"{dtypes.type_name(value.dtype)} for the source.")
        value = value.to(self.dtype)
    before = self._fn
    inplace(IndexPut, self, value, idx)
    if self._fn is not before:
        keep_indices(self, self, idx, accumulate=False)


add_ = export(_arith_(pw.Add, "add_"), to=TENSOR, aliases=("__iadd__",))
sub_ = export(_arith_(pw.Sub, "sub_"), to=TENSOR, aliases=("__isub__",))
mul_ = export(_arith_(pw.Mul, "mul_"), to=TENSOR, aliases=("__imul__",))
div_ = export(_arith_(pw.Div, "div_"), to=TENSOR, aliases=("__itruediv__",))


# --------------------------------------------------------------------------- Python callables, element by element
def _call_elementwise(name, self, fn, others):
    """``self[...] = fn(self, *others)`` element by element (CPU tensors without grad, as PyTorch allows)."""
    if self._rg or any(o._rg for o in others):
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if self.device.type != "cpu" or any(o.device.type != "cpu" for o in others):
        raise TypeError(f"{name}_ is only implemented on CPU tensors (got {self.device})")
    if not callable(fn):
        raise TypeError(f"{name}(): argument 'callable' must be callable, not {type(fn).__name__}")
    args = [self.numpy()] + [expand(o, self.shape).numpy() for o in others]
    out = np.frompyfunc(fn, len(args), 1)(*args)  # the user's function, one call per element
    return copy_(self, tensor(np.asarray(out, dtype=args[0].dtype), device=self.device))


@export(to=TENSOR)
def apply_(self, callable):  # noqa: A002 - PyTorch's name
    """Replace each element ``v`` by ``callable(v)`` (slow: one Python call per element; CPU only)."""
    return _call_elementwise("apply_", self, callable, ())


@export(to=TENSOR)
def map_(self, tensor, callable):  # noqa: A002 - PyTorch's names
    """Replace each element ``v`` by ``callable(v, w)``, ``w`` from ``tensor`` broadcast (CPU only)."""
    return _call_elementwise("map_", self, callable, (tensor,))


@export(to=TENSOR)
def map2_(self, x, y, callable):  # noqa: A002 - PyTorch's name
    """Replace each element ``v`` by ``callable(v, a, b)``, ``a`` and ``b`` from ``x`` and ``y`` broadcast (CPU
    only)."""
    return _call_elementwise("map2_", self, callable, (x, y))
