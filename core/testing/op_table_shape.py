"""Op table rows for shape/movement, indexing and linear-algebra ops.

Each row names an op, a call ``op(m, *args)`` that works for ``m`` = ``ember`` and ``m`` = ``torch``
alike, and sample arguments built from host data: :class:`F` marks a floating input (differentiated
and checked), :class:`I` an integer (index) tensor, :class:`B` a bool mask; anything else is passed as
is.  The conformance kit (:mod:`ember.testing.kit`) and :func:`row_test` below turn the markers into
tensors of either library on a device and dtype and check forward results (values and dtypes),
gradients against PyTorch, ``gradcheck`` and ``gradgradcheck`` in float64.  Adding an op is adding a row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import ember

from . import assert_close
from .kit import build

_RNG = np.random.RandomState(1234)


@dataclass(frozen=True)
class F:
    """A floating-point input; ``nc`` builds it non-contiguous (a transposed copy, transposed back)."""

    data: Any
    nc: bool = False
    grad: bool = True


@dataclass(frozen=True)
class I:  # noqa: E742
    """An int64 tensor (indices)."""

    data: Any


@dataclass(frozen=True)
class B:
    """A bool tensor (mask)."""

    data: Any


@dataclass
class Row:
    name: str
    op: Callable
    samples: list
    grad: bool = True
    gradgrad: bool = True
    ints: bool = False          # also run the forward on int64 data
    rtol: float | None = None
    atol: float | None = None
    tags: tuple = field(default=())


def r(*shape, nc=False, positive=False, grad=True):
    """Random float data of ``shape`` (as an :class:`F`)."""
    a = _RNG.rand(*shape) + (0.5 if positive else -0.5)
    return F(a, nc, grad)


def spd(n, batch=()):
    """A symmetric positive-definite matrix (batch)."""
    a = _RNG.rand(*batch, n, n)
    return F(a @ np.swapaxes(a, -1, -2) + n * np.eye(n))


def sym(n):
    a = _RNG.rand(n, n) - 0.5
    return F(a + a.T + np.diag(np.arange(n) * 2.0))


def well(n, batch=()):
    """A well-conditioned square matrix (batch)."""
    return F(_RNG.rand(*batch, n, n) - 0.5 + 2 * np.eye(n))


def _first(x):
    return x[0]


SHAPE_ROWS = [
    Row("view", lambda m, x: x.view(3, 2), [[r(2, 3)], [r(6)]]),
    Row("view_infer", lambda m, x: x.view(-1, 2), [[r(2, 3)]]),
    Row("view_as", lambda m, x, y: x.view_as(y), [[r(6), r(2, 3, grad=False)]]),
    Row("reshape", lambda m, x: x.reshape(3, -1), [[r(2, 3)], [r(2, 3, nc=True)], [r(3, 0)]], ints=True),
    Row("flatten", lambda m, x: x.flatten(), [[r(2, 3, 2)], [r()], [r(2, 3, nc=True)]], ints=True),
    Row("flatten_range", lambda m, x: x.flatten(1, 2), [[r(2, 3, 2)]]),
    Row("unflatten", lambda m, x: x.unflatten(1, (2, -1)), [[r(3, 4)]]),
    Row("squeeze", lambda m, x: x.squeeze(), [[r(1, 3, 1)], [r()]]),
    Row("squeeze_dim", lambda m, x: x.squeeze(2), [[r(1, 3, 1)], [r(1, 3, 2)]]),
    Row("squeeze_dims", lambda m, x: x.squeeze((0, 2)), [[r(1, 3, 1)]]),
    Row("unsqueeze", lambda m, x: x.unsqueeze(-1), [[r(2, 3)], [r()]]),
    Row("permute", lambda m, x: x.permute(2, 0, 1), [[r(2, 3, 4)]], ints=True),
    Row("transpose", lambda m, x: x.transpose(0, -1), [[r(2, 3, 4)], [r(2, 3, nc=True)]]),
    Row("t", lambda m, x: x.t(), [[r(2, 3)], [r(3)]]),
    Row("T", lambda m, x: x.T, [[r(2, 3)]]),
    Row("mT", lambda m, x: x.mT, [[r(2, 3, 4)]]),
    Row("expand", lambda m, x: x.expand(2, 3, -1), [[r(1, 4)], [r(3, 1)]]),
    Row("expand_as", lambda m, x, y: x.expand_as(y), [[r(3, 1), r(2, 3, 4, grad=False)]]),
    Row("repeat", lambda m, x: x.repeat(2, 1, 3), [[r(2, 3)], [r(3)], [r()]], ints=True),
    Row("tile", lambda m, x: m.tile(x, (2,)), [[r(2, 3)], [r(3, nc=False)]]),
    Row("flip", lambda m, x: x.flip((0, 1)), [[r(2, 3)], [r(2, 3, nc=True)]], ints=True),
    Row("fliplr", lambda m, x: m.fliplr(x), [[r(2, 3)]]),
    Row("flipud", lambda m, x: m.flipud(x), [[r(2, 3)]]),
    Row("roll", lambda m, x: x.roll(1, 1), [[r(2, 3)]]),
    Row("roll_flat", lambda m, x: x.roll(-2), [[r(2, 3)]]),
    Row("roll_dims", lambda m, x: x.roll((1, 2), (0, 1)), [[r(2, 3)]]),
    Row("narrow", lambda m, x: x.narrow(1, 1, 2), [[r(2, 3)], [r(2, 3, nc=True)]]),
    Row("narrow_neg", lambda m, x: m.narrow(x, 0, -1, 1), [[r(2, 3)]]),
    Row("movedim", lambda m, x: m.movedim(x, (0, 1), (2, 0)), [[r(2, 3, 4)]]),
    Row("moveaxis", lambda m, x: x.moveaxis(0, -1), [[r(2, 3, 4)]]),
    Row("contiguous", lambda m, x: x.contiguous(), [[r(2, 3, nc=True)]]),
    Row("split_int", lambda m, x: x.split(2, 1), [[r(2, 5)], [r(2, 4, nc=True)]], ints=True),
    Row("split_sizes", lambda m, x: m.split(x, [1, 3, 0], 1), [[r(2, 4)]]),
    Row("chunk", lambda m, x: x.chunk(3, 0), [[r(5, 2)], [r(6, 2)], [r(2, 2)]], ints=True),
    Row("unbind", lambda m, x: x.unbind(1), [[r(2, 3)]], ints=True),
    Row("cat", lambda m, x, y: m.cat([x, y], 1), [[r(2, 3), r(2, 1)], [r(2, 3, nc=True), r(2, 0)]], ints=True),
    Row("cat_empty", lambda m, x, y: m.cat([x, y]), [[r(0, 3), r(0, 3)], [r(0, 3), r(2, 3)]]),
    Row("split_empty", lambda m, x: x.split(2), [[r(0, 3)]]),
    Row("cat_legacy_empty", lambda m, x, y: m.cat([x, y]), [[r(2, 3), r(0)]]),
    Row("concat", lambda m, x, y: m.concat((x, y), -1), [[r(2), r(3)]]),
    Row("stack", lambda m, x, y: m.stack([x, y], 1), [[r(2, 3), r(2, 3)], [r(3), r(3, nc=False)]], ints=True),
    Row("stack_0d", lambda m, x, y: m.stack([x, y]), [[r(), r()]]),
    Row("hstack", lambda m, x, y: m.hstack([x, y]), [[r(2, 3), r(2, 1)], [r(2), r(3)]]),
    Row("vstack", lambda m, x, y: m.vstack([x, y]), [[r(3), r(2, 3)]]),
    Row("dstack", lambda m, x, y: m.dstack([x, y]), [[r(2, 3), r(2, 3)]]),
    Row("column_stack", lambda m, x, y: m.column_stack([x, y]), [[r(3), r(3, 2)]]),
    Row("tril", lambda m, x: x.tril(), [[r(3, 4)], [r(2, 3, 3)]], ints=True),
    Row("tril_k", lambda m, x: m.tril(x, -1), [[r(3, 4)]]),
    Row("triu", lambda m, x: x.triu(1), [[r(3, 4)], [r(3, 4, nc=True)]]),
    Row("diag_vec", lambda m, x: m.diag(x, 1), [[r(3)]], ints=True),
    Row("diag_mat", lambda m, x: m.diag(x, -1), [[r(3, 4)]]),
    Row("diagonal", lambda m, x: x.diagonal(), [[r(3, 4)], [r(3, 4, nc=True)]]),
    Row("diagonal_3d", lambda m, x: m.diagonal(x, 1, 2, 0), [[r(3, 2, 4)]]),
    Row("diagonal_squared", lambda m, x: x.diagonal() ** 2, [[r(3, 3)]]),
    Row("diag_embed", lambda m, x: m.diag_embed(x), [[r(2, 3)]]),
    Row("diag_embed_off", lambda m, x: m.diag_embed(x, -1, 0, 2), [[r(2, 3)]]),
    Row("trace", lambda m, x: x.trace(), [[r(3, 4)]]),
    Row("outer", lambda m, x, y: m.outer(x, y), [[r(3), r(2)]]),
    Row("meshgrid_ij", lambda m, x, y: m.meshgrid(x, y, indexing="ij"), [[r(3), r(2)]]),
    Row("meshgrid_xy", lambda m, x, y: m.meshgrid(x, y, indexing="xy"), [[r(3), r(2)]]),
    Row("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3)), [[r(3)], [r()]]),
    Row("broadcast_tensors", lambda m, x, y: m.broadcast_tensors(x, y), [[r(3, 1), r(2)]]),
    Row("unbind_0d_rows", lambda m, x: x.unbind(0), [[r(3)]]),
    Row("select", lambda m, x: x.select(1, -1), [[r(2, 3)]]),
    Row("unfold", lambda m, x: x.unfold(1, 2, 1), [[r(2, 5)], [r(2, 5, nc=True)]]),
    Row("as_strided", lambda m, x: x.contiguous().as_strided((2, 2), (1, 2), 1), [[r(2, 3)]]),
    Row("as_strided_overlap", lambda m, x: m.as_strided(x, (3, 2), (1, 1)), [[r(4)]]),
    Row("unfold_step", lambda m, x: x.unfold(0, 2, 3), [[r(7)]]),
]

INDEX_ROWS = [
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
]

LINALG_ROWS = [
    Row("matmul", lambda m, x, y: x @ y, [[r(2, 3), r(3, 4)], [r(3), r(3, 2)], [r(2, 3), r(3)], [r(3), r(3)],
                                          [r(2, 1, 2, 3), r(3, 3, 2)], [r(2, 3, nc=True), r(3, 2, nc=True)]]),
    Row("mm", lambda m, x, y: m.mm(x, y), [[r(2, 3), r(3, 4)], [r(0, 3), r(3, 2)]]),
    Row("matmul_empty", lambda m, x, y: x @ y, [[r(2, 0), r(0, 3)], [r(0, 2, 3), r(3, 4)]]),
    Row("bmm", lambda m, x, y: x.bmm(y), [[r(2, 2, 3), r(2, 3, 4)]]),
    Row("mv", lambda m, x, y: m.mv(x, y), [[r(2, 3), r(3)]]),
    Row("dot", lambda m, x, y: x.dot(y), [[r(3), r(3)]]),
    Row("vdot", lambda m, x, y: m.vdot(x, y), [[r(3), r(3)]]),
    Row("addmm", lambda m, a, x, y: m.addmm(a, x, y, beta=0.5, alpha=2), [[r(2, 4), r(2, 3), r(3, 4)],
                                                                         [r(4), r(2, 3), r(3, 4)]]),
    Row("addmv", lambda m, a, x, y: m.addmv(a, x, y, alpha=3), [[r(2), r(2, 3), r(3)]]),
    Row("addbmm", lambda m, a, x, y: m.addbmm(a, x, y), [[r(2, 4), r(3, 2, 3), r(3, 3, 4)]]),
    Row("baddbmm", lambda m, a, x, y: m.baddbmm(a, x, y, beta=2), [[r(3, 2, 4), r(3, 2, 3), r(3, 3, 4)]]),
    Row("addr", lambda m, a, x, y: m.addr(a, x, y), [[r(2, 3), r(2), r(3)]]),
    Row("einsum_bmm", lambda m, x, y: m.einsum("bij,bjk->bik", x, y), [[r(2, 2, 3), r(2, 3, 4)]]),
    Row("einsum_ellipsis", lambda m, x, y: m.einsum("...ij,...jk", x, y), [[r(2, 2, 3), r(3, 4)]]),
    Row("einsum_sum", lambda m, x: m.einsum("ij->j", x), [[r(2, 3)]]),
    Row("einsum_outer", lambda m, x, y: m.einsum("i,j->ij", x, y), [[r(2), r(3)]]),
    Row("einsum_trace", lambda m, x: m.einsum("ii", x), [[r(3, 3)]]),
    Row("einsum_diag", lambda m, x, y: m.einsum("bii,bi->bi", x, y), [[r(2, 3, 3), r(2, 3)]]),
    Row("einsum_empty", lambda m, x, y: m.einsum("ij,jk->ik", x, y), [[r(2, 0), r(0, 3)]]),
    Row("einsum_three", lambda m, x, y, z: m.einsum("ij,jk,kl->il", x, y, z), [[r(2, 3), r(3, 4), r(4, 2)]]),
    Row("tensordot", lambda m, x, y: m.tensordot(x, y, dims=([1, 0], [0, 2])), [[r(3, 2, 4), r(2, 4, 3)]]),
    Row("tensordot_int", lambda m, x, y: m.tensordot(x, y, 1), [[r(2, 3), r(3, 2)]]),
    Row("kron", lambda m, x, y: m.kron(x, y), [[r(2, 3), r(2, 2)], [r(2), r(2, 3)]]),
    Row("cross", lambda m, x, y: m.linalg.cross(x, y), [[r(2, 3), r(2, 3)], [r(1, 3), r(2, 3)]]),
    Row("inv", lambda m, x: m.linalg.inv(x), [[well(3)], [well(2, (2,))]]),
    Row("det", lambda m, x: m.linalg.det(x), [[well(3)], [well(2, (2,))]]),
    Row("slogdet", lambda m, x: m.linalg.slogdet(x)[1], [[well(3)]]),
    Row("solve", lambda m, a, b: m.linalg.solve(a, b), [[well(3), r(3, 2)], [well(3), r(3)], [well(3, (2,)), r(3, 1)]]),
    Row("cholesky", lambda m, a: m.linalg.cholesky(a @ a.mT + m.eye(3, dtype=a.dtype, device=a.device)), [[r(3, 3)]]),
    Row("qr", lambda m, a: m.linalg.qr(a), [[r(4, 3)], [r(3, 3)]]),
    Row("svd_vals", lambda m, a: m.linalg.svdvals(a), [[r(4, 3)]]),
    Row("svd_abs", lambda m, a: tuple(t.abs() for t in m.linalg.svd(a, full_matrices=False)), [[r(4, 3)], [r(3, 4)]],
        gradgrad=False),
    Row("eigh", lambda m, a: tuple(t.abs() for t in m.linalg.eigh(a + a.mT)), [[r(3, 3)]]),
    Row("eigvalsh", lambda m, a: m.linalg.eigvalsh(a + a.mT), [[r(3, 3)]]),
    Row("pinv", lambda m, a: m.linalg.pinv(a), [[r(4, 3)], [r(2, 3)]]),
    Row("matrix_power", lambda m, a: m.linalg.matrix_power(a, 3), [[r(3, 3)]]),
    Row("matrix_power_neg", lambda m, a: m.linalg.matrix_power(a, -2), [[well(3)]]),
]

ROWS = SHAPE_ROWS + INDEX_ROWS + LINALG_ROWS


# --------------------------------------------------------------------------- gradients against PyTorch
# The conformance kit (:mod:`ember.testing.kit`, run by tests/test_kit.py) checks every row's forward
# (float32, int64, non-contiguous) and its float64 finite differences; the checks below add what it
# does not: float64 forward and the gradients themselves compared with PyTorch's.
def outputs(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def leaves(args):
    return [a for a in args if getattr(a, "requires_grad", False)]


def cases(rows):
    """pytest parameters, one per (row, sample)."""
    import pytest  # optional: only the test builders need pytest

    return [pytest.param(row, k, id=f"{row.name}-{k}") for row in rows for k in range(len(row.samples))]


def check_forward(row, k, device, dtype):
    """Forward of sample ``k`` of ``row`` in ember (on ``device``) and torch: values and dtypes agree."""
    import torch  # optional: the reference, needed only to check rows against PyTorch

    ea, ta = build(ember, row.samples[k], dtype, device), build(torch, row.samples[k], dtype, "cpu")
    re, rt = outputs(row.op(ember, *ea)), outputs(row.op(torch, *ta))
    assert len(re) == len(rt)
    for e, t in zip(re, rt):
        tol = {} if row.rtol is None else {"rtol": row.rtol, "atol": row.atol}
        assert_close(e, t, msg=f"{row.name}[{k}] {dtype}", **tol)
    return ea, ta, re, rt


def check_backward(row, k, device, dtype):
    """Gradients of sample ``k`` of ``row`` (random output weights) agree with torch's."""
    import torch  # optional: the reference, needed only to check rows against PyTorch

    ea, ta, re, rt = check_forward(row, k, device, dtype)
    rng = np.random.RandomState(k)
    ws = [np.asarray(rng.rand(*tuple(t.shape)), dtype=dtype) for t in rt]
    le, lt = leaves(ea), leaves(ta)
    ge = ember.autograd.grad([e for e in re if e.requires_grad],
                             le, [ember.tensor(w, device=device) for w, e in zip(ws, re) if e.requires_grad])
    gt = torch.autograd.grad([t for t in rt if t.requires_grad], lt,
                             [torch.tensor(w) for w, t in zip(ws, rt) if t.requires_grad])
    for a, b in zip(ge, gt):
        assert_close(a, b, rtol=1e-4 if dtype == "float32" else 1e-7, atol=1e-5 if dtype == "float32" else 1e-7,
                     msg=f"{row.name}[{k}] grad")


