"""Inverses, determinants, solves and decompositions, all differentiable (``ember.linalg.*`` and the
top-level forms PyTorch also has: ``ember.det``, ``ember.inverse``, ``ember.svd``, ``Tensor.qr``, ...).

Forward runs the backend's batched LAPACK kernels; backward formulas are
written with ember ops (so second derivatives work where the formula allows).
Complex input follows PyTorch's convention: the gradient is the conjugate
Wirtinger derivative, so every formula is written with conjugate transposes
(``mH``), and a loss that depends on the free phase of complex eigen- or
singular vectors raises.

>>> import ember
>>> ember.linalg.inv(ember.eye(2) * 2)
tensor([[0.5000, 0.0000],
        [0.0000, 0.5000]])
"""
from __future__ import annotations

from collections import namedtuple

from .. import dtypes
from ..autograd.function import Op, composite_node, keep_args
from ..autograd.grad_mode import no_grad
from ..dispatch import apply, autocasting, device_error, result_type, unary
from ..writes import out_or, outs_or
from ..registry import export, op_class
from ..tensor import Tensor, _wrap
from .creation import eye, tensor, zeros
from .shape import broadcast_shapes, cat, stack

LINALG = ("linalg",)
EVERYWHERE = ("linalg", "torch", "Tensor")

SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])
QRResult = namedtuple("qr", ["Q", "R"])
SVDResult = namedtuple("svd", ["U", "S", "Vh"])
SVDUSVResult = namedtuple("svd", ["U", "S", "V"])  # torch.svd's: V, not Vh
EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
CholeskyExResult = namedtuple("linalg_cholesky_ex", ["L", "info"])


class LinAlgError(RuntimeError):
    """A matrix the operation cannot handle: singular, not positive-definite, not converging."""


export(LinAlgError, to=LINALG)


def _square(a, op):
    if not isinstance(a, Tensor):
        raise TypeError(f"linalg.{op}: expected a Tensor, got {type(a).__name__}")
    if a.dim() < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    _floating(a, op)


# PyTorch's LAPACK kernel behind each op: the name its refusal of a dtype without code gives (float16,
# bfloat16; for the ops marked True also integers and bool, which no argument check refuses first).  An op not
# listed refuses half precision with "Low precision dtypes not supported" (inv, slogdet, ...); matrix_exp
# computes it.
_LAPACK = {"det": ("lu", False), "solve": ("lu", False), "solve_ex": ("lu", False), "cholesky": ("cholesky", False),
           "cholesky_ex": ("cholesky", False), "qr": ("geqrf", False), "svd": ("linalg_svd", False),
           "cond": ("linalg_svd", False), "ldl_factor": ("ldl_factor_kernel", False),
           "ldl_factor_ex": ("ldl_factor_kernel", False), "lu_solve": ("linalg.lu_solve", False),
           "eigh": ("linalg_eigh", True), "lu_factor": ("lu", True), "lu_factor_ex": ("lu", True), "lu": ("lu", True),
           "solve_triangular": ("triangular_solve", True), "triangular_solve": ("triangular_solve", True),
           "cholesky_inverse": ("cholesky_inverse_out", True), "cholesky_solve": ("cholesky_solve", True),
           "geqrf": ("geqrf", True), "householder_product": ("orgqr", True), "ormqr": ("ormqr", True),
           "eig": ("linalg_eig_out", False), "eigvals": ("linalg_eig_out", False)}
_FLOAT_AND_DOUBLE = ("matrix_rank", "lstsq")  # (PyTorch's message for any other dtype names these two)
# ops whose LAPACK kernel refuses a dtype even for an empty input (the others return an empty input first)
_DTYPE_BEFORE_EMPTY = frozenset({"qr", "geqrf", "householder_product", "ormqr", "cholesky_inverse", "solve_triangular",
                                 "triangular_solve", "eig", "eigvals"})


