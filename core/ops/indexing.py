"""Indexing: ``x[...]`` and the index ops (gather/scatter, index_*, masks, take, nonzero).

Index tensors are non-differentiable parameters: the Ops receive them as
backend arrays (checked in range first), so in-place forms can reuse them.
The Ops of ``x[index]`` itself (:class:`Getitem`, :class:`SliceView`) live in
:mod:`ember.ops.shape`, whose views are made of them.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes
from ..autograd.function import Op, composite_node, keep_args, keep_saved, optional
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..dispatch import apply, device_error, unary, view_op
from ..writes import inplace, out_or
from ..registry import _type_name, export, op_class
from ..tensor import Tensor, _wrap, _wrap_dim
from .creation import tensor, zeros
from .pointwise import where
from .shape import (AliasView, Getitem, IndexPutZeros, SelectView, SliceView, UnsqueezeView, _whole, broadcast_shapes,
                    broadcast_tensors, cat, expand, index_walk)

TENSOR = ("Tensor",)


def _is_basic(index):
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in index)


def _convert_index(t, index, op="index"):
    """Tensors, lists and bools in an index become backend arrays; returns a tuple."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    xp = t._dev.backend.xp
    for i in index:
        if isinstance(i, Tensor):
            if i._dev is not t._dev and not (i._dev.type == "cpu"):
                raise RuntimeError(f"{op}: indices should be either on cpu or on the same device as the indexed "
                                   f"tensor ({t.device}), got {i.device}")
            cat = i.dtype.category
            if cat > 1 or i.dtype.name in ("int8", "int16"):  # PyTorch takes int64, int32, uint8 and bool only
                raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool tensors, "
                                 f"got {i.dtype}")
            arr = i._data if i._dev is t._dev else xp.asarray(i._dev.backend.to_numpy(i._data))
            if i.dtype.name == "uint8":
                arr = arr != 0
            out.append(arr)
        elif isinstance(i, t._dev.atype) and not isinstance(i, np.ndarray):
            out.append(i)  # an index already converted to the backend's arrays (backward formulas pass these)
        elif isinstance(i, (list, np.ndarray, range)):
            a = np.asarray(i)
            if a.size == 0 and not isinstance(i, np.ndarray):
                a = a.astype(np.int64)  # x[[]], x[range(0)]: an empty long index
            if a.dtype.kind == "f":
                raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool tensors")
            out.append(xp.asarray(a))
        elif isinstance(i, bool):
            out.append(xp.asarray(i))
        elif isinstance(i, (int, np.integer)):
            out.append(int(i))
        elif i is None or i is Ellipsis or isinstance(i, slice):
            if isinstance(i, slice):
                for v in (i.start, i.stop, i.step):
                    if v is not None and not isinstance(v, (int, np.integer)) and not hasattr(v, "__index__"):
                        raise TypeError(f"{op}: slice indices must be integers or None, got {type(v).__name__}")
                if i.step is not None and int(i.step) <= 0:
                    raise ValueError(f"{op}: step must be greater than zero")
                i = slice(*(None if v is None else int(v) for v in (i.start, i.stop, i.step)))
            out.append(i)
        elif isinstance(i, float):
            raise IndexError(f"{op}: only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                             f"Variables are valid indices (got float)")
        else:
            raise IndexError(f"{op}: unsupported index type {type(i).__name__}")
    return tuple(out)


def _check_bounds(t, index):
    """PyTorch's IndexErrors for too many indices, out-of-range integers and mis-shaped masks."""
    shape = t._data.shape
    masks = [hasattr(i, "dtype") and t._dev.backend.dtype_of(i) is dtypes.bool for i in index]
    used = [i.ndim if m else (0 if i is None or i is Ellipsis else 1) for i, m in zip(index, masks)]
    total = sum(used)
    if total > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim = 0
    for i, n, is_mask in zip(index, used, masks):
        if i is Ellipsis:
            dim += len(shape) - total
            continue
        if isinstance(i, int):
            if not -shape[dim] <= i < shape[dim]:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {shape[dim]}")
        elif is_mask:
            for j in range(i.ndim):
                if i.shape[j] != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(i.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(shape)} at index {dim + j}")
        elif hasattr(i, "dtype") and i.size:
            bad = _first_out_of_range(t._dev.backend.xp, i, shape[dim])
            if bad is not None:
                raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {shape[dim]}")
        dim += n


def _first_out_of_range(xp, arr, size, negative_ok=True):
    """A value of integer array ``arr`` outside ``[-size, size)`` (``[0, size)``), or None."""
    try:  # one index (a Categorical's log_prob) is read, without two reductions' argument handling
        lo = hi = int(arr[(0,) * arr.ndim]) if arr.size == 1 else None
    except TypeError:  # (an array that only reduces: vmap's logical arrays)
        lo = None
    if lo is None:
        lo, hi = int(xp.min(arr)), int(xp.max(arr))
    if hi >= size:
        return hi
    if lo < (-size if negative_ok else 0):
        return lo
    return None


_PLAIN = (int, type(None))


def _index_steps(index, shape, dev):
    """PyTorch's ``(indices, sizes)`` of advanced ``index`` (converted) on a tensor of ``shape``: it takes the basic
    steps first (an int selects, a slice slices, None unsqueezes), giving ``sizes``, and indexes their result by the
    tensors, each at the dim it stands at, None at the dims between (a mask spans its dims of the input and one place
    among the indices)."""
    def span(e):
        return e.ndim if dev.backend.dtype_of(e) is dtypes.bool else 1

    sizes, indices, extra = list(shape), [], 0
    for dim, e in index_walk(index, sizes, span):
        if e is not None and type(e) is not int and type(e) is not slice:
            indices += [None] * (dim - extra - len(indices))
            indices.append(_wrap(e, dev))
            extra += span(e) - 1
    return tuple(indices), tuple(sizes)


def keep_indices(r, t, index, sizes: bool = False, **args):
    """``r``, its node keeping PyTorch's arguments of an advanced ``index`` (converted) on ``t``: ``_saved_indices``
    (made when read), with ``sizes`` the sizes it indexes (``_saved_self_sym_sizes``), and ``args``."""
    if r._fn is None:
        return r
    if sizes:
        args["self_sym_sizes"] = _IndexPart(index, t._data.shape, t._dev, 1)
    return keep_args(r, indices=_IndexPart(index, t._data.shape, t._dev, 0), **args)


class _IndexPart:
    """The indices (``part`` 0) or the sizes they index (1) of an advanced ``index`` on data of ``shape``, made
    when called (a saved value read only when asked for; one small object per node, not a closure)."""

    __slots__ = ("index", "shape", "dev", "part")

    def __init__(self, index, shape, dev, part):
        self.index, self.shape, self.dev, self.part = index, shape, dev, part

    def __call__(self):
        return _index_steps(self.index, self.shape, self.dev)[self.part]


def _basic_fast(t, index):
    """``(Op, index)`` for an index of plain ints (in range), plain slices, None and ``...``, else None: the view
    Op named as PyTorch names it, by its last step that does something (an integer selects, None unsqueezes, a
    slice that is not the whole dim slices), and the index as a tuple ending in ``...`` (so that all-integer
    indexing still gives a 0-d view)."""
    tup = index if type(index) is tuple else (index,)
    total, ellipsis = 0, False
    for i in tup:
        ti = type(i)
        if ti is int:
            total += 1
        elif ti is slice:
            step = i.step
            if type(i.start) not in _PLAIN or type(i.stop) not in _PLAIN or type(step) not in _PLAIN or \
                    (step is not None and step <= 0):
                return None
            total += 1
        elif i is Ellipsis:
            if ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            ellipsis = True
        elif i is not None:
            return None
    shape = t._data.shape
    nd = len(shape)
    if total > nd:
        return None
    dim, Op = 0, AliasView
    for i in tup:
        if type(i) is int:
            if not -shape[dim] <= i < shape[dim]:
                return None
            dim, Op = dim + 1, SelectView
        elif i is None:
            Op = UnsqueezeView
        elif i is Ellipsis:
            dim += nd - total
        else:
            if not _whole(i, shape[dim]):
                Op = SliceView
            dim += 1
    if type(index) is slice:  # (one bare slice slices even the whole dim, as PyTorch's x[:])
        Op = SliceView
    return Op, (tup if ellipsis else tup + (Ellipsis,))


def _ints_first(index):
    """``(ints, rest)`` for an index mixing Python integers with advanced (list/tensor) indices, else None.

    PyTorch selects the integer positions first (a view) and indexes what is left, so ``x[0, :, idx]``
    keeps the advanced dimension where ``idx`` stands (NumPy would move it to the front).
    """
    if type(index) is not tuple:
        return None
    has_int = has_adv = False
    for i in index:
        if isinstance(i, bool):
            return None
        if isinstance(i, int):
            has_int = True
        elif isinstance(i, (list, tuple, Tensor, np.ndarray)):
            if (i.dtype is dtypes.bool) if isinstance(i, Tensor) else np.asarray(i).dtype == np.bool_:
                return None  # a mask spans several dimensions: NumPy's and PyTorch's rules agree there
            has_adv = True
    if not (has_int and has_adv):
        return None
    ints = tuple(i if isinstance(i, int) or i is Ellipsis else slice(None) for i in index if i is not None)
    rest = tuple(i for i in index if not isinstance(i, int) or isinstance(i, bool))
    return ints, rest


def _sequence_as_tuple(index: list) -> bool:
    """PyTorch's rule, kept with its deprecation warning: a list of fewer than 32 items holding a slice, None,
    ``...``, a tensor or a sequence is a tuple of indices (``x[[slice(0, 1), 0]]`` is ``x[0:1, 0]``)."""
    if len(index) >= 32 or not any(i is None or i is Ellipsis or isinstance(i, (slice, Tensor, list, tuple, np.ndarray))
                                   for i in index):
        return False
    warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
                  "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
                  "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result",
                  UserWarning, stacklevel=3)
    return True


