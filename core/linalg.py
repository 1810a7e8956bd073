"""``ember.linalg``: inverses, determinants, solves and decompositions, all differentiable.

Forward runs the backend's batched LAPACK kernels; backward formulas are
written with ember ops (so second derivatives work where the formula allows).

>>> import ember
>>> ember.linalg.inv(ember.eye(2) * 2)
tensor([[0.5000, 0.0000],
        [0.0000, 0.5000]])
"""
from __future__ import annotations

from collections import namedtuple

from .autograd.function import Op
from .dispatch import unary
from .ops.linalg import cross, matmul
from .tensor import Tensor, _wrap

__all__ = ["LinAlgError", "cholesky", "cross", "det", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "norm",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm"]

SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])
QRResult = namedtuple("qr", ["Q", "R"])
SVDResult = namedtuple("svd", ["U", "S", "Vh"])
EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])


def _square(a, op):
    if not isinstance(a, Tensor):
        raise TypeError(f"linalg.{op}: expected a Tensor, got {type(a).__name__}")
    if a.dim() < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")
    _floating(a, op)


def _floating(a, op):
    if not a.is_floating_point():
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. Got {a.dtype}")


class LinAlgError(RuntimeError):
    """A matrix the operation cannot handle: singular, not positive-definite, not converging."""


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
}


def _sym(x):
    return (x + x.mT) * 0.5


# --------------------------------------------------------------------------- inverse, determinant, solve
class Inv(Op):
    save_output = True
    backward_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx, k, a):
        return k["inv"](a)

    @staticmethod
    def backward(ctx, g):
        ai = ctx.output
        return -(ai.mT @ g @ ai.mT)


class Det(Op):
    save_inputs = True
    save_output = True
    backward_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, k, a):
        return k["det"](a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.inputs
        return (g * ctx.output).unsqueeze(-1).unsqueeze(-1) * inv(a).mT


class Slogdet(Op):
    save_inputs = True
    nondiff_outputs = (0,)
    backward_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx, k, a):
        return k["slogdet"](a)

    @staticmethod
    def backward(ctx, gsign, glog):
        (a,) = ctx.inputs
        return glog.unsqueeze(-1).unsqueeze(-1) * inv(a).mT


class Solve(Op):
    save_inputs = True
    save_output = True
    backward_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, k, a, b):
        return k["solve"](a, b)

    @staticmethod
    def backward(ctx, g):
        a, _ = ctx.inputs
        gb = solve(a.mT, g)
        return -(gb @ ctx.output.mT), gb


def inv(A: Tensor, *, out=None) -> Tensor:
    """Inverse of a square matrix (batch); singular input raises.

    >>> import ember
    >>> ember.linalg.inv(ember.tensor([[2., 0.], [0., 4.]]))
    tensor([[0.5000, 0.0000],
            [0.0000, 0.2500]])
    """
    _square(A, "inv")
    return _out(_run(Inv, "inv", A), out)


def _run(Cls, op, a, *params):
    try:
        return unary(Cls, a, *params)
    except RuntimeError:
        raise LinAlgError(f"linalg.{op}: {_FAILURES[op]} (input of shape {list(a.shape)}, {a.dtype})") from None


def det(A: Tensor, *, out=None) -> Tensor:
    """Determinant of a square matrix (batch).

    >>> import ember
    >>> ember.linalg.det(ember.tensor([[1., 2.], [3., 4.]]))
    tensor(-2.)
    """
    _square(A, "det")
    return _out(_run(Det, "det", A), out)


def slogdet(A: Tensor, *, out=None):
    """``(sign, log|det|)`` of a square matrix (batch).

    >>> import ember
    >>> ember.linalg.slogdet(ember.tensor([[2., 0.], [0., 3.]])).logabsdet
    tensor(1.7918)
    """
    _square(A, "slogdet")
    return SlogdetResult(*_run(Slogdet, "slogdet", A))


def solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """The solution ``X`` of ``A @ X = B`` (``X @ A = B`` when ``left=False``); ``B`` may be a vector (batch).

    >>> import ember
    >>> ember.linalg.solve(ember.tensor([[2., 0.], [0., 4.]]), ember.tensor([2., 2.]))
    tensor([1.0000, 0.5000])
    """
    from .dispatch import apply, result_type

    _square(A, "solve")
    if A._dev is not B._dev:
        from .dispatch import device_error

        raise device_error("linalg.solve", A, B)
    if not left:
        return solve(A.mT, B.mT).mT
    vec = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    b = B.unsqueeze(-1) if vec else B
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({A.shape[-2]}x"
                           f"{A.shape[-1]} and {b.shape[-2]}x{b.shape[-1]})")
    rt = result_type(A, B)
    a, b = A.to(rt), b.to(rt)
    batch = _bshape(a.shape[:-2], b.shape[:-2])
    a = a.expand(*batch, *a.shape[-2:])
    b = b.expand(*batch, *b.shape[-2:])
    try:
        x = apply(Solve, a, b)
    except RuntimeError:
        raise LinAlgError(f"linalg.solve: {_FAILURES['solve']} (A of shape {list(A.shape)})") from None
    return _out(x.squeeze(-1) if vec else x, out)


