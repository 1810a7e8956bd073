"""Shape and movement ops: views where PyTorch makes views, joining, splitting, triangles, diagonals.

Also the ops of ``x[index]`` (:class:`Getitem`, the view :class:`SliceView`), which the views here
(``narrow``, ``select``, ``split``, ``unbind``) are made of; :mod:`ember.ops.indexing` builds on this module.
"""
from __future__ import annotations

import math
import warnings
from itertools import accumulate

from .. import dtypes
from ..autograd.function import (Node, Op, composite_node, grad_edge, keep_args, keep_saved, named_node, optional,
                                 rename_node)
from ..autograd.grad_mode import STATE
from ..autograd.grad_mode import no_grad as _no_grad
from ..backend import resolve
from .. import dispatch
from ..dispatch import apply, cast, result_type, unary, view_op
from ..writes import out_or
from ..registry import NAMESPACES, _type_name, export, op_class
from ..arguments import sequence_arg
from ..layouts import check_memory_format, contiguous_format, preserve_format, suggested_format, to_format
from ..tensor import Size, Tensor, _contiguous_strides, _wrap, _wrap_dim
from .creation import arange
from .creation import create as _create

TORCH, TENSOR = ("torch",), ("Tensor",)


def _shape_arg(shape, op):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    return tuple(map(int, shape))