@export(name="__getitem__", to=TENSOR)
def getitem(t, index):
    """``t[index]``: a view for basic indices (ints, slices, None, ``...``), else a copy (advanced indexing)."""
    if type(index) is list and _sequence_as_tuple(index):
        index = tuple(index)
    fast = _basic_fast(t, index)
    if fast is not None:
        return view_op(fast[0], t, fast[1])
    split = _ints_first(index)
    if split is not None:  # PyTorch applies integers as selections before the advanced indices
        return getitem(getitem(t, split[0]), split[1])
    index = _convert_index(t, index)
    _check_bounds(t, index)
    fast = _basic_fast(t, index)  # (converted and in range: NumPy integers, slices of them)
    if fast is not None:
        return view_op(fast[0], t, fast[1])
    try:
        r = apply(Getitem, t, index)
    except IndexError as e:
        raise IndexError(f"index: {e}") from None
    return keep_indices(r, t, index, True) if r._fn is not None else r


# --------------------------------------------------------------------------- argument checks
def _index_arg(t, index, dim, op, dtypes_ok=("int64",), vector=False, negative_ok=False, ndim_match=False):
    """Validate an index tensor for ``op`` on ``t`` along ``dim``; returns its array on ``t``'s device."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype.name not in dtypes_ok:
        if len(dtypes_ok) == 1 and op.startswith("index_copy"):
            raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {_type_name(index.dtype)}")
        want = " or ".join(dtypes_ok)
        error = IndexError if op.startswith("index_fill") else RuntimeError  # PyTorch's classes
        raise error(f"{op}(): Expected dtype {want} for index, but got {index.dtype}")
    if index._dev is not t._dev:
        raise device_error(op, t, index)
    if vector and index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got shape {list(index.shape)}")
    # (a 0-d index counts as one dimension, as PyTorch counts it: a 0-d index into a vector picks one element)
    if ndim_match and max(index.dim(), 1) != max(t.dim(), 1) and index.numel():
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(got index {list(index.shape)} and input {list(t.shape)})")
    xp = t._dev.backend.xp
    # a 0-d index becomes a vector through ember (a tracer sees it), a vector is passed as it is: a raw reshape
    # would hand the tracer an array it can tell apart from the index only by address, which not every backend has
    arr = index.reshape(-1)._data if (vector or ndim_match) and t.dim() and index.dim() == 0 or \
        vector and t.dim() and index.dim() > 1 else index._data
    size = t.shape[dim] if t.dim() else 1
    if arr.size:
        bad = _first_out_of_range(xp, arr, size, negative_ok)
        if bad is not None:
            # (PyTorch's index_add of rows, unlike the other vector-indexed ops, raises RuntimeError)
            if vector and not (op.startswith("index_add") and t.dim() > 1):
                raise IndexError(f"{op}(): index out of range in self (index {bad} for dimension {dim} with "
                                 f"size {size})")
            raise RuntimeError(f"{op}(): index {bad} is out of bounds for dimension {dim} with size {size}")
    return arr


def _same_dtype(x, src, op):
    if isinstance(src, Tensor) and src.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype (got {x.dtype} and {src.dtype})")


def _no_larger(x, index, dim, op, src=None):
    if index.numel() == 0:  # (PyTorch checks the sizes of a non-empty index only)
        return
    for d in range(index.dim()):
        if d != dim and index.shape[d] > x.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be "
                               f"smaller than self {list(x.shape)} apart from dimension {dim}")
        if src is not None and index.shape[d] > src.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be "
                               f"smaller than src {list(src.shape)}")


def _dim_index(x, dim, index, op, **kw):
    d = _wrap_dim(dim, max(x.dim(), 1), op)
    return d, _index_arg(x, index, d, op, **kw)


def _to_array_scalar(value, op):
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"{op}(): only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        return value.item()
    return value


def _idx(ctx, g):
    return _wrap(ctx.idx, g._dev)


# --------------------------------------------------------------------------- gather / scatter
class TensorArgsOp(Op):
    """An Op whose backward returns gradients for its Tensor arguments only, also when run in place."""

    tensor_args = True


class Pick(TensorArgsOp):
    """Read ``x`` at ``idx`` along ``axis``; the gradient adds ``g`` back there (the ``put`` Op)."""

    kernel = ""
    put = None

    @staticmethod
    def forward(ctx, k, x, axis, idx):
        ctx.in_shape, ctx.axis, ctx.idx = x.shape, axis, idx
        return k[type(ctx).kernel](x, axis, idx)

    @staticmethod
    def backward(ctx, g):
        return apply(type(ctx).put, g.new_zeros(ctx.in_shape), ctx.axis, ctx.idx, g)


class Gather(Pick):
    kernel = "gather"
    saved_args = {"dim": "axis", "sparse_grad": lambda n: False}

    @staticmethod
    def forward(ctx, k, x, axis, idx, scalar=False):
        # ``scalar``: a 0-d index into a vector, given as one element: the result is 0-d, made by this node
        ctx.scalar = scalar
        r = Pick.forward(ctx, k, x, axis, idx)
        return k["reshape"](r, ()) if scalar else r

    @staticmethod
    def backward(ctx, g):
        return Pick.backward(ctx, g.reshape(1) if ctx.scalar else g)


class _GatherKeeping(Gather):
    """:func:`gather`'s node: it keeps the input as PyTorch's does (``_saved_self``: an in-place change of it refuses
    the backward) and the index tensor given (``_saved_index``, set by :func:`_keep_index`); sort and topk's
    gathers and the gradients' keep neither."""

    __slots__ = ()
    _overload_of = Gather
    save_inputs = True
    saved_names = ("self",)
    saved_args = {**Gather.saved_args, "index": "index"}

    @staticmethod
    def backward(ctx, g):
        ctx.check_saved()
        return Gather.backward(ctx, g)


