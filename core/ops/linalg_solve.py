"""Triangular and LU solves, least squares, the matrix exponential, Householder products and the legacy
top-level forms (``ember.lu``, ``ember.triangular_solve``, ``ember.cholesky_solve``, ``ember.geqrf``, ...).

The new factorizations are Ops whose backward is written with ember ops (so they differentiate twice);
everything else is composed from them (``lu_solve`` from ``solve_triangular``, ``lstsq`` from ``pinv``).

>>> import ember
>>> A = ember.tensor([[4., 3.], [6., 3.]])
>>> LU, pivots = ember.linalg.lu_factor(A)
>>> pivots
tensor([2, 2], dtype=ember.int32)
>>> ember.linalg.lu_solve(LU, pivots, ember.tensor([[10.], [12.]]))
tensor([[1.],
        [2.]])
"""
from __future__ import annotations

import math
from collections import namedtuple

from .. import dtypes
from ..autograd.function import Op, composite_node, keep_args, keep_saved, rename_node
from ..autograd.grad_mode import no_grad
from ..dispatch import apply, device_error, result_type, unary
from ..writes import out_or, outs_or
from ..registry import export, op_class
from ..tensor import Tensor
from .creation import arange, eye, randn
from .linalg import matrix_norm, multi_dot, vector_norm
from .linalg_decomp import (EVERYWHERE, LINALG, LinAlgError, _eps, _eye_like, _floating, _gauge_check,
                            _kept_outputs, _multi, _outputs, _square, inv, pinv, qr, solve, svd, svdvals)
from .shape import broadcast_shapes, cat

TORCH_TENSOR = ("torch", "Tensor")

LUFactorResult = namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = namedtuple("linalg_lu", ["P", "L", "U"])
LUUnpackResult = namedtuple("lu_unpack", ["P", "L", "U"])
LUWithInfoResult = namedtuple("_lu_with_info", ["LU", "pivots", "info"])
InvExResult = namedtuple("linalg_inv_ex", ["inverse", "info"])
SolveExResult = namedtuple("linalg_solve_ex", ["result", "info"])
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
TriangularSolveResult = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
GeqrfResult = namedtuple("geqrf", ["a", "tau"])
EigResult = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
LDLFactorResult = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _tensor_arg(x, op, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def _matrices(x, op, name="A"):
    _tensor_arg(x, op, name)
    if x.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    _floating(x, op.removeprefix("linalg."))


def _same_device(op, *ts):
    for t in ts[1:]:
        if t._dev is not ts[0]._dev:
            raise device_error(op, ts[0], t)


def _batched(a, b):
    """``a`` and ``b`` expanded to their common batch shape (the last two dimensions are their own)."""
    batch = tuple(broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    return a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:])


def _eye(m, n, like):
    return eye(m, n, dtype=like.dtype, device=like.device)


# --------------------------------------------------------------------------- triangular solve
def _solve_triangular_vjp(ctx, g):
    a, _ = ctx.inputs
    x = ctx.output
    gb = solve_triangular(a.mH, g, upper=not ctx.upper, unitriangular=ctx.unit)
    ga = -(gb @ x.mH)
    skip = 1 if ctx.unit else 0
    return (ga.triu(skip) if ctx.upper else ga.tril(-skip)), gb


SolveTriangular = op_class("SolveTriangular", "solve_triangular", saves="both", vjp=_solve_triangular_vjp,
                           backward_name="LinalgSolveTriangularBackward0", params=("upper", "unit"), arity=4,
                           save_for=((0, 1), ()))  # the right-hand side is never read
SolveTriangular.saved_args = {"upper": lambda n: bool(n.upper), "left": lambda n: True,
                              "unitriangular": lambda n: bool(n.unit)}  # (left=False: composed around it)
SolveTriangular.saved_names = ("self", None)  # (as PyTorch's node: A and the result, never B)