def _floating(a, op):
    lapack, integers = _LAPACK.get(op, (None, False))
    if a.is_complex():
        return  # (every op that reaches here computes complex input, forward and backward)
    if a.dtype in dtypes.REDUCED_FLOATING_TYPES and autocasting(a):
        return  # autocast computes linear algebra in float32 (its dispatch casts the operand)
    if op in _FLOAT_AND_DOUBLE and a.dtype not in dtypes.FLOATING_TYPES:
        raise RuntimeError(f"linalg.{op}: This function doesn't handle types other than float and double")
    if lapack is not None and (integers or a.is_floating_point()):
        dtypes.check_kernel(lapack + "_{device}", a, dtypes.LAPACK_TYPES, op not in _DTYPE_BEFORE_EMPTY)
    if not a.is_floating_point():
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. Got {a.dtype}")
    if lapack is None and op != "matrix_exp" and a.dtype in dtypes.REDUCED_FLOATING_TYPES:
        raise RuntimeError(f"linalg.{op}: Low precision dtypes not supported. Got {dtypes.type_name(a.dtype)}")


# why LAPACK refused, in PyTorch's words
_FAILURES = {
    "inv": "The diagonal element is zero, the inversion could not be completed because the input matrix is singular.",
    "det": "The input matrix is singular.",
    "slogdet": "The input matrix is singular.",
    "solve": "The solver failed because the input matrix is singular.",
    "cholesky": "The factorization could not be completed because the input is not positive-definite.",
    "qr": "The QR decomposition failed to converge.",
    "svd": "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
           "repeated singular values.",
    "eigh": "The algorithm failed to converge because the input matrix is ill-conditioned or has too many "
            "repeated eigenvalues.",
    "eig": "The algorithm failed to converge because the input matrix is ill-conditioned.",
}


def _run(Cls, op, a, *params):
    try:
        return unary(Cls, a, *params)
    except RuntimeError:
        raise LinAlgError(f"linalg.{op}: {_FAILURES[op]} (input of shape {list(a.shape)}, {a.dtype})") from None


def _sym(x):
    return (x + x.mH) * 0.5


def _eye_like(x):
    return eye(x.shape[-1], dtype=x.dtype, device=x.device)


# --------------------------------------------------------------------------- inverse, determinant, solve
def _output(node, i):
    """Output ``i`` that a decomposition node kept (see :func:`_multi`), as a tensor whose history is that node."""
    t = _wrap(node._out_arrays[i], node._out_meta[i][2])
    t._rg, t._fn, t._nr = True, node, i
    return t


def _kept_outputs(*names) -> dict:
    """``saved_args`` entries reading the outputs a decomposition node keeps by the names of PyTorch's node
    (``_saved_Q``, ``_saved_R``), in output order; None for an output PyTorch's node does not keep."""
    return {n: (lambda node, i=i: _output(node, i)) for i, n in enumerate(names) if n is not None}


def _lu_of_input(i, transposed=False):
    """A ``saved_args`` entry: output ``i`` (LU, pivots) of the LU factorisation of the matrix ``A`` the node keeps
    (of ``A^T`` where PyTorch's node factorises that: det and slogdet), made when read (PyTorch's node keeps the
    factorisation it computed)."""
    def read(node):
        a = node.inputs[0].detach()
        if transposed:
            a = a.mT.contiguous()
        return _wrap(a._dev.kernels["lu_factor"](a._data)[i], a._dev)
    return read


_LU_SAVED = {"LU": _lu_of_input(0), "pivots": _lu_of_input(1)}
_LU_T_SAVED = {"LU": _lu_of_input(0, True), "pivots": _lu_of_input(1, True)}


def _inv_vjp(ctx, g):
    ai = ctx.output
    return -(ai.mH @ g @ ai.mH)


Inv = op_class("Inv", "inv", saves="output", vjp=_inv_vjp, backward_name="LinalgInvExBackward0", arity=1)
Inv.result_name = "inverse"


def _det_vjp(ctx, g):
    (a,) = ctx.inputs
    return (g * ctx.output.conj()).unsqueeze(-1).unsqueeze(-1) * inv(a).mH


Det = op_class("Det", "det", saves="both", vjp=_det_vjp, backward_name="LinalgDetBackward0", arity=1)
Det.saved_names, Det.saved_args = ("A",), _LU_T_SAVED


def _slogdet_vjp(ctx, gsign, glog):
    (a,) = ctx.inputs
    if a.is_complex():  # sign = exp(i Im log det): its gradient joins log|det|'s as the imaginary part
        sign = _outputs(ctx)[0]
        glog = glog + 1j * (gsign * sign.conj()).imag
    return glog.unsqueeze(-1).unsqueeze(-1) * inv(a).mH


# (sign's gradient is zero for real input, but sign requires grad as PyTorch's does)
Slogdet = op_class("Slogdet", "slogdet", saves="input", vjp=_slogdet_vjp, backward_name="LinalgSlogdetBackward0",
                   arity=1)