_GatherKeeping.__name__ = _GatherKeeping.__qualname__ = Gather.__name__


class ScatterAdd(TensorArgsOp):
    saved_args = {"dim": "axis", "index": "index"}

    @staticmethod
    def forward(ctx, k, x, axis, idx, src):
        ctx.axis, ctx.idx, ctx.src_shape = axis, idx, src.shape
        return k["scatter_reduce"](x, axis, idx, src, "sum", True)

    @staticmethod
    def backward(ctx, g):
        return g, _pad_to(apply(Gather, g, ctx.axis, ctx.idx), ctx.src_shape)


class Scatter(TensorArgsOp):
    """``scatter`` with a tensor source (or a scalar ``value``)."""

    backward_name = "ScatterBackward0"
    saved_args = {"dim": "axis", "index": "index"}

    @staticmethod
    def forward(ctx, k, x, axis, idx, src):
        ctx.axis, ctx.idx, ctx.src_shape = axis, idx, getattr(src, "shape", None)
        return k["scatter"](x, axis, idx, src)

    @staticmethod
    def backward(ctx, g):
        gx = apply(Scatter, g, ctx.axis, ctx.idx, 0)
        if ctx.src_shape is None:
            return gx
        return gx, _pad_to(apply(Gather, g, ctx.axis, ctx.idx), ctx.src_shape)


class ScatterValue(Scatter):
    backward_name = "ScatterBackward1"


def _pad_to(g, shape):
    """``g`` in the leading corner of zeros of ``shape`` (a source larger than its index gets no gradient)."""
    if tuple(g.shape) == tuple(shape):
        return g
    return apply(IndexPutZeros, g, tuple(shape), tuple(slice(0, n) for n in g.shape))


