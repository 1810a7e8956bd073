"""Op table rows for the breadth of PyTorch's shape, indexing, creation and reduction names.

Same row format as :mod:`ember.testing.op_table_shape`: ``Row(name, op(m, *args), samples)`` where ``m`` is
``ember`` or ``torch``; :class:`F` inputs are differentiated (gradients against PyTorch, float64 gradcheck and
gradgradcheck), :class:`I` are int64 index tensors.
"""
from __future__ import annotations

import warnings

import numpy as np

from .op_table_shape import F, I, Row

_RNG = np.random.RandomState(4321)  # this table's own: drawing from another table's would change its data


def r(*shape, nc=False, positive=False, grad=True):
    """Random float data of ``shape`` (as an :class:`F`)."""
    return F(_RNG.rand(*shape) + (0.5 if positive else -0.5), nc, grad)


def distinct(*shape):
    """Values without ties (max/min gradients are unique)."""
    n = int(np.prod(shape)) if shape else 1
    return F((np.random.RandomState(21).permutation(n).reshape(shape) - n / 2.0 + 0.25) / 3.0)


def pos(*shape):
    return r(*shape, positive=True)


def _split(m, x):
    return x.tensor_split(3, 1)


SHAPE_ROWS = [
    Row("ravel", lambda m, x: (m.ravel(x), x.ravel()), [[r(2, 3)], [r(2, 3, nc=True)], [r()]], ints=True),
    Row("tensor_split_sections", _split, [[r(2, 7)], [r(2, 2)]], ints=True),
    Row("tensor_split_indices", lambda m, x: m.tensor_split(x, [1, 4], dim=-1), [[r(2, 6)], [r(3, 2)]]),
    Row("tensor_split_tensor", lambda m, x: m.tensor_split(x, m.tensor([1, 2])), [[r(4, 2)]]),
    Row("hsplit", lambda m, x: m.hsplit(x, 2), [[r(3, 4)], [r(6)]]),
    Row("hsplit_indices", lambda m, x: x.hsplit([1, 3]), [[r(2, 4)]]),
    Row("vsplit", lambda m, x: m.vsplit(x, [1]), [[r(3, 2)]]),
    Row("dsplit", lambda m, x: x.dsplit(2), [[r(2, 1, 4)]]),
    Row("rot90", lambda m, x: (m.rot90(x), x.rot90(2), x.rot90(-1, (1, 0)), x.rot90(4)), [[r(2, 3)], [r(2, 3, 2)]],
        ints=True),
    Row("repeat_interleave_int", lambda m, x: (x.repeat_interleave(2), m.repeat_interleave(x, 3, dim=1)),
        [[r(2, 3)], [r(2, 3, nc=True)]], ints=True),
    Row("repeat_interleave_tensor", lambda m, x: (x.repeat_interleave(m.tensor([1, 0, 2], device=x.device), dim=-1),
                                                  m.repeat_interleave(x, m.tensor([2, 1]), 0, output_size=3)),
        [[r(2, 3)]], ints=True),
    Row("repeat_interleave_repeats_only", lambda m, i: m.repeat_interleave(i),
        [[I([2, 0, 1])], [I([])]], grad=False),
    Row("repeat_interleave_0d", lambda m, x: x.repeat_interleave(3), [[r()]]),
    Row("diagflat", lambda m, x: (m.diagflat(x), x.diagflat(1), m.diagflat(x, -2)), [[r(2, 2)], [r(3)]], ints=True),
    Row("adjoint", lambda m, x: (m.adjoint(x), x.adjoint(), x.mH), [[r(2, 3)], [r(2, 3, 4)]]),
    Row("block_diag", lambda m, x, y, z: m.block_diag(x, y, z), [[r(2, 2), r(3), r()], [r(1, 3), r(2, 1), r(0, 2)]]),
    Row("cartesian_prod", lambda m, x, y: m.cartesian_prod(x, y), [[r(2), r(3)]], ints=True),
    Row("cartesian_prod_one", lambda m, x: m.cartesian_prod(x), [[r(3)]]),
    Row("combinations", lambda m, x: (m.combinations(x), m.combinations(x, 3), m.combinations(x, 2, True),
                                      m.combinations(x, 1)), [[r(4)]], ints=True),
    Row("combinations_empty", lambda m, x: (m.combinations(x, 5), m.combinations(x, 0)), [[r(3)]], grad=False),
    Row("select_scatter", lambda m, x, s: (m.select_scatter(x, s, 0, 1), x.select_scatter(s, 0, -1)),
        [[r(3, 4), r(4)]]),
    Row("slice_scatter", lambda m, x, s: (m.slice_scatter(x, s, 1, 0, 4, 2), x.slice_scatter(s.mT[:1].mT, dim=1,
                                                                                               start=3)),
        [[r(3, 4), r(3, 2)]]),
    Row("diagonal_scatter", lambda m, x, s: (m.diagonal_scatter(x, s), x.diagonal_scatter(s[:2], 1)),
        [[r(3, 3), r(3)]]),
    # forward only against PyTorch: torch 2.13's gradient of as_strided_scatter with respect to input is wrong
    # (it passes g where src overwrote input); tests/test_breadth_ops.py gradchecks ember's
    Row("as_strided_scatter", lambda m, x, s: m.as_strided_scatter(x, s, (2, 2), (1, 2), 1), [[r(3, 2), r(2, 2)]],
        grad=False),
    Row("detach_copy", lambda m, x: m.detach_copy(x), [[r(2, 3)]], grad=False),
    Row("copies", lambda m, x: (m.alias_copy(x), m.diagonal_copy(x), m.expand_copy(x[:1], (2, 3)),
                                m.permute_copy(x, (1, 0)), m.select_copy(x, 1, 2), m.squeeze_copy(x[:1]),
                                m.t_copy(x), m.transpose_copy(x, 0, 1), m.unsqueeze_copy(x, 1),
                                m.view_copy(x, (3, 2)), m.narrow_copy(x, 1, 1, 2), x.narrow_copy(0, 1, 1),
                                m.slice_copy(x, 1, 0, 3, 2), m.unfold_copy(x, 1, 2, 1),
                                m.as_strided_copy(x.contiguous(), (2, 2), (1, 2))), [[r(2, 3)]]),
    Row("split_copies", lambda m, x: (*m.split_copy(x, 2, 1), *m.split_with_sizes_copy(x, [1, 2], 1),
                                      *m.unbind_copy(x, 1), *m.split_with_sizes(x, [2, 1], 1)), [[r(2, 3)]]),
    Row("unsafe_splits", lambda m, x: (*m.unsafe_split(x, 2, 1), *x.unsafe_chunk(2, 1),
                                       *m.unsafe_split_with_sizes(x, [1, 2], 1)), [[r(2, 3)]]),
    Row("view_inplace", lambda m, x: ((x * 1).unsqueeze_(1), (x * 1).transpose_(0, 1), (x * 1).swapaxes_(1, 0),
                                      (x * 1).swapdims_(0, 1), (x[:1] * 1).squeeze_(), (x[:1] * 1).squeeze_(0),
                                      (x * 1).t_()), [[r(2, 3)]]),
    Row("tril_triu_inplace", lambda m, x: ((x * 1).tril_(), (x * 1).triu_(-1)), [[r(3, 4)]]),
    Row("fill_diagonal", lambda m, x: ((x * 1).fill_diagonal_(0.5), (x * 1).fill_diagonal_(-1, wrap=True)),
        [[r(5, 2)], [r(2, 4)]]),
    Row("fill_diagonal_3d", lambda m, x: (x * 1).fill_diagonal_(2.0), [[r(2, 2, 2)]]),
]