def infer_shape(shape, numel, op="view"):
    """Resolve a single ``-1`` in ``shape`` and check the element count."""
    if shape and min(shape) >= 0 and math.prod(shape) == numel:  # every size given, and they fit: nothing to do
        return tuple(shape)
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{op}: invalid shape dimension {min(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


class View(Op):
    tags = ("view",)
    # (squeeze and unsqueeze are this node under their PyTorch names, keeping their dim as given; unsqueeze keeps no
    # sizes)
    saved_args = {"dim": lambda n: n.__dict__.get("given_dim"),
                  "self_sym_sizes": lambda n: None if type(n).__name__.startswith("Unsq") else n.in_shape}

    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k["view"](x, shape)

    @staticmethod
    def backward(ctx, g):
        if dispatch.on_arrays(g):  # no graph is being built: the reshape on arrays
            return _wrap(g._dev.kernels["reshape"](g._data, ctx.in_shape), g._dev)
        return g.reshape(ctx.in_shape)


class ViewDtype(Op):
    """``x.view(dtype)``: the bytes reinterpreted (not differentiable, as in PyTorch)."""

    tags = ("view",)

    @staticmethod
    def forward(ctx, k, x, dtype):
        return k["view_dtype"](x, dtype)


def _view_dtype(self, d):
    """``self.view(dtype)``, with PyTorch's rules for element sizes that differ."""
    if d is self.dtype:
        return view_op(ViewDtype, self.detach(), self._dev.backend.array_dtype(d))
    old, new = self.element_size(), d.itemsize
    src, dst = _type_name(self.dtype), _type_name(d)
    if old != new:
        if self.dim() == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {src} as {dst} (different element sizes)")
        if self.stride(-1) != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {src} as {dst} (different element sizes), "
                               f"but got {self.stride(-1)}")
        if new > old and (self.shape[-1] * old) % new:
            raise RuntimeError(f"self.size(-1) must be divisible by {new // old} to view {src} as {dst} "
                               f"(different element sizes), but got {self.shape[-1]}")
    try:
        return view_op(ViewDtype, self.detach(), self._dev.backend.array_dtype(d))
    except RuntimeError:
        raise RuntimeError(f"view: cannot view {src} of shape {list(self.shape)} and strides {list(self.stride())} "
                           f"as {dst}") from None


class Reshape(Op):
    backward_name = "ViewBackward0"
    saved_args = {"self_sym_sizes": "in_shape"}

    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k["reshape"](x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape)


def _permute_vjp(ctx, g):
    inv = [0] * len(ctx.dims)
    for i, d in enumerate(ctx.dims):
        inv[d] = i
    return g.permute(inv)


def _swapped(node):
    """The two dimensions a transpose exchanged (both the same where it exchanged none)."""
    return [i for i, d in enumerate(node.dims) if i != d] or [0]


Permute = op_class("Permute", "permute", vjp=_permute_vjp, params=("dims",), tags=("view",))
Permute.saved_args = {"dims": "dims"}


def _transposed(node):
    """The two dims a transpose exchanged: as given (set on the node by :func:`transpose`), else its permutation's."""
    given = node.__dict__.get("given_dims")
    if given is not None:
        return given
    swapped = _swapped(node)
    return swapped[0], swapped[-1]


class Transpose(Permute):
    backward_name = "TransposeBackward0"
    saved_args = {"dim0": lambda n: _transposed(n)[0], "dim1": lambda n: _transposed(n)[1]}


class T(Permute):
    backward_name = "TBackward0"
    saved_args = None


class Expand(Op):
    tags = ("view",)
    saved_args = {"self_sym_sizes": "in_shape"}
    zero_strides = True  # its output may have dimensions of stride 0 (dispatch.internal_overlap)

    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k["expand"](x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.sum_to_size(ctx.in_shape)


def _identity_vjp(ctx, g):
    return g


Clone = op_class("clone", "copy", vjp=_identity_vjp, tags=("pointwise",), onnx="Identity")
Contiguous = op_class("contiguous", vjp=_identity_vjp, backward_name="CloneBackward0",
                      tags=("pointwise",), onnx="Identity")


# --------------------------------------------------------------------------- x[index]
class Getitem(Op):
    """``x[index]``; ``index`` is already in array terms (ints, slices, None, Ellipsis, arrays)."""

    backward_name = "IndexBackward0"
    _saved = ()  # (its index tensors count as saved: the engine releases the node, and _saved_indices then raises)

    @staticmethod
    def forward(ctx, k, x, index):
        ctx.in_shape, ctx.index = x.shape, index
        return k["getitem"](x, index)

    @staticmethod
    def backward(ctx, g):
        if dispatch.on_arrays(g):  # no graph is being built: the zeros and the scatter on arrays
            return _wrap(_zeros_with(g._dev.kernels, g._data, ctx.in_shape, ctx.index), g._dev)
        return apply(IndexPutZeros, g, ctx.in_shape, ctx.index)


def _zeros_with(k, g, shape, index):
    """Zeros of ``shape`` with array ``g`` added at ``index`` (repeated indices accumulate)."""
    out = k["full"](shape, 0, g.dtype)
    k["index_put_acc"](out, index, g)
    return out


def _whole(i, size):
    """Whether slice ``i`` takes the whole of a dimension of ``size`` (no step of PyTorch's indexing)."""
    return i.start in (None, 0) and i.step in (None, 1) and (i.stop is None or i.stop >= size)


def index_walk(index, sizes, span=None):
    """Walk ``index`` (a tuple of converted entries) over a tensor of shape ``sizes`` (a list, changed as each
    step changes the shape) left to right, as PyTorch applies it: yields ``(dim, entry)`` for each step that
    does something, before ``sizes`` changes: an integer selects at ``dim``, None inserts a dim there, a slice
    that is not the whole dim slices it, an array (an advanced index) stands there, spanning ``span(entry)``
    dims (one, but a mask's ndim).  ``...`` moves past the dims the other entries leave."""
    def width(e):
        return 1 if span is None or type(e) is int or type(e) is slice else span(e)

    nd, dim = len(sizes), 0
    for e in index:
        if e is Ellipsis:
            dim += nd - sum(width(i) for i in index if i is not None and i is not Ellipsis)
        elif e is None:
            yield dim, e
            sizes.insert(dim, 1)
            dim += 1
        elif type(e) is slice:
            if not _whole(e, sizes[dim]):
                yield dim, e
                sizes[dim] = len(range(*e.indices(sizes[dim])))
            dim += 1
        elif type(e) is int:
            yield dim, e
            del sizes[dim]
        else:
            yield dim, e
            dim += width(e)


def _last_step(node):
    """``(dim, entry, sizes)`` of the last step of a basic index (PyTorch's last node of the select, slice and
    unsqueeze steps it chains, left to right): the dim it acts on and the sizes of the tensor it acts on."""
    index = node.index if type(node.index) is tuple else (node.index,)
    sizes, last = list(node.in_shape), None
    for dim, e in index_walk(index, sizes):
        last = (dim, e, tuple(sizes))
    if last is None and type(index[0]) is slice:  # (a bare slice of the whole dim: PyTorch's x[:] still slices)
        return 0, index[0], tuple(node.in_shape)
    return last


def _end(stop):
    return 2 ** 63 - 1 if stop is None else stop  # (PyTorch's end of an open slice)



class SliceView(Getitem):
    tags = ("view",)
    backward_name = "SliceBackward0"
    saved_args = {"dim": lambda n: _last_step(n)[0], "start": lambda n: _last_step(n)[1].start or 0,
                  "end": lambda n: _end(_last_step(n)[1].stop), "step": lambda n: _last_step(n)[1].step or 1,
                  "self_sym_sizes": lambda n: _last_step(n)[2]}


class SelectView(Getitem):
    """A basic index whose last step selects an integer position (``x[0]``, ``x[:, 1]``)."""

    tags = ("view",)
    saved_args = {"dim": lambda n: _last_step(n)[0], "index": lambda n: _last_step(n)[1],
                  "self_sym_sizes": lambda n: _last_step(n)[2]}


    backward_name = "SelectBackward0"


class UnsqueezeView(Getitem):
    """A basic index whose last step inserts an axis (``x[None]``, ``x[0, None]``)."""

    tags = ("view",)
    saved_args = {"dim": lambda n: _last_step(n)[0]}

    backward_name = "UnsqueezeBackward0"


class AliasView(Getitem):
    """``x[...]``: the whole tensor."""

    tags = ("view",)

    backward_name = "AliasBackward0"


class IndexPutZeros(Op):
    """Zeros of ``shape`` with ``g`` added at ``index``: the gradient of ``x[index]``."""

    backward_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, k, g, shape, index):
        ctx.index = index
        return _zeros_with(k, g, shape, index)

    @staticmethod
    def backward(ctx, gg):
        return apply(Getitem, gg, ctx.index)


# --------------------------------------------------------------------------- public functions
@export(to=TENSOR)
def view(self, *shape, **kw):
    """A view with a new shape (no copy; fails when the strides do not allow it); ``view(size=...)`` and
    ``view(dtype)`` / ``view(dtype=...)`` as in PyTorch.

    >>> import ember
    >>> ember.arange(6).view(3, 2).shape
    ember.Size([3, 2])
    """
    given = None if kw else _given_sizes(shape, self._data.shape)
    if given is not None:
        shape = given
    else:
        if kw or not shape:
            shape = (kw["dtype"],) if not shape and list(kw) == ["dtype"] else sequence_arg(shape, kw, "view", "size")
        if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and shape[0] is not None:
            return _view_dtype(self, dtypes.as_dtype(shape[0]))
        shape = infer_shape(_shape_arg(shape, "view"), self.numel(), "view")
    try:
        return view_op(View, self, shape)
    except (AttributeError, ValueError, RuntimeError):
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at least one "
                           f"dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                           f"(input shape {list(self.shape)}, requested {list(shape)})") from None


def _given_sizes(shape, sizes):
    """``shape`` (a view's or reshape's varargs) as the new sizes, with a ``-1`` inferred, when it is plain ints that
    fit data of ``sizes`` (the common call, which needs no parsing); None for every other form and every error."""
    if not shape:
        return None
    for s in shape:
        if type(s) is not int or s < -1:
            return None
    n, known = math.prod(sizes), math.prod(shape)
    if -1 not in shape:
        return shape if known == n else None
    if known < 0 and shape.count(-1) == 1 and n % known == 0:  # one -1, beside no zero size
        i = shape.index(-1)
        return shape[:i] + (n // -known,) + shape[i + 1:]
    return None


def _unsafe_view(t, shape):
    """``t`` in ``shape`` as PyTorch's ``_unsafe_view``: the data (shared where the layout allows) under a version
    counter of its own, so what a later node saves of it is not refused by an in-place change of ``t``."""
    return rename_node(unary(Reshape, t, shape), "UnsafeViewBackward0")


@export
def reshape(input, *shape, **kw):  # noqa: A002
    """The same data in a new shape; a view when possible, else a copy.

    >>> import ember
    >>> ember.arange(6).reshape(2, -1)
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """
    given = None if kw else _given_sizes(shape, input._data.shape)
    if given is not None:
        shape = given
    else:
        if kw or not shape:
            shape = sequence_arg(shape, kw, "reshape", "shape")
        shape = infer_shape(_shape_arg(shape, "reshape"), input.numel(), "reshape")
    if input.is_contiguous():
        return view_op(Reshape, input, shape)
    if strides_allow(tuple(input.shape), input.stride(), shape):  # a view of strided data: PyTorch's node's name
        return rename_node(view_op(Reshape, input, shape), "ReshapeAliasBackward0")
    return _unsafe_view(input, shape)  # PyTorch's node of a copying reshape


def strides_allow(shape, strides, new_shape) -> bool:
    """Whether data of ``shape`` and ``strides`` can be seen in ``new_shape`` without a copy: every run of
    dimensions that lie one after another in memory maps onto whole dimensions of ``new_shape``."""
    if 0 in shape:
        return True
    d_new, n_old, n_new = len(new_shape) - 1, 1, 1
    base = strides[-1] if strides else 1
    for d in range(len(shape) - 1, -1, -1):
        n_old *= shape[d]
        if d == 0 or shape[d - 1] != 1 and strides[d - 1] != n_old * base:  # a run of dims ends at d
            while d_new >= 0 and (n_new < n_old or new_shape[d_new] == 1):
                n_new *= new_shape[d_new]
                d_new -= 1
            if n_new != n_old:
                return False
            if d > 0:
                base, n_old, n_new = strides[d - 1], 1, 1
    return d_new == -1


@export
def permute(input, *dims, **kw):  # noqa: A002
    """A view with dimensions reordered.

    >>> import ember
    >>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
    ember.Size([4, 2, 3])
    """
    if kw or not dims:
        dims = sequence_arg(dims, kw, "permute", "dims")
    dims = _shape_arg(dims, "permute")
    n = input.dim()
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, n, "permute") for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return view_op(Permute, input, dims)


@export(aliases=("swapdims",))
def transpose(input, dim0, dim1):  # noqa: A002
    """A view with two dimensions swapped.

    >>> import ember
    >>> ember.zeros(2, 3, 4).transpose(0, 2).shape
    ember.Size([4, 3, 2])
    """
    n = input.dim()
    if n == 0:
        return view_op(Transpose, input, ())
    d0, d1 = _wrap_dim(dim0, n, "transpose"), _wrap_dim(dim1, n, "transpose")
    dims = list(range(n))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    r = view_op(Transpose, input, tuple(dims))
    if r._fn is not None:
        r._fn.given_dims = (dim0, dim1)  # (PyTorch's node keeps them as given: _saved_dim0, _saved_dim1)
    return r


@export
def swapaxes(input, axis0, axis1):  # noqa: A002
    """:func:`transpose` under NumPy's name and parameter names."""
    return transpose(input, axis0, axis1)


@export
def t(input):  # noqa: A002
    """Transpose of a tensor of at most 2 dimensions.

    >>> import ember
    >>> ember.tensor([[1, 2, 3]]).t().shape
    ember.Size([3, 1])
    """
    n = input.dim()
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return view_op(T, input, tuple(range(n))[::-1])


@export(to=TENSOR)
def expand(self, *size, implicit=False, **kw):
    """A broadcast view (no copy); ``-1`` keeps a dimension.

    >>> import ember
    >>> ember.tensor([[1], [2]]).expand(2, 3)
    tensor([[1, 1, 1],
            [2, 2, 2]])
    """
    sizes = sequence_arg(size, kw, "expand", "size") if kw or not size else size
    if len(sizes) == 1 and type(sizes[0]) in (tuple, list, Size):
        sizes = tuple(sizes[0])
    own = self._data.shape
    n, k = len(sizes), len(own)
    if n < k:
        raise RuntimeError(f"expand({self.type()}{{{list(own)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({n}) must be greater or equal to the number of dimensions in the tensor ({k})")
    shape = list(sizes)
    for i in range(n):
        s = sizes[i]
        o = own[i - n + k] if i >= n - k else 1
        if s == -1:
            if i < n - k:
                raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
            shape[i] = o
        elif o != 1 and o != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({o}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(own)}")
    return view_op(Expand, self, tuple(shape))


@export(to=TENSOR)
def expand_as(self, other):
    return expand(self, other.shape)


@export(to=TENSOR)
def contiguous(self, memory_format=None):
    """A contiguous tensor with the same data: ``self`` if it already is one.

    >>> import ember
    >>> ember.zeros(2, 3).t().contiguous().is_contiguous()
    True
    """
    check_memory_format(memory_format, self.ndim, "contiguous")
    if memory_format is preserve_format and not self.is_contiguous():
        raise RuntimeError("contiguous: preserve memory format is unsupported by the contiguous operator")
    fmt = suggested_format(self, memory_format or contiguous_format)
    if fmt is not None:  # channels_last(_3d): dense with the channels innermost
        return to_format(self, fmt)
    if self.is_contiguous():
        return self
    return unary(Contiguous, self)


@export
def clone(input, *, memory_format=None):  # noqa: A002
    """A copy that stays in the graph."""
    check_memory_format(memory_format, input.ndim, "clone")
    fmt = suggested_format(input, memory_format)  # (None and preserve_format keep a channels-last input's order)
    if fmt is not None:
        return to_format(input, fmt, copy=True)
    if memory_format is contiguous_format and not input.is_contiguous():
        return unary(Contiguous, input)
    return unary(Clone, input)


@export
def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    """Merge dimensions ``start_dim..end_dim`` into one.

    >>> import ember
    >>> ember.zeros(2, 3, 4).flatten(1).shape
    ember.Size([2, 12])
    """
    n = input.dim()
    if n == 0:
        return reshape(input, 1)
    s, e = _wrap_dim(start_dim, n, "flatten"), _wrap_dim(end_dim, n, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape
    return reshape(input, tuple(shape[:s]) + (math.prod(shape[s:e + 1]),) + tuple(shape[e + 1:]))


@export(to=TORCH)
def squeeze(input, dim=None):  # noqa: A002
    """Drop dimensions of size one (all, or those in ``dim``).

    >>> import ember
    >>> ember.zeros(1, 3, 1).squeeze().shape
    ember.Size([3])
    """
    n = input.dim()
    sizes = input._data.shape
    if dim is None:
        shape = tuple(s for s in sizes if s != 1)
    elif not isinstance(dim, (tuple, list)):  # one dim: the sizes without it, if it is 1
        d = _wrap_dim(dim, n, "squeeze")
        shape = sizes[:d] + sizes[d + 1:] if n and sizes[d] == 1 else tuple(sizes)
    else:
        dims = {_wrap_dim(d, n, "squeeze") for d in dim}
        shape = tuple(s for i, s in enumerate(sizes) if not (i in dims and s == 1))
    # PyTorch's nodes of squeeze(), squeeze(int) and squeeze(dims), made so from the start
    r = view_op(_SQUEEZE[0 if dim is None else 2 if isinstance(dim, (tuple, list)) else 1], input, shape)
    if dim is not None and r._fn is not None:
        r._fn.given_dim = tuple(dim) if isinstance(dim, list) else dim
    return r


def _squeeze_method(self, *dims, **kw):
    """``Tensor.squeeze``: as :func:`squeeze`, and like PyTorch's method it also takes several dims as varargs.

    >>> import ember
    >>> ember.zeros(1, 1, 3).squeeze(0, 1).shape
    ember.Size([3])
    """
    if len(dims) > 1 and not kw:
        return squeeze(self, dims)
    return squeeze(self, *dims, **kw)


_squeeze_method.__name__ = _squeeze_method.__qualname__ = "squeeze"
export(_squeeze_method, to=TENSOR)


@export
def unsqueeze(input, dim):  # noqa: A002
    """Insert a dimension of size one at ``dim``.

    >>> import ember
    >>> ember.tensor([1, 2]).unsqueeze(1).shape
    ember.Size([2, 1])
    """
    sizes = input._data.shape
    d = _wrap_dim(dim, len(sizes) + 1, "unsqueeze")
    r = view_op(_Unsqueeze, input, sizes[:d] + (1,) + sizes[d:])
    if r._fn is not None:
        r._fn.given_dim = dim
    return r


_Unsqueeze = named_node(View, "UnsqueezeBackward0")  # View's node under PyTorch's name, made so from the start
_SQUEEZE = tuple(named_node(View, f"SqueezeBackward{i}") for i in range(3))


def _T(self):
    return permute(self, tuple(range(self.dim()))[::-1])


def _mT(self):
    if self.dim() < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(self, -2, -1)


def _H(self):
    return _T(self).conj() if self.is_complex() else _T(self)


export(property(_T), "T", to=TENSOR)
export(property(_mT), "mT", to=TENSOR)
export(property(_H), "H", to=TENSOR)


@export(to=TENSOR)
def view_as(self, other):
    return view(self, other.shape)


@export(to=TENSOR)
def reshape_as(self, other):
    return reshape(self, other.shape)


# --------------------------------------------------------------------------- joining and splitting
class Cat(Op):
    saved_args = {"dim": "axis"}

    @staticmethod
    def forward(ctx, k, arrays, axis):
        # legacy: 1-D empty tensors take no part whatever the other shapes (their size is None here)
        ctx.axis = axis
        try:
            sizes = [a.shape[axis] for a in arrays]
        except IndexError:  # a 1-D empty tensor beside tensors of more dims
            sizes = [0]
        if 0 not in sizes:  # (no 1-D empty tensor among them)
            ctx.sizes = sizes
            return k["cat"](arrays, axis)
        shapes = [a.shape for a in arrays]
        legacy = any(len(s) != 1 for s in shapes)
        ctx.sizes = [None if legacy and s == (0,) else s[axis] for s in shapes]
        return k["cat"]([a for a, n in zip(arrays, ctx.sizes) if n is not None], axis)

    @staticmethod
    def backward(ctx, g):
        sizes = [n for n in ctx.sizes if n is not None]
        if dispatch.on_arrays(g):  # no graph of the backward: the kernel's pieces, without the view op's bookkeeping
            cuts = list(accumulate(sizes[:-1]))
            pieces = iter([_wrap(a, g._dev) for a in g._dev.kernels["split"](g._data, cuts, ctx.axis)])
        else:
            pieces = iter(split(g, sizes, ctx.axis))
        return tuple(g.new_zeros(0) if n is None else next(pieces) for n in ctx.sizes)


def _stack_vjp(ctx, g):
    return unbind(g, ctx.axis)


Stack = op_class("Stack", "stack", vjp=_stack_vjp, params=("axis",))
Stack.saved_args = {"dim": "axis"}



class Split(Op):
    """Pieces between cut points along ``axis`` (views of the input)."""

    tags = ("view",)

    backward_name = "SplitWithSizesBackward0"
    multi_view = True  # in-place changes of the outputs are refused under autograd, as in PyTorch
    # (split(int)'s node, SplitBackward0, keeps the size given, set on it by split)
    saved_args = {"dim": "axis", "self_sym_sizes": lambda n: n._shapes[0][0],
                  "split_size": lambda n: n.__dict__.get("split_size"),
                  "split_sizes": lambda n: None if "split_size" in n.__dict__ else _piece_sizes(n)}

    @staticmethod
    def forward(ctx, k, x, bounds, axis):
        ctx.axis, ctx.bounds = axis, bounds
        return k["split"](x, bounds, axis)

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.axis)


def _piece_sizes(node):
    ends = [*node.bounds, node._shapes[0][0][node.axis]]
    return tuple(e - s for s, e in zip([0, *node.bounds], ends))


class Unbind(Op):
    tags = ("view",)
    multi_view = True
    saved_args = {"dim": "axis"}
    @staticmethod
    def forward(ctx, k, x, axis):
        ctx.axis = axis
        lead = (slice(None),) * axis
        return tuple(x[lead + (i, Ellipsis)] for i in range(x.shape[axis]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.axis)


def _tensors_arg(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    if not tensors:
        raise ValueError(f"torch.{op}(): expected a non-empty list of Tensors")
    first = tensors[0]
    if type(first) is Tensor:  # plain tensors of one dtype: one pass over their arrays' dtypes
        nd = first._data.dtype
        if all(type(t) is Tensor and t._data.dtype is nd for t in tensors):
            return list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    d = tensors[0].dtype
    if all(t.dtype is d for t in tensors):
        return list(tensors)
    rt = result_type(*tensors)
    return [cast(t, rt) for t in tensors]


def _check_cat_shapes(shapes, ref, d):
    """Raise PyTorch's error where a shape among ``shapes`` differs from ``ref`` outside dim ``d`` (1-D empty
    shapes take no part)."""
    head, tail = ref[:d], ref[d + 1:]
    for i, s in enumerate(shapes):
        if s == (0,) or (len(s) == len(ref) and s[:d] == head and s[d + 1:] == tail):
            continue
        if len(s) != len(ref):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref)} and {len(s)}")
        j = next(j for j in range(len(ref)) if j != d and s[j] != ref[j])
        raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                           f"{ref[j]} but got size {s[j]} for tensor number {i} in the list.")