class ScatterReduce(TensorArgsOp):
    save_inputs = True
    save_output = True
    backward_name = "ScatterReduceBackward0"
    saved_names = ("self", "src")
    saved_args = {"dim": "axis", "index": "index", "reduce": "reduce", "include_self": "include_self"}

    @staticmethod
    def forward(ctx, k, x, axis, idx, src, reduce, include_self):
        ctx.axis, ctx.idx, ctx.reduce, ctx.include_self = axis, idx, reduce, include_self
        return k["scatter_reduce"](x, axis, idx, src, reduce, include_self)

    @staticmethod
    def backward(ctx, g):
        x, src = ctx.inputs
        out = ctx.output
        axis, idx = ctx.axis, _idx(ctx, g)
        red = ctx.reduce
        with no_grad():
            hit = x.new_zeros(x.shape, dtype=dtypes.bool).scatter(axis, idx, True)
            keep = (1 - hit.to(g.dtype)) if not ctx.include_self else 1
        if red == "sum":
            return g * keep, _pad_to(gather(g, axis, idx), src.shape)
        if red == "mean":
            with no_grad():
                count = (g.new_zeros(g.shape) + keep).scatter_add(axis, idx, g.new_ones(idx.shape))
                count = count + (count == 0).to(g.dtype)
            gm = g / count
            return gm * keep, _pad_to(gather(gm, axis, idx), src.shape)
        if red == "prod":
            # where x is 0, out / x is undefined: use the product of the others instead
            others = x.where(x != 0, 1).scatter_reduce(axis, idx, src[_corner(idx)], "prod").detach()
            gx = where(x == 0, g * others, g * out / x)
            return gx * keep, _pad_to(gather(g * out, axis, idx) / src[_corner(idx)], src.shape)
        # amax / amin: the gradient is shared evenly among the elements equal to the result
        with no_grad():
            # ties with the original value count even when it is not included (as PyTorch does)
            mx = (x == out).to(g.dtype)
            ms = (src[_corner(idx)] == gather(out, axis, idx)).to(g.dtype)
            count = mx.scatter_add(axis, idx, ms)
        gc = g / count
        return gc * mx * keep, _pad_to(gather(gc, axis, idx) * ms, src.shape)


def _corner(idx):
    return tuple(slice(0, n) for n in idx.shape)


Gather.put = ScatterAdd
_INDEX_DTYPES = ("int64", "int32")


@export
def gather(input, dim: int, index, *, sparse_grad: bool = False, out=None) -> Tensor:  # noqa: A002
    """``out[i][j] = input[index[i][j]][j]`` along ``dim`` (for ``dim=0``).

    >>> import ember
    >>> ember.gather(ember.tensor([[1, 2], [3, 4]]), 1, ember.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    return out_or(_gather(_GatherKeeping, input, dim, index), out)


def gather_values(input, dim: int, index) -> Tensor:  # noqa: A002
    """:func:`gather` whose node keeps only the indices: the values of a composite whose PyTorch node keeps no
    input (``sort``, ``topk``, ``kthvalue``, ``median`` along a dim, ``mode``)."""
    return _gather(Gather, input, dim, index)


def _gather(Cls, input, dim, index):  # noqa: A002
    d, idx = _dim_index(input, dim, index, "gather", dtypes_ok=_INDEX_DTYPES, ndim_match=True)
    _no_larger(input, index, d, "gather")
    scalar = index.dim() == 0 and input.dim() == 1
    r = apply(Cls, input, d, idx, True) if scalar else apply(Cls, input, d, idx)
    if Cls is _GatherKeeping:
        _keep_index(r, index)
    return r


def _scatter_args(x, dim, index, src, op):
    """The checked dim, the index array and ``src`` (a 0-d ``src`` for a 0-d index into a vector made one element,
    as PyTorch counts a 0-d tensor as one dimension)."""
    d, idx = _dim_index(x, dim, index, op, dtypes_ok=_INDEX_DTYPES, ndim_match=True)
    _same_dtype(x, src, op)
    _no_larger(x, index, d, op, src if isinstance(src, Tensor) else None)
    if isinstance(src, Tensor) and src.dim() == 0 and x.dim() == 1:
        src = src.reshape(1)
    return d, idx, src


@export
def scatter(input, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` (or ``value``) written at ``index`` along ``dim``.

    >>> import ember
    >>> ember.zeros(3).scatter(0, ember.tensor([2]), ember.tensor([5.]))
    tensor([0., 0., 5.])
    """
    return _scatter_impl(apply, input, dim, index, src, value, reduce)


def _scatter_impl(run, x, dim, index, src, value, reduce):
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter(): expected a 'src' tensor or a 'value'")
    d, idx, src = _scatter_args(x, dim, index, src, "scatter")
    if reduce is not None:
        names = {"add": "sum", "multiply": "prod"}
        if reduce not in names:
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
        if not isinstance(src, Tensor):
            src = x.new_full(index.shape, src)
        return _keep_index(run(ScatterReduce, x, d, idx, src, names[reduce], True), index)
    if isinstance(src, Tensor):
        return _keep_index(run(Scatter, x, d, idx, src), index)
    value = dtypes.fill_value(_to_array_scalar(src, "scatter"), x.dtype)
    return _keep_index(run(ScatterValue, x, d, idx, value), index)


def _keep_index(r, index):
    """``r``, its node keeping the index tensor given, as PyTorch's node does (``grad_fn._saved_index``: the
    ``index`` of the op's ``saved_args``; the node's own backward reads the index array it converted).  It counts
    as a saved tensor: the backward frees it with the others (a node with nothing else saved gets an empty
    ``_saved``, which marks it for release)."""
    fn = r._fn
    if fn is not None and fn._op:
        fn.index = index
        if fn._saved is None:
            fn._saved = ()
    return r


