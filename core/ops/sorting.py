"""Sorting and selection (``sort``, ``argsort``, ``topk``, ``kthvalue``, ``median``, ``mode``, ``unique``),
and comparisons of whole tensors (``equal``, ``allclose``, ``isclose``)."""
from __future__ import annotations

from .. import dtypes
from ..autograd.function import Op, composite_node, keep_saved
from ..autograd.grad_mode import no_grad
from ..dispatch import apply, device_error, result_type
from ..writes import out_or, outs_or
from ..registry import export, op_class
from ..tensor import Tensor, _wrap_dim
from . import pointwise
from .creation import arange, full_like, tensor
from .indexing import gather_values
from .reduction import _nondiff, return_types
from .shape import cat


class SortIndices(Op):
    """The indices that sort ``x`` along ``dim`` (stably); not differentiable (values are gathered with them)."""

    @staticmethod
    def forward(ctx, k, x, dim, descending):
        return k["sort"](x, dim, descending, True)[1]


@export
def sort(input, dim=-1, descending=False, stable=False, *, out=None):  # noqa: A002
    """Sorted values and their indices along ``dim`` (a named tuple; written into ``out``'s two tensors when
    given)."""
    if input.dtype.category == dtypes.COMPLEX:
        raise RuntimeError(f"sort: does not support complex dtypes (got {input.dtype})")
    if input.dim() == 0:
        return outs_or(return_types.sort(composite_node(input.clone(), "SortBackward0"),
                                         input.new_zeros((), dtype=dtypes.int64)), out)
    d = _wrap_dim(dim, input.dim(), "sort")
    idx = _nondiff(SortIndices, input, d, descending)
    return outs_or(return_types.sort(composite_node(gather_values(input, d, idx), "SortBackward0"), idx), out)


@export
def argsort(input, dim=-1, descending=False, stable=False):  # noqa: A002
    """Indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


@export
def msort(input, *, out=None):  # noqa: A002
    return out_or(sort(input, 0).values, out)


@export
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):  # noqa: A002
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    if input.dtype is dtypes.bool:
        raise RuntimeError(f"topk does not support bool dtypes on {input.device.type.upper()}")
    d = _wrap_dim(dim, max(input.dim(), 1), "topk")
    n = input.shape[d] if input.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, size {n} along dim {d})")
    s = sort(input, d, descending=largest)
    values, indices = s.values.narrow(d, 0, k), s.indices.narrow(d, 0, k)
    if k < n:  # fresh arrays, contiguous as PyTorch's results (transformers' contrastive search views them flat)
        values, indices = values.clone(), indices.clone()
    return outs_or(return_types.topk(composite_node(values, "TopkBackward0"), indices), out)


_ORDERED = dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES  # (PyTorch's selection kernels: no bool, no complex)


@export
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):  # noqa: A002
    """The ``k``-th smallest value (1-based) along ``dim`` and its index."""
    dtypes.check_kernel("kthvalue_{device}", input, _ORDERED)
    d = _wrap_dim(dim, input.dim(), "kthvalue")
    if input.dim() and input.shape[d] == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if input.dim() == 0:
        if k != 1:
            raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
        return outs_or(return_types.kthvalue(composite_node(input.clone(), "KthvalueBackward0"),
                                             input.new_zeros((), dtype=dtypes.int64)), out)
    if not 1 <= k <= input.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    s = sort(input, d)
    v, i = s.values.narrow(d, k - 1, 1), s.indices.narrow(d, k - 1, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return outs_or(return_types.kthvalue(composite_node(v, "KthvalueBackward0"), i), out)


def _dim_for_out(dim, op):
    """``dim`` of a call with ``out=``: PyTorch's overload of all elements (no ``dim``) has no ``out``."""
    if dim is None:
        raise TypeError(f"{op}() missing 1 required positional arguments: \"dim\" (the form with out= takes one)")
    return dim


def _nan_of_empty(flat, node):
    """The NaN median of an empty input, in its graph as PyTorch's is (the result requires grad; the gradient is
    empty)."""
    r = flat.new_full((), float("nan"))
    return composite_node(r + flat.sum() * 0, node) if flat.requires_grad else r