@export(to=TORCH, aliases=("concat", "concatenate"))
def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Concatenate tensors along an existing dimension ``dim``.

    >>> import ember
    >>> ember.cat([ember.zeros(1, 2), ember.ones(2, 2)]).shape
    ember.Size([3, 2])
    """
    ts = _tensors_arg(tensors, "cat")
    shapes = [t._data.shape for t in ts]
    # legacy: 1-D empty tensors are skipped whatever the other shapes
    ref = shapes[0]
    if ref == (0,):
        ref = next((s for s in shapes if s != (0,)), ref)
    d = _wrap_dim(dim, len(ref), "cat")
    if len(set(shapes)) > 1:  # (one shape: nothing to compare)
        _check_cat_shapes(shapes, ref, d)
    return out_or(apply(Cat, ts, d) if len(ts) > 1 else unary(Clone, ts[0]), out)


@export(to=TORCH)
def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join same-shaped tensors along a new dimension ``dim``.

    >>> import ember
    >>> ember.stack([ember.zeros(2), ember.ones(2)], 1).shape
    ember.Size([2, 2])
    """
    ts = _tensors_arg(tensors, "stack")
    ref = ts[0]._data.shape
    for i, t in enumerate(ts if len({t._data.shape for t in ts}) > 1 else ()):
        if t._data.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 "
                               f"and {list(t.shape)} at entry {i}")
    d = _wrap_dim(dim, ts[0].dim() + 1, "stack")
    return out_or(apply(Stack, ts, d), out)


# the shape a tensor of fewer dimensions takes in atleast_<n>d, by n and its dimension
_ATLEAST = {1: {0: lambda s: (1,)},
            2: {0: lambda s: (1, 1), 1: lambda s: (1, s[0])},
            3: {0: lambda s: (1, 1, 1), 1: lambda s: (1, s[0], 1), 2: lambda s: (s[0], s[1], 1)}}


def _atleast(n, tensors):
    """``tensors`` (or the one list of them) given at least ``n`` dimensions, as a tuple."""
    return tuple(t.reshape(_ATLEAST[n][t.dim()](t.shape)) if t.dim() < n else t for t in _flat_args(tensors))


def _one_or_all(r):
    return r[0] if len(r) == 1 else r


@export(to=TORCH)
def atleast_1d(*tensors):
    """Tensors with at least one dimension (0-d ones become shape ``[1]``)."""
    return _one_or_all(_atleast(1, tensors))


@export(to=TORCH)
def atleast_2d(*tensors):
    """Tensors with at least two dimensions (leading ones added).

    >>> import ember
    >>> ember.atleast_2d(ember.tensor([1, 2])).shape
    ember.Size([1, 2])
    """
    return _one_or_all(_atleast(2, tensors))


@export(to=TORCH)
def atleast_3d(*tensors):
    """Tensors with at least three dimensions (a 2-D ``[m, n]`` becomes ``[m, n, 1]``)."""
    return _one_or_all(_atleast(3, tensors))