@export
def scatter_add(input, dim: int, index, src) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeats accumulate).

    >>> import ember
    >>> ember.zeros(3).scatter_add(0, ember.tensor([0, 0, 1]), ember.ones(3))
    tensor([2., 1., 0.])
    """
    d, idx, src = _scatter_args(input, dim, index, src, "scatter_add")
    return _keep_index(apply(ScatterAdd, input, d, idx, src), index)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")
# the dtypes PyTorch's scatter kernels reduce with each reduction (no ordering of complex numbers, no bool mean)
_REDUCE_TYPES = {"amax": dtypes.REAL_TYPES, "amin": dtypes.REAL_TYPES,
                 "mean": dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES | dtypes.COMPLEX_TYPES}


def _reduce_kernel(reduce, x):
    if reduce in _REDUCE_TYPES:
        dtypes.check_kernel(f"scatter_gather_tensor_{{device}}_reduce_{reduce}", x, _REDUCE_TYPES[reduce])


@export
def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True) -> Tensor:  # noqa: A002
    """Reduce ``src`` into a copy of ``input`` at ``index`` along ``dim`` ('sum', 'prod', 'mean', 'amax', 'amin').

    >>> import ember
    >>> src = ember.tensor([3., 5., 1.])
    >>> ember.zeros(2).scatter_reduce(0, ember.tensor([0, 0, 1]), src, 'amax', include_self=False)
    tensor([5., 1.])
    """
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _reduce_kernel(reduce, input)
    d, idx, src = _scatter_args(input, dim, index, src, "scatter_reduce")
    return _keep_index(apply(ScatterReduce, input, d, idx, src, reduce, bool(include_self)), index)


# --------------------------------------------------------------------------- index_* along one dimension
class IndexSelect(Pick):
    kernel = "index_select"
    saved_args = {"dim": "axis", "index": "index", "self_sym_sizes": "in_shape"}


class IndexAdd(TensorArgsOp):
    # (alpha is set on the node when not 1, see index_add; the index and source given by _index_op)
    saved_args = {"dim": "axis", "source_dim": lambda n: len(n._shapes[-1][0]),
                  "alpha": lambda n: n.__dict__.get("alpha", 1), "index": "index", "source": "source"}

    @staticmethod
    def forward(ctx, k, x, axis, idx, src):
        ctx.axis, ctx.idx = axis, idx
        return k["index_add"](x, axis, idx, src)

    @staticmethod
    def backward(ctx, g):
        return g, apply(IndexSelect, g, ctx.axis, ctx.idx)


class IndexCopy(TensorArgsOp):
    saved_args = {"dim": "axis", "source_dim": lambda n: len(n._shapes[-1][0]), "index": "index", "source": "source"}

    @staticmethod
    def forward(ctx, k, x, axis, idx, src):
        ctx.axis, ctx.idx = axis, idx
        return k["index_copy"](x, axis, idx, src)

    @staticmethod
    def backward(ctx, g):
        return apply(IndexFill, g, ctx.axis, ctx.idx, 0), apply(IndexSelect, g, ctx.axis, ctx.idx)


class IndexFill(TensorArgsOp):
    inplace_name = "index_fill_"
    saved_args = {"dim": "axis", "index": "index"}


    @staticmethod
    def forward(ctx, k, x, axis, idx, value):
        ctx.axis, ctx.idx = axis, idx
        return k["index_fill"](x, axis, idx, value)

    @staticmethod
    def backward(ctx, g):
        return apply(IndexFill, g, ctx.axis, ctx.idx, 0)


IndexSelect.put = IndexAdd


def _index_src_check(x, d, index, src, op):
    _same_dtype(x, src, op)
    if src.dim() and x.dim() and src.shape[d] != index.numel():
        raise RuntimeError(f"{op}(): Number of indices ({index.numel()}) should be equal to source.size(dim): "
                           f"({src.shape[d]}), for dim: {d}")
    want = list(x.shape) if x.dim() else [1]
    if x.dim():
        want[d] = index.numel()
    got = list(src.shape) if src.dim() else [1]
    if got != want and not (src.dim() == 0 and index.numel() == 1):
        raise RuntimeError(f"{op}(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {want} at dimension {d} and source slice shape: {got} at dimension 0.")


@export
def index_select(input, dim: int, index, *, out=None) -> Tensor:  # noqa: A002
    """The entries at ``index`` (a vector) along ``dim``.

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).index_select(0, ember.tensor([1, 1]))
    tensor([[3, 4],
            [3, 4]])
    """
    d, idx = _dim_index(input, dim, index, "index_select", dtypes_ok=_INDEX_DTYPES, vector=True)
    return out_or(_keep_index(apply(IndexSelect, input, d, idx), index), out)


def _index_op(run, Cls, x, dim, index, src, op, alpha=1):
    # PyTorch's index_copy and index_fill take int64 indices only; index_fill also takes negative ones
    long_only = Cls is IndexCopy or Cls is IndexFill
    d, idx = _dim_index(x, dim, index, op, dtypes_ok=("int64",) if long_only else _INDEX_DTYPES, vector=True,
                        negative_ok=Cls is IndexFill)
    if Cls is IndexFill:
        return _keep_index(run(Cls, x, d, idx, _to_array_scalar(src, op)), index)
    _index_src_check(x, d, index, src, op)
    kept = src if src.requires_grad else None  # (PyTorch's node keeps a source that needs a gradient)
    if alpha != 1:
        src = src * alpha
    r = run(Cls, x.reshape(1), 0, idx, src.reshape(1)) if x.dim() == 0 else run(Cls, x, d, idx, src)
    fn = r._fn
    if isinstance(fn, Cls):  # PyTorch's node keeps the source given and the index (index_add: only with the source)
        fn.source = optional(kept)
        fn.index = index if kept is not None or Cls is IndexCopy else optional(None)
        if fn._saved is None:
            fn._saved = ()  # (saved tensors: the backward releases the node)
    return keep_saved(r.reshape(()) if x.dim() == 0 else r, kept)


@export
def index_add(input, dim: int, index, source, *, alpha=1, out=None) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``.

    >>> import ember
    >>> ember.zeros(3).index_add(0, ember.tensor([0, 0, 2]), ember.tensor([1., 2., 3.]))
    tensor([3., 0., 3.])
    """
    r = _index_op(apply, IndexAdd, input, dim, index, source, "index_add", alpha)
    if alpha != 1 and isinstance(r._fn, IndexAdd):
        r._fn.alpha = alpha  # (PyTorch's node keeps it: _saved_alpha)
    return out_or(r, out)