def _bshape(s1, s2):
    from .ops.shape import broadcast_shapes

    return tuple(broadcast_shapes(tuple(s1), tuple(s2)))


def matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    """``A`` multiplied by itself ``n`` times (``n < 0``: powers of the inverse; ``n == 0``: identity).

    >>> import ember
    >>> ember.linalg.matrix_power(ember.tensor([[1., 1.], [0., 1.]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
    """
    _square_any(A, "matrix_power")
    if n == 0:
        from .ops.creation import eye

        return _out(eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape).clone(), out)
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return _out(result, out)


def _square_any(a, op):
    if a.dim() < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, got shape {list(a.shape)}")


# --------------------------------------------------------------------------- decompositions
class Cholesky(Op):
    save_output = True
    backward_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, k, a, upper):
        ctx.upper = upper
        return k["cholesky"](a, upper)

    @staticmethod
    def backward(ctx, g):
        lo = ctx.output
        if ctx.upper:
            lo, g = lo.mT, g.mT
        # gA = L^-T Phi(L^T gL) L^-1, symmetrised; Phi keeps the lower triangle with a halved diagonal
        p = (lo.mT @ g.tril()).tril()
        p = p - p.diagonal(0, -2, -1).diag_embed() * 0.5
        s = solve(lo.mT, solve(lo.mT, p.mT).mT)
        return _sym(s)


def cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    """Cholesky factor ``L`` (lower; ``upper=True``: ``L^T``) of a symmetric positive-definite matrix (batch).

    >>> import ember
    >>> ember.linalg.cholesky(ember.tensor([[4., 2.], [2., 2.]]))
    tensor([[2., 0.],
            [1., 1.]])
    """
    _square(A, "cholesky")
    return _out(_run(Cholesky, "cholesky", A, bool(upper)), out)


class QR(Op):
    save_output = True
    backward_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, k, a, mode):
        return k["qr"](a, mode)

    @staticmethod
    def backward(ctx, gq, gr):
        q, r = _outputs(ctx, gq._dev)
        if r.shape[-2] > r.shape[-1] or q.shape[-1] != r.shape[-2] or q.shape[-2] < q.shape[-1]:
            raise RuntimeError("linalg.qr: the derivative is implemented for reduced QR of tall or square "
                               "matrices (m >= n) only")
        qdq = q.mT @ gq
        rdr = r @ gr.mT
        m = (qdq - qdq.mT + rdr - rdr.mT).tril()
        ga = q @ (gr + solve(r, m.mT).mT)
        gb = solve(r, (gq - q @ qdq).mT).mT
        return ga + gb


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
        return QRResult(q.new_zeros(0), r)
    return QRResult(*_multi(QR, "qr", A, mode))


def _outputs(ctx, dev):
    """The outputs a decomposition node saved, as tensors whose history is that node (for double backward)."""
    ctx._check_released()
    outs = []
    for i, arr in enumerate(ctx._out_arrays):
        t = _wrap(arr, dev)
        t._rg, t._fn, t._nr = True, ctx, i
        outs.append(t)
    return outs


def _multi(Cls, op, a, *params):
    """Run a several-output decomposition, keeping its outputs (detached) on the node for backward."""
    outs = _run(Cls, op, a, *params)
    fn = outs[0].grad_fn
    if fn is not None and isinstance(fn, Cls):
        fn._out_arrays = tuple(o._data for o in outs)
    return outs