def _flat_args(tensors):
    return tuple(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors


@export(to=TORCH)
def hstack(tensors, *, out=None) -> Tensor:
    """Concatenate column-wise (along dim 0 for 1-D tensors, else dim 1).

    >>> import ember
    >>> ember.hstack([ember.tensor([1, 2]), ember.tensor([3])])
    tensor([1, 2, 3])
    """
    ts = _atleast(1, _tensors_arg(tensors, "hstack"))
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


@export(to=TORCH, aliases=("row_stack",))
def vstack(tensors, *, out=None) -> Tensor:
    """Concatenate row-wise, 1-D tensors becoming rows.

    >>> import ember
    >>> ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])])
    tensor([[1, 2],
            [3, 4]])
    """
    return cat(_atleast(2, _tensors_arg(tensors, "vstack")), 0, out=out)


@export(to=TORCH)
def dstack(tensors, *, out=None) -> Tensor:
    """Concatenate depth-wise (along dim 2, after :func:`atleast_3d`).

    >>> import ember
    >>> ember.dstack([ember.zeros(2, 3), ember.ones(2, 3)]).shape
    ember.Size([2, 3, 2])
    """
    return cat(_atleast(3, _tensors_arg(tensors, "dstack")), 2, out=out)


@export(to=TORCH)
def column_stack(tensors, *, out=None) -> Tensor:
    """Stack 1-D tensors as columns (and concatenate 2-D ones) into a matrix.

    >>> import ember
    >>> ember.column_stack([ember.tensor([1, 2]), ember.tensor([3, 4])])
    tensor([[1, 3],
            [2, 4]])
    """
    ts = _tensors_arg(tensors, "column_stack")
    return cat([t.reshape(-1, 1) if t.dim() < 2 else t for t in ts], 1, out=out)


def _slice_views(a, outs, axis, picks):
    """Make the outputs of a multi-view op views of ``a``: each replays as ``a[..., pick, ...]`` along ``axis``."""
    base = a._base if a._base is not None else a
    lead = (slice(None),) * axis
    nograd = not STATE.enabled  # views made under no_grad, as ember.dispatch.view_op marks them
    for o, pick in zip(outs, picks):
        o._base, o._view = base, (a._view, SliceView, (lead + (pick, Ellipsis),))
        if nograd:
            o._nograd_view, o._rg = True, a._rg
    return outs


@export(to=("torch",))
def split(tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Split into pieces of a given size (the last may be smaller) or of the given sizes; views.

    >>> import ember
    >>> [p.shape[0] for p in ember.arange(5).split(2)]
    [2, 2, 1]
    """
    d = _wrap_dim(dim, tensor.dim(), "split")
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, (list, tuple, Size)):
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                               f"at dimension {d}), but got split_sizes={sizes}")
    else:
        step = int(split_size_or_sections)
        if step < 0 or (step == 0 and n != 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        sizes = [min(step, n - i) for i in range(0, n, step)] if step else [0]
    bounds = list(accumulate(sizes[:-1]))
    outs = unary(Split, tensor, bounds, d)
    if not isinstance(split_size_or_sections, (list, tuple, Size)):
        rename_node(outs[0], "SplitBackward0")  # PyTorch's node of split(int); split_with_sizes keeps its own
        if outs[0]._fn is not None:
            outs[0]._fn.split_size = step
    return _slice_views(tensor, outs, d, [slice(s, e) for s, e in zip([0, *bounds], [*bounds, n])])


def _split_size(input, split_size, dim: int = 0) -> tuple:  # noqa: A002
    """:func:`split` as PyTorch's ``Tensor.split`` and ``unsafe_split`` name it (``split_size``: an int or sizes)."""
    return split(input, split_size, dim)


export(_split_size, "split", to=("Tensor",))


@export
def split_with_sizes(tensor, split_sizes, dim: int = 0) -> tuple:
    return split(tensor, list(split_sizes), dim)


def _unsafe(pieces):
    """``pieces`` of a split, their node under PyTorch's name of the ``unsafe_*`` form (``UnsafeSplitBackward0``,
    ``UnsafeSplitWithSizesBackward0``): the split's name after ``Unsafe``.  They share the input's memory but
    are not views to autograd (no base, a version counter of their own), so they may be changed in place: the
    point of the unsafe forms, as in PyTorch."""
    if pieces and pieces[0]._fn is not None:
        rename_node(pieces[0], "Unsafe" + type(pieces[0]._fn).__name__)
    for p in pieces:
        if p._nograd_view:  # (made under no_grad: not a view that requires grad either)
            p._nograd_view, p._rg = False, False
        p._base = p._view = None
    return pieces


@export
def unsafe_split(input, split_size, dim: int = 0) -> tuple:  # noqa: A002
    """:func:`split`, as PyTorch's unsafe form (the same pieces; its node is named apart)."""
    return _unsafe(split(input, split_size, dim))


@export
def unsafe_split_with_sizes(tensor, split_sizes, dim: int = 0) -> tuple:
    """:func:`split_with_sizes`, as PyTorch's unsafe form (the same pieces; its node is named apart)."""
    return _unsafe(split_with_sizes(tensor, split_sizes, dim))


@export
def unsafe_chunk(input, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """:func:`chunk`, as PyTorch's unsafe form (the same pieces; its node is named apart)."""
    return _unsafe(chunk(input, chunks, dim))


@export
def chunk(input, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """Split into ``chunks`` nearly equal views (fewer when the size does not allow that many).

    >>> import ember
    >>> len(ember.arange(6).chunk(4))
    3
    """
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = input.shape[_wrap_dim(dim, input.dim(), "chunk")]
    if n == 0:  # (PyTorch's: an empty dim gives `chunks` empty pieces, where splitting it by 0 would give one)
        return split(input, [0] * chunks, dim)
    return split(input, -(-n // chunks), dim)


@export
def unbind(input, dim: int = 0) -> tuple:  # noqa: A002
    """The slices along ``dim``, each a view without that dimension.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).unbind(1)
    (tensor([1, 3]), tensor([2, 4]))
    """
    d = _wrap_dim(dim, input.dim(), "unbind")
    return _slice_views(input, unary(Unbind, input, d), d, range(input.shape[d]))


# --------------------------------------------------------------------------- movement
class Repeat(Op):
    saved_args = {"repeats": "reps", "self_sym_sizes": "in_shape"}

    @staticmethod
    def forward(ctx, k, x, reps):
        ctx.in_shape, ctx.reps = x.shape, reps
        return k["tile"](x, reps)

    @staticmethod
    def backward(ctx, g):
        # (r0*s0, r1*s1, ...) -> (r0, s0, r1, s1, ...) and sum the r axes
        shape = (1,) * (g.dim() - len(ctx.in_shape)) + tuple(ctx.in_shape)
        reps = [n // s if s else 0 for n, s in zip(g.shape, shape)]
        inter = [v for pair in zip(reps, shape) for v in pair]
        if 0 in inter:
            return g.new_zeros(ctx.in_shape)
        return g.reshape(inter).sum(tuple(range(0, 2 * len(shape), 2))).reshape(ctx.in_shape)


@export(to=TENSOR)
def repeat(self, *repeats, **kw) -> Tensor:
    """Tile the tensor ``repeats[i]`` times along each dimension (a copy).

    >>> import ember
    >>> ember.tensor([1, 2]).repeat(2)
    tensor([1, 2, 1, 2])
    """
    if kw or not repeats:
        repeats = sequence_arg(repeats, kw, "repeat", "repeats")
    reps = _shape_arg(repeats, "repeat")
    if len(reps) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"repeat: repeats can not be negative, got {list(reps)}")
    return unary(Repeat, self, reps)


@export(to=TORCH)
def tile(input, dims) -> Tensor:  # noqa: A002
    """Like :meth:`repeat`, padding ``dims`` with leading ones when shorter than the tensor's rank.

    >>> import ember
    >>> ember.tile(ember.tensor([1, 2]), (2,))
    tensor([1, 2, 1, 2])
    """
    dims = _shape_arg((dims,) if isinstance(dims, int) else dims, "tile")
    return repeat(input, (1,) * (input.dim() - len(dims)) + dims)


def _varargs_method(fn, keyword):
    """``fn(input, sequence)`` as PyTorch's Tensor method, which also takes the sequence as varargs or by
    ``keyword``: ``x.tile(2, 3)``, ``x.tile((2, 3))``, ``x.tile(dims=(2, 3))``."""
    def method(self, *values, **kw):
        if kw or not values:
            values = sequence_arg(values, kw, fn.__name__, keyword)
        return fn(self, values[0] if len(values) == 1 and isinstance(values[0], (tuple, list)) else values)

    method.__name__ = method.__qualname__ = fn.__name__
    method.__doc__ = fn.__doc__
    return export(method, to=TENSOR)


_varargs_method(tile, "dims")


class SelfAdjoint(Op):
    """A linear op that is its own adjoint (flip, tril, triu): the gradient is the same op on ``g``."""

    kernel = ""

    @staticmethod
    def forward(ctx, k, x, *params):
        ctx.params = params
        return k[type(ctx).kernel](x, *params)

    @staticmethod
    def backward(ctx, g):
        return unary(type(ctx), g, *ctx.params)


class Flip(SelfAdjoint):
    kernel = "flip"
    saved_args = {"dims": lambda n: n.params[0]}


def _dims(dims, n, op, what=""):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    out = tuple(_wrap_dim(d, n, op) for d in dims)
    if len(set(out)) != len(out):
        if what:
            raise RuntimeError(f"{op}: repeated dim in `{what}` ({list(dims)})")
        d = next(d for d in out if out.count(d) > 1)
        raise RuntimeError(f"{op}: dim {d} appears multiple times in the list of dims")
    return out


@export(to=TORCH)
def flip(input, dims) -> Tensor:  # noqa: A002
    """Reverse the order of elements along ``dims`` (a copy).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).flip(1)
    tensor([[2, 1],
            [4, 3]])
    """
    return unary(Flip, input, _dims(dims, input.dim(), "flip"))


_varargs_method(flip, "dims")


@export
def fliplr(input) -> Tensor:  # noqa: A002
    """Flip left-right (dim 1)."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@export
def flipud(input) -> Tensor:  # noqa: A002
    """Flip up-down (dim 0)."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _roll_vjp(ctx, g):
    return unary(Roll, g, tuple(-s for s in ctx.shifts), ctx.axes)


Roll = op_class("Roll", "roll", vjp=_roll_vjp, params=("shifts", "axes"))
Roll.saved_args = {"shifts": "shifts", "dims": lambda n: () if n.axes is None else n.axes}


@export
def roll(input, shifts, dims=None) -> Tensor:  # noqa: A002
    """Rotate elements along ``dims`` by ``shifts`` (flattened when ``dims`` is None).

    >>> import ember
    >>> ember.tensor([1, 2, 3, 4]).roll(1)
    tensor([4, 1, 2, 3])
    """
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: 0")
        return unary(Roll, input, shifts, None)  # (the kernel rolls the flattened elements and keeps the shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    return unary(Roll, input, shifts, tuple(_wrap_dim(d, input.dim(), "roll") for d in dims))


@export
def narrow(input, dim: int, start, length: int) -> Tensor:  # noqa: A002
    """The view ``input[..., start:start+length, ...]`` along ``dim``.

    >>> import ember
    >>> ember.arange(5).narrow(0, 1, 3)
    tensor([1, 2, 3])
    """
    d = _wrap_dim(dim, input.dim(), "narrow")
    n = input.shape[d]
    start = int(start)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    start = start + n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return view_op(SliceView, input, (slice(None),) * d + (slice(start, start + length), Ellipsis))


@export
def select(input, dim: int, index: int) -> Tensor:  # noqa: A002
    """The view at ``index`` along ``dim``, without that dimension.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).select(1, 0)
    tensor([1, 3])
    """
    d = _wrap_dim(dim, input.dim(), "select")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {d}")
    return view_op(SelectView, input, (slice(None),) * d + (int(index), Ellipsis))


@export(aliases=("moveaxis",))
def movedim(input, source, destination) -> Tensor:  # noqa: A002
    """Move dimensions ``source`` to positions ``destination`` (a view).

    >>> import ember
    >>> ember.zeros(2, 3, 4).movedim(0, -1).shape
    ember.Size([3, 4, 2])
    """
    n = input.dim()
    src = _dims(source, n, "movedim", "source")
    dst = _dims(destination, n, "movedim", "destination")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    order = [d for d in range(n) if d not in src]
    for s, t in sorted(zip(dst, src)):
        order.insert(s, t)
    return permute(input, order)


@export
def unflatten(input, dim: int, sizes) -> Tensor:  # noqa: A002
    """Split dimension ``dim`` into ``sizes`` (one may be -1).

    >>> import ember
    >>> ember.zeros(2, 12).unflatten(1, (3, -1)).shape
    ember.Size([2, 3, 4])
    """
    d = _wrap_dim(dim, input.dim(), "unflatten")
    sizes = infer_shape(tuple(sizes), input.shape[d], "unflatten")
    return reshape(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))


# --------------------------------------------------------------------------- triangles and diagonals
class Tril(SelfAdjoint):
    kernel = "tril"
    saved_args = {"diagonal": lambda n: n.params[0]}


class Triu(SelfAdjoint):
    kernel = "triu"
    saved_args = Tril.saved_args


def _need_2d(t, op):
    if t.dim() < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions, got {list(t.shape)}")


@export(inplace=True)
def tril(input, diagonal: int = 0, *, out=None) -> Tensor:  # noqa: A002
    """Lower triangle of the last two dimensions (the rest zeroed).

    >>> import ember
    >>> ember.ones(3, 3).tril()
    tensor([[1., 0., 0.],
            [1., 1., 0.],
            [1., 1., 1.]])
    """
    _need_2d(input, "tril")
    return out_or(unary(Tril, input, int(diagonal)), out)


@export(inplace=True)
def triu(input, diagonal: int = 0, *, out=None) -> Tensor:  # noqa: A002
    """Upper triangle of the last two dimensions (the rest zeroed).

    >>> import ember
    >>> ember.ones(2, 3).triu(1)
    tensor([[0., 1., 1.],
            [0., 0., 1.]])
    """
    _need_2d(input, "triu")
    return out_or(unary(Triu, input, int(diagonal)), out)


# the arguments the diagonal family's nodes keep (``ctx.args``: offset and the two dims as given)
_DIAGONAL_ARGS = {"offset": lambda n: n.args[0], "dim1": lambda n: n.args[1], "dim2": lambda n: n.args[2]}


class Diagonal(Op):
    tags = ("view",)
    saved_args = dict(_DIAGONAL_ARGS, self_sym_sizes="in_shape")

    view_kernel = "diagonal"  # a copy on backends without strides: writes through it go back by scatter_back

    @staticmethod
    def forward(ctx, k, x, offset, d1, d2):
        ctx.in_shape, ctx.args = x.shape, (offset, d1, d2)
        return k["diagonal"](x, offset, d1, d2)

    @staticmethod
    def scatter_back(k, x, v, offset, d1, d2):
        """Write ``v``, the values of this diagonal of ``x``, into ``x``."""
        k["diagonal_scatter"](x, v, offset, d1, d2)

    @staticmethod
    def backward(ctx, g):
        return unary(DiagonalScatter, g, ctx.in_shape, *ctx.args)


class DiagonalScatter(Op):
    """Zeros of ``shape`` with ``g`` on a diagonal: the gradient of :func:`diagonal`."""

    backward_name = "DiagonalBackwardBackward0"
    saved_args = _DIAGONAL_ARGS

    @staticmethod
    def forward(ctx, k, g, shape, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        return k["diagonal_scatter"](k["full"](shape, 0, g.dtype), g, offset, d1, d2)

    @staticmethod
    def backward(ctx, gg):
        return unary(Diagonal, gg, *ctx.args)


class DiagEmbed(Op):
    saved_args = _DIAGONAL_ARGS

    @staticmethod
    def forward(ctx, k, x, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        return k["diag_embed"](x, offset, d1, d2)

    @staticmethod
    def backward(ctx, g):
        return unary(Diagonal, g, *ctx.args)


@export
def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """The diagonal of dims ``dim1`` and ``dim2`` as a view, its dimension last.

    >>> import ember
    >>> ember.arange(9).view(3, 3).diagonal(1)
    tensor([1, 5])
    """
    n = input.dim()
    d1, d2 = _wrap_dim(dim1, n, "diagonal"), _wrap_dim(dim2, n, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return view_op(Diagonal, input, int(offset), d1, d2)


@export
def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    """Matrices (in dims ``dim1``, ``dim2``) whose diagonal is the last dimension of ``input``.

    >>> import ember
    >>> ember.diag_embed(ember.tensor([1, 2]))
    tensor([[1, 0],
            [0, 2]])
    """
    n = input.dim() + 1
    d1, d2 = _wrap_dim(dim1, n, "diag_embed"), _wrap_dim(dim2, n, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return unary(DiagEmbed, input, int(offset), d1, d2)


@export
def diag(input, diagonal: int = 0, *, out=None) -> Tensor:  # noqa: A002
    """A 1-D tensor as a diagonal matrix, or a matrix's diagonal as a 1-D tensor (a copy).

    >>> import ember
    >>> ember.diag(ember.tensor([1, 2]))
    tensor([[1, 0],
            [0, 2]])
    """
    if input.dim() == 1:
        return out_or(diag_embed(input, diagonal), out)
    if input.dim() != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")
    return out_or(diagonal_copy(input, int(diagonal)), out)  # (PyTorch's diag of a matrix)


@export
def trace(input) -> Tensor:  # noqa: A002
    """Sum of the main diagonal of a matrix.

    >>> import ember
    >>> ember.tensor([[1., 2.], [3., 4.]]).trace()
    tensor(5.)
    """
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    dtypes.check_kernel("trace", input, dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES | dtypes.COMPLEX_TYPES)
    return composite_node(diagonal(input).sum(), "TraceBackward0")


@export(aliases=("ger",))
def outer(input, vec2, *, out=None) -> Tensor:  # noqa: A002
    """Outer product of two vectors.

    >>> import ember
    >>> ember.outer(ember.tensor([1, 2]), ember.tensor([1, 10]))
    tensor([[ 1, 10],
            [ 2, 20]])
    """
    if input.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"outer: expected 1-D vectors, got {input.dim()}-D and {vec2.dim()}-D")
    return out_or(input.unsqueeze(1) * vec2, out)


# --------------------------------------------------------------------------- broadcasting
@export(to=TORCH)
def broadcast_shapes(*shapes) -> Size:
    """The shape that all ``shapes`` broadcast to.

    >>> import ember
    >>> ember.broadcast_shapes((2, 1), (3,))
    ember.Size([2, 3])
    """
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, v in enumerate(s):
            j = n - len(s) + i
            if v != 1 and out[j] not in (1, v):
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                                   f"at dim {j}: {out[j]} vs {v} (shapes {[list(x) for x in shapes]})")
            if v != 1:
                out[j] = v
            elif out[j] == 1:
                out[j] = v
    return Size(out)


@export(to=TORCH)
def broadcast_to(input, size) -> Tensor:  # noqa: A002
    """``input`` broadcast to ``size`` (a view).

    >>> import ember
    >>> ember.broadcast_to(ember.tensor([1, 2]), (2, 2))
    tensor([[1, 2],
            [1, 2]])
    """
    return expand(input, tuple(size))


_varargs_method(broadcast_to, "size")


@export(to=TORCH)
def broadcast_tensors(*tensors) -> tuple:
    """Views of ``tensors`` broadcast to their common shape.

    >>> import ember
    >>> [t.shape for t in ember.broadcast_tensors(ember.zeros(2, 1), ember.zeros(3))]
    [ember.Size([2, 3]), ember.Size([2, 3])]
    """
    tensors = _flat_args(tensors)
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(expand(t, shape) for t in tensors)


@export(to=TORCH)
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 1-D tensors (``indexing`` 'ij' or 'xy'); views.

    >>> import ember
    >>> [g.shape for g in ember.meshgrid(ember.arange(2), ember.arange(3), indexing="ij")]
    [ember.Size([2, 3]), ember.Size([2, 3])]
    """
    tensors = _flat_args(tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D")
        if t.dtype != tensors[0].dtype or t.device != tensors[0].device:
            raise RuntimeError("torch.meshgrid: expects all tensors to have the same dtype and device")
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    n = len(ts)
    grids = [ts[i].reshape((1,) * i + (-1,) + (1,) * (n - i - 1)).expand(shape) for i in range(n)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


# --------------------------------------------------------------------------- strided windows
class Unfold(Op):
    tags = ("view",)
    saved_args = {"dimension": lambda n: n.args[0], "size": lambda n: n.args[1], "step": lambda n: n.args[2],
                  "self_sym_sizes": "in_shape"}

    view_kernel = "windows"  # a copy on backends without strides: writes through it go back by scatter_back

    @staticmethod
    def forward(ctx, k, x, axis, size, step):
        ctx.in_shape, ctx.args = x.shape, (axis, size, step)
        return k["windows"](x, axis, size, step)

    @staticmethod
    def scatter_back(k, x, w, axis, size, step):
        """Write windows ``w`` back into ``x`` (where windows overlap, one of the values written wins)."""
        pos = k["element_positions"]((w.shape[axis], size), (step, 1), 0)  # window j, element i: j * step + i
        order = list(range(w.ndim - 1))
        order.insert(axis + 1, w.ndim - 1)  # the window's elements next to the window index, as x[..., pos, ...]
        k["setitem"](x, (slice(None),) * axis + (pos,), k["permute"](w, order))

    @staticmethod
    def backward(ctx, g):
        axis, size, step = ctx.args
        n = g.shape[axis]
        idx = (arange(n, device=g.device).unsqueeze(1) * step + arange(size, device=g.device)).reshape(-1)
        flat = g.movedim(-1, axis + 1).flatten(axis, axis + 1)
        return g.new_zeros(ctx.in_shape).index_add(axis, idx, flat)


@export(to=TENSOR)
def unfold(self, dimension: int, size: int, step: int) -> Tensor:
    """Windows of ``size`` elements every ``step`` along ``dimension``, as a new last dimension (a view).

    >>> import ember
    >>> ember.arange(5).unfold(0, 2, 2)
    tensor([[0, 1],
            [2, 3]])
    """
    n = max(self.dim(), 1)
    d = _wrap_dim(dimension, n, "unfold")
    length = self.shape[d] if self.dim() else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    src = self if self.dim() else self.reshape(1)
    return view_op(Unfold, src, d, int(size), int(step))




class AsStrided(Op):
    tags = ("view",)
    view_kernel = "as_strided"  # a copy on backends without strides: writes through it go back by scatter_back
    zero_strides = True

    @staticmethod
    def forward(ctx, k, x, size, stride, offset):
        ctx.in_shape, ctx.args = x.shape, (size, stride, offset)
        return k["as_strided"](x, size, stride, offset)

    @staticmethod
    def scatter_back(k, x, v, size, stride, offset):
        """Write ``v`` into ``x`` (read in logical order) at the view's element positions."""
        pos = k["element_positions"](size, stride, offset)
        index = []
        for n in reversed(x.shape):  # flat positions -> one index array per dimension of x
            index.append(pos % n)
            pos = pos // n
        k["setitem"](x, tuple(reversed(index)), v)

    @staticmethod
    def backward(ctx, g):
        # every element of the view adds its gradient at its storage position
        pos = _create("as_strided", g._dev, False, None, "element_positions", *ctx.args)
        n = math.prod(ctx.in_shape)
        return g.new_zeros(n).index_add(0, pos.reshape(-1), g.reshape(-1)).view(ctx.in_shape)


@export
def as_strided(input, size, stride, storage_offset=None) -> Tensor:  # noqa: A002
    """A view of ``input``'s storage with the given sizes, strides and offset (counted in elements).

    Supported on contiguous tensors that own their storage (on backends whose arrays have no strides, on any
    tensor, read in logical order as if cloned).

    >>> import ember
    >>> ember.arange(6).as_strided((2, 2), (1, 2))
    tensor([[0, 2],
            [1, 3]])
    """
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    offset = int(storage_offset or 0)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape ({len(stride)} vs {len(size)})")
    # arrays without strides (array-API backends) are read in logical order: any input is as good as its clone
    # a detached tensor counts from its own start, where PyTorch counts from the storage's: refused unless they agree
    partial = input._vo is not None and input._vo._data is not input._data
    if (input._base is not None and hasattr(input._data, "strides")) or partial or not input.is_contiguous():
        raise RuntimeError("as_strided: supported on contiguous tensors that own their storage (use .clone() first); "
                           f"got shape {list(input.shape)} with strides {list(input.stride())}")
    if any(s < 0 for s in size + stride) or offset < 0:
        raise RuntimeError(f"as_strided: negative sizes, strides or offset are not allowed (size {list(size)}, "
                           f"stride {list(stride)}, offset {offset})")
    last = offset + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else offset - 1
    if last >= input.numel():
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} require "
                           f"a storage of at least {last + 1} elements, but the tensor has {input.numel()}")
    r = view_op(AsStrided, input, size, stride, offset)  # (PyTorch keeps the offset as given: None when not)
    return keep_args(r, size=size, stride=stride, storage_offset=optional(None if storage_offset is None else offset))


# --------------------------------------------------------------------------- more splits, rotations, repeats
@export
def ravel(input) -> Tensor:  # noqa: A002
    """The elements as a 1-D tensor (a view when the layout allows it).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).ravel()
    tensor([1, 2, 3, 4])
    """
    return reshape(input.contiguous(), -1)  # (PyTorch's steps where strides allow no view: a copy, then a view)


def _sections(indices_or_sections, op):
    """An int (a number of sections) or a list of split points, from an int, a sequence or a long tensor."""
    s = indices_or_sections
    if isinstance(s, Tensor):
        if s.dtype.name != "int64" or s.device.type != "cpu":
            raise RuntimeError(f"{op} expected tensor_indices_or_sections to be a tensor of type Long on the CPU, "
                               f"but got {s.dtype} on {s.device}")
        if s.dim() > 1:
            raise RuntimeError(f"{op} expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {s.dim()} dims")
        return int(s.item()) if s.dim() == 0 else [int(v) for v in s.tolist()]
    if isinstance(s, (list, tuple, Size)):
        return [int(v) for v in s]
    if isinstance(s, bool) or not hasattr(s, "__index__"):
        raise TypeError(f"{op}(): argument 'indices_or_sections' must be int, a sequence of ints or a tensor, "
                        f"not {type(s).__name__}")
    return int(s)


@export
def tensor_split(input, indices_or_sections, dim: int = 0) -> tuple:  # noqa: A002
    """Views of ``input`` split into ``n`` nearly equal parts, or at the given indices, along ``dim``.

    >>> import ember
    >>> [p.tolist() for p in ember.arange(5).tensor_split(2)]
    [[0, 1, 2], [3, 4]]
    >>> [p.tolist() for p in ember.arange(5).tensor_split([1, 4])]
    [[0], [1, 2, 3], [4]]
    """
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input.dim(), "tensor_split")
    s = _sections(indices_or_sections, "tensor_split")
    n = input.shape[d]
    if isinstance(s, int):
        if s <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {s}")
        small, extra = divmod(n, s)
        sizes = [small + 1] * extra + [small] * (s - extra)
        bounds = [sum(sizes[:i]) for i in range(s + 1)]
        cuts = list(zip(bounds[:-1], bounds[1:]))
    else:
        pts = [0, *s, n]
        cuts = [(a, b) for a, b in zip(pts[:-1], pts[1:])]
    lead = (slice(None),) * d
    return tuple(view_op(SliceView, input, lead + (slice(a, b), Ellipsis)) for a, b in cuts)


def _split_dir(op, d, need):
    def fn(input, sections=None, *, indices=None) -> tuple:  # noqa: A002
        indices_or_sections = indices if sections is None else sections  # (PyTorch's two overloads' names)
        if input.dim() < need:
            raise RuntimeError(f"torch.{op} requires a tensor with at least {need} dimension, but got a tensor with "
                               f"{input.dim()} dimensions!")
        dim = d if input.dim() > 1 or op != "hsplit" else 0
        s = _sections(indices_or_sections, op)
        if isinstance(s, int) and (s == 0 or input.shape[dim] % s):
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{input.shape[dim]} is not divisible by the split_size {s}!")
        return tensor_split(input, s, dim)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"``tensor_split`` along dimension {d} (``numpy.{op}``): an int must divide the size exactly."
    return export(fn)


hsplit = _split_dir("hsplit", 1, 1)
vsplit = _split_dir("vsplit", 0, 2)
dsplit = _split_dir("dsplit", 2, 3)


@export
def rot90(input, k: int = 1, dims=(0, 1)) -> Tensor:  # noqa: A002
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).rot90()
    tensor([[2, 4],
            [1, 3]])
    """
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = (_wrap_dim(d, input.dim(), "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        r = transpose(flip(input, (d1,)), d0, d1)
    elif k == 2:
        r = flip(input, (d0, d1))
    elif k == 3:
        r = transpose(flip(input, (d0,)), d0, d1)
    else:
        r = clone(input)
    return composite_node(r, "Rot90Backward0")  # PyTorch's one node


RepeatIndex = op_class("RepeatIndex", "repeat_index", params=("n",))


class RepeatInterleave(Op):
    """Each slice along ``axis`` repeated ``reps`` times (an int, or an int array with one count per slice)."""

    @staticmethod
    def forward(ctx, k, x, reps, axis):
        ctx.in_shape, ctx.reps, ctx.axis = x.shape, reps, axis
        return k["repeat"](x, reps, axis)

    @staticmethod
    def backward(ctx, g):
        d, reps = ctx.axis, ctx.reps
        if type(reps) is int:  # (.., n * r, ..) -> (.., n, r, ..), summed over the r copies
            shape = list(ctx.in_shape)
            shape.insert(d + 1, reps)
            return g.reshape(shape).sum(d + 1)
        idx = unary(RepeatIndex, _wrap(reps, g._dev), ctx.in_shape[d])
        return g.new_zeros(ctx.in_shape).index_add(d, idx, g)


@export
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None) -> Tensor:  # noqa: A002
    """Repeat each element (each slice along ``dim``) ``repeats`` times; ``repeats`` an int or a tensor.

    Without ``repeats``, ``input`` holds the repeats and the result repeats ``0, 1, ...`` that often.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).repeat_interleave(2, dim=0)
    tensor([[1, 2],
            [1, 2],
            [3, 4],
            [3, 4]])
    >>> ember.repeat_interleave(ember.tensor([1, 0, 2]))
    tensor([0, 2, 2])
    """
    if repeats is None:
        return repeat_interleave(arange(input.numel(), device=input.device), input, 0, output_size=output_size)
    if dim is None:
        input, d = reshape(input, -1), 0
    else:
        d = _wrap_dim(dim, input.dim(), "repeat_interleave")
    n = input.shape[d]
    if isinstance(repeats, Tensor):
        if repeats.dtype.category > dtypes.INT or repeats.dtype is dtypes.bool:
            raise RuntimeError(f"repeat_interleave: repeats has to be Long or Int tensor, got {repeats.dtype}")
        if repeats.dim() > 1:
            raise RuntimeError(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got shape "
                               f"{list(repeats.shape)}")
        if repeats.dim() == 0 or repeats.numel() == 1 and n != 1:
            repeats = int(repeats.item())
        elif repeats.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats.shape[0]} and input.size({d}) = {n}")
    if isinstance(repeats, Tensor):
        if repeats._dev is not input._dev:
            repeats = repeats.to(input.device)  # a host tensor of repeats, as PyTorch accepts
        if n and int(repeats.min().item()) < 0:
            raise RuntimeError("repeat_interleave: repeats can not be negative")
        if output_size is not None and int(repeats.sum().item()) != output_size:
            raise RuntimeError("allocated size does not match required size")
        return unary(RepeatInterleave, input, repeats.long()._data, d)
    r = int(repeats)
    if r < 0:
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    if output_size is not None and n * r != output_size:
        raise RuntimeError("allocated size does not match required size")
    return unary(RepeatInterleave, input, r, d)


@export
def diagflat(input, offset: int = 0) -> Tensor:  # noqa: A002
    """A matrix with the flattened ``input`` on diagonal ``offset``.

    >>> import ember
    >>> ember.diagflat(ember.tensor([[1, 2]]))
    tensor([[1, 0],
            [0, 2]])
    """
    return diag_embed(reshape(input, -1), int(offset))


@export(to=TORCH)
def block_diag(*tensors) -> Tensor:
    """A block-diagonal matrix of the given tensors (0-d: 1x1, 1-d: one row, 2-d: as is).

    >>> import ember
    >>> ember.block_diag(ember.tensor([[1, 2]]), ember.tensor(3))
    tensor([[1, 2, 0],
            [0, 0, 3]])
    """
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"block_diag(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    if not tensors:
        return _create("block_diag", _default_device(), False, None, "full", (1, 0), 0,
                       _default_device().backend.array_dtype(dtypes.get_default_dtype()))
    mats = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t for t in tensors]
    mats = _tensors_arg(mats, "block_diag")
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        parts = [m.new_zeros(r, left), m, m.new_zeros(r, width - left - c)]
        rows.append(cat(parts, 1))
        left += c
    return composite_node(cat(rows, 0), "BlockDiagBackward0")


def _default_device():
    return resolve(None)


@export(to=TORCH)
def cartesian_prod(*tensors) -> Tensor:
    """Every combination of one element of each 1-D tensor, as rows (``itertools.product``).

    >>> import ember
    >>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor) or t.dim() != 1:
            got = f"{t.dim()}-D tensor" if isinstance(t, Tensor) else type(t).__name__
            raise RuntimeError(f"Expect a 1D vector, but got shape of a {got} at position {i} (cartesian_prod)")
    if len(tensors) == 1:
        return tensors[0]
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("cartesian_prod: meshgrid expects all tensors to have the same dtype")
    ts = _tensors_arg(list(tensors), "cartesian_prod")
    return stack([g.reshape(-1) for g in meshgrid(*ts, indexing="ij")], 1)


CombinationIndex = op_class("combination_index")


@export(to=TORCH)
def combinations(input, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """Length-``r`` combinations of the elements of a 1-D tensor, as rows (``itertools.combinations``).

    >>> import ember
    >>> ember.combinations(ember.tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
    """
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)} (combinations)")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r} (combinations)")
    if r == 0:
        return input.new_empty(0)
    idx = _create("combinations", input._dev, False, None, "combination_index", input.shape[0], int(r),
                  bool(with_replacement))
    # (PyTorch's node stacks one selection per column; each keeps the input)
    picked = input.index_select(0, idx.reshape(-1)).reshape(-1, r)
    return keep_args(composite_node(keep_saved(picked, input), "StackBackward0"), dim=1)