@export
def index_copy(input, dim: int, index, source, *, out=None) -> Tensor:  # noqa: A002
    """A copy of ``input`` with the slices at ``index`` along ``dim`` replaced by ``source``.

    >>> import ember
    >>> ember.zeros(3).index_copy(0, ember.tensor([2]), ember.tensor([5.]))
    tensor([0., 0., 5.])
    """
    return out_or(_index_op(apply, IndexCopy, input, dim, index, source, "index_copy"), out)


@export
def index_fill(input, dim: int, index, value) -> Tensor:  # noqa: A002
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value``.

    >>> import ember
    >>> ember.zeros(2, 2).index_fill(1, ember.tensor([0]), -1.)
    tensor([[-1.,  0.],
            [-1.,  0.]])
    """
    if isinstance(value, Tensor) and value._rg and is_grad_enabled():  # the value gets the filled slots' gradient
        if value.dim() != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        mask = _index_op(apply, IndexFill, input.detach().new_zeros(input.shape), dim, index, 1, "index_fill")
        return _index_op(apply, IndexFill, input, dim, index, 0, "index_fill") + mask * value
    return _index_op(apply, IndexFill, input, dim, index, dtypes.fill_value(value, input.dtype), "index_fill")


@export(name="__contains__", to=TENSOR)
def contains(self, element) -> bool:
    """``element in self``: whether any element equals ``element`` (a number or a broadcastable tensor)."""
    if not isinstance(element, (Tensor, int, float, complex, bool, np.number, np.bool_)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")
    return bool((self == element).any().item())


# --------------------------------------------------------------------------- masks, take, nonzero
def _mask_arg(mask, op):
    if not isinstance(mask, Tensor) or mask.dtype.name != "bool":
        got = mask.dtype if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{op}: expected BoolTensor for mask, got {got}")
    return mask


@export
def masked_select(input, mask, *, out=None) -> Tensor:  # noqa: A002
    """The elements where ``mask`` (broadcast with ``input``) is True, as a 1-D tensor.

    >>> import ember
    >>> ember.tensor([1, 5, 2]).masked_select(ember.tensor([False, True, True]))
    tensor([5, 2])
    """
    a, m = broadcast_tensors(input, _mask_arg(mask, "masked_select"))
    return out_or(keep_saved(composite_node(apply(Getitem, a, (m._data,)), "MaskedSelectBackward0"), input), out)


class MaskedScatter(TensorArgsOp):
    saved_args = {"source_sym_sizes": "src_shape", "mask": "mask_given"}  # (see _keep_mask)
    _saved = ()  # (the mask counts as a saved tensor)

    @staticmethod
    def forward(ctx, k, x, mask, src):
        ctx.mask, ctx.src_shape = mask, src.shape
        return k["masked_scatter"](x, mask, src)

    @staticmethod
    def backward(ctx, g):
        mask = _wrap(ctx.mask, g._dev)
        picked = apply(Getitem, g, (ctx.mask,))
        n = 1
        for s in ctx.src_shape:
            n *= s
        rest = zeros(n - picked.shape[0], dtype=g.dtype, device=g.device)
        return where(mask, 0, g), cat([picked, rest]).reshape(ctx.src_shape)


def _masked_scatter_args(x, mask, source, op):
    _mask_arg(mask, op)
    _same_dtype(x, source, op)
    for t in (mask, source):
        if t._dev is not x._dev:
            raise device_error(op, x, t)
    m = expand(mask, x.shape)
    count = int(x._dev.backend.xp.count_nonzero(m._data))
    if count > source.numel():
        raise RuntimeError(f"{op}: Number of elements of source < number of ones in mask "
                           f"({source.numel()} < {count})")
    return m


def _keep_mask(r, mask):
    """``r``, its masked_scatter node keeping the ``mask`` given as PyTorch's node does (``_saved_mask``; the node's
    own backward reads the mask array broadcast to the input)."""
    if isinstance(r._fn, MaskedScatter):
        r._fn.mask_given = mask
    return r


@export
def masked_scatter(input, mask, source) -> Tensor:  # noqa: A002
    """A copy of ``input`` with consecutive elements of ``source`` written where ``mask`` is True.

    >>> import ember
    >>> ember.zeros(4).masked_scatter(ember.tensor([True, False, True, False]), ember.tensor([1., 2.]))
    tensor([1., 0., 2., 0.])
    """
    m = _masked_scatter_args(input, mask, source, "masked_scatter")
    return _keep_mask(apply(MaskedScatter, input, m._data, source), mask)


@export
def take(input, index) -> Tensor:  # noqa: A002
    """``input`` read as 1-D at ``index`` (the result has ``index``'s shape).

    >>> import ember
    >>> ember.tensor([[1, 2], [3, 4]]).take(ember.tensor([0, 3]))
    tensor([1, 4])
    """
    flat = input.reshape(-1)
    if not isinstance(index, Tensor) or index.dtype.name != "int64":
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{getattr(index, 'dtype', type(index).__name__)}")
    n = flat.shape[0]
    if index.numel():
        bad = _first_out_of_range(input._dev.backend.xp, index._data, n)
        if bad is not None:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return keep_saved(composite_node(apply(Getitem, flat, (index._data,)), "TakeBackward0"), input)


@export
def take_along_dim(input, indices, dim=None, *, out=None) -> Tensor:  # noqa: A002
    """Gather ``input`` at ``indices`` along ``dim`` after broadcasting the other dimensions (flat if None).

    >>> import ember
    >>> ember.take_along_dim(ember.tensor([[10, 30, 20]]), ember.tensor([[1]]), 1)
    tensor([[30]])
    """
    if isinstance(indices, Tensor) and indices.dtype is not dtypes.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_type_name(indices.dtype)}")
    if dim is None:
        return out_or(gather(input.reshape(-1), 0, indices.reshape(-1)), out)
    d = _wrap_dim(dim, input.dim(), "take_along_dim")
    if input.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but input.dim() = {input.dim()} and indices.dim() = {indices.dim()}")
    si, sx = list(indices.shape), list(input.shape)
    si[d] = sx[d] = 1
    shape = list(broadcast_shapes(si, sx))
    sx, si = list(shape), list(shape)
    sx[d], si[d] = input.shape[d], indices.shape[d]
    return out_or(gather(input.expand(sx), d, indices.expand(si)), out)


Nonzero = op_class("nonzero", tags=("data-dependent",))


@export
def nonzero(input, *, out=None, as_tuple: bool = False):  # noqa: A002
    """Indices of the nonzero elements: an ``[n, ndim]`` long tensor, or one tensor per dimension.

    >>> import ember
    >>> ember.nonzero(ember.tensor([0, 3, 0, 4]))
    tensor([[1],
            [3]])
    """
    with no_grad():
        r = unary(Nonzero, input)
    if as_tuple:
        return tuple(r[:, i].contiguous() for i in range(r.shape[1])) if input.dim() else (r.reshape(-1),)
    return out_or(r, out)


@export
def argwhere(input) -> Tensor:  # noqa: A002
    """Indices of the nonzero elements as an ``[n, ndim]`` long tensor.

    >>> import ember
    >>> ember.argwhere(ember.tensor([[0, 1], [2, 0]]))
    tensor([[0, 1],
            [1, 0]])
    """
    return nonzero(input)


class IndexPutAcc(Op):
    """``x.index_put(indices, v, accumulate=True)``: repeated indices add up."""

    backward_name = "IndexPutBackward0"
    inplace_name = "index_put_"
    _saved = ()  # (see Getitem: its index tensors count as saved)

    @staticmethod
    def forward(ctx, k, x, v, index):
        ctx.index, ctx.v_shape = index, v.shape
        out = k["copy"](x)
        k["index_put_acc"](out, index, v)
        return out

    @staticmethod
    def backward(ctx, g):
        gv = apply(Getitem, g, ctx.index)
        return g, gv.sum_to_size(ctx.v_shape) if tuple(gv.shape) != tuple(ctx.v_shape) else gv, None


@export
def index_put(input, indices, values, accumulate: bool = False) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``values`` put at the advanced index ``indices`` (a tuple of tensors).

    >>> import ember
    >>> ember.zeros(3).index_put((ember.tensor([0, 0]),), ember.tensor([1., 2.]), accumulate=True)
    tensor([3., 0., 0.])
    """
    return index_put_(input.clone(), indices, values, accumulate)


@export(to=TENSOR)
def index_put_(self, indices, values, accumulate: bool = False) -> Tensor:
    """In place: ``self[indices] = values`` (or ``+=`` with repeats accumulating when ``accumulate``)."""
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{dtypes.type_name(self.dtype)} for the destination and {dtypes.type_name(values.dtype)} "
                           f"for the source.")
    idx = tuple(indices)
    if not accumulate:
        self[idx] = values  # Tensor.__setitem__ (ops.inplace, which builds on this module)
        return self
    conv = _convert_index(self, idx, "index_put_")
    _check_bounds(self, conv)
    before = self._fn
    inplace(IndexPutAcc, self, values, conv)
    return keep_indices(self, self, conv, accumulate=True) if self._fn is not before else self