@export
def median(input, dim=None, keepdim=False, *, out=None):  # noqa: A002
    """The lower median (of all elements, or along ``dim`` with its index), as PyTorch defines it."""
    dtypes.check_kernel("median_{device}" if dim is None else "median_out", input, _ORDERED, empty_ok=False)
    if out is not None:
        return outs_or(median(input, _dim_for_out(dim, "median"), keepdim), out)
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return _nan_of_empty(flat, "MedianBackward0")
        s = sort(flat).values  # NaN sorts last; PyTorch's median is NaN when there is one
        r = composite_node(pointwise.where(s[-1].isnan(), s[-1], s[(flat.numel() - 1) // 2]), "MedianBackward0")
        return keep_saved(r, input)  # (PyTorch's node keeps its input)
    d = _wrap_dim(dim, input.dim(), "median")
    if input.dim() and input.shape[d] == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    if input.dim() == 0:
        return return_types.median(composite_node(input.clone(), "MedianBackward1"),
                                   input.new_zeros((), dtype=dtypes.int64))
    r = kthvalue(input, (input.shape[d] + 1) // 2, d, True)
    idx = r.indices
    if input.dtype.is_floating_point and input.shape[d]:  # a row with NaN: its first NaN, as PyTorch
        nan = input.isnan()
        idx = pointwise.where(nan.any(d, keepdim=True), nan.to(dtypes.uint8).argmax(d, keepdim=True), idx)
    values = gather_values(input, d, idx)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return return_types.median(composite_node(values, "MedianBackward1"), idx)


@export
def nanmedian(input, dim=None, keepdim=False, *, out=None):  # noqa: A002
    """The lower median of the non-NaN values (NaN only where all are NaN).

    >>> import ember
    >>> ember.tensor([1.0, float("nan"), 3.0, 2.0]).nanmedian()
    tensor(2.)
    """
    dtypes.check_kernel("median_{device}" if dim is None else "median_out", input, _ORDERED, empty_ok=False)
    if out is not None:
        return outs_or(nanmedian(input, _dim_for_out(dim, "nanmedian"), keepdim), out)
    if not input.dtype.is_floating_point or input.dim() == 0:
        r = median(input, dim, keepdim)
        return r if dim is None else return_types.nanmedian(*r)
    flat = dim is None
    x = input.reshape(-1) if flat else input
    if flat and x.numel() == 0:
        return _nan_of_empty(x, "NanmedianBackward0")
    d = 0 if flat else _wrap_dim(dim, input.dim(), "nanmedian")
    s = sort(x, d)  # NaN sorts last: the lower median of the first `count` entries
    at = (x.isnan().logical_not().sum(d, keepdim=True) - 1).clamp(min=0) // 2
    values, idx = s.values.gather(d, at), s.indices.gather(d, at)
    if flat:
        return keep_saved(composite_node(values.reshape(()), "NanmedianBackward0"), input)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    return return_types.nanmedian(composite_node(values, "NanmedianBackward1"), idx)


@export
def mode(input, dim=-1, keepdim=False, *, out=None):  # noqa: A002
    """The most frequent value along ``dim`` (the smallest among ties) and the last index where it occurs.

    Runs of equal values in the sorted rows give every count at once; the values are gathered from
    ``input``, so they carry its gradient.

    >>> import ember
    >>> ember.tensor([1, 2, 2, 3, 2]).mode()
    mode(values=tensor(2), indices=tensor(4))
    """
    if out is not None:
        return outs_or(mode(input, dim, keepdim), out)
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
    first = s[..., :1]
    edge = (first == first).logical_or(first != first)  # all True (NaN too), shaped (..., 1)
    where = pointwise.where
    start = where(cat([edge, differs], -1), pos, 0).cummax(-1).values
    end = where(cat([differs, edge], -1), pos, n).flip(-1).cummin(-1).values.flip(-1)
    best = (end - start).argmax(-1, keepdim=True)  # the first longest run: the smallest value among ties
    v = s.gather(-1, best)
    same = (x == v).logical_or((x != x).logical_and(v != v))  # (a NaN mode is found at a NaN)
    idx = where(same, pos, -1).amax(-1, keepdim=True).movedim(-1, d)
    vals = gather_values(input, d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return return_types.mode(vals, idx)


Unique = op_class("Unique", "unique", arity=2, tags=("data-dependent",))


UniqueConsecutive = op_class("UniqueConsecutive", "unique_consecutive", arity=2, tags=("data-dependent",))


def _unique_result(r, return_inverse, return_counts):
    values, inverse, counts = r
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


@export
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (sorted), optionally with the inverse indices and counts; with ``dim``, the
    distinct slices along ``dim``."""
    d = None if dim is None else _wrap_dim(dim, input.dim(), "unique")
    return _unique_result(apply(Unique, input.detach(), d), return_inverse, return_counts)


@export
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The first of each run of equal consecutive values (or slices along ``dim``), optionally with the
    inverse indices and the run lengths.

    >>> import ember
    >>> ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 3, 1]), return_counts=True)
    (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 1]))
    """
    d = None if dim is None else _wrap_dim(dim, input.dim(), "unique_consecutive")
    return _unique_result(apply(UniqueConsecutive, input.detach(), d), return_inverse, return_counts)


@export
def equal(input, other) -> bool:  # noqa: A002
    """True when both have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


@export
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Elementwise ``input == other`` or, for finite differences, ``|input - other| <= atol + rtol * |other|``
    (a bool tensor); both tensors of one dtype, as PyTorch requires.

    >>> import ember
    >>> ember.isclose(ember.tensor([1., 2., float("inf")]), ember.tensor([1. + 1e-9, 2.1, float("inf")])).tolist()
    [True, False, True]
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if input.dtype != other.dtype:
        raise RuntimeError(f"isclose(): {input.dtype} did not match {other.dtype}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol < 0:
            raise RuntimeError(f"isclose(): {name} must be greater than or equal to zero, but got {tol}")
    with no_grad():
        a, b = input.detach(), other.detach()
        close = a == b
        if equal_nan:
            close = close.logical_or(a.isnan().logical_and(b.isnan()))
        if not (a.is_floating_point() or a.is_complex()):
            a, b = a.double(), b.double()
        err = (a - b).abs()  # an inf against a different value is never close: its error is not finite
        close = close.logical_or(err.isfinite().logical_and(err <= atol + rtol * b.abs()))
    return close


@export
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:  # noqa: A002
    """Whether every element is close (see :func:`isclose`)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


# --------------------------------------------------------------------------- searching sorted data, quantiles
Searchsorted = op_class("searchsorted")


def _search(seq, values, out_int32, right, side, sorter, op):
    if seq.dim() == 0:
        raise RuntimeError(f"{op}(): boundaries tensor should have positive dimension, but got 0 dimension")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{op}(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(f"{op}(): side and right can't be set to opposites, got side of left while right "
                               f"was True")
        right = side == "right"
    if not isinstance(values, Tensor):
        if seq.dim() != 1:
            raise RuntimeError(f"{op}(): input value can be a scalar only when boundaries tensor dimension is 1, "
                               f"but we got boundaries tensor dim({seq.dim()}) and input value's dim(0) numel(1)")
        values = tensor(values, dtype=result_type(seq, values), device=seq.device)
    if seq.dim() > 1 and (values.dim() != seq.dim() or values.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"{op}(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                           f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    if values._dev is not seq._dev:
        raise device_error(op, seq, values)
    rt = result_type(seq, values)
    if values.numel() and (rt is dtypes.bool or rt.is_complex):  # (PyTorch returns empty input's result first)
        raise NotImplementedError(f'"searchsorted_out_{seq.device.type}" not implemented for '
                                  f'\'{dtypes.type_name(rt)}\'')
    if sorter is not None:
        if sorter.dtype is not dtypes.int64:
            raise RuntimeError(f"{op}(): sorter must be a tensor of long dtype but got dtype "
                               f"{pointwise._type_name(sorter.dtype)}")
        if sorter.shape != seq.shape:
            raise RuntimeError(f"{op}(): boundary and sorter must have the same size, but got boundary tensor "
                               f"{list(seq.shape)} and got sorter tensor {list(sorter.shape)}")
        seq = seq.gather(-1, sorter)
    seq, values = (v.detach().to(rt) for v in (seq, values))
    r = apply(Searchsorted, seq, values, right)
    return r.to(dtypes.int32 if out_int32 else dtypes.int64)


@export(to=("torch",))
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None,  # noqa: A002
                 out=None):
    """Indices where ``input`` would be inserted into ``sorted_sequence`` (sorted along its last dim) to keep
    it sorted: the first such index, or the last with ``right=True`` / ``side='right'``.  A 1-d sequence
    serves every value; an n-d one holds one sorted row per row of ``input``.  ``sorter`` sorts an unsorted
    sequence (indices into the sorted order are returned).

    >>> import ember
    >>> ember.searchsorted(ember.tensor([1, 3, 5, 7]), ember.tensor([3, 6]))
    tensor([1, 3])
    """
    return out_or(_search(sorted_sequence, input, out_int32, right, side, sorter, "searchsorted"), out)


@export(to=("torch",))
def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):  # noqa: A002
    """The bucket of each element of ``input`` between the sorted 1-d ``boundaries``: ``i`` with
    ``boundaries[i-1] < x <= boundaries[i]`` (``boundaries[i-1] <= x < boundaries[i]`` with ``right=True``).

    >>> import ember
    >>> ember.bucketize(ember.tensor([3, 6, 9]), ember.tensor([1, 3, 5, 7, 9]))
    tensor([1, 3, 4])
    """
    if not isinstance(boundaries, Tensor) or boundaries.dim() != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim("
                           f"{getattr(boundaries, 'ndim', 0)})")
    return out_or(_search(boundaries, input, out_int32, right, None, None, "bucketize"), out)


QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")
_ROUNDING = {"lower": "floor", "higher": "ceil", "nearest": "round"}  # modes that pick one data point


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, op):
    """PyTorch's algorithm: sort, take ranks ``q * (n - 1)`` (n counting non-NaN values for nanquantile; a
    row with NaN gives NaN for quantile), gather the values around them and interpolate."""
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.dim() > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor (got shape {list(q.shape)})")
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got {input.dtype}")
    if isinstance(q, Tensor):
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor ({q.dtype} and "
                               f"{input.dtype})")
        if q._dev is not input._dev:
            raise RuntimeError(f"{op}() q tensor must be on the same device as the input tensor ({q.device} and "
                               f"{input.device})")
        if not bool(q.ge(0).logical_and(q.le(1)).all()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    elif not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    if interpolation not in QUANTILE_MODES:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    if dim is None:
        srt = sort(input.reshape(-1)).values
        shape = [1] * input.dim() if keepdim else []
    else:
        d = _wrap_dim(dim, max(input.dim(), 1), op)
        srt = sort(input.unsqueeze(-1).transpose(d, -1)).values if input.dim() else input.reshape(1)
        shape = list(input.shape)
        if shape:
            shape[d:d + 1] = [1] if keepdim else []
    qt = q if isinstance(q, Tensor) else tensor(q, dtype=input.dtype, device=input.device)
    qv = qt.detach().reshape([1] * (srt.dim() - 1) + [-1])
    if ignore_nan:
        ranks = qv * (srt.isnan().logical_not().sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)  # all NaN: rank 0, a NaN
    else:
        last = srt.shape[-1] - 1
        ranks = pointwise.where(srt.isnan().any(-1, keepdim=True), last, qv * last)  # a NaN row: its last, a NaN
    if interpolation in _ROUNDING:
        ranks = getattr(ranks, _ROUNDING[interpolation])()
    below = ranks.long()
    values = gather_values(srt, -1, below)
    if interpolation in ("linear", "midpoint"):
        weight = full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        values = pointwise.lerp(values, gather_values(srt, -1, ranks.ceil().long()), weight)
    if qt.dim():
        values = values.movedim(-1, 0)
    # the result with a trailing 1, squeezed in place: PyTorch's last node (SqueezeBackward4)
    return values.reshape(([qt.numel()] if qt.dim() else []) + shape + [1]).squeeze_(-1)


@export
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """The ``q``-th quantiles (``q`` a number or a 1-d tensor in [0, 1]) of all elements or along ``dim``;
    between two data points ``interpolation`` picks 'linear', 'lower', 'higher', 'midpoint' or 'nearest'.
    A 1-d ``q`` adds a leading dim, one entry per quantile.  NaN in a reduced row gives NaN.

    >>> import ember
    >>> ember.quantile(ember.tensor([1.0, 2.0, 4.0, 8.0]), 0.5)
    tensor(3.)
    """
    return out_or(_quantile(input, q, dim, keepdim, interpolation, False, "quantile"), out)


@export
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):  # noqa: A002
    """:func:`quantile` of the non-NaN values (NaN only where a row has no other).

    >>> import ember
    >>> ember.nanquantile(ember.tensor([1.0, float("nan"), 4.0]), 0.5)
    tensor(2.5000)
    """
    return out_or(_quantile(input, q, dim, keepdim, interpolation, True, "nanquantile"), out)


IsIn = op_class("IsIn", "isin", params=("invert",), arity=3)


@export(to=("torch",))
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a scalar, not both).

    >>> import ember
    >>> ember.isin(ember.tensor([[1, 2], [3, 4]]), ember.tensor([2, 3]))
    tensor([[False,  True],
            [ True, False]])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments: got ({type(elements).__name__}, "
                        f"{type(test_elements).__name__}), expected at least one Tensor")
    ref = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(elements, Tensor):
        elements = tensor(elements, device=ref.device)
    if not isinstance(test_elements, Tensor):
        test_elements = tensor(test_elements, device=ref.device)
    if elements.is_complex() or test_elements.is_complex():
        raise NotImplementedError("isin: complex inputs are not supported")
    if elements._dev is not test_elements._dev:
        raise device_error("isin", elements, test_elements)
    rt = result_type(elements, test_elements)
    with no_grad():
        return apply(IsIn, elements.to(rt), test_elements.to(rt), bool(invert))