def _beta(fn, *args, **kwargs):
    """``fn(*args)`` without PyTorch's "index_reduce() is in beta" warning (the reference's, not ember's)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"index_reduce\(\) is in beta")
        return fn(*args, **kwargs)


INDEX_ROWS = [
    Row("index_reduce_prod", lambda m, x, i, s: _beta(x.index_reduce, 0, i, s, "prod"),
        [[pos(3, 2), I([0, 2, 0]), pos(3, 2)]], gradgrad=False),
    Row("index_reduce_mean", lambda m, x, i, s: (_beta(m.index_reduce, x, 1, i, s, "mean"),
                                                 _beta(x.index_reduce, 1, i, s, "mean", include_self=False)),
        [[r(2, 3), I([0, 2, 0, 0]), r(2, 4)]]),
    Row("index_reduce_amax", lambda m, x, i, s: _beta(x.index_reduce, 0, i, s, "amax", include_self=False),
        [[distinct(3, 2), I([1, 1, 2]), r(3, 2)]], gradgrad=False),
    Row("index_reduce_amin", lambda m, x, i, s: _beta((x * 1).index_reduce_, 0, i, s, "amin"),
        [[distinct(3, 2), I([1, 0]), r(2, 2)]], gradgrad=False),
    Row("put", lambda m, x, i, s: (m.put(x, i, s), x.put(i, s, accumulate=True), (x * 1).put_(i, s)),
        [[r(2, 3), I([5, 0, 2]), r(3)], [r(2, 3), I([[1, 4]]), r(1, 2)]]),
    Row("index_put_top", lambda m, x, i, v: m.index_put_(x * 1, (i,), v, accumulate=True),
        [[r(3, 2), I([0, 0]), r(2, 2)]]),
    Row("getitem_range", lambda m, x, i: (x[range(3), i], x[range(1, 3)], x[:, range(0, 4, 2)]),
        [[r(3, 4), I([0, 3, 1])]]),
    Row("setitem_range", lambda m, x, i, v: _setitem(x * 1, (range(2), i), v), [[r(2, 3), I([2, 0]), r(2)]]),
]


def _setitem(x, index, value):
    x[index] = value
    return x


REDUCTION_ROWS = [
    Row("logcumsumexp", lambda m, x: (m.logcumsumexp(x, 1), x.logcumsumexp(0)), [[r(3, 4)], [r(3, 4, nc=True)]]),
    Row("logcumsumexp_wide", lambda m, x: m.logcumsumexp(x * 40, 0), [[r(5, 2)]], atol=1e-6, rtol=1e-6),
    Row("logcumsumexp_0d", lambda m, x: m.logcumsumexp(x, 0), [[r()]]),
    Row("cdist", lambda m, x, y: m.cdist(x, y), [[r(3, 2), r(4, 2)], [r(2, 3, 4), r(2, 2, 4)]]),
    Row("cdist_p", lambda m, x, y: (m.cdist(x, y, 1), m.cdist(x, y, 3), m.cdist(x, y, 0.5),
                                    m.cdist(x, y, float("inf"))),
        [[distinct(3, 2), r(2, 2)]], gradgrad=False),
    Row("cdist_mm", lambda m, x, y: (m.cdist(x, y, compute_mode="use_mm_for_euclid_dist"),
                                     m.cdist(x, y, compute_mode="donot_use_mm_for_euclid_dist")),
        [[r(3, 2), r(4, 2)]]),
    Row("cdist_large", lambda m, x, y: m.cdist(x, y), [[r(27, 3), r(2, 3)]], gradgrad=False),
    Row("cdist_broadcast", lambda m, x, y: m.cdist(x, y), [[r(2, 1, 3, 2), r(4, 2)]]),
    Row("pdist", lambda m, x: (m.pdist(x), m.pdist(x, 1), m.pdist(x, 2.5)), [[r(4, 3)], [r(1, 3)]]),
    Row("dist", lambda m, x, y: (m.dist(x, y), x.dist(y, 1), x.dist(y, 3), m.dist(x, y, float("inf"))),
        [[distinct(2, 3), r(3)]]),
    Row("cov", lambda m, x: (m.cov(x), x.cov(correction=0), m.cov(x[0])), [[r(3, 5)], [r(2, 4, nc=True)]]),
    Row("cov_weights", lambda m, x, a, f, g: (m.cov(x, fweights=f), m.cov(x, aweights=a),
                                              m.cov(x, fweights=g, aweights=a, correction=2)),
        [[r(2, 4), pos(4), I([1, 2, 0, 3]), I([1, 2, 1, 1])]]),
    Row("corrcoef", lambda m, x: (m.corrcoef(x), x.corrcoef(), m.corrcoef(x[0])), [[r(3, 6)]]),
    Row("trapezoid", lambda m, y: (m.trapezoid(y), m.trapz(y, dim=0), m.trapezoid(y, dx=0.5), m.trapz(y, dx=2)),
        [[r(3, 4)], [r(2, 0)]]),
    Row("trapezoid_x", lambda m, y, x: (m.trapezoid(y, x), m.trapezoid(y, x.expand(3, 4)), m.trapz(y, x)),
        [[r(3, 4), r(4)]]),
    Row("cumulative_trapezoid", lambda m, y, x: (m.cumulative_trapezoid(y), m.cumulative_trapezoid(y, x),
                                                 m.cumulative_trapezoid(y, dx=0.3, dim=0)), [[r(3, 4), r(4)]]),
    Row("renorm", lambda m, x: (m.renorm(x, 2, 0, 0.5), x.renorm(1, 1, 0.7), (x * 1).renorm_(3, -1, 0.4)),
        [[r(3, 4)], [r(2, 3, 2)]]),
    Row("inner", lambda m, x, y: (m.inner(x, y), x.inner(y[0])), [[r(2, 3), r(4, 3)], [r(3), r(2, 3)]]),
    Row("inner_scalar", lambda m, x, y: m.inner(x, y), [[r(), r(2, 3)]]),
    Row("histogramdd", lambda m, x, w: (*m.histogramdd(x, 3)[:1], *m.histogramdd(x, [2, 3], weight=w[:, 0])[:1],
                                        *m.histogramdd(x, [2, 2], range=[-0.5, 0.5, -0.2, 0.2], density=True)[:1]),
        [[r(6, 2, grad=False), r(6, 2, grad=False)]], grad=False),
    Row("histogramdd_edges", lambda m, x: m.histogramdd(x, [3, 2])[1], [[r(5, 2, grad=False)]], grad=False),
    Row("segment_reduce", lambda m, x, n: tuple(m.segment_reduce(x, red, lengths=n) for red in
                                                ("sum", "mean", "max", "min", "prod")),
        [[distinct(5, 2), I([2, 0, 3])]], gradgrad=False),
    Row("segment_reduce_offsets", lambda m, x, o: (m.segment_reduce(x, "sum", offsets=o, initial=1.5),
                                                   m.segment_reduce(x, "mean", offsets=o)),
        [[r(4), I([0, 1, 4])]]),
    Row("gradient", lambda m, x: (*m.gradient(x), *m.gradient(x, spacing=2.0, dim=1, edge_order=2),
                                  *m.gradient(x, spacing=[0.5, 3.0])), [[r(4, 5)], [r(3, 3, nc=True)]]),
    Row("gradient_coordinates", lambda m, x, c: (*m.gradient(x, spacing=(c,), dim=0),
                                                 *m.gradient(x, spacing=[c], dim=0, edge_order=2)),
        [[r(4, 2), F(np.cumsum(np.random.RandomState(3).rand(4)) + 0.1, grad=False)]]),
    Row("cumprod_inplace", lambda m, x: (x * 1).cumprod_(1), [[pos(2, 3)]]),
    Row("histogram", lambda m, x, w: (*m.histogram(x, 4), *x.histogram(3, range=(-0.2, 0.3), weight=w),
                                      *m.histogram(x, m.tensor([-0.5, 0.0, 0.2, 0.5], dtype=x.dtype, device=x.device),
                                                   density=True)),
        [[r(3, 5, grad=False), r(3, 5, grad=False)]], grad=False),
]

MISC_ROWS = [
    Row("isin", lambda m, x, y: (m.isin(x, y), m.isin(x, y, invert=True), m.isin(x, 2),
                                 m.isin(3, y)), [[I([[1, 2], [3, 4]]), I([2, 3, 5])]], grad=False),
    Row("tri_indices", lambda m: (m.tril_indices(3, 4), m.tril_indices(4, 3, -1), m.triu_indices(3, 3, 1),
                                  m.triu_indices(2, 5, -3), m.tril_indices(0, 3)), [[]], grad=False),
    Row("nonzero_static", lambda m, x: (m.nonzero_static(x, size=2), x.nonzero_static(size=6, fill_value=7),
                                        m.nonzero_static(x, size=0)), [[I([[1, 0, 2], [0, 3, 0]])]], grad=False),
    Row("unravel_index", lambda m, i: m.unravel_index(i, (2, 3, 4)), [[I([0, 5, 23, 12])], [I(7)]], grad=False),
    Row("scalar_tensor", lambda m: (m.scalar_tensor(3), m.scalar_tensor(True), m.scalar_tensor(2.5,
                                                                                             dtype=m.float64)),
        [[]], grad=False),
    Row("fill", lambda m, x: (m.fill(x, 2.5), m.fill_(x * 1, -1), m.zero_(x * 1)), [[r(2, 3)]]),
    Row("numpy_scalar", lambda m, x: (x / np.sqrt(np.float64(4.0)), np.float64(2) * x, x + np.int64(1),
                                      x.long() + np.int64(2), x.int() * np.int64(3), x - np.float32(0.5)),
        [[r(2, 3)]]),
]

ROWS = SHAPE_ROWS + INDEX_ROWS + REDUCTION_ROWS + MISC_ROWS