Slogdet.saved_names, Slogdet.saved_args = ("A",), {**_LU_T_SAVED, **_kept_outputs("sign")}


def _solve_vjp(ctx, g):
    a, _ = ctx.inputs
    gb = solve(a.mH, g)
    return -(gb @ ctx.output.mH), gb


# (PyTorch's node keeps A's LU factorisation and the result, never B: B changed in place refuses nothing)
Solve = op_class("Solve", "solve", saves="both", vjp=_solve_vjp, backward_name="LinalgSolveExBackward0", arity=2,
                 save_for=(None, ()))
Solve.saved_args = {"left": lambda n: True, **_LU_SAVED}  # (left=False is composed of transposes around it)
Solve.saved_names = ("A", None)


@export(to=LINALG)
def inv(A: Tensor, *, out=None) -> Tensor:
    """Inverse of a square matrix (batch); singular input raises.

    >>> import ember
    >>> ember.linalg.inv(ember.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    _square(A, "inv")
    return out_or(_run(Inv, "inv", A), out)


@export
def inverse(input, *, out=None) -> Tensor:  # noqa: A002
    """``torch.inverse``: the same as :func:`ember.linalg.inv`.

    >>> import ember
    >>> (ember.eye(2) * 4).inverse()
    tensor([[0.2500, 0.0000],
            [0.0000, 0.2500]])
    """
    return inv(input, out=out)


@export(to=("linalg", "Tensor"))
def det(A: Tensor, *, out=None) -> Tensor:
    """Determinant of a square matrix (batch).

    >>> import ember
    >>> ember.linalg.det(ember.tensor([[1., 2.], [3., 4.]]))
    tensor(-2.)
    """
    _square(A, "det")
    return out_or(_run(Det, "det", A), out)


@export(to=("linalg", "Tensor"))
def slogdet(A: Tensor, *, out=None):
    """``(sign, log|det|)`` of a square matrix (batch).

    >>> import ember
    >>> ember.linalg.slogdet(ember.tensor([[2., 0.], [0., 3.]])).logabsdet
    tensor(1.7918)
    """
    _square(A, "slogdet")
    return outs_or(SlogdetResult(*_multi(Slogdet, "slogdet", A)), out)


def _det_input(input) -> Tensor:  # noqa: A002
    """``torch.det``: :func:`ember.linalg.det` (PyTorch's parser names the matrix ``input`` here)."""
    return det(input)


def _slogdet_input(input, *, out=None):  # noqa: A002
    """``torch.slogdet``: :func:`ember.linalg.slogdet` (PyTorch's parser names the matrix ``input`` here)."""
    return slogdet(input, out=out)


for _fn, _name in ((_det_input, "det"), (_slogdet_input, "slogdet")):
    _fn.__name__ = _fn.__qualname__ = _name
    export(_fn, _name, to=("torch",))


@export
def logdet(input) -> Tensor:  # noqa: A002
    """``log(det(input))``: ``-inf`` where the determinant is zero, NaN where it is negative.

    >>> import ember
    >>> ember.logdet(ember.tensor([[2., 0.], [0., 3.]]))
    tensor(1.7918)
    """
    sign, logabs = slogdet(input)
    if sign.is_complex():  # the principal logarithm: log|det| + i arg(det)
        return logabs + 1j * sign.angle()
    return logabs.masked_fill(sign < 0, float("nan"))


@export(to=LINALG)
def solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """The solution ``X`` of ``A @ X = B`` (``X @ A = B`` when ``left=False``); ``B`` may be a vector (batch).

    >>> import ember
    >>> ember.linalg.solve(ember.tensor([[2., 0.], [0., 4.]]), ember.tensor([2., 2.]))
    tensor([1.0000, 0.5000])
    """
    _square(A, "solve")
    if A._dev is not B._dev:
        raise device_error("linalg.solve", A, B)
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type {A.dtype} "
                           f"and B of type {B.dtype} instead")
    if not left:
        return composite_node(solve(A.mT, B.mT).mT, "LinalgSolveExBackward0")
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vec else B
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({A.shape[-2]}x"
                           f"{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    rt = result_type(A, B)
    a, b = A.to(rt), b.to(rt)
    batch = tuple(broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    a = a.expand(*batch, *a.shape[-2:])
    b = b.expand(*batch, *b.shape[-2:])
    try:
        x = apply(Solve, a, b)
    except RuntimeError:
        raise LinAlgError(f"linalg.solve: {_FAILURES['solve']} (A of shape {list(A.shape)})") from None
    return out_or(composite_node(x.squeeze(-1), "LinalgSolveExBackward0") if vec else x, out)  # PyTorch's node




@export(to=EVERYWHERE)
def matrix_power(input: Tensor, n: int, *, out=None) -> Tensor:  # noqa: A002
    """``input`` multiplied by itself ``n`` times (``n < 0``: powers of the inverse; ``n == 0``: identity).

    >>> import ember
    >>> ember.linalg.matrix_power(ember.tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    A = input  # noqa: N806
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, got shape {list(A.shape)}")
    # PyTorch's steps, so that the last node and what it keeps are its: the identity copied over a copy of A (a
    # zero gradient), a copy for n == 1, A @ A and (A @ A) @ A, else the powers A^(2^k) taken from the lowest bit
    if n == 0:
        return out_or(A.clone().copy_(eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)), out)
    if n == 1:
        return out_or(A.clone(), out)
    if n < 0:
        A, n = inv(A), -n  # noqa: N806
    if n <= 3:
        return out_or(A @ A if n == 2 else A @ A @ A if n == 3 else A, out)
    z = result = None
    while n:
        z = A if z is None else z @ z
        if n & 1:
            result = z if result is None else result @ z
        n >>= 1
    return out_or(result, out)


# --------------------------------------------------------------------------- decompositions
def _cholesky_vjp(ctx, g):
    lo = ctx.output
    if ctx.upper:
        lo, g = lo.mH, g.mH
    # gA = L^-H Phi L^-1 with P = tril(L^H gL) and Phi = (P + tril(P, -1)^H) / 2 (PyTorch's form: symmetric for
    # real input; for complex input Phi's diagonal keeps P's imaginary part, so gA need not be Hermitian)
    p = (lo.mH @ g.tril()).tril()
    p = (p + p.tril(-1).mH) * 0.5
    return solve(lo.mH, solve(lo.mH, p).mH).mH


Cholesky = op_class("Cholesky", "cholesky", saves="output", vjp=_cholesky_vjp,
                    backward_name="LinalgCholeskyExBackward0", params=("upper",))
Cholesky.saved_args = {"upper": lambda n: bool(n.upper)}
Cholesky.result_name = "L"


@export(to=LINALG)
def cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    """Cholesky factor ``L`` (lower; ``upper=True``: ``L^T``) of a symmetric positive-definite matrix (batch).

    >>> import ember
    >>> ember.linalg.cholesky(ember.tensor([[4., 2.], [2., 2.]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    _square(A, "cholesky")
    return out_or(_run(Cholesky, "cholesky", A, bool(upper)), out)


@export(name="cholesky")
def cholesky_upper_arg(input, upper: bool = False, *, out=None) -> Tensor:  # noqa: A002
    """``torch.cholesky(A, upper=False)``: :func:`ember.linalg.cholesky` with ``upper`` positional.

    >>> import ember
    >>> ember.tensor([[4., 2.], [2., 2.]]).cholesky(True)
    tensor([[2., 1.],
            [0., 1.]])
    """
    return cholesky(input, upper=upper, out=out)


@export(to=LINALG)
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out=None):
    """``(L, info)``: the Cholesky factor and, per matrix, 0 or the order of the first leading minor that is not
    positive-definite (where it is not, that matrix's ``L`` is NaN).

    >>> import ember
    >>> ember.linalg.cholesky_ex(ember.tensor([[1., 2.], [2., 1.]])).info
    tensor(2, dtype=ember.int32)
    """
    _square(A, "cholesky_ex")
    batch = tuple(A.shape[:-2])
    try:
        lo = cholesky(A, upper=upper)
        info = zeros(batch, dtype=dtypes.int32, device=A.device)
    except LinAlgError:
        if check_errors:
            raise
        n = A.shape[-1]
        flat = A.reshape(-1, n, n)
        factors, codes = [], []
        for a in flat.unbind(0):
            try:
                factors.append(cholesky(a, upper=upper))
                codes.append(0)
            except LinAlgError:
                factors.append(a.detach().new_full((n, n), float("nan")))
                codes.append(_failing_minor(a.detach()))
        lo = stack(factors).reshape(A.shape)
        info = tensor(codes, dtype=dtypes.int32, device=A.device).reshape(batch)
    return outs_or(CholeskyExResult(lo, info), out)


def _failing_minor(a):
    """The order of the first leading minor of ``a`` that is not positive-definite."""
    with no_grad():
        for k in range(1, a.shape[-1] + 1):
            try:
                unary(Cholesky, a[:k, :k].contiguous(), False)
            except RuntimeError:
                return k
    return 0


def _qr_vjp(ctx, gq, gr):
    q, r = _outputs(ctx)
    m, n = q.shape[-2], r.shape[-1]
    if q.shape[-1] != r.shape[-2] or (m > n and q.shape[-1] != n):
        raise RuntimeError("linalg.qr: The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r', and is not implemented for mode='complete' when nrows > ncols.")
    if m >= n:
        return _qr_square_vjp(q, r, gq, gr)
    # wide: A = [X | Y], R = [U | V] with X = Q U square and Y = Q V (PyTorch's linalg_qr_backward)
    u, v = r[..., :m], r[..., m:]
    gv = gr[..., m:]
    gx = _qr_square_vjp(q, u, gq + (q @ v) @ gv.mH, gr[..., :m])
    return cat([gx, q @ gv], -1)


def _qr_square_vjp(q, r, gq, gr):
    """The gradient of reduced QR of a tall or square matrix: ``(gQ + Q sym(M)) R^-H`` with
    ``M = gR R^H - Q^H gQ`` and ``sym(M)`` the Hermitian matrix of ``M``'s strict upper triangle and the real part
    of its diagonal (``Q^H dQ`` is skew-Hermitian and ``R``'s diagonal is real)."""
    m = gr @ r.mH - q.mH @ gq
    up = m.triu(1)
    gx = gq + q @ (up + up.mH + m.diagonal(0, -2, -1).real.diag_embed())
    return solve(r, gx.mH).mH


QR = op_class("QR", "qr", saves="output", vjp=_qr_vjp, backward_name="LinalgQrBackward0", params=("mode",))
QR.saved_args = {"mode": "mode", **_kept_outputs("Q", "R")}


@export(to=LINALG)
def qr(A: Tensor, mode: str = "reduced", *, out=None):
    """QR decomposition ``A = Q R`` (mode 'reduced', 'complete' or 'r').

    >>> import ember
    >>> [t.shape for t in ember.linalg.qr(ember.ones(3, 2))]
    [ember.Size([3, 2]), ember.Size([2, 2])]
    """
    if A.dim() < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    _floating(A, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           f"'r', or 'complete'")
    if mode == "r":
        q, r = _multi(QR, "qr", A, "reduced")
        return outs_or(QRResult(q.new_zeros(0), keep_args(r, mode="r")), out)
    return outs_or(QRResult(*_multi(QR, "qr", A, mode)), out)


@export(name="qr")
def qr_some(input, some: bool = True, *, out=None):  # noqa: A002
    """``torch.qr(A, some=True)``: the reduced QR decomposition, the complete one when ``some=False``.

    >>> import ember
    >>> [t.shape for t in ember.ones(3, 2).qr(some=False)]
    [ember.Size([3, 3]), ember.Size([3, 2])]
    """
    return qr(input, "reduced" if some else "complete", out=out)


def _outputs(ctx):
    """The outputs a decomposition node saved, as tensors whose history is that node (for double backward)."""
    ctx._check_released()
    return [_output(ctx, i) for i in range(len(ctx._out_arrays))]


def _multi(Cls, op, a, *params):
    """Run a several-output decomposition, keeping its outputs (detached) on the node for backward (saved
    values: the backward frees the node's, an empty ``_saved`` marking it for release)."""
    outs = _run(Cls, op, a, *params)
    fn = outs[0].grad_fn
    if fn is not None and isinstance(fn, Cls):
        fn._out_arrays = tuple(o._data for o in outs)
        if fn._saved is None:
            fn._saved = ()
    return outs


class SVD(Op):
    backward_name = "LinalgSvdBackward0"
    saved_args = {"full_matrices": "full", "S_sym_argsize_minus_1": lambda n: min(n._shapes[0][0][-2:]),
                  **_kept_outputs("U", "S", "Vh")}

    @staticmethod
    def forward(ctx, k, a, full_matrices):
        ctx.full = full_matrices
        return k["svd"](a, full_matrices)

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        u, s, vh = _outputs(ctx)
        if ctx.full and u.shape[-1] != vh.shape[-2]:
            raise RuntimeError("linalg.svd: the derivative of full_matrices=True is not implemented for "
                               "non-square input; use full_matrices=False")
        v, gv = vh.mH, gvh.mH
        s2 = s * s
        e = s2.unsqueeze(-2) - s2.unsqueeze(-1)          # e[i, j] = s_j^2 - s_i^2
        eye = _eye_like(e)
        f = 1 / (e + eye) * (1 - eye)
        su, sv = s.unsqueeze(-2), s.unsqueeze(-1)
        ugu, vgv = u.mH @ gu, v.mH @ gv
        inner = f * (ugu - ugu.mH) * su + sv * (f * (vgv - vgv.mH)) + gs.diag_embed()
        if u.is_complex():
            # complex singular vectors are defined up to a phase e^{i phi} per pair (u_k, v_k): a loss must not
            # depend on it, and the part of gU that turns the phase lands on the diagonal
            phase = ugu.diagonal(0, -2, -1).imag
            _gauge_check(phase + vgv.diagonal(0, -2, -1).imag, "svd_backward", "singular vectors")
            inner = inner + (1j * phase / s).diag_embed()
        ga = u @ inner @ vh
        m, n = u.shape[-2], v.shape[-2]
        sinv = (1 / s).unsqueeze(-2)
        if m > s.shape[-1]:
            ga = ga + (gu - u @ ugu) * sinv @ vh
        if n > s.shape[-1]:
            ga = ga + u @ ((gv - v @ vgv) * sinv).mH
        return ga


def _gauge_check(phase, op, what):
    """PyTorch's refusal of a loss that depends on the free phases of complex eigen- or singular vectors."""
    with no_grad():
        if bool((phase.abs() > 1e-2).any()):
            raise RuntimeError(f"{op}: The {what} in the complex case are specified up to multiplication by "
                               f"e^{{i phi}}. The specified loss function depends on this quantity, so it is "
                               f"ill-defined.")


@export(to=LINALG)
def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """Singular value decomposition ``A = U diag(S) Vh``.

    >>> import ember
    >>> ember.linalg.svd(ember.tensor([[3., 0.], [0., 4.]])).S
    tensor([4., 3.])
    """
    if A.dim() < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    _floating(A, "svd")
    return outs_or(SVDResult(*_multi(SVD, "svd", A, bool(full_matrices))), out)


@export(name="svd")
def svd_usv(input, some: bool = True, compute_uv: bool = True, *, out=None):  # noqa: A002
    """``torch.svd``: ``(U, S, V)`` with ``input = U diag(S) V^T`` (``V``, not ``Vh``); reduced when ``some``.

    Without ``compute_uv``, ``U`` and ``V`` are zero matrices of shapes ``(m, m)`` and ``(n, n)``.

    >>> import ember
    >>> u, s, v = ember.svd(ember.tensor([[3., 0.], [0., 4.]]))
    >>> s
    tensor([4., 3.])
    """
    if not compute_uv:
        s = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        r = SVDUSVResult(input.detach().new_zeros(batch + (m, m)), s, input.detach().new_zeros(batch + (n, n)))
    else:
        u, s, vh = svd(input, full_matrices=not some)
        r = SVDUSVResult(u, s, vh.mT)
    return outs_or(r, out)


@export(to=LINALG)
def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """The singular values of ``A``, descending.

    >>> import ember
    >>> ember.linalg.svdvals(ember.tensor([[3., 0.], [0., 4.]]))
    tensor([4., 3.])
    """
    return out_or(svd(A, full_matrices=False).S, out)


def _eigh_vjp(ctx, gl, gv):
    w, v = _outputs(ctx)
    e = w.unsqueeze(-2) - w.unsqueeze(-1)            # e[i, j] = w_j - w_i
    eye = _eye_like(e)
    f = 1 / (e + eye) * (1 - eye)
    vgv = v.mH @ gv
    if v.is_complex():
        _gauge_check(vgv.diagonal(0, -2, -1).imag, "linalg_eigh_backward", "eigenvectors")
    # V^H gV projected onto the skew-Hermitian matrices (the tangent space of the unitary group), as PyTorch's
    inner = f * ((vgv - vgv.mH) * 0.5) + gl.diag_embed()
    return v @ inner @ v.mH


Eigh = op_class("Eigh", "eigh", vjp=_eigh_vjp, backward_name="LinalgEighBackward0", arity=2)
Eigh.saved_args = _kept_outputs("eigenvalues", "eigenvectors")


@export(to=LINALG)
def eigh(A: Tensor, UPLO: str = "L", *, out=None):  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, from its ``UPLO`` triangle.

    >>> import ember
    >>> ember.linalg.eigh(ember.tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([1., 2.])
    """
    _square(A, "eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return outs_or(EighResult(*_multi(Eigh, "eigh", A, UPLO)), out)


@export(to=LINALG)
def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:  # noqa: N803
    """Eigenvalues (ascending) of a symmetric matrix.

    >>> import ember
    >>> ember.linalg.eigvalsh(ember.tensor([[2., 1.], [1., 2.]]))
    tensor([1., 3.])
    """
    return out_or(eigh(A, UPLO).eigenvalues, out)


def _pinv_vjp(ctx, g):
    # valid where the rank is locally constant (Golub & Pereyra)
    (a,) = ctx.inputs
    p = ctx.output
    gt = g.mH
    ga = -(p.mH @ g @ p.mH)
    ga = ga + (gt - a @ (p @ gt)) @ (p @ p.mH)
    ga = ga + (p.mH @ p) @ (gt - (gt @ p) @ a)
    return ga


Pinv = op_class("Pinv", "pinv", saves="both", vjp=_pinv_vjp, backward_name="LinalgPinvBackward0", arity=4)


def _eps(a):
    return _EPS_BY_NAME.get(a.dtype.name, 1e-3)


_EPS_BY_NAME = {"float32": 1.1920929e-07, "float64": 2.220446049250313e-16, "complex64": 1.1920929e-07,
                "complex128": 2.220446049250313e-16}


@export(to=LINALG)
def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False, out=None) -> Tensor:
    """Moore-Penrose pseudo-inverse (by SVD).

    >>> import ember
    >>> ember.linalg.pinv(ember.tensor([[2., 0.], [0., 0.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    if A.dim() < 2:
        raise RuntimeError("linalg.pinv: The input tensor A must have at least 2 dimensions.")
    _floating(A, "pinv")
    # singular values at or below max(atol, rtol * the largest) count as zero; rtol defaults to eps * max(m, n),
    # or 0 where a positive atol is given (as matrix_rank)
    default = _eps(A) * max(A.shape[-2], A.shape[-1])
    if rtol is None:
        rtol = default if atol is None else (atol <= 0) * default
    tols = [t.to(device=A.device, dtype=A.real.dtype).detach()._data if isinstance(t, Tensor) else float(t)
            for t in (0.0 if atol is None else atol, rtol)]
    return out_or(unary(Pinv, A, *tols, bool(hermitian)), out)


@export
def pinverse(input, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """``torch.pinverse``: :func:`ember.linalg.pinv` with ``rcond`` as its relative tolerance.

    >>> import ember
    >>> ember.tensor([[2., 0.], [0., 0.]]).pinverse()
    tensor([[0.5000, 0.0000],
            [0.0000, 0.0000]])
    """
    return pinv(input, rtol=rcond)


@export(to=LINALG)
def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The number of singular values (``hermitian``: absolute eigenvalues) above ``max(atol, rtol * largest)``.

    ``rtol`` defaults to ``eps * max(m, n)``, or 0 where ``atol`` is given and positive; ``tol`` (NumPy's)
    is ``atol`` with ``rtol = 0``.

    >>> import ember
    >>> ember.linalg.matrix_rank(ember.tensor([[1., 2.], [2., 4.]]))
    tensor(1)
    """
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor A must have at least 2 dimensions.")
    _floating(A, "matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    with no_grad():
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        if s.shape[-1] == 0:
            return out_or(zeros(tuple(A.shape[:-2]), dtype=dtypes.int64, device=A.device), out)
        smax = s.amax(-1, keepdim=True)
        default = _eps(A) * max(A.shape[-2], A.shape[-1])
        if rtol is None:
            rtol = default if atol is None else (atol <= 0) * default
        cut = smax * rtol
        if atol is not None:
            cut = cut.maximum(atol if isinstance(atol, Tensor) else cut.new_tensor(float(atol)))
        r = (s > cut).sum(-1)
    return out_or(r, out)


# --------------------------------------------------------------------------- lobpcg
def _rayleigh_ritz(A, B, S, count, largest):
    """The ``count`` extreme Ritz pairs of ``(A, B)`` on the span of ``S``'s columns: (values, coefficients).

    The basis is B-orthonormalised through the eigendecomposition of its Gram matrix, dropping directions
    whose Gram eigenvalue is negligible, so nearly dependent blocks stay stable."""
    BS = S if B is None else B @ S
    g, U = eigh(_sym(S.mT @ BS))
    keep = g > g.max() * (S.shape[-2] * _EPS[S.dtype])
    T = U[:, keep] / g[keep].sqrt()
    w, Z = eigh(_sym(T.mT @ (S.mT @ (A @ S)) @ T))
    C = T @ Z
    sel = slice(w.shape[0] - count, None) if largest else slice(0, count)
    w, C = w[sel], C[:, sel]
    if largest:
        w, C = w.flip(0), C.flip(1)
    return w, C


_EPS = {dtypes.float32: 1.2e-07, dtypes.float64: 2.23e-16}


@export(to=("torch",))
def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The ``k`` largest (or smallest) eigenpairs of the symmetric problem ``A x = lambda B x`` by LOBPCG.

    ``A`` is symmetric (``m x m``), ``B`` symmetric positive definite (default the identity), ``X`` an initial
    ``m x n`` block (default random, ``n = k``), ``iK`` a preconditioner.  Iterates until every wanted residual
    ``||A x - lambda B x|| / ((||A X0|| + |lambda| ||B X0||) ||x|| / ||X0||)`` is below ``tol`` (default the
    square root of the dtype's epsilon) or ``niter`` steps (default 1000; -1: until convergence).  Returns
    ``(E, X)``: eigenvalues ``(k,)`` in descending order for ``largest`` (ascending otherwise) and the
    B-orthonormal eigenvectors ``(m, k)``.  The eigenvalues are differentiable in ``A``
    (``dlambda = x x^T``); the eigenvectors are returned without a gradient.

    >>> import ember
    >>> A = ember.diag(ember.arange(1., 11., dtype=ember.float64))
    >>> E, X = ember.lobpcg(A, k=2, largest=True)
    >>> [round(v, 6) for v in E.tolist()]
    [10.0, 9.0]
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"lobpcg(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim != 2 or A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise AssertionError(f"A and B must have same shape, got {tuple(A.shape)} vs {tuple(B.shape)}")
    if A.dtype not in _EPS:  # (PyTorch's RuntimeError comes from its first matrix product with float32 data)
        raise RuntimeError(f"lobpcg: expected A of dtype float32 or float64, got {A.dtype}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"lobpcg: method must be 'ortho' or 'basic', got {method!r}")
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    if n < k:
        raise ValueError(f"lobpcg: the initial block has {n} columns, fewer than the {k} eigenpairs requested")
    tol = _EPS[A.dtype] ** 0.5 if tol is None else tol
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest
    with no_grad():
        a, b = A.detach(), None if B is None else B.detach()
        x = a.new_empty((m, n)).normal_() if X is None else X.detach().to(a.dtype)
        # PyTorch's scale of the residuals: ||A X|| / ||X|| (and ||B X|| / ||X||) for the initial block
        norm_a = float((a @ x).norm()) / float(x.norm())
        norm_b = 1.0 if b is None else float((b @ x).norm()) / float(x.norm())
        w, C = _rayleigh_ritz(a, b, x, n, largest)
        x, p = x @ C, None
        it = 0
        while True:
            bx = x if b is None else b @ x
            r = a @ x - bx * w
            err = r.norm(dim=-2) / ((norm_a + w.abs() * norm_b) * x.norm(dim=-2))
            if bool((err[:k] < tol).all()) or (niter >= 0 and it >= niter):
                break
            wr = r if iK is None else iK @ r
            blocks = [x, wr] if p is None else [x, wr, p]
            w, C = _rayleigh_ritz(a, b, cat(blocks, -1), n, largest)
            p = cat(blocks[1:], -1) @ C[n:]
            x = x @ C[:n] + p
            it += 1
        x = x[:, :k]
    e = (x.mT @ A @ x).diagonal() if A.requires_grad else w[:k]
    if B is not None and A.requires_grad:
        e = e / (x.mT @ B.detach() @ x).diagonal()
    return e, x