@export(to=LINALG)
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False,
                     out=None) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` when ``left=False``) for triangular ``A`` (batch).

    Only the ``upper`` (or lower) triangle of ``A`` is read; ``unitriangular`` takes its diagonal as ones.

    >>> import ember
    >>> ember.linalg.solve_triangular(ember.tensor([[2., 1.], [0., 4.]]), ember.tensor([[3.], [4.]]), upper=True)
    tensor([[1.],
            [1.]])
    """
    _matrices(A, "linalg.solve_triangular")
    _tensor_arg(B, "linalg.solve_triangular", "B")
    B = B.to(A.dtype)  # PyTorch's solve is in A's dtype: B of any dtype is cast to it
    _matrices(B, "linalg.solve_triangular", "B")
    _same_device("linalg.solve_triangular", A, B)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not left:
        x = solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
        return out_or(composite_node(x, "LinalgSolveTriangularBackward0"), out)
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    rt = result_type(A, B)
    a, b = _batched(A.to(rt), B.to(rt))
    return out_or(apply(SolveTriangular, a, b, bool(upper), bool(unitriangular)), out)


@export(to=TORCH_TENSOR)
def triangular_solve(b, A, upper: bool = True, transpose: bool = False, unitriangular: bool = False, *, out=None):
    """``torch.triangular_solve``: ``(solution, cloned_coefficient)`` of ``op(A) X = b`` (``op``: transposed when
    ``transpose``), ``A`` triangular; the legacy argument order of :func:`ember.linalg.solve_triangular`.

    >>> import ember
    >>> ember.triangular_solve(ember.tensor([[3.], [4.]]), ember.tensor([[2., 1.], [0., 4.]])).solution
    tensor([[1.],
            [1.]])
    """
    _matrices(b, "triangular_solve", "b")
    _matrices(A, "triangular_solve")
    a = A.mT if transpose else A
    x = solve_triangular(a, b, upper=bool(upper) != bool(transpose), unitriangular=unitriangular)
    node = "TriangularSolveBackward0"  # PyTorch's one node of both outputs (it keeps both inputs)
    return outs_or(TriangularSolveResult(keep_saved(composite_node(x, node), b, A), composite_node(A.clone(), node)),
                   out)


# --------------------------------------------------------------------------- LU
def _lu_parts(lu, node=None):
    """``L`` (unit lower, m x k) and ``U`` (upper, k x n) of a compact LU (differentiable); ``node``: PyTorch's
    name of the one node of both (the op that unpacks them)."""
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    lo = lu[..., :, :k].tril(-1) + _eye(m, k, lu)
    up = lu[..., :k, :].triu()
    return (lo, up) if node is None else (composite_node(lo, node), composite_node(up, node))


class LuPermutation(Op):
    backward_name = "LuPermutationBackward0"

    @staticmethod
    def forward(ctx, k, pivots, lu):
        return k["lu_permutation"](pivots, lu)


def _permutation(pivots, lu):
    """``P`` (``m x m``, ``lu``'s dtype) from LAPACK's pivots of an ``m``-row LU."""
    with no_grad():
        return apply(LuPermutation, pivots, lu.detach())


def _lu_backward(p, lo, up, g_lo, g_up):
    """The gradient of ``A = P L U`` from those of ``L`` and ``U`` (PyTorch's ``linalg_lu_backward``)."""
    m, n = lo.shape[-2], up.shape[-1]
    k = min(m, n)
    if m == n:
        ga = (lo.mH @ g_lo).tril(-1) + (g_up @ up.mH).triu()
        ga = solve_triangular(up.mH, ga, upper=False, left=False)
        ga = solve_triangular(lo.mH, ga, upper=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2]
        ga = ((lo.mH @ g_lo) - g_up.triu() @ up.mH).tril(-1)
        ga = solve_triangular(up[..., :k].mH, ga, upper=False, left=False)
        ga = cat([ga + g_up[..., :k].triu(), g_up[..., k:]], -1)
        ga = solve_triangular(lo.mH, ga, upper=True, unitriangular=True)
    else:  # tall: L = [L1; L2]
        ga = (g_up @ up.mH - lo.mH @ g_lo.tril(-1)).triu()
        ga = solve_triangular(lo[..., :k, :].mH, ga, upper=True, unitriangular=True)
        ga = cat([ga + g_lo[..., :k, :].tril(-1), g_lo[..., k:, :]], -2)
        ga = solve_triangular(up.mH, ga, upper=False, left=False)
    return p @ ga


class LuFactor(Op):
    """``(LU, pivots, info)`` of LAPACK's ``getrf``; the gradient flows through ``LU``."""

    backward_name = "LinalgLuFactorExBackward0"
    nondiff_outputs = (1, 2)
    saved_args = {"pivot": lambda n: True, **_kept_outputs("LU", "pivots")}  # (LAPACK's getrf always pivots)

    @staticmethod
    def forward(ctx, k, a):
        return k["lu_factor"](a)

    @staticmethod
    def backward(ctx, g, gpiv, ginfo):
        lu, pivots, _ = _outputs(ctx)
        lo, up = _lu_parts(lu)
        k = min(lu.shape[-2], lu.shape[-1])
        return _lu_backward(_permutation(pivots, lu), lo, up, g[..., :, :k].tril(-1),
                            g[..., :k, :].triu())


def _lu_factor_ex(A, op, pivot):
    _matrices(A, op)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")
    return _multi(LuFactor, "lu_factor", A)


@export(to=LINALG)
def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False, out=None):
    """``(LU, pivots, info)``: the LU factorization with partial pivoting in LAPACK's compact form.

    ``pivots`` are 1-based int32 row interchanges; ``info`` is 0, or the 1-based index of the first zero on
    ``U``'s diagonal (the factorization is still complete).

    >>> import ember
    >>> ember.linalg.lu_factor_ex(ember.tensor([[1., 2.], [2., 4.]])).info
    tensor(2, dtype=ember.int32)
    """
    lu, pivots, info = _lu_factor_ex(A, "linalg.lu_factor_ex", pivot)
    if check_errors:
        _check_info(info, "linalg.lu_factor_ex", _lu_zero)
    return outs_or(LUFactorExResult(lu, pivots, info), out)


def _lu_zero(i):
    return (f"U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. If you still want to "
            f"perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def _check_info(info, op, message):
    """PyTorch's LinAlgError for the first matrix whose ``info`` is not zero."""
    flat = info.reshape(-1).tolist()
    bad = next((b for b, i in enumerate(flat) if i), None)
    if bad is None:
        return
    where = f"(Batch element {bad}): " if info.dim() else ""
    raise LinAlgError(f"{op}: {where}{message(flat[bad])}")


@export(to=LINALG)
def lu_factor(A: Tensor, *, pivot: bool = True, out=None):
    """``(LU, pivots)``: the LU factorization with partial pivoting (raises where ``U`` has a zero pivot).

    >>> import ember
    >>> ember.linalg.lu_factor(ember.tensor([[1., 2.], [3., 4.]])).pivots
    tensor([2, 2], dtype=ember.int32)
    """
    lu, pivots, info = _lu_factor_ex(A, "linalg.lu_factor", pivot)
    _check_info(info, "torch.linalg.lu_factor", _lu_zero)
    return outs_or(LUFactorResult(lu, pivots), out)


def _check_pivots(LU, pivots, op):
    _tensor_arg(pivots, op, "pivots")
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError(f"{op}: Expected pivots to be integer tensor of dtype int32 but got {pivots.dtype}")
    k = min(LU.shape[-2], LU.shape[-1])
    if tuple(pivots.shape) != (*LU.shape[:-2], k):
        raise RuntimeError(f"{op}: Expected LU_pivots of shape {[*LU.shape[:-2], k]} for LU of shape "
                           f"{list(LU.shape)}, got {list(pivots.shape)}")


@export(to=("torch",))
def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True, *, out=None):  # noqa: N803
    """``(P, L, U)`` with ``A = P L U`` from the compact form of :func:`ember.linalg.lu_factor`.

    >>> import ember
    >>> P, L, U = ember.lu_unpack(*ember.linalg.lu_factor(ember.tensor([[1., 2.], [3., 4.]])))
    >>> P @ L @ U
    tensor([[1., 2.],
            [3., 4.]])
    """
    _tensor_arg(LU_data, "lu_unpack", "LU_data")  # (any dtype: PyTorch's unpacking only selects and permutes)
    if LU_data.dim() < 2:
        raise RuntimeError("lu_unpack: The input tensor LU_data must have at least 2 dimensions.")
    _check_pivots(LU_data, LU_pivots, "lu_unpack")
    empty = LU_data.detach().new_empty(0)
    lo, up = _lu_parts(LU_data, "LuUnpackBackward0") if unpack_data else (empty, empty)
    p = _permutation(LU_pivots, LU_data) if unpack_pivots else empty
    return outs_or(LUUnpackResult(p, lo, up), out)


@export(to=LINALG)
def lu(A: Tensor, *, pivot: bool = True, out=None):
    """``(P, L, U)`` with ``A = P L U``: ``P`` a permutation, ``L`` unit lower, ``U`` upper triangular (batch).

    >>> import ember
    >>> P, L, U = ember.linalg.lu(ember.tensor([[1., 2.], [3., 4.]]))
    >>> U
    tensor([[3.0000, 4.0000],
            [0.0000, 0.6667]])
    """
    lu_, pivots, _ = _lu_factor_ex(A, "linalg.lu", pivot)
    lo, up = _lu_parts(lu_, "LinalgLuBackward0")
    return outs_or(LUResult(_permutation(pivots, lu_), lo, up), out)


@export(name="lu")
def lu_legacy(A, pivot: bool = True, get_infos: bool = False, out=None):  # noqa: N803
    """``torch.lu``: ``(A_LU, pivots)``, or ``(A_LU, pivots, infos)`` with ``get_infos`` (which also stops it from
    raising on a zero pivot).

    >>> import ember
    >>> A_LU, pivots = ember.tensor([[1., 2.], [3., 4.]]).lu()
    >>> pivots
    tensor([2, 2], dtype=ember.int32)
    """
    lu_, pivots, info = _lu_factor_ex(A, "lu", pivot)
    if get_infos:
        return outs_or(LUWithInfoResult(lu_, pivots, info), out)
    _check_info(info, "torch.linalg.lu_factor", _lu_zero)
    result = (lu_, pivots)
    if out is not None:
        for o, r in zip(out, result):
            out_or(r, o)
        return tuple(out)
    return result


@export(to=LINALG)
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False,  # noqa: N803
             out=None) -> Tensor:
    """The solution of ``A X = B`` (``X A = B`` when not ``left``; ``A^H`` when ``adjoint``) from ``A``'s LU.

    >>> import ember
    >>> LU, piv = ember.linalg.lu_factor(ember.tensor([[2., 0.], [0., 4.]]))
    >>> ember.linalg.lu_solve(LU, piv, ember.tensor([[2.], [2.]]))
    tensor([[1.0000],
            [0.5000]])
    """
    _tensor_arg(LU, "linalg.lu_solve", "LU")
    _tensor_arg(B, "linalg.lu_solve", "B")
    # (PyTorch's order: LU floating, then one dtype for LU and B (its kernel promotes nothing), then the kernel's)
    if LU.dtype is not B.dtype and LU.dtype.category >= dtypes.FLOAT:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{dtypes.type_name(LU.dtype)} and B of type {dtypes.type_name(B.dtype)} instead")
    _matrices(LU, "linalg.lu_solve", "LU")
    _matrices(B, "linalg.lu_solve", "B")
    _same_device("linalg.lu_solve", LU, pivots, B)
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"linalg.lu_solve: Expected LU to be square, got {list(LU.shape)}")
    _check_pivots(LU, pivots, "linalg.lu_solve")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    lo, up = _lu_parts(LU)
    p = _permutation(pivots, LU)
    if not left:  # X A = B  <=>  A^H X^H = B^H
        x = lu_solve(LU, pivots, B.mH, adjoint=not adjoint).mH
        return out_or(composite_node(x, "LinalgLuSolveBackward0"), out)
    if adjoint:   # A^H = U^H L^H P^T: X = P L^-H U^-H B
        x = solve_triangular(up.mH, B, upper=False)
        x = p @ solve_triangular(lo.mH, x, upper=True, unitriangular=True)
    else:         # A = P L U: X = U^-1 L^-1 P^T B
        x = solve_triangular(lo, p.mT @ B, upper=False, unitriangular=True)
        x = solve_triangular(up, x, upper=True)
    return out_or(composite_node(x, "LinalgLuSolveBackward0"), out)


@export(name="lu_solve", to=TORCH_TENSOR)
def lu_solve_legacy(b, LU_data, LU_pivots, *, out=None) -> Tensor:  # noqa: N803
    """``torch.lu_solve(b, LU_data, LU_pivots)``: :func:`ember.linalg.lu_solve` with the legacy argument order.

    >>> import ember
    >>> LU, piv = ember.linalg.lu_factor(ember.tensor([[2., 0.], [0., 4.]]))
    >>> ember.tensor([[2.], [2.]]).lu_solve(LU, piv)
    tensor([[1.0000],
            [0.5000]])
    """
    return lu_solve(LU_data, LU_pivots, b, out=out)


# --------------------------------------------------------------------------- inverse and solve with info
def _singular_info(A, op):
    with no_grad():
        return _lu_factor_ex(A.detach(), op, True)


@export(to=LINALG)
def inv_ex(A: Tensor, *, check_errors: bool = False, out=None):
    """``(inverse, info)``: :func:`ember.linalg.inv` that reports a singular matrix in ``info`` (the index of the
    first zero pivot) instead of raising, unless ``check_errors``.

    >>> import ember
    >>> ember.linalg.inv_ex(ember.tensor([[1., 2.], [2., 4.]])).info
    tensor(2, dtype=ember.int32)
    """
    _square(A, "inv_ex")
    lu_, pivots, info = _singular_info(A, "linalg.inv_ex")
    if check_errors:
        _check_info(info, "linalg.inv_ex", lambda i: f"The diagonal element {i} is zero, the inversion could not be "
                                                      f"completed because the input matrix is singular.")
    if not bool((info != 0).any()):
        result = inv(A)
    else:
        with no_grad():
            result = lu_solve(lu_, pivots, _eye(A.shape[-1], A.shape[-1], A).expand(A.shape))
    return outs_or(InvExResult(result, info), out)


@export(to=LINALG)
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out=None):
    """``(result, info)``: :func:`ember.linalg.solve` that reports a singular ``A`` in ``info`` instead of
    raising, unless ``check_errors``.

    >>> import ember
    >>> ember.linalg.solve_ex(ember.eye(2) * 2, ember.ones(2)).result
    tensor([0.5000, 0.5000])
    """
    _square(A, "solve_ex")
    lu_, pivots, info = _singular_info(A, "linalg.solve_ex")
    if check_errors:
        _check_info(info, "linalg.solve_ex", lambda i: "The solver failed because the input matrix is singular.")
    if not bool((info != 0).any()):
        result = solve(A, B, left=left)
    else:
        vec = left and (B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1])))
        b = B.unsqueeze(-1) if vec else B
        rt = result_type(A, B)
        lu_, b = _batched(lu_.to(rt), b.to(rt))
        with no_grad():
            result = lu_solve(lu_, pivots.expand(*lu_.shape[:-2], pivots.shape[-1]), b, left=left)
        result = result.squeeze(-1) if vec else result
    return outs_or(SolveExResult(result, info), out)


# --------------------------------------------------------------------------- least squares
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@export(to=LINALG)
def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)``: the least-squares solution of ``A X = B`` (batch).

    The solution is the minimum-norm one (``pinv(A) @ B``, singular values below ``rcond`` times the largest
    dropped).  As in PyTorch on the CPU (driver ``'gelsy'`` by default): ``residuals`` (squared, per column)
    are computed for drivers other than ``'gelsy'`` when ``m > n`` and every ``A`` has full rank, ``rank`` for
    drivers other than ``'gels'``, ``singular_values`` for ``'gelsd'`` and ``'gelss'``; the others are empty.

    >>> import ember
    >>> ember.linalg.lstsq(ember.tensor([[1., 0.], [0., 1.], [0., 0.]]), ember.tensor([1., 2., 3.])).solution
    tensor([1., 2.])
    """
    _matrices(A, "linalg.lstsq")
    _tensor_arg(B, "linalg.lstsq", "B")
    _same_device("linalg.lstsq", A, B)
    if driver is None:
        driver = "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {A.dtype} and other's dtype {B.dtype}")
    vec = B.dim() == A.dim() - 1
    b = B.unsqueeze(-1) if vec else B
    if b.dim() < 2 or b.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got "
                           f"{A.shape[-2]} and {b.shape[-2] if b.dim() > 1 else b.shape[-1]}")
    a, b = _batched(A, b)
    m, n = A.shape[-2], A.shape[-1]
    if rcond is None:
        rcond = _eps(A) * max(m, n)
    x = pinv(a, rtol=rcond) @ b
    empty = A.detach().real.new_empty(0)  # (residuals and singular values are real for complex input too)
    with no_grad():
        s = svdvals(a) if min(m, n) else a.new_zeros((*a.shape[:-2], 0))
        cut = s.amax(-1, keepdim=True) * rcond if s.shape[-1] else s
        rank = (s > cut).sum(-1)
    residuals = empty
    if driver != "gelsy" and m > n and bool((rank == n).all()):
        res = a @ x - b
        residuals = ((res.abs() if res.is_complex() else res) ** 2).sum(-2)
    rank = rank if driver != "gels" else empty.to(dtypes.int64)
    sv = s if driver in ("gelsd", "gelss") else empty
    if vec:  # (the residuals keep their column of one)
        x = x.squeeze(-1)
    node = "LinalgLstsqBackward0"  # PyTorch's one node of the solution and the residuals
    return LstsqResult(composite_node(x, node), composite_node(residuals, node), rank, sv)


# --------------------------------------------------------------------------- matrix exponential
def _matrix_exp_vjp(ctx, g):
    # the upper-right block of exp([[A^T, G], [0, A^T]]) (Najfeld & Havel); differentiable again
    (a,) = ctx.inputs
    n = a.shape[-1]
    at = a.mH
    top = cat([at, g], -1)
    bottom = cat([at.new_zeros(at.shape), at], -1)
    return matrix_exp(cat([top, bottom], -2))[..., :n, n:]


MatrixExp = op_class("MatrixExp", "matrix_exp", saves="input", vjp=_matrix_exp_vjp,
                     backward_name="LinalgMatrixExpBackward0", arity=1)


@export(to=EVERYWHERE)
def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix (batch).

    >>> import ember
    >>> ember.linalg.matrix_exp(ember.tensor([[0., 1.], [0., 0.]]))
    tensor([[1., 1.],
            [0., 1.]])
    """
    _square(A, "matrix_exp")
    return unary(MatrixExp, A)


# --------------------------------------------------------------------------- condition number, tensor inverses
_COND_NORMS = (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf)  # the orders linalg.cond takes


@export(to=LINALG)
def cond(A: Tensor, p=None, *, out=None) -> Tensor:
    """The condition number of ``A`` in the ``p``-norm (``None``/2: largest over smallest singular value; -2: the
    reverse; 'fro', 'nuc', 1, -1, inf, -inf: ``norm(A) * norm(inv(A))``, square ``A`` only).

    >>> import ember
    >>> ember.linalg.cond(ember.tensor([[2., 0.], [0., 0.5]]))
    tensor(4.)
    """
    if (isinstance(A, Tensor) and A.dim() >= 2 and not A.numel() and p in _COND_NORMS
            and (not isinstance(p, str) or A.shape[-1] == A.shape[-2])):
        # PyTorch's cond of empty input: zeros of the real dtype, before its dtype (and a number p's square) checks
        return out_or(A.new_zeros(tuple(A.shape[:-2]), dtype=A.dtype.to_real()), out)
    _matrices(A, "linalg.cond")
    if p is None or p in (2, -2):
        s = svdvals(A)
        big, small = s[..., :1], s[..., -1:]  # (PyTorch's steps: a ratio of slices, squeezed: SqueezeBackward1)
        return out_or((big / small if p != -2 else small / big).squeeze(-1), out)
    if p not in _COND_NORMS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _square(A, "cond")
    _, info = inv_ex(A.detach())
    if bool((info != 0).any()):
        with no_grad():  # a singular matrix has an infinite condition number
            full = A.new_full(tuple(A.shape[:-2]), math.inf)
            ok = info == 0
            if not bool(ok.any()):
                return out_or(full, out)
    r = matrix_norm(A, p) * matrix_norm(inv_ex(A).inverse, p)
    if bool((info != 0).any()):
        r = r.masked_fill(info != 0, math.inf)
    return out_or(r, out)


@export(to=LINALG)
def tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """The inverse of ``A`` for :func:`ember.tensordot` over its first ``ind`` dimensions.

    >>> import ember
    >>> ember.linalg.tensorinv(ember.eye(4).reshape(4, 2, 2), ind=1).shape
    ember.Size([2, 2, 4])
    """
    _tensor_arg(A, "linalg.tensorinv", "A")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    m, n = math.prod(rows), math.prod(cols)
    if m != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {n} != {m}")
    return out_or(inv(A.reshape(m, n)).reshape(cols + rows), out)


@export(to=LINALG)
def tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    """The ``X`` of ``tensordot(A, X, X.ndim) = B``; ``dims`` first moves those dimensions of ``A`` to the end.

    >>> import ember
    >>> ember.linalg.tensorsolve(ember.eye(6).reshape(2, 3, 6), ember.ones(2, 3)).shape
    ember.Size([6])
    """
    _tensor_arg(A, "linalg.tensorsolve", "A")
    _tensor_arg(B, "linalg.tensorsolve", "B")
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.movedim(dims, list(range(A.dim() - len(dims), A.dim())))
    rest = tuple(A.shape[B.dim():])
    m, n = B.numel(), math.prod(rest)
    if tuple(A.shape[:B.dim()]) != tuple(B.shape) or m != n:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {n} != {m}")
    return out_or(solve(A.reshape(m, n), B.reshape(m)).reshape(rest), out)


# --------------------------------------------------------------------------- Householder products, geqrf
def _reflector(A, i):
    """The Householder vector of column ``i`` of ``A``: 1 at ``i``, ``A``'s entries below it (batch)."""
    idx = arange(A.shape[-2], device=A.device)
    return A[..., :, i] * (idx > i).to(A.dtype) + (idx == i).to(A.dtype)


def _apply_reflectors(A, tau, X, order, left, conj):
    for i in order:
        v = _reflector(A, i)
        t = tau[..., i]
        if conj and t.is_complex():
            t = t.conj()
        t = t.unsqueeze(-1).unsqueeze(-1)
        vh = v.conj().unsqueeze(-2)
        if left:   # H X = X - tau v (v^H X)
            X = X - t * v.unsqueeze(-1) @ (vh @ X)
        else:      # X H = X - tau (X v) v^H
            X = X - t * (X @ v.unsqueeze(-1)) @ vh
    return X


def _check_householder(A, tau, op):
    _matrices(A, op)
    _tensor_arg(tau, op, "tau")
    _same_device(op, A, tau)
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"{op}: input.dim() must be greater than or equal to 2 and tau.dim() must equal "
                           f"input.dim() - 1, got {A.dim()} and {tau.dim()}")
    if tau.shape[-1] > A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1], got "
                           f"{A.shape[-1]} and {tau.shape[-1]}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{op}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")


@export(to=LINALG)
def householder_product(A: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^H``, ``v_i`` column ``i`` of
    ``A`` below the diagonal with a 1 on it (LAPACK's ``orgqr``, the ``Q`` of :func:`ember.geqrf`).

    >>> import ember
    >>> a, tau = ember.geqrf(ember.tensor([[3., 1.], [4., 2.]]))
    >>> ember.linalg.householder_product(a, tau)
    tensor([[-0.6000, -0.8000],
            [-0.8000,  0.6000]])
    """
    _check_householder(A, tau, "linalg.householder_product")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1], got {m} and {n}")
    x = _eye(m, n, A).expand(*A.shape[:-2], m, n)
    q = _apply_reflectors(A, tau, x, reversed(range(tau.shape[-1])), True, False)
    q = composite_node(q, "LinalgHouseholderProductBackward0")
    return out_or(keep_saved(q, A, tau), out)  # (PyTorch's one node keeps both inputs)


@export(to=TORCH_TENSOR)
def orgqr(input, input2) -> Tensor:  # noqa: A002
    """``torch.orgqr``: the same as :func:`ember.linalg.householder_product` (``input2``: tau, as PyTorch's
    parser names it).

    >>> import ember
    >>> ember.orgqr(*ember.geqrf(ember.eye(2))).abs()
    tensor([[1., 0.],
            [0., 1.]])
    """
    return householder_product(input, input2)


@export(to=TORCH_TENSOR)
def ormqr(input, input2, input3, left: bool = True, transpose: bool = False, *, out=None) -> Tensor:  # noqa: A002
    """``Q @ other`` (``other @ Q`` when not ``left``; ``Q^H`` when ``transpose``) with ``Q`` the full product
    of the Householder reflectors of ``(input, tau)`` (LAPACK's ``ormqr``; ``input2`` is tau and ``input3`` other,
    as PyTorch's parser names them).

    >>> import ember
    >>> a, tau = ember.geqrf(ember.tensor([[3., 1.], [4., 2.]]))
    >>> ember.ormqr(a, tau, ember.eye(2))
    tensor([[-0.6000, -0.8000],
            [-0.8000,  0.6000]])
    """
    tau, other = input2, input3
    _check_householder(input, tau, "ormqr")
    _tensor_arg(other, "ormqr", "other")
    m = input.shape[-2]
    if (other.shape[-2] if left else other.shape[-1]) != m:
        raise RuntimeError(f"ormqr: other.shape[{-2 if left else -1}] must be equal to input.shape[-2], got "
                           f"{other.shape[-2] if left else other.shape[-1]} and {m}")
    k = tau.shape[-1]
    side = -2 if left else -1
    if k != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1]) "
                           f"(got tau {list(tau.shape)}, other {list(other.shape)}, input {list(input.shape)})")
    # Q = H_1 ... H_k: Q X applies H_k first; Q^H X applies H_1 first; X Q applies H_1 first
    forward = left == bool(transpose)
    order = range(k) if forward else reversed(range(k))
    r = _apply_reflectors(input, tau, other, order, left, bool(transpose))
    r = composite_node(r, "OrmqrBackward0") if k else r  # (no reflector: other itself)
    return out_or(keep_saved(r, input, tau, other), out)


Geqrf = op_class("Geqrf", "geqrf", backward_name="GeqrfBackward0", arity=1)


@export(to=TORCH_TENSOR)
def geqrf(input, *, out=None):  # noqa: A002
    """``(a, tau)``: LAPACK's ``geqrf`` QR factorization, ``R`` on and above ``a``'s diagonal and the Householder
    vectors below it (not differentiable, as in PyTorch; :func:`ember.linalg.qr` is).

    >>> import ember
    >>> ember.geqrf(ember.tensor([[3., 1.], [4., 2.]])).a
    tensor([[-5.0000, -2.2000],
            [ 0.5000,  0.4000]])
    """
    _matrices(input, "geqrf", "input")
    with no_grad():
        return outs_or(GeqrfResult(*unary(Geqrf, input)), out)


# --------------------------------------------------------------------------- Cholesky solves
@export(to=TORCH_TENSOR)
def cholesky_solve(input, input2, upper: bool = False, *, out=None) -> Tensor:  # noqa: A002
    """The solution of ``A X = B`` (``B``: ``input``) with ``A = L L^H`` (``U^H U`` when ``upper``) from its
    Cholesky factor ``L`` (``input2``, as PyTorch's parser names it).

    >>> import ember
    >>> ember.cholesky_solve(ember.tensor([[4.], [2.]]), ember.tensor([[2., 0.], [1., 1.]]))
    tensor([[1.],
            [0.]])
    """
    B, L = input, input2  # noqa: N806
    _matrices(B, "cholesky_solve", "B")
    _matrices(L, "cholesky_solve", "L")
    _same_device("cholesky_solve", B, L)
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"cholesky_solve: A must be batches of square matrices, but they are {L.shape[-2]} by "
                           f"{L.shape[-1]} matrices")
    if B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"cholesky_solve: Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L.shape[-1]} by {L.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    lo = L.mH if upper else L
    y = solve_triangular(lo, B, upper=False)
    x = composite_node(solve_triangular(lo.mH, y, upper=True), "CholeskySolveBackward0")
    return out_or(keep_saved(x, B, L), out)  # (PyTorch's node keeps both)


@export(to=TORCH_TENSOR)
def cholesky_inverse(L, upper: bool = False, *, out=None) -> Tensor:  # noqa: N803
    """The inverse of ``A = L L^H`` (``U^H U`` when ``upper``) from its Cholesky factor.

    >>> import ember
    >>> ember.cholesky_inverse(ember.tensor([[2., 0.], [0., 1.]]))
    tensor([[0.2500, 0.0000],
            [0.0000, 1.0000]])
    """
    _matrices(L, "cholesky_inverse", "L")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are {L.shape[-2]} "
                           f"by {L.shape[-1]} matrices")
    n = L.shape[-1]
    x = cholesky_solve(_eye(n, n, L).expand(L.shape), L, upper)
    return out_or(composite_node(x, "CholeskyInverseBackward0"), out)


# --------------------------------------------------------------------------- LDL (Bunch-Kaufman)
# (hermitian: LAPACK's ?hetf2/?hetrs for complex input, ?sytf2/?sytrs otherwise; the same for real input)
LdlFactor = op_class("LdlFactor", "ldl_factor", backward_name="LinalgLdlFactorExBackward0", arity=2,
                     params=("hermitian",))
LdlSolve = op_class("LdlSolve", "ldl_solve", backward_name="LinalgLdlSolveBackward0", arity=4, params=("hermitian",))


def _ldl_zero(i):
    return f"The factorization could not be completed because D[{i - 1},{i - 1}] is zero (the input is singular)."


@export(to=LINALG)
def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out=None):
    """``(LD, pivots, info)``: LAPACK's ``sytrf`` factorization ``P A P^T = L D L^T`` of a symmetric matrix, read
    from its lower triangle (Bunch-Kaufman pivoting: ``D`` has 1x1 and 2x2 blocks, a 2x2 block marked by two equal
    negative pivots).  Complex input is factored as complex symmetric, or with ``hermitian=True`` as Hermitian
    (``A = L D L^H``, ``D`` real on its diagonal).
    Not differentiable, as in PyTorch.

    >>> import ember
    >>> ember.linalg.ldl_factor_ex(ember.tensor([[4., 2.], [2., 3.]])).LD
    tensor([[4.0000, 0.0000],
            [0.5000, 2.0000]])
    """
    _square(A, "ldl_factor_ex")
    with no_grad():
        ld, pivots, info = unary(LdlFactor, A, bool(hermitian and A.is_complex()))
    if check_errors:
        _check_info(info, "linalg.ldl_factor_ex", _ldl_zero)
    return outs_or(LDLFactorExResult(ld, pivots, info), out)


@export(to=LINALG)
def ldl_factor(A: Tensor, *, hermitian: bool = False, out=None):
    """``(LD, pivots)``: :func:`ldl_factor_ex` that raises for a singular ``A``.

    >>> import ember
    >>> ember.linalg.ldl_factor(ember.tensor([[0., 1.], [1., 0.]])).pivots
    tensor([-2, -2], dtype=ember.int32)
    """
    _square(A, "ldl_factor")
    ld, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _check_info(info, "linalg.ldl_factor", _ldl_zero)
    return outs_or(LDLFactorResult(ld, pivots), out)


@export(to=LINALG)
def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out=None) -> Tensor:  # noqa: N803
    """The solution of ``A X = B`` from :func:`ldl_factor`'s ``(LD, pivots)`` (batch; not differentiable).

    >>> import ember
    >>> ember.linalg.ldl_solve(*ember.linalg.ldl_factor(ember.tensor([[4., 2.], [2., 3.]])), ember.tensor([[6.], [5.]]))
    tensor([[1.],
            [1.]])
    """
    _square(LD, "ldl_solve")
    _matrices(B, "linalg.ldl_solve", "B")
    _same_device("linalg.ldl_solve", LD, pivots, B)
    if pivots.dtype is not dtypes.int32 or tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be an int32 tensor of shape "
                           f"{list(LD.shape[:-1])}, got {pivots.dtype} of shape {list(pivots.shape)}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"linalg.ldl_solve: Expected b and A to have the same dtype, but found b of type "
                           f"{dtypes.type_name(B.dtype)} and A of type {dtypes.type_name(LD.dtype)} instead.")
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({LD.shape[-2]}x{LD.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    if pivots.numel() and not bool(((pivots.abs() >= 1) & (pivots.abs() <= LD.shape[-1])).all()):
        bound = ">= 1" if bool((pivots == 0).any()) else "<= LD.size(-2)"
        raise RuntimeError(f"linalg.ldl_solve: Pivots given to ldl_solve must all satisfy |pivot| {bound}. Did you "
                           f"properly pass the result of ldl_factor?")
    ld, b = _batched(LD, B)
    with no_grad():
        x = apply(LdlSolve, ld, pivots.expand(*ld.shape[:-1]), b, bool(hermitian and LD.is_complex()))
    return out_or(x, out)


# --------------------------------------------------------------------------- eigenvalues of general matrices
def _complex_available():
    return getattr(dtypes, "complex64", None) is not None


class Eig(Op):
    """``(eigenvalues, eigenvectors)`` of LAPACK's ``geev``, complex even for real input."""

    backward_name = "LinalgEigBackward0"

    @staticmethod
    def forward(ctx, k, a):
        ctx.real_input = "complex" not in str(a.dtype)
        return k["eig"](a)

    @staticmethod
    def backward(ctx, gl, gv):
        # gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E)) V^H, E[i, j] = w_j - w_i
        # (the eigenvectors have unit norm: the projection removes the part of gV that changes a norm)
        w, v = _outputs(ctx)
        vh = v.mH
        vgv = vh @ gv
        d = vgv.diagonal(0, -2, -1)
        _gauge_check(d.imag, "linalg_eig_backward", "eigenvectors")
        vgv = vgv - vh @ (v * d.real.unsqueeze(-2))
        e = (w.unsqueeze(-2) - w.unsqueeze(-1)).conj()
        eye = _eye_like(e)
        ga = solve(vh, (vgv / (e + eye) * (1 - eye) + gl.diag_embed()) @ vh)
        return ga.real if ctx.real_input else ga


def _eig_input(A, op):
    _tensor_arg(A, f"linalg.{op}", "A")
    _square(A, op)
    if not _complex_available():
        raise RuntimeError(f"linalg.{op}: needs complex64/complex128 tensors, which this build of ember lacks")


@export(to=LINALG)
def eig(A: Tensor, *, out=None):
    """``(eigenvalues, eigenvectors)`` of a square matrix (batch), complex (``complex64`` for float32 input);
    eigenvectors of unit norm, in LAPACK's ``geev`` phase.  Differentiable where the eigenvalues are distinct and
    the loss does not depend on the eigenvectors' phases (PyTorch's condition).

    >>> import ember
    >>> ember.linalg.eig(ember.tensor([[2., 0.], [0., 3.]])).eigenvalues
    tensor([2.+0.j, 3.+0.j])
    """
    _eig_input(A, "eig")
    return outs_or(EigResult(*_multi(Eig, "eig", A)), out)


@export(to=LINALG)
def eigvals(A: Tensor, *, out=None) -> Tensor:
    """The eigenvalues of a square matrix (batch), complex.

    >>> import ember
    >>> ember.linalg.eigvals(ember.tensor([[0., 1.], [-1., 0.]])).tolist()
    [1j, -1j]
    """
    return out_or(eig(A).eigenvalues, out)


# --------------------------------------------------------------------------- norms and products under old names
@export(to=("torch",))
def nuclear_norm(input, dim=None, keepdim: bool = False, *, out=None) -> Tensor:  # noqa: A002
    """``torch.nuclear_norm``: the sum of singular values over ``dim`` (the last two dimensions by default).

    >>> import ember
    >>> ember.nuclear_norm(ember.tensor([[3., 0.], [0., -4.]]))
    tensor(7.)
    """
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, out=out)


@export(to=("torch",))
def frobenius_norm(input, dim, keepdim: bool = False, *, out=None) -> Tensor:  # noqa: A002
    """``torch.frobenius_norm``: the square root of the sum of squares over ``dim``.

    >>> import ember
    >>> ember.frobenius_norm(ember.tensor([[3., 0.], [0., 4.]]), (0, 1))
    tensor(5.)
    """
    r = rename_node(vector_norm(input, 2, dim, keepdim, out=out), "NormBackward1")  # PyTorch's node of it
    given = r._fn.__dict__.get("_args", {}) if r._fn is not None else {}
    kept = {"self": given["self"]} if "self" in given else {}  # (the input, as vector_norm's node keeps it)
    return keep_args(r, p=2.0, dim=tuple(dim) if isinstance(dim, (list, tuple)) else (dim,), keepdim=keepdim, **kept)


@export(to=("torch",))
def chain_matmul(*matrices, out=None) -> Tensor:
    """``torch.chain_matmul``: the product of 2-D matrices in the cheapest order (:func:`ember.linalg.multi_dot`).

    >>> import ember
    >>> ember.chain_matmul(ember.eye(2), ember.ones(2, 3)).shape
    ember.Size([2, 3])
    """
    if len(matrices) == 1:
        return out_or(matrices[0].clone(), out)
    return multi_dot(matrices, out=out)


# --------------------------------------------------------------------------- randomized low-rank SVD and PCA
def _approximate_basis(A, q, niter, M):
    """An orthonormal basis of ``q`` columns for the range of ``A - M`` (Halko et al. 2009, algorithm 4.4)."""
    r = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)

    def times(x, y, yt=None):
        p = x @ y
        return p if yt is None else p - yt @ y

    q_ = qr(times(A, r, M)).Q
    for _ in range(niter):
        q_ = qr(times(A.mH, q_, None if M is None else M.mH)).Q
        q_ = qr(times(A, q_, M)).Q
    return q_


def _svd_lowrank(A, q, niter, M):
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:  # work on the tall one (A^H = V S U^H)
        A = A.mH
        M = None if M is None else M.mH
    basis = _approximate_basis(A, q, niter, M)
    b = basis.mH @ A
    if M is not None:
        b = b - basis.mH @ M
    u, s, vh = svd(b, full_matrices=False)
    u, v = basis @ u, vh.mH
    return (v, s, u) if m < n else (u, s, v)


@export(to=("torch",))
def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """``(U, S, V)``: an approximate rank-``q`` SVD ``A - M ~ U diag(S) V^H`` by random projections (``niter``
    subspace iterations); exact for matrices of rank ``q`` or less.  Draws from ember's random generator.

    >>> import ember
    >>> a = ember.tensor([[1., 2.], [2., 4.], [3., 6.]])
    >>> ember.svd_lowrank(a, q=1)[1]
    tensor([8.3666])
    """
    _matrices(A, "svd_lowrank")
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


@export(to=("torch",))
def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """``(U, S, V)``: :func:`svd_lowrank` of ``A`` with its column means taken away (``center``); ``q`` defaults to
    ``min(6, m, n)``.

    >>> import ember
    >>> a = ember.tensor([[1., 2.], [2., 4.], [3., 6.]])
    >>> ember.pca_lowrank(a, q=1)[1]
    tensor([3.1623])
    """
    _matrices(A, "pca_lowrank")
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(-2, keepdim=True), q, niter, None)


# --------------------------------------------------------------------------- removed in PyTorch 1.9
def _removed(name, message):
    def fn(*args, **kwargs):
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed." + message)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: removed in PyTorch 1.9; raises, naming its replacement."
    return fn


_REMOVED = {
    "solve": " `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its arguments "
             "reversed and does not return the LU factorization.\n\nTo get the LU factorization see `torch.lu`, "
             "which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should "
             "be replaced with:\nX = torch.linalg.solve(A, B)",
    "lstsq": " `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
             "arguments and does not return the QR decomposition in the returned tuple (although it returns other "
             "information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\n"
             "The returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns "
             "of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
             "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = "
             "torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "eig": " `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real tensors "
           "mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
           "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
           "L_complex, V_complex = torch.linalg.eig(A)",
    "symeig": " The default behavior has changed from using the upper triangular portion of the matrix by default "
              "to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced "
              "with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
              "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
}
for _name, _message in _REMOVED.items():
    export(_removed(_name, _message), _name, to=TORCH_TENSOR)
export(_removed("matrix_rank", "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                               "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'."),
       "matrix_rank", to=("torch",))