class SVD(Op):
    backward_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, k, a, full_matrices):
        ctx.full = full_matrices
        return k["svd"](a, full_matrices)

    @staticmethod
    def backward(ctx, gu, gs, gvh):
        u, s, vh = _outputs(ctx, gs._dev)
        if ctx.full and u.shape[-1] != vh.shape[-2]:
            raise RuntimeError("linalg.svd: the derivative of full_matrices=True is not implemented for "
                               "non-square input; use full_matrices=False")
        v, gv = vh.mT, gvh.mT
        s2 = s * s
        e = s2.unsqueeze(-2) - s2.unsqueeze(-1)          # e[i, j] = s_j^2 - s_i^2
        eye = _eye_like(e)
        f = 1 / (e + eye) * (1 - eye)
        su, sv = s.unsqueeze(-2), s.unsqueeze(-1)
        ugu, vgv = u.mT @ gu, v.mT @ gv
        inner = f * (ugu - ugu.mT) * su + sv * (f * (vgv - vgv.mT)) + gs.diag_embed()
        ga = u @ inner @ vh
        m, n = u.shape[-2], v.shape[-2]
        sinv = (1 / s).unsqueeze(-2)
        if m > s.shape[-1]:
            ga = ga + (gu - u @ (u.mT @ gu)) * sinv @ vh
        if n > s.shape[-1]:
            ga = ga + u @ ((gv - v @ (v.mT @ gv)) * sinv).mT
        return ga


def _eye_like(x):
    from .ops.creation import eye

    return eye(x.shape[-1], dtype=x.dtype, device=x.device)


def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """Singular value decomposition ``A = U diag(S) Vh``.

    >>> import ember
    >>> ember.linalg.svd(ember.tensor([[3., 0.], [0., 4.]])).S
    tensor([4., 3.])
    """
    if A.dim() < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    _floating(A, "svd")
    return SVDResult(*_multi(SVD, "svd", A, bool(full_matrices)))


def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """The singular values of ``A``, descending.

    >>> import ember
    >>> ember.linalg.svdvals(ember.tensor([[3., 0.], [0., 4.]]))
    tensor([4., 3.])
    """
    return _out(svd(A, full_matrices=False).S, out)


class Eigh(Op):
    backward_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, k, a, uplo):
        return k["eigh"](a, uplo)

    @staticmethod
    def backward(ctx, gl, gv):
        w, v = _outputs(ctx, gl._dev)
        e = w.unsqueeze(-2) - w.unsqueeze(-1)            # e[i, j] = w_j - w_i
        eye = _eye_like(e)
        f = 1 / (e + eye) * (1 - eye)
        inner = f * (v.mT @ gv) + gl.diag_embed()
        return v @ inner @ v.mT


def eigh(A: Tensor, UPLO: str = "L", *, out=None):  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix, from its ``UPLO`` triangle.

    >>> import ember
    >>> ember.linalg.eigh(ember.tensor([[2., 0.], [0., 1.]])).eigenvalues
    tensor([1., 2.])
    """
    _square(A, "eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return EighResult(*_multi(Eigh, "eigh", A, UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:  # noqa: N803
    """Eigenvalues (ascending) of a symmetric matrix.

    >>> import ember
    >>> ember.linalg.eigvalsh(ember.tensor([[2., 1.], [1., 2.]]))
    tensor([1., 3.])
    """
    return _out(eigh(A, UPLO).eigenvalues, out)


class Pinv(Op):
    save_inputs = True
    save_output = True
    backward_name = "LinalgPinvBackward0"

    @staticmethod
    def forward(ctx, k, a, rtol, hermitian):
        return k["pinv"](a, rtol, hermitian)

    @staticmethod
    def backward(ctx, g):
        # valid where the rank is locally constant (Golub & Pereyra)
        (a,) = ctx.inputs
        p = ctx.output
        gt = g.mT
        ga = -(p.mT @ g @ p.mT)
        ga = ga + (gt - a @ (p @ gt)) @ (p @ p.mT)
        ga = ga + (p.mT @ p) @ (gt - (gt @ p) @ a)
        return ga


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
    if rtol is None:
        eps = {"float32": 1.1920929e-07, "float64": 2.220446049250313e-16}.get(A.dtype.name, 1e-3)
        rtol = eps * max(A.shape[-2], A.shape[-1])
    return _out(unary(Pinv, A, float(rtol), bool(hermitian)), out)


# --------------------------------------------------------------------------- norms (ember.ops.reduction)
def _reduction(name):
    def fn(*args, **kwargs):
        from .ops import reduction

        impl = getattr(reduction, name, None)
        if impl is None:
            raise NotImplementedError(f"linalg.{name} is not available yet")
        return impl(*args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``ember.linalg.{name}`` (implemented in :mod:`ember.ops.reduction`)."
    return fn


vector_norm = _reduction("vector_norm")
matrix_norm = _reduction("matrix_norm")
norm = _reduction("linalg_norm")
norm.__name__ = "norm"


def _out(r, out):
    if out is None:
        return r
    from .dispatch import copy_into_out

    return copy_into_out(out, r)