def run_row(row, k, device):
    """Float64 forward, and gradients against torch in float32 and float64 where the row has them."""
    if not row.grad:
        check_forward(row, k, device, "float64")
        return
    for dtype in ("float32", "float64"):
        check_backward(row, k, device, dtype)


def row_test(rows):
    """A pytest test running every row of ``rows`` on the ``device`` fixture (assign it to ``test_row``)."""
    import pytest  # optional: only the test builders need pytest

    pytest.importorskip("torch")

    @pytest.mark.parametrize("row,k", cases(rows))
    def test_row(row, k, device):
        run_row(row, k, device)

    return test_row


def bad_input_test(table):
    """A pytest test over ``[(name, call(m, device), exception, pattern)]``: ember raises ``exception`` with a
    message matching ``pattern``, and torch raises the same exception type (assign it to ``test_bad_input``)."""
    import pytest  # optional: only the test builders need pytest

    pytest.importorskip("torch")

    @pytest.mark.parametrize("name,call,exc,pattern", table, ids=[b[0] for b in table])
    def test_bad_input(name, call, exc, pattern, device):
        import torch  # optional: the reference, needed only to check rows against PyTorch

        with pytest.raises(exc, match=pattern):
            call(ember, device)
        with pytest.raises(exc):
            call(torch, device)

    return test_bad_input