# --------------------------------------------------------------------------- in-place forms
@export(to=TENSOR)
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place :func:`scatter`."""
    return _scatter_impl(inplace, self, dim, index, src, value, reduce)


@export(to=TENSOR)
def scatter_add_(self, dim, index, src):
    """In-place :func:`scatter_add`."""
    d, idx, src = _scatter_args(self, dim, index, src, "scatter_add_")
    return inplace(ScatterAdd, self, d, idx, src)


@export(to=TENSOR)
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place :func:`scatter_reduce`."""
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _reduce_kernel(reduce, self)
    d, idx, src = _scatter_args(self, dim, index, src, "scatter_reduce_")
    return inplace(ScatterReduce, self, d, idx, src, reduce, bool(include_self))


@export(to=TENSOR)
def index_add_(self, dim, index, source, *, alpha=1):
    """In-place :func:`index_add`."""
    return _index_op(inplace, IndexAdd, self, dim, index, source, "index_add_", alpha)


@export(to=TENSOR)
def index_copy_(self, dim, index, source):
    """In-place :func:`index_copy`."""
    return _index_op(inplace, IndexCopy, self, dim, index, source, "index_copy_")


@export(to=TENSOR)
def index_fill_(self, dim, index, value):
    """In-place :func:`index_fill`."""
    return _index_op(inplace, IndexFill, self, dim, index, dtypes.fill_value(value, self.dtype), "index_fill_")


@export(to=TENSOR)
def masked_scatter_(self, mask, source):
    """In-place :func:`masked_scatter`."""
    m = _masked_scatter_args(self, mask, source, "masked_scatter_")
    return _keep_mask(inplace(MaskedScatter, self, m._data, source), mask)


