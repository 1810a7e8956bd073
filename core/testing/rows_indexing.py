"""Op table: indexing (``__getitem__``/``__setitem__`` forms, gather/scatter, ``index_*``, ``put``, masks,
``nonzero``, ``isin``, ``unravel_index``).  Row format and checks: :mod:`ember.testing.row`."""
from __future__ import annotations

import warnings

import numpy as np

from .row import B, I, Row, Sampler, distinct

r = Sampler(2345).r


def pos(*shape):
    return r(*shape, positive=True)


def _beta(fn, *args, **kwargs):
    """``fn(*args)`` without PyTorch's "index_reduce() is in beta" warning (the reference's, not ember's)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"index_reduce\(\) is in beta")
        return fn(*args, **kwargs)


def _setitem(x, index, value):
    x[index] = value
    return x


ROWS = [
    Row("getitem_int", lambda m, x: x[1], [[r(3, 2)]], ints=True),
    Row("getitem_slice_step", lambda m, x: x[::2, 1:], [[r(5, 3)], [r(5, 3, nc=True)]]),
    Row("getitem_none_ellipsis", lambda m, x: x[None, ..., 0], [[r(2, 3)]]),
    Row("getitem_mask", lambda m, x, k: x[k], [[r(2, 3), B([[True, False, True], [False, False, True]])]]),
    Row("getitem_row_mask", lambda m, x, k: x[k], [[r(3, 2), B([True, False, True])]]),
    Row("getitem_int_tensor", lambda m, x, i: x[i], [[r(4, 2), I([3, 0, 3])]], ints=True),
    Row("getitem_mixed", lambda m, x, i: x[i, 1:], [[r(4, 3), I([[1, 1], [0, 2]])]]),
    Row("getitem_list", lambda m, x: x[[0, 2], :, [1, 1]], [[r(3, 2, 2)]]),
    Row("getitem_adv_split", lambda m, x, i: x[:, i, :, i], [[r(2, 3, 2, 3), I([0, 2])]]),
    Row("gather", lambda m, x, i: x.gather(1, i), [[r(3, 4), I([[0, 0], [1, 3], [3, 2]])],
                                                   [r(3, 4, nc=True), I([[1], [2]])]], ints=True),
    Row("gather_empty", lambda m, x, i: x.gather(1, i), [[r(2, 3), I(np.zeros((2, 0), dtype=np.int64))]]),
    Row("gather_dim0", lambda m, x, i: m.gather(x, 0, i), [[r(3, 2), I([[2, 0], [2, 2], [0, 1]])]]),
    Row("scatter", lambda m, x, i, s: x.scatter(1, i, s), [[r(3, 4), I([[0], [1], [3]]), r(3, 1)]], ints=True),
    Row("scatter_value", lambda m, x, i: x.scatter(0, i, 2.5), [[r(3, 2), I([[2, 0]])]]),
    Row("scatter_add", lambda m, x, i, s: x.scatter_add(0, i, s),
        [[r(3, 4), I([[0, 0, 1, 1], [0, 0, 0, 2]]), r(2, 4)]], ints=True),
    Row("scatter_reduce_sum", lambda m, x, i, s: x.scatter_reduce(0, i, s, "sum"),
        [[r(3, 2), I([[0, 0], [0, 2]]), r(2, 2)]]),
    Row("scatter_reduce_mean", lambda m, x, i, s: x.scatter_reduce(0, i, s, "mean", include_self=False),
        [[r(3, 2), I([[0, 0], [0, 2]]), r(2, 2)]]),
    Row("scatter_reduce_amax", lambda m, x, i, s: x.scatter_reduce(0, i, s, "amax"),
        [[r(3, 2), I([[0, 0], [0, 2]]), r(2, 2)]], gradgrad=False),
    Row("scatter_reduce_amin", lambda m, x, i, s: x.scatter_reduce(0, i, s, "amin", include_self=False),
        [[r(3, 2), I([[0, 0], [0, 2]]), r(2, 2)]], gradgrad=False),
    Row("scatter_reduce_prod", lambda m, x, i, s: x.scatter_reduce(0, i, s, "prod"),
        [[r(3, 2, positive=True), I([[0, 0], [0, 2]]), r(2, 2, positive=True)]], gradgrad=False),
    Row("index_select", lambda m, x, i: x.index_select(1, i), [[r(2, 4), I([3, 0, 3])], [r(2, 3, nc=True), I([1])]],
        ints=True),
    Row("index_select_empty", lambda m, x, i: x.index_select(0, i), [[r(3, 2), I(np.zeros(0, dtype=np.int64))],
                                                                   [r(0, 2), I(np.zeros(0, dtype=np.int64))]]),
    Row("index_add", lambda m, x, i, s: x.index_add(0, i, s, alpha=2), [[r(3, 2), I([2, 0, 2]), r(3, 2)]]),
    Row("index_copy", lambda m, x, i, s: x.index_copy(1, i, s), [[r(2, 4), I([3, 0]), r(2, 2)]]),
    Row("index_fill", lambda m, x, i: x.index_fill(1, i, -1.0), [[r(2, 4), I([3, 0])]]),
    Row("index_put", lambda m, x, i, v: x.index_put((i,), v), [[r(4, 2), I([3, 1]), r(2, 2)]]),
    Row("index_put_acc", lambda m, x, i, v: x.index_put((i, i), v, accumulate=True), [[r(3, 3), I([1, 1]), r(2)]]),
    Row("getitem_squared", lambda m, x, i: x[i] ** 2, [[r(4, 2), I([3, 1, 3])]]),
    Row("masked_select", lambda m, x, k: x.masked_select(k), [[r(2, 3), B([True, False, True])]]),
    Row("masked_scatter", lambda m, x, k, s: x.masked_scatter(k, s), [[r(2, 3), B([True, False, True]), r(2, 3)]]),
    Row("take", lambda m, x, i: x.take(i), [[r(2, 3), I([[0, 5], [-1, 2]])], [r(2, 3, nc=True), I([1, 4])]]),
    Row("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 1), [[r(3, 4), I([[0], [2], [1]])]]),
    Row("nonzero", lambda m, x: m.nonzero(x), [[B([[True, False], [True, True]])], [I([0, 3, 0, 2])], [I(5)]],
        grad=False),
    Row("nonzero_tuple", lambda m, x: x.nonzero(as_tuple=True), [[I([[0, 1], [2, 0]])]], grad=False),
    Row("nonzero_empty", lambda m, x: m.nonzero(x), [[B(np.zeros((0, 2), dtype=bool))], [B(True)]], grad=False),
    Row("argwhere", lambda m, x: m.argwhere(x), [[r(2, 3, grad=False)], [r(0, 2, grad=False)]], grad=False),
    Row("take_along_dim_flat", lambda m, x, i: m.take_along_dim(x, i), [[r(3, 4), I([0, 11])]]),
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
    Row("isin", lambda m, x, y: (m.isin(x, y), m.isin(x, y, invert=True), m.isin(x, 2),
                                 m.isin(3, y)), [[I([[1, 2], [3, 4]]), I([2, 3, 5])]], grad=False),
    Row("nonzero_static", lambda m, x: (m.nonzero_static(x, size=2), x.nonzero_static(size=6, fill_value=7),
                                        m.nonzero_static(x, size=0)), [[I([[1, 0, 2], [0, 3, 0]])]], grad=False),
    Row("unravel_index", lambda m, i: m.unravel_index(i, (2, 3, 4)), [[I([0, 5, 23, 12])], [I(7)]], grad=False),
    Row("x[None]", lambda m, x: (x[None], x[0, None], x[:, None]), [[r(2, 3)]]),
    Row("x[0] select", lambda m, x: (x[0], x[:, 1], x[..., -1]), [[r(2, 3)]]),
    Row("x[...] alias", lambda m, x: x[...], [[r(2, 3)]]),
]
