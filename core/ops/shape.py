"""Shape and movement ops (views where PyTorch makes views), and indexing."""
from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Op
from ..dispatch import apply, unary, view_op
from ..tensor import Size, Tensor, _wrap_dim


__all__ = ["clone", "flatten", "permute", "reshape", "squeeze", "swapaxes", "swapdims", "t", "transpose", "unsqueeze"]


def _shape_arg(shape, op):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def infer_shape(shape, numel, op="view"):
    """Resolve a single ``-1`` in ``shape`` and check the element count."""
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
    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k["view"](x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape)


class Reshape(Op):
    backward_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k["reshape"](x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape)


class Permute(Op):
    @staticmethod
    def forward(ctx, k, x, dims):
        ctx.dims = dims
        return k["permute"](x, dims)

    @staticmethod
    def backward(ctx, g):
        inv = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inv[d] = i
        return g.permute(inv)


class Transpose(Permute):
    backward_name = "TransposeBackward0"


class T(Permute):
    backward_name = "TBackward0"


class Expand(Op):
    @staticmethod
    def forward(ctx, k, x, shape):
        ctx.in_shape = x.shape
        return k["expand"](x, shape)

    @staticmethod
    def backward(ctx, g):
        return g.sum_to_size(ctx.in_shape)


class Clone(Op):
    @staticmethod
    def forward(ctx, k, x):
        return k["copy"](x)

    @staticmethod
    def backward(ctx, g):
        return g


class Contiguous(Clone):
    backward_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, k, x):
        return k["contiguous"](x)


class Getitem(Op):
    """``x[index]``; ``index`` is already in array terms (ints, slices, None, Ellipsis, arrays)."""

    backward_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, k, x, index):
        ctx.in_shape, ctx.index = x.shape, index
        return k["getitem"](x, index)

    @staticmethod
    def backward(ctx, g):
        return apply(IndexPutZeros, g, ctx.in_shape, ctx.index)


class SliceView(Getitem):
    backward_name = "SliceBackward0"


class IndexPutZeros(Op):
    """Zeros of ``shape`` with ``g`` added at ``index``: the gradient of ``x[index]``."""

    backward_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, k, g, shape, index):
        ctx.index = index
        out = k["full"](shape, 0, g.dtype)
        k["index_put_acc"](out, index, g)
        return out

    @staticmethod
    def backward(ctx, gg):
        return apply(Getitem, gg, ctx.index)


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
            if cat > 1:
                raise IndexError(f"{op}: tensors used as indices must be long, int, byte or bool tensors, "
                                 f"got {i.dtype}")
            arr = i._data if i._dev is t._dev else xp.asarray(i._dev.backend.to_numpy(i._data))
            if i.dtype.name == "uint8":
                arr = arr.astype(bool)
            out.append(arr)
        elif isinstance(i, (list, np.ndarray)):
            a = np.asarray(i)
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
    shape = t._data.shape
    used = [i.ndim if getattr(i, "dtype", None) == bool else (0 if i is None or i is Ellipsis else 1)
            for i in index]
    total = sum(used)
    if total > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim = 0
    for i, n in zip(index, used):
        if i is Ellipsis:
            dim += len(shape) - total
            continue
        if isinstance(i, int) and not -shape[dim] <= i < shape[dim]:
            raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {shape[dim]}")
        dim += n


def getitem(t, index):
    index = _convert_index(t, index)
    _check_bounds(t, index)
    if _is_basic(index):
        if Ellipsis not in index:
            index = index + (Ellipsis,)  # so that all-integer indexing still gives a (0-d) view
        return view_op(SliceView, t, index)
    try:
        return apply(Getitem, t, index)
    except IndexError as e:
        raise IndexError(f"index: {e}") from None