# --------------------------------------------------------------------------- *_scatter: a copy with a view replaced
class SliceScatter(Op):
    """A copy of ``x`` with ``src`` written at the basic index ``region``: slice_scatter's one node, as PyTorch's
    (no view involved: backends without strides copy views)."""

    @staticmethod
    def forward(ctx, k, x, src, region):
        ctx.region = region
        out = k["copy"](x)
        k["setitem"](out, region, src)
        return out

    @staticmethod
    def backward(ctx, g):
        part = g[ctx.region]
        return apply(type(ctx), g, part * 0, ctx.region), part


class SelectScatter(SliceScatter):
    """select_scatter's one node: :class:`SliceScatter` at an integer position."""


def _scatter_into(input, src, region, op, **args):
    """``op``: a copy of ``input`` with ``src`` at ``region`` (PyTorch's node, keeping its arguments ``args``)."""
    src = _scatter_check(input[region], input, src, op)
    return keep_args(apply(SelectScatter if op == "select_scatter" else SliceScatter, input, src, region), **args)


def _scatter_check(region, input, src, op):
    """``src`` checked against the region it replaces, in ``input``'s dtype (PyTorch casts it, as a copy does)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region.shape)}")
    if src.requires_grad and STATE.enabled and input.dtype.category < dtypes.FLOAT:
        raise RuntimeError(f"Autograd not support dtype: {dtypes.type_name(input.dtype)}")  # (PyTorch's words)
    return src.to(input.dtype)


@export
def select_scatter(input, src, dim: int, index: int) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim`` (the inverse of :func:`select`).

    >>> import ember
    >>> ember.zeros(2, 2).select_scatter(ember.ones(2), 0, 0)
    tensor([[1., 1.],
            [0., 0.]])
    """
    select(input, dim, index)  # its errors first
    region = (slice(None),) * _wrap_dim(dim, input.dim(), "select_scatter") + (int(index), Ellipsis)
    return _scatter_into(input, src, region, "select_scatter", dim=dim, index=index)


