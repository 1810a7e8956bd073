"""Op table: linear algebra: products, ``einsum``, decompositions, solves, factorizations and the legacy
names (``torch.lu``, ``triangular_solve``, ``chain_matmul``, ...).  Row format and checks: :mod:`ember.testing.row`.

Decompositions that LAPACK defines exactly (LU with partial pivoting, ``geqrf``'s Householder vectors) are
compared as they are; the rows keep inputs away from ties in pivoting.  Triangular factors given to the
Cholesky solves are made triangular inside the call (``l.tril()``), so that gradients are those of the
entries the op reads, in both libraries.  PyTorch warns (once per process) on its deprecated forms; the
rows of the solves call them with that warning silenced.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np

from .row import F, Row, Sampler

_S = Sampler(3456)
r, well = _S.r, _S.well
_RNG = _S.rng


def lower(n, batch=()):
    """A well-conditioned lower-triangular matrix with a positive diagonal (batch)."""
    return F(np.tril(_RNG.rand(*batch, n, n) - 0.5) + 2 * np.eye(n))


def sym0(n):
    """A matrix whose symmetric part has a zero first diagonal entry (Bunch-Kaufman then pivots 2x2)."""
    a = _RNG.rand(n, n) - 0.5
    a[0, 0] = 0.0
    return F(a)


def spd_shift(m, a):
    return 3 * m.eye(a.shape[-1], dtype=a.dtype, device=a.device)


def _chol(m, lo):
    return lo.tril() + m.eye(lo.shape[-1], dtype=lo.dtype, device=lo.device)


def _quiet(op):
    @functools.wraps(op)
    def call(m, *args):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", ".*deprecated", UserWarning)
            return op(m, *args)

    return call


PRODUCT_ROWS = [
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
    # V diag(L^2) V^-1 = A^2: free of the eigenvectors' scale and of the eigenvalues' order
    Row("eig_square", lambda m, a: (lambda L, V: (V @ m.diag_embed(L * L) @ m.linalg.inv(V)).real)(*m.linalg.eig(a)),
        [[r(3, 3)]], gradgrad=False),
    Row("pinv", lambda m, a: m.linalg.pinv(a), [[r(4, 3)], [r(2, 3)]]),
    Row("matrix_power", lambda m, a: m.linalg.matrix_power(a, 3), [[r(3, 3)]]),
    Row("matrix_power_neg", lambda m, a: m.linalg.matrix_power(a, -2), [[well(3)]]),
]

# solves, factorizations and legacy names
SOLVE_ROWS = [
    # triangular solves
    Row("solve_triangular_upper", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
        [[well(3), r(3, 2)], [well(3, (2,)), r(3, 4)], [well(3), r(2, 3, 1)]]),
    Row("solve_triangular_lower", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False), [[well(4), r(4, 2)]]),
    Row("solve_triangular_right", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True, left=False),
        [[well(3), r(2, 3)], [well(3, (2,)), r(2, 4, 3)]]),
    Row("solve_triangular_unit", lambda m, a, b: m.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
        [[well(3), r(3, 2)]]),
    Row("triangular_solve", lambda m, b, a: tuple(m.triangular_solve(b, a)), [[r(3, 2), well(3)]]),
    Row("triangular_solve_transpose", lambda m, b, a: b.triangular_solve(a, False, True, False).solution,
        [[r(3, 2), well(3, (2,))]]),
    Row("triangular_solve_unit", lambda m, b, a: m.triangular_solve(b, a, unitriangular=True).solution,
        [[r(3, 2), well(3)]]),
    # LU
    Row("lu_factor", lambda m, a: tuple(m.linalg.lu_factor(a)), [[well(3)], [r(2, 4, 4)]]),
    Row("lu_factor_rect", lambda m, a: tuple(m.linalg.lu_factor(a)), [[r(4, 3)], [r(3, 5)], [r(2, 5, 3)]]),
    Row("lu_factor_ex", lambda m, a: tuple(m.linalg.lu_factor_ex(a)), [[well(3, (2,))]]),
    Row("linalg_lu", lambda m, a: tuple(m.linalg.lu(a)), [[r(3, 3)], [r(2, 4, 3)], [r(3, 4)]]),
    Row("lu_legacy", lambda m, a: tuple(m.lu(a)), [[well(3)]]),
    Row("lu_legacy_infos", lambda m, a: tuple(a.lu(get_infos=True)), [[well(3, (2,))]]),
    Row("lu_unpack", lambda m, a: tuple(m.lu_unpack(*m.linalg.lu_factor(a))), [[r(3, 3)], [r(4, 3)], [r(2, 3, 4)]]),
    Row("lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b),
        [[well(3), r(3, 2)], [well(3, (2,)), r(2, 3, 1)]]),
    Row("lu_solve_adjoint", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, adjoint=True),
        [[well(3), r(3, 2)]]),
    Row("lu_solve_right", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False),
        [[well(3), r(2, 3)]]),
    Row("lu_solve_right_adjoint", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False,
                                                                    adjoint=True), [[well(3), r(2, 3)]]),
    Row("lu_solve_legacy", lambda m, a, b: b.lu_solve(*m.linalg.lu_factor(a)), [[well(3), r(3, 2)]]),
    # inverses and solves with info
    Row("inv_ex", lambda m, a: tuple(m.linalg.inv_ex(a)), [[well(3)], [well(2, (2,))]]),
    Row("solve_ex", lambda m, a, b: tuple(m.linalg.solve_ex(a, b)), [[well(3), r(3, 2)], [well(3), r(3)]]),
    Row("solve_ex_right", lambda m, a, b: m.linalg.solve_ex(a, b, left=False).result, [[well(3), r(2, 3)]]),
    # least squares
    # (sample 3's solution is ~20 from unit inputs: float32 rounding grows with the conditioning)
    Row("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, [[r(5, 3), r(5, 2)], [r(3, 5), r(3, 2)],
                                                                  [r(2, 4, 3), r(2, 4, 2)], [r(4, 3), r(4)]],
        rtol=1e-5, atol=1e-5),
    # (residuals are differentiable; rank and singular values are not, in either library)
    Row("lstsq_residuals", lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gelsd")[:2]), [[r(5, 3), r(5, 2)]]),
    Row("lstsq_gels", lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gels")[:2]), [[r(2, 5, 3), r(2, 5, 2)]]),
    Row("lstsq_full", lambda m, a, b: tuple(t for d in ("gels", "gelsy", "gelsd", "gelss")
                                            for t in m.linalg.lstsq(a, b, driver=d)),
        [[r(5, 3), r(5, 2)], [r(3, 5), r(3, 2)], [r(5, 3), r(5)]], grad=False),
    # matrix exponential
    Row("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), [[r(3, 3)], [r(2, 3, 3)]]),
    Row("matrix_exp_large", lambda m, a: (a * 6).matrix_exp(), [[r(3, 3)]]),
    # (PyTorch's float32 result is the one off, by ~1e-5 against float64; ember's is within 1e-7)
    Row("matrix_exp_top", lambda m, a: m.matrix_exp(a), [[r(1, 1)], [r(2, 2)]], rtol=5e-5, atol=5e-5),
    # condition numbers, tensor inverses
    Row("cond", lambda m, a: m.linalg.cond(a), [[well(3)], [r(4, 3)], [well(3, (2,))]]),
    Row("cond_svd", lambda m, a: tuple(m.linalg.cond(a, p) for p in ("nuc", -2, 2)), [[well(3)]]),
    # (PyTorch cannot differentiate these: its own backward fails)
    Row("cond_norms", lambda m, a: tuple(m.linalg.cond(a, p) for p in ("fro", 1, -1, float("inf"), -float("inf"))),
        [[well(3)], [well(2, (2,))]], grad=False),
    Row("tensorinv", lambda m, a: m.linalg.tensorinv(a.reshape(4, 2, 2), ind=1), [[well(4)]]),
    Row("tensorinv_2", lambda m, a: m.linalg.tensorinv(a.reshape(2, 3, 6)), [[well(6)]]),
    Row("tensorsolve", lambda m, a, b: m.linalg.tensorsolve(a.reshape(2, 3, 6), b), [[well(6), r(2, 3)]]),
    Row("tensorsolve_dims", lambda m, a, b: m.linalg.tensorsolve(a.reshape(6, 2, 3), b, dims=(0,)),
        [[well(6), r(2, 3)]]),
    # Householder products
    Row("householder_product", lambda m, a, t: m.linalg.householder_product(a, t),
        [[r(4, 3), r(3)], [r(3, 3), r(2)], [r(2, 4, 2), r(2, 2)]]),
    Row("orgqr", lambda m, a, t: a.orgqr(t), [[r(4, 3), r(3)]]),
    Row("ormqr", lambda m, a, t, c: m.ormqr(a, t, c), [[r(4, 3), r(3), r(4, 2)]]),
    Row("ormqr_transpose", lambda m, a, t, c: a.ormqr(t, c, True, True), [[r(4, 3), r(3), r(4, 2)]]),
    Row("ormqr_right", lambda m, a, t, c: m.ormqr(a, t, c, left=False), [[r(4, 3), r(3), r(2, 4)]]),
    Row("ormqr_right_transpose", lambda m, a, t, c: m.ormqr(a, t, c, False, True), [[r(4, 3), r(3), r(2, 4)]]),
    Row("geqrf", lambda m, a: tuple(m.geqrf(a)), [[r(4, 3)], [r(3, 4)], [r(2, 3, 3)]], grad=False),
    Row("geqrf_orgqr", lambda m, a: m.orgqr(*a.geqrf()), [[r(4, 3)]], grad=False),
    # LDL (not differentiable in either library); a zero corner forces 2x2 pivots
    Row("ldl_factor", lambda m, a: tuple(m.linalg.ldl_factor(a + a.mT)), [[r(4, 4)], [r(2, 3, 3)], [sym0(5)]],
        grad=False),
    Row("ldl_factor_ex", lambda m, a: tuple(m.linalg.ldl_factor_ex(a + a.mT)), [[r(3, 3)], [sym0(4)]], grad=False),
    # (a condition number of ~400: PyTorch's float32 solve is off by ~3e-4 against float64, ember's by ~5e-6)
    Row("ldl_solve", lambda m, a, b: m.linalg.ldl_solve(*m.linalg.ldl_factor(a + a.mT), b),
        [[r(4, 4), r(4, 2)], [sym0(5), r(5, 1)], [r(2, 3, 3), r(3, 2)]], grad=False, rtol=2e-5, atol=1e-3),
    # Cholesky solves
    Row("cholesky_solve", lambda m, b, lo: m.cholesky_solve(b, _chol(m, lo)), [[r(3, 2), lower(3)],
                                                                               [r(2, 3, 1), lower(3)]]),
    Row("cholesky_solve_upper", lambda m, b, lo: b.cholesky_solve(_chol(m, lo).mT, True), [[r(3, 2), lower(3)]]),
    Row("cholesky_solve_spd", lambda m, b, a: m.cholesky_solve(b, m.linalg.cholesky(a @ a.mT + spd_shift(m, a))),
        [[r(3, 2), r(3, 3)]]),
    Row("cholesky_inverse", lambda m, lo: m.cholesky_inverse(_chol(m, lo)), [[lower(3)], [lower(2, (2,))]]),
    Row("cholesky_inverse_upper", lambda m, lo: _chol(m, lo).mT.cholesky_inverse(True), [[lower(3)]]),
    # QR of wide matrices (the m < n gradient)
    Row("qr_wide", lambda m, a: tuple(m.linalg.qr(a)), [[r(3, 4)], [r(2, 2, 3)]]),
    Row("qr_wide_complete", lambda m, a: tuple(m.linalg.qr(a, "complete")), [[r(2, 4)]]),
    # norms and products under their old names
    Row("nuclear_norm", lambda m, a: m.nuclear_norm(a), [[r(3, 4)], [r(2, 3, 3)]]),
    Row("nuclear_norm_dim", lambda m, a: m.nuclear_norm(a, (0, 2), keepdim=True), [[r(3, 2, 4)]]),
    Row("frobenius_norm", lambda m, a: m.frobenius_norm(a, (0, 1)), [[r(3, 4)]]),
    Row("frobenius_norm_keepdim", lambda m, a: m.frobenius_norm(a, (-1, -2), True), [[r(2, 3, 4)]]),
    Row("chain_matmul", lambda m, a, b, c: m.chain_matmul(a, b, c), [[r(2, 5), r(5, 3), r(3, 4)]]),
]
for _row in SOLVE_ROWS:
    _row.op = _quiet(_row.op)

ROWS = PRODUCT_ROWS + SOLVE_ROWS