# --------------------------------------------------------------------------- index_reduce, put, unravel_index
_INDEX_REDUCES = ("prod", "mean", "amax", "amin")


def _index_reduce_impl(fn, x, dim, index, source, reduce, include_self, op):
    if reduce not in _INDEX_REDUCES:
        raise RuntimeError(f"{op}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d, _ = _dim_index(x, dim, index, op, dtypes_ok=_INDEX_DTYPES, vector=True)
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not {type(source).__name__}")
    _index_src_check(x, d, index, source, op)
    if x.dim() == 0:
        x, source, d = x.reshape(1), source.reshape(1), 0
    shape = [1] * source.dim()
    shape[d] = -1
    idx = index.reshape(shape).expand(source.shape)
    return fn(x, d, idx, source, reduce, include_self=include_self)


@export(inplace=True)
def index_reduce(input, dim: int, index, source, reduce: str, *, include_self: bool = True) -> Tensor:  # noqa: A002
    """Reduce the slices of ``source`` into a copy of ``input`` at ``index`` along ``dim`` ('prod', 'mean',
    'amax', 'amin'); ``include_self=False`` leaves ``input``'s own values out where something lands.

    >>> import ember
    >>> ember.ones(3).index_reduce(0, ember.tensor([0, 0, 2]), ember.tensor([2., 3., 4.]), 'prod')
    tensor([6., 1., 4.])
    """
    if reduce in ("amax", "amin", "mean") and isinstance(input, Tensor):  # (PyTorch's kernel: no bool, no complex)
        dtypes.check_kernel("index_reduce_func_exclude_input_init", input,
                            dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES)
    r = _index_reduce_impl(scatter_reduce, input, dim, index, source, reduce, include_self, "index_reduce")
    return composite_node(r.reshape(()) if input.dim() == 0 else r, "IndexReduceBackward0")


def _put_args(x, index, source, op):
    if not isinstance(index, Tensor) or index.dtype.name != "int64":
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{getattr(index, 'dtype', type(index).__name__)}")
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{x.dtype} and source.dtype = {source.dtype}")
    if source.numel() != index.numel():
        raise IndexError(f"{op}(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    for t in (index, source):
        if t._dev is not x._dev:
            raise device_error(op, x, t)
    n = x.numel()
    if index.numel():
        bad = _first_out_of_range(x._dev.backend.xp, index._data, n)
        if bad is not None:
            raise IndexError(f"{op}(): out of range: tried to access index {bad} on a tensor of {n} elements.")


@export(inplace=True)
def put(input, index, source, accumulate: bool = False) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``source`` written at the flat positions ``index`` (added with ``accumulate``).

    >>> import ember
    >>> ember.zeros(2, 2).put(ember.tensor([3, 0]), ember.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 1.]])
    """
    _put_args(input, index, source, "put")
    flat = index_put(input.reshape(-1), (index.reshape(-1),), source.reshape(-1), accumulate)
    kept = source if source.requires_grad else None
    return keep_saved(composite_node(flat.reshape(input.shape), "PutBackward0"), kept)


export(index_put_, "index_put_", to=("torch",))


@export(to=("torch",))
def unravel_index(indices, shape) -> tuple:
    """Flat indices as a tuple of coordinate tensors for a tensor of ``shape`` (``numpy.unravel_index``).

    >>> import ember
    >>> ember.unravel_index(ember.tensor([4, 1]), (2, 3))
    (tensor([1, 0]), tensor([1, 1]))
    """
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.dtype.category != dtypes.INT:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for s in shape:
        if not isinstance(s, (int, np.integer)) and not (isinstance(s, Tensor) and s.dim() == 0):
            raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(s).__name__}")
        if int(s) < 0:
            raise ValueError("'shape' cannot have negative values, but got " + str(tuple(int(v) for v in shape)))
    shape = tuple(int(s) for s in shape)
    idx = indices.long()
    coords, stride = [], 1
    for s in reversed(shape):
        coords.append((idx // stride) % s if s else idx * 0)
        stride *= s
    return tuple(reversed(coords))


@export(to=TENSOR)
def fill_diagonal_(self, fill_value, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal, in place (``wrap``: continue below in tall matrices).

    >>> import ember
    >>> ember.zeros(2, 3).fill_diagonal_(1.)
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    n = self.dim()
    if n < 2:
        raise RuntimeError("dimensions must larger than 1")
    if n > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    # (a number is cast as PyTorch casts it: -1 fills a uint8 tensor with 255)
    given = dtypes.int64 if type(fill_value) is int else self.dtype
    value = fill_value if isinstance(fill_value, Tensor) else tensor(fill_value, dtype=given, device=self.device)
    value = value.to(self.dtype)
    # written through diagonal views, as PyTorch's strided fill (its node: CopySlices); ``wrap`` in a tall matrix
    # goes on one row below each square block, as the flat positions every ``cols + 1`` elements do
    rows, cols = self.shape[0], self.shape[1]
    tall = n == 2 and wrap and rows > cols
    for start in range(0, rows, cols + 1) if tall else (0,):
        view = self.narrow(0, start, min(cols, rows - start)) if tall else self
        for _ in range(n - 1):
            view = view.diagonal(0, 0, -1)
        view.fill_(value)
    return self


@export
def nonzero_static(input, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """:func:`nonzero` with exactly ``size`` rows: cut after ``size``, or padded with ``fill_value``.

    >>> import ember
    >>> ember.nonzero_static(ember.tensor([0, 3, 0, 4]), size=3)
    tensor([[ 1],
            [ 3],
            [-1]])
    """
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    r = nonzero(input)
    n = r.shape[0]
    if n >= size:
        return r[:size].contiguous()
    pad = r.new_full((size - n, r.shape[1]), int(fill_value))
    return cat([r, pad])