@export
def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` written at ``start:end:step`` along ``dim``.

    >>> import ember
    >>> ember.zeros(4).slice_scatter(ember.ones(2), start=2)
    tensor([0., 0., 1., 1.])
    """
    d = _wrap_dim(dim, input.dim(), "slice_scatter")
    if step is None or step <= 0:
        raise RuntimeError("slice step must be positive")
    index = (slice(None),) * d + (slice(start, end, step), Ellipsis)
    return _scatter_into(input, src, index, "slice_scatter", dim=dim, start=optional(start), end=optional(end),
                         step=step)


class DiagonalScatterInto(Op):
    """A copy of ``x`` with ``src`` on a diagonal (no view involved: backends without strides copy views)."""

    backward_name = "DiagonalScatterBackward0"
    saved_args = _DIAGONAL_ARGS

    @staticmethod
    def forward(ctx, k, x, src, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        return k["diagonal_scatter"](k["copy"](x), src, offset, d1, d2)

    @staticmethod
    def backward(ctx, g):
        return (apply(DiagonalScatterInto, g, unary(Diagonal, g, *ctx.args) * 0, *ctx.args),
                unary(Diagonal, g, *ctx.args))


@export
def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` written on a diagonal (the inverse of :func:`diagonal`).

    >>> import ember
    >>> ember.zeros(2, 2).diagonal_scatter(ember.ones(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    region = diagonal(input, offset, dim1, dim2)  # its errors first
    src = _scatter_check(region, input, src, "diagonal_scatter")
    n = input.dim()
    return apply(DiagonalScatterInto, input, src, int(offset), _wrap_dim(dim1, n, "diagonal_scatter"),
                 _wrap_dim(dim2, n, "diagonal_scatter"))


@export
def as_strided_scatter(input, src, size, stride, storage_offset=None) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` written through the view ``as_strided(size, stride, offset)`` of the copy's
    storage (laid out as ``input`` where it is dense, row-major otherwise).

    >>> import ember
    >>> ember.zeros(4).as_strided_scatter(ember.ones(2), (2,), (2,))
    tensor([1., 0., 1., 0.])
    """
    # its errors first, on a fresh storage of the input's size (the clone PyTorch writes into)
    region = as_strided(input.detach().new_empty(input.shape), size, stride, storage_offset)
    src = _scatter_check(region, input, src, "as_strided_scatter")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    pos = _create("as_strided_scatter", input._dev, False, None, "element_positions", size, stride,
                  int(storage_offset or 0))
    # PyTorch scatters into a copy of the input's storage, laid out as the input is: where that is dense (a transposed
    # input's storage runs down its columns), each storage position is read as the element it holds
    dims = sorted((st, n, r) for st, n, r in zip(input.stride(), input.shape, _row_major(input.shape)) if n > 1)
    if input.storage_offset() == 0 and [st for st, _, _ in dims] == _row_major([n for _, n, _ in dims][::-1])[::-1]:
        pos = sum((pos // st) % n * r for st, n, r in dims) if dims else pos
    flat = input.reshape(-1).index_put((pos.reshape(-1),), src.reshape(-1))
    return flat.reshape(input.shape)


def _row_major(shape):
    """The strides of a contiguous tensor of ``shape``."""
    return list(accumulate(reversed(list(shape[1:])), lambda a, b: a * b, initial=1))[::-1]


# --------------------------------------------------------------------------- view copies (*_copy)
def _copy_of(view, name, to=TORCH):
    """``name``: what ``view`` returns, as a fresh tensor (every output of a multi-output view cloned)."""
    def fn(input, *args, out=None, **kwargs):  # noqa: A002
        r = view(input, *args, **kwargs)
        if isinstance(r, tuple):
            return tuple(_copy_node(clone(t), t, input) for t in r)
        return out_or(_copy_node(clone(r), r, input), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"A copy of :func:`{view.__name__}`'s result (it shares no storage with ``input``)."
    return export(fn, name, to=to)


def _copy_node(c, r, input):  # noqa: A002
    """Name the node of copy ``c`` of view ``r`` as PyTorch names a ``*_copy`` op's: the view's name + ``_copy``,
    keeping the view's arguments."""
    fn = r._fn
    if fn is not None and fn is not input._fn:
        keep_args(rename_node(c, type(fn).__name__ + "_copy"), **{k: optional(v) for k, v in fn._args_saved().items()})
    return c


def _alias(input):  # noqa: A002
    return input[...]  # (a view of its own: alias_copy's node is AliasBackward0_copy)


def _detach(input):  # noqa: A002
    return input.detach()


alias_copy = _copy_of(_alias, "alias_copy")
detach_copy = _copy_of(_detach, "detach_copy")
diagonal_copy = _copy_of(diagonal, "diagonal_copy")
expand_copy = _copy_of(expand, "expand_copy")
permute_copy = _copy_of(permute, "permute_copy")
select_copy = _copy_of(select, "select_copy")
split_copy = _copy_of(split, "split_copy")
squeeze_copy = _copy_of(squeeze, "squeeze_copy")
t_copy = _copy_of(t, "t_copy")
transpose_copy = _copy_of(transpose, "transpose_copy")
unbind_copy = _copy_of(unbind, "unbind_copy")
unfold_copy = _copy_of(unfold, "unfold_copy")
unsqueeze_copy = _copy_of(unsqueeze, "unsqueeze_copy")
view_copy = _copy_of(reshape, "view_copy")  # a copy: any layout will do
as_strided_copy = _copy_of(as_strided, "as_strided_copy")
split_with_sizes_copy = _copy_of(split_with_sizes, "split_with_sizes_copy")


@export(to=TORCH + TENSOR)
def narrow_copy(input, dim: int, start, length: int, *, out=None) -> Tensor:  # noqa: A002
    """A copy of :func:`narrow`'s result (it shares no storage with ``input``)."""
    r = narrow(input, dim, start, length)
    c = clone(r)
    if r._fn is not None and r._fn is not input._fn:  # (PyTorch's node of its own, keeping narrow's arguments)
        keep_args(rename_node(c, "NarrowCopyBackward0"), dim=dim, start=start, length=length,
                  self_sym_sizes=tuple(input.shape))
    return out_or(c, out)


def _slice_copy(input, dim: int = 0, start=None, end=None, step: int = 1):  # noqa: A002
    d = _wrap_dim(dim, input.dim(), "slice_copy")
    return view_op(SliceView, input, (slice(None),) * d + (slice(start, end, step), Ellipsis))


_slice_copy.__name__ = "slice"
slice_copy = _copy_of(_slice_copy, "slice_copy")


# --------------------------------------------------------------------------- in-place view ops (x.unsqueeze_(0))
def _view_inplace(view, name, shift=1):
    """``name``: ``self`` becomes ``view(self, ...)`` (same storage, new shape; history through the view).

    PyTorch numbers the in-place overloads' nodes after the out-of-place ones: ``shift`` is the distance
    (``squeeze_(dim)`` is ``SqueezeBackward4``, ``squeeze(dim)`` ``SqueezeBackward1``)."""
    def method(self, *args, **kwargs):
        if STATE.enabled and self._rg and self._fn is None:
            raise RuntimeError(f"{name}: a leaf Variable that requires grad is being used in an in-place "
                               f"operation.")
        r = view(self, *args, **kwargs)
        if r._fn is not None and r._fn is not self._fn:
            n = type(r._fn).__name__
            rename_node(r, n[:-1] + str(int(n[-1]) + shift))
        self._data, self._fn, self._nr = r._data, r._fn, r._nr
        if r._view is not None and self._base is not None:
            self._view = r._view
        if dispatch.HANDLERS:
            dispatch.rebound(self, r)
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place :func:`{view.__name__}`: this tensor takes the new shape; returns self."
    return method


t_ = export(_view_inplace(t, "t_"), "t_", to=TENSOR)
unsqueeze_ = export(_view_inplace(unsqueeze, "unsqueeze_"), "unsqueeze_", to=TENSOR)
squeeze_ = export(_view_inplace(squeeze, "squeeze_", 3), "squeeze_", to=TENSOR)
transpose_ = export(_view_inplace(transpose, "transpose_"), "transpose_", to=TENSOR, aliases=("swapaxes_", "swapdims_"))
as_strided_ = export(_view_inplace(as_strided, "as_strided_"), "as_strided_", to=TORCH + TENSOR)


# --------------------------------------------------------------------------- metadata
@export
def is_same_size(input, other) -> bool:  # noqa: A002
    """Whether two tensors have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


@export
def is_nonzero(input) -> bool:  # noqa: A002
    """The truth of a one-element tensor (an error for any other number of elements).

    >>> import ember
    >>> ember.is_nonzero(ember.tensor([0.5]))
    True
    """
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@export(to=TORCH)
def is_inference(input) -> bool:  # noqa: A002
    """Whether ``input`` was made under :func:`ember.inference_mode` (PyTorch's parser names it ``input``)."""
    return input.is_inference()


for _n in ("is_signed", "is_inference", "get_device", "detach_", "is_floating_point", "is_complex"):
    if _n not in NAMESPACES["torch"]:
        export(getattr(Tensor, _n), _n, to=TORCH)


Resized = op_class("Resized", "resize_flat", params=("shape",))


@export(to=TENSOR)
def resize_(self, *size, memory_format=None, **kw) -> Tensor:
    """In place: this tensor takes shape ``size``, keeping its first elements (new elements are zero).

    >>> import ember
    >>> ember.arange(4).resize_(2, 3)
    tensor([[0, 1, 2],
            [3, 0, 0]])
    """
    if kw or not size:
        size = sequence_arg(size, kw, "resize_", "size")
    shape = _shape_arg(size, "resize_")
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")
    if tuple(self.shape) == shape:
        return self
    with _no_grad():
        r = unary(Resized, self.contiguous(), shape)
    self._data = r._data
    self._bump()
    return self


@export(to=TORCH + TENSOR)
def resize_as_(self, the_template, *, memory_format=None) -> Tensor:
    """In place: :meth:`resize_` to ``the_template``'s shape."""
    return resize_(self, tuple(the_template.shape))


def _resize_view(self, shape, op):
    n = math.prod(shape)
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({n} elements in total), but the given "
                           f"tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           f"autograd's resize can only change the shape of a given tensor, while preserving the "
                           f"number of elements. ({op})")
    return reshape(self, shape)


@export(to=TENSOR)
def resize(self, *sizes) -> Tensor:
    """Deprecated out-of-place resize: a reshape to ``sizes`` (the element count must not change)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_view(self, _shape_arg(sizes, "resize"), "resize")


@export(to=TENSOR)
def resize_as(self, tensor) -> Tensor:
    """Deprecated out-of-place resize to ``tensor``'s shape (the element count must not change)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_view(self, tuple(tensor.shape), "resize_as")


@export(to=TENSOR)
def set_(self, source=None, storage_offset=0, size=None, stride=None) -> Tensor:
    """In place: this tensor views ``source``'s storage (with ``size``/``stride``/``storage_offset`` as
    :func:`as_strided`), or becomes empty without ``source``.

    >>> import ember
    >>> a, b = ember.zeros(2), ember.ones(3)
    >>> a.set_(b) is a and a.tolist() == [1., 1., 1.]
    True
    """
    if source is not None and not isinstance(source, Tensor):
        raise TypeError(f"set_(): expected a Tensor source, got {type(source).__name__} (storages are not supported)")
    if STATE.enabled and self._rg and self._fn is None:
        raise RuntimeError("set_: a leaf Variable that requires grad is being used in an in-place operation.")
    node = _SetNode(self, source) if STATE.enabled and (self._rg or source is not None and source._rg) else None
    if source is None:
        with _no_grad():
            r = unary(Resized, self.detach(), (0,))
        self._data, self._base, self._view = r._data, None, None
    else:
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type {self.dtype}")
        r = source if size is None else as_strided(source, size, stride if stride is not None else
                                                    _contiguous_strides(tuple(size), 1), storage_offset)
        self._data, self._dev = r._data, r._dev
        self._base = source if source._base is None else source._base
        self._view = None
    if node is not None:  # (PyTorch records set_ without a derivative: a backward through it raises)
        self._fn, self._nr, self._rg = node, 0, True
    self._bump()
    return self


class _SetNode(Node):
    """The history of a tensor that ``set_`` changed under autograd: PyTorch's ``NotImplemented`` node, whose
    backward raises (the gradient of the old value and of the source is not defined)."""

    def name(self) -> str:
        return "torch::autograd::NotImplemented"

    def __init__(self, t, source):
        ins = (t,) if source is None else (t, source)
        self.next_functions = tuple(grad_edge(x) for x in ins)
        self._shapes = tuple((x._data.shape, x._data.dtype) for x in ins)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("derivative for set_ is not implemented")


@export(to=TENSOR)
def is_set_to(self, tensor) -> bool:
    """Whether both tensors view the same memory with the same shape and strides."""
    return (self.device == tensor.device and self.data_ptr() == tensor.data_ptr()
            and tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride())


@export(to=TENSOR)
def const_data_ptr(self) -> int:
    """The address of the first element (as :meth:`data_ptr`)."""
    return self.data_ptr()


@export(to=TENSOR)
def dim_order(self, *, ambiguity_check=False) -> tuple:
    """The dimensions from outermost to innermost in memory (by decreasing stride).

    >>> import ember
    >>> ember.zeros(2, 3).t().dim_order()
    (1, 0)
    """
    st = self.stride()
    order = tuple(sorted(range(self.dim()), key=lambda d: -st[d]))
    if ambiguity_check and len(set(st)) != len(st):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to a valid permutation.")
    return order


@export(to=TENSOR)
def as_subclass(self, cls) -> Tensor:
    """``self`` (same data, same history) as an instance of the Tensor subclass ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not {cls!r}")
    r = view_as(self, self)
    r.__class__ = cls
    return r


@export
def is_distributed(input) -> bool:  # noqa: A002
    """False: ember tensors are never distributed tensors."""
    return False


@export(to=TENSOR)
def module_load(self, other, assign=False):
    """How ``Module.load_state_dict`` turns ``other`` into what replaces ``self`` (as is, by default)."""
    return other


def _device_flag(kind):
    def flag(self):
        return self.device.type == kind

    flag.__name__ = flag.__qualname__ = f"is_{kind}"
    flag.__doc__ = f"Whether the tensor is on a {kind!r} device."
    return property(flag)


for _kind in ("xpu", "xla", "ipu", "maia", "mtia", "mps", "vulkan", "mkldnn"):
    export(_device_flag(_kind), f"is_{_kind}", to=TENSOR)
export(property(lambda self: False, doc="False: ember has no nested tensors."), "is_nested", to=TENSOR)