# --------------------------------------------------------------------------- public functions
def view(self, *shape):
    """A view with a new shape (no copy; fails when the strides do not allow it)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and shape[0] is not None:
        from .. import dtypes

        return self.view_as_dtype(dtypes.as_dtype(shape[0]))
    shape = infer_shape(_shape_arg(shape, "view"), self.numel(), "view")
    try:
        return view_op(View, self, shape)
    except (AttributeError, ValueError, RuntimeError):
        raise RuntimeError(f"view size is not compatible with input tensor's size and stride (at least one "
                           f"dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                           f"(input shape {list(self.shape)}, requested {list(shape)})") from None


def reshape(self, *shape):
    """The same data in a new shape; a view when possible, else a copy."""
    shape = infer_shape(_shape_arg(shape, "reshape"), self.numel(), "reshape")
    if self.is_contiguous():
        return view_op(Reshape, self, shape)
    return unary(Reshape, self, shape)


def permute(self, *dims):
    """A view with dimensions reordered."""
    dims = _shape_arg(dims, "permute")
    n = self.dim()
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, n, "permute") for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return view_op(Permute, self, dims)


def transpose(self, dim0, dim1):
    """A view with two dimensions swapped."""
    n = self.dim()
    if n == 0:
        return view_op(Transpose, self, ())
    d0, d1 = _wrap_dim(dim0, n, "transpose"), _wrap_dim(dim1, n, "transpose")
    dims = list(range(n))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return view_op(Transpose, self, tuple(dims))


swapaxes = swapdims = transpose


def t(self):
    """Transpose of a tensor of at most 2 dimensions."""
    n = self.dim()
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return view_op(T, self, tuple(range(n))[::-1])


def expand(self, *sizes):
    """A broadcast view (no copy); ``-1`` keeps a dimension."""
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


def expand_as(self, other):
    return expand(self, other.shape)


def contiguous(self, memory_format=None):
    """A contiguous tensor with the same data: ``self`` if it already is one."""
    if self.is_contiguous():
        return self
    return unary(Contiguous, self)


def clone(self, *, memory_format=None):
    """A copy that stays in the graph."""
    return unary(Clone, self)


def sum_to_size(self, *size):
    """Sum broadcast dimensions away so the result has ``size``."""
    size = _shape_arg(size, "sum_to_size")
    if tuple(self.shape) == size:
        return self
    from .reduction import SumTo

    return unary(SumTo, self, size)


def flatten(self, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one."""
    n = self.dim()
    if n == 0:
        return reshape(self, 1)
    s, e = _wrap_dim(start_dim, n, "flatten"), _wrap_dim(end_dim, n, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = self.shape
    return reshape(self, tuple(shape[:s]) + (math.prod(shape[s:e + 1]),) + tuple(shape[e + 1:]))


def squeeze(self, dim=None):
    """Drop dimensions of size one (all, or those in ``dim``)."""
    n = self.dim()
    if dim is None:
        shape = tuple(s for s in self.shape if s != 1)
    else:
        dims = {_wrap_dim(d, n, "squeeze") for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
        shape = tuple(s for i, s in enumerate(self.shape) if not (i in dims and s == 1))
    return view_op(View, self, shape)


def unsqueeze(self, dim):
    """Insert a dimension of size one at ``dim``."""
    n = self.dim() + 1
    d = _wrap_dim(dim, n, "unsqueeze")
    shape = list(self.shape)
    shape.insert(d, 1)
    return view_op(View, self, tuple(shape))


def _T(self):
    return permute(self, tuple(range(self.dim()))[::-1])


def _mT(self):
    if self.dim() < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(self, -2, -1)


def view_as(self, other):
    return view(self, other.shape)


def reshape_as(self, other):
    return reshape(self, other.shape)


METHODS = {
    "view": view, "reshape": reshape, "permute": permute, "transpose": transpose, "swapaxes": transpose,
    "swapdims": transpose, "t": t, "expand": expand, "expand_as": expand_as, "contiguous": contiguous,
    "clone": clone, "sum_to_size": sum_to_size, "flatten": flatten, "squeeze": squeeze, "unsqueeze": unsqueeze,
    "view_as": view_as, "reshape_as": reshape_as, "__getitem__": getitem,
    "T": property(_T), "mT": property(_mT), "H": property(lambda self: _T(self).conj() if self.is_complex() else _T(self)),
}
