"""Linear-algebra kernels: matrix products and decompositions (batched over leading dimensions, as
``xp.linalg`` is)."""
from __future__ import annotations

import math

from ..dtypes import bfloat16 as _bfloat16
from .strategy import bind

_BF16 = getattr(_bfloat16.np, "type", None)  # NumPy's BLAS has no bfloat16 (ml_dtypes' products come back in float32)


def widened(fn):
    """``fn`` computing bfloat16 operands in float32 and rounding its floating results back to bfloat16
    (as PyTorch's bfloat16 GEMMs accumulate in float32)."""
    def run(*args):
        if _BF16 is None or not any(getattr(getattr(a, "dtype", None), "type", None) is _BF16 for a in args):
            return fn(*args)
        out = fn(*[a.astype("float32") if getattr(getattr(a, "dtype", None), "type", None) is _BF16 else a
                   for a in args])
        if isinstance(out, tuple):
            return tuple(o.astype(_BF16) if getattr(o, "dtype", None) == "float32" else o for o in out)
        return out.astype(_BF16)

    run.__name__ = fn.__name__
    return run


QUIET = {"inv", "det", "slogdet", "solve", "pinv", "matrix_exp", "solve_triangular", "lu_factor", "eig", "eigh",
         "svd", "qr", "cholesky", "ldl_factor", "ldl_solve"}  # singular inputs give inf/NaN as in PyTorch

LOW_PRECISION = {"matrix_exp"}  # (computed in float32 for bfloat16; see ember.kernels.library)


def _blas_pair(equation, operands):
    """Whether a two-operand einsum contracts a label and is large enough (``2 ** 15`` multiply-adds) that the
    array library's optimized path, one GEMM through ``tensordot``, pays for its ~35 us of path search: the
    plain loop runs without BLAS (NumPy: 20-70x slower on an empirical NTK's ``Naf,Mbf->NMab``)."""
    if len(operands) != 2:
        return False
    lhs, _, rhs = equation.partition("->")
    ins = lhs.split(",")
    if "." in lhs or not set(ins[0]) & set(ins[1]) - set(rhs):
        return False
    sizes = {}
    for s, a in zip(ins, operands):
        for c, n in zip(s, a.shape):
            sizes[c] = max(sizes.get(c, 1), n)
    return math.prod(sizes.values()) >= 1 << 15


def _pair_gemm(xp, equation, a, b):
    """A two-operand einsum as one (batched) GEMM laid out by the operands' strides, or None where a label repeats
    within an operand, is summed from one operand alone or broadcasts.  Each group of labels (batch, free in
    ``a``, free in ``b``, contracted) is taken in the order of its memory layout, so the reshapes to matrices are
    views of strided operands (vmapped Jacobian blocks) rather than copies, and the product is permuted at the
    end."""
    lhs, _, out = equation.partition("->")
    sa, sb = lhs.split(",")
    if len(set(sa)) < len(sa) or len(set(sb)) < len(sb) or (set(sa) ^ set(sb)) - set(out):
        return None
    size = dict(zip(sa, a.shape))
    if any(size.get(c, n) != n for c, n in zip(sb, b.shape)):
        return None
    size.update(zip(sb, b.shape))

    def by_layout(labels, s, x):  # outermost in memory first
        return sorted(labels, key=lambda c: -x.strides[s.index(c)])

    batch = by_layout([c for c in sa if c in sb and c in out], sa, a)
    con = by_layout([c for c in sa if c in sb and c not in out], sa, a)
    left = by_layout([c for c in sa if c not in sb], sa, a)
    right = by_layout([c for c in sb if c not in sa], sb, b)
    nb, nl, nr, nk = (math.prod(size[c] for c in g) for g in (batch, left, right, con))

    def matrix(x, s, free, n, k_last):  # x as (batch, free, contracted)
        order = batch + (free + con if k_last else con + free)
        m = x.transpose([s.index(c) for c in order]).reshape((nb, n, nk) if k_last else (nb, nk, n))
        return m if k_last else xp.swapaxes(m, -1, -2)

    def k_last(x, s, free):  # whether the contracted labels lie inside the free ones in memory
        return not free or x.strides[s.index(con[-1])] <= x.strides[s.index(free[-1])]

    am = matrix(a, sa, left, nl, k_last(a, sa, left))
    bm = matrix(b, sb, right, nr, k_last(b, sb, right))
    prod = xp.matmul(am, xp.swapaxes(bm, -1, -2))
    labels = batch + left + right
    prod = prod.reshape(tuple(size[c] for c in labels))
    return prod.transpose([labels.index(c) for c in out])


def _broadcasts_to(lead, target):
    """Whether stack shape ``lead`` broadcasts to ``target`` without growing it."""
    if len(lead) > len(target):
        return False
    return all(n == 1 or n == m for n, m in zip(lead[::-1], target[::-1]))


def _broadcast_lead(x, y):
    """The broadcast of two stack shapes (they are known to broadcast)."""
    k = max(len(x), len(y))
    x, y = (1,) * (k - len(x)) + tuple(x), (1,) * (k - len(y)) + tuple(y)
    return tuple(q if p == 1 else p for p, q in zip(x, y))


def _one_matrix(a):
    """The one matrix of stack ``a`` when every matrix of it is the same memory (each stack dimension of size 1
    or a zero stride: an operand broadcast over vmap's batch), else None."""
    st = getattr(a, "strides", None)
    lead = a.shape[:-2]
    if 0 not in lead and all(n == 1 or st is not None and not s for n, s in zip(lead, st or lead)):
        return a[(0,) * len(lead)]
    return None


def _flat(xp, a):
    """``a`` as a stack of matrices (one leading dimension) and its batch shape (counted, not ``-1``: an empty
    matrix leaves ``-1`` ambiguous)."""
    batch = tuple(a.shape[:-2])
    return xp.reshape(a, (math.prod(batch),) + tuple(a.shape[-2:])), batch


def adjoint(xp, a):
    """The conjugate transpose of each matrix of ``a`` (the transpose, a view, for real ``a``)."""
    at = xp.swapaxes(a, -1, -2)
    return xp.conj(at) if "complex" in str(a.dtype) else at


def _pivot_size(xp, c):
    """The size by which LAPACK's ``i?amax`` picks a pivot: ``|re| + |im|`` for complex entries, ``|x|`` else."""
    return xp.abs(xp.real(c)) + xp.abs(xp.imag(c)) if "complex" in str(c.dtype) else xp.abs(c)


def finite_svd(xp, a, full_matrices):
    """``svd`` of each matrix of ``a``, guarding LAPACK against non-finite input (its SVD never returns on some
    matrices holding inf): as PyTorch, a matrix holding NaN fails to converge (``ValueError``) and a matrix
    holding inf gets NaN factors; the finite matrices of the stack are decomposed as usual."""
    finite = xp.isfinite(a)
    if bool(xp.all(finite)):
        return tuple(xp.linalg.svd(a, full_matrices=full_matrices))
    if bool(xp.any(xp.isnan(a))):
        raise ValueError("the input matrix contained non-finite values")
    bad = ~xp.all(finite, axis=(-2, -1))[..., None]
    u, s, vh = xp.linalg.svd(xp.where(bad[..., None], 0, a), full_matrices=full_matrices)
    return xp.where(bad[..., None], xp.nan, u), xp.where(bad, xp.nan, s), xp.where(bad[..., None], xp.nan, vh)


def matrix_exp(xp, a):
    """``exp(a)`` of each matrix of ``a``."""
    # scaling and squaring with the degree-13 Pade approximant (Higham 2005), the scaling chosen per matrix
    if a.dtype.kind in "fV" and a.dtype.itemsize == 2:  # half precision: in float32 (LOW_PRECISION rounds back)
        return matrix_exp(xp, a.astype(xp.float32))
    flat, batch = _flat(xp, a)
    n = flat.shape[-1]
    if flat.shape[0] == 0 or n == 0:
        return xp.array(a, copy=True)
    b = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
         960960.0, 16380.0, 182.0, 1.0)
    theta = 5.371920351148152 if flat.dtype in (xp.float64, xp.complex128) else 3.925724783138660
    norm = xp.max(xp.sum(xp.abs(flat), axis=-2), axis=-1)
    s = xp.maximum(0, xp.ceil(xp.log2(xp.maximum(norm, 1e-300) / theta))).astype(xp.int64)
    x = flat / (2.0 ** s).astype(flat.dtype)[:, None, None]
    ident = xp.broadcast_to(xp.eye(n, dtype=flat.dtype), x.shape)
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * ident)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * ident
    r = xp.linalg.solve(v - u, v + u)
    for i in range(int(xp.max(s))):
        r = xp.where((s > i)[:, None, None], r @ r, r)
    return xp.reshape(r, batch + (n, n))


def _ldl_one(xp, a, hermitian=False):
    # LAPACK's sytf2 (lower): Bunch-Kaufman diagonal pivoting, 1x1 and 2x2 blocks; one matrix (the block
    # sizes differ between matrices of a batch); complex symmetric input as zsytf2, sizes |re| + |im|; with
    # ``hermitian`` complex input as zhetf2: a real diagonal, conjugates in the interchanges and updates
    a = xp.tril(a)
    cj, re = (xp.conj, lambda v: v.real) if hermitian else (lambda v: v, lambda v: v)
    # a diagonal entry's size for pivoting (zhetf2: |re|, its diagonal being real)
    diag_size = (lambda v: abs(float(v.real))) if hermitian else (lambda v: float(_pivot_size(xp, v)))

    def real_diagonal(m):
        if hermitian:
            d = xp.arange(m.shape[-1])
            m[d, d] = m[d, d].real
    n = a.shape[-1]
    piv = [0] * n
    info = 0
    alpha = (1 + 17 ** 0.5) / 8
    k = 0
    while k < n:
        kstep = 1
        absakk = diag_size(a[k, k])
        if k < n - 1:
            imax = k + 1 + int(xp.argmax(_pivot_size(xp, a[k + 1:, k])))
            colmax = float(_pivot_size(xp, a[imax, k]))
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):  # (sytf2: a zero or NaN column is left unpivoted)
            info = info or k + 1
            kp = k
            a[k, k] = re(a[k, k])
        else:
            if absakk >= alpha * colmax:
                kp = k
            else:
                rowmax = float(xp.max(_pivot_size(xp, a[imax, k:imax]))) if imax > k else 0.0
                if imax < n - 1:
                    rowmax = max(rowmax, float(xp.max(_pivot_size(xp, a[imax + 1:, imax]))))
                ratio = colmax / rowmax if rowmax else (math.inf if colmax > 0 else math.nan)  # (IEEE's x / 0)
                if absakk >= alpha * colmax * ratio:
                    kp = k
                elif diag_size(a[imax, imax]) >= alpha * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:  # swap rows and columns kk and kp of the trailing lower triangle
                if kp < n - 1:
                    t = a[kp + 1:, kk].copy()
                    a[kp + 1:, kk] = a[kp + 1:, kp]
                    a[kp + 1:, kp] = t
                t = cj(a[kk + 1:kp, kk].copy())
                a[kk + 1:kp, kk] = cj(a[kp, kk + 1:kp])
                a[kp, kk + 1:kp] = t
                a[kp, kk] = cj(a[kp, kk])
                t = re(a[kk, kk].copy())
                a[kk, kk] = re(a[kp, kp])
                a[kp, kp] = t
                if kstep == 2:
                    a[k, k] = re(a[k, k])
                    t = a[k + 1, k].copy()
                    a[k + 1, k] = a[kp, k]
                    a[kp, k] = t
            else:
                a[k, k] = re(a[k, k])
                if kstep == 2:
                    a[k + 1, k + 1] = re(a[k + 1, k + 1])
            if kstep == 1:
                if k < n - 1:
                    x = a[k + 1:, k] / re(a[k, k])
                    a[k + 1:, k + 1:] -= xp.tril(xp.outer(x, cj(a[k + 1:, k])))
                    real_diagonal(a[k + 1:, k + 1:])
                    a[k + 1:, k] = x
            elif k < n - 2 and hermitian:  # (zhetf2's D11, D22 and the modulus of D21)
                d = abs(complex(a[k + 1, k]))
                d11, d22 = float(a[k + 1, k + 1].real) / d, float(a[k, k].real) / d
                d21 = a[k + 1, k] / d
                d = 1 / (d11 * d22 - 1) / d
                wk = d * (d11 * a[k + 2:, k] - d21 * a[k + 2:, k + 1])
                wkp1 = d * (d22 * a[k + 2:, k + 1] - xp.conj(d21) * a[k + 2:, k])
                a[k + 2:, k + 2:] -= xp.tril(xp.outer(a[k + 2:, k], xp.conj(wk)) +
                                             xp.outer(a[k + 2:, k + 1], xp.conj(wkp1)))
                real_diagonal(a[k + 2:, k + 2:])
                a[k + 2:, k] = wk
                a[k + 2:, k + 1] = wkp1
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                d21 = 1 / (d11 * d22 - 1) / d21
                wk = d21 * (d11 * a[k + 2:, k] - a[k + 2:, k + 1])
                wkp1 = d21 * (d22 * a[k + 2:, k + 1] - a[k + 2:, k])
                a[k + 2:, k + 2:] -= xp.tril(xp.outer(a[k + 2:, k], wk) + xp.outer(a[k + 2:, k + 1], wkp1))
                a[k + 2:, k] = wk
                a[k + 2:, k + 1] = wkp1
        if kstep == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return a, piv, info


def _ldl_solve_one(xp, ld, piv, b, hermitian=False):
    # LAPACK's sytrs (lower): L D L^T X = B with the interchanges of sytf2; with ``hermitian`` hetrs: L D L^H X = B
    n = ld.shape[-1]
    cj, re = (xp.conj, lambda v: v.real) if hermitian else (lambda v: v, lambda v: v)
    b = xp.array(b, copy=True)

    def swap(i, j):
        if i != j:
            t = b[i].copy()
            b[i] = b[j]
            b[j] = t

    k = 0
    while k < n:
        if piv[k] > 0:
            swap(k, piv[k] - 1)
            b[k + 1:] -= xp.outer(ld[k + 1:, k], b[k])
            b[k] /= re(ld[k, k])
            k += 1
        else:
            swap(k + 1, -piv[k] - 1)
            b[k + 2:] -= xp.outer(ld[k + 2:, k], b[k]) + xp.outer(ld[k + 2:, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / cj(akm1k), ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k] / cj(akm1k), b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:
        if piv[k] > 0:
            b[k] -= cj(ld[k + 1:, k]) @ b[k + 1:]
            swap(k, piv[k] - 1)
            k -= 1
        else:
            b[k] -= cj(ld[k + 1:, k]) @ b[k + 1:]
            b[k - 1] -= cj(ld[k + 1:, k - 1]) @ b[k + 1:]
            swap(k, -piv[k] - 1)
            k -= 2
    return b


def _outer(xp, a, b):
    """Stacked outer products ``a @ b`` of (..., m, 1) and (..., 1, n) stacks (per-sample weight gradients).
    One broadcast multiply for small stacks (the stacked GEMM with k = 1 is ~5x slower); for a floating
    stack of larger products, one stacked GEMM with the contraction padded to k = 2 by a zero column and
    row: NumPy's broadcast multiply runs its inner loop over only n elements at a time, ~3x off the memory
    floor, while the GEMM writes each product at full speed (1.3-2x faster from 64 products of 10x64 up,
    float32 and float64; 2x at 64 of 128x128).  The padded term adds an exact 0 to each product."""
    m, n = a.shape[-2], b.shape[-1]
    lead = _broadcast_lead(a.shape[:-2], b.shape[:-2])  # (one side's stack may be broadcast: a shared input)
    if m * n < 256 or m * n * math.prod(lead) < 16384 or a.dtype != b.dtype \
            or a.dtype not in (xp.float32, xp.float64):
        return a * b
    # padded by one strided copy into zeros (concatenating along the size-1 axis loops element by element)
    ap = xp.zeros(lead + (m, 2), dtype=a.dtype)
    ap[..., :1] = a
    bp = xp.zeros(lead + (2, n), dtype=b.dtype)
    bp[..., :1, :] = b
    return xp.matmul(ap, bp)


def _one_gemm(xp, reshape, a, b):
    """``a @ b`` for stacked operands as one GEMM over a flattened stack where the layout allows (array
    libraries otherwise loop over the stack); None where it does not."""
    nd, bnd = a.ndim, b.ndim
    if nd >= 2 and bnd > 2 and b.shape[-1] == 1:
        # one matrix times a stack of vectors (a Jacobian's rows through a layer's weight) is one GEMM with
        # the vectors as rows, not a matrix-vector product per vector
        sb = b.shape
        a0 = _one_matrix(a) if nd > 2 else a
        if a0 is not None and 0 not in sb and a.shape[-1] == sb[-2] and _broadcasts_to(a.shape[:-2], sb[:-2]):
            out = reshape(b, (-1, sb[-2])) @ xp.swapaxes(a0, -1, -2)
            return reshape(out, sb[:-2] + (a0.shape[-2], 1))
    if nd > 2:
        sa = a.shape
        if bnd > 2 and sa[-1] > 1 and sa[-1] == b.shape[-2] and _broadcasts_to(b.shape[:-2], sa[:-2]):
            b0 = _one_matrix(b)  # a stack times one matrix: one GEMM over the flattened stack
            if b0 is not None:
                return reshape(reshape(a, (-1, sa[-1])) @ b0, sa[:-1] + (b.shape[-1],))
        # a stack of matrices times one matrix is one GEMM over the flattened stack: array libraries
        # otherwise loop over the stack (NumPy: ~10x slower for Linear on 3-D input)
        if bnd == 2:
            return reshape(reshape(a, (-1, sa[-1])) @ b, sa[:-1] + (b.shape[-1],))
        if bnd > 2 and sa[-1] == 1:
            return _outer(xp, a, b)
    return None


def kernels(xp, strategy=None) -> dict:
    la = xp.linalg

    atype = type(xp.zeros(1))
    # the array's own reshape where it has one (NumPy's function form costs ~0.5 us of Python a call)
    reshape = atype.reshape if hasattr(atype, "reshape") and hasattr(xp, "ndarray") else xp.reshape

    def matmul(a, b):
        if getattr(a.dtype, "type", None) is _BF16:
            return matmul_wide(a, b)
        if (a.ndim <= 2 and b.ndim <= 2) or 0 in a.shape or 0 in b.shape:  # (a stack's paths need one not empty)
            return xp.matmul(a, b)
        out = _one_gemm(xp, reshape, a, b)
        return xp.matmul(a, b) if out is None else out

    @widened
    def matmul_wide(a, b):
        return matmul(a, b)

    def linear(x, w, b):
        """``x @ w.T + b`` (``b`` may be None): nn.Linear's forward, a kernel of its own so that a backend may
        add the bias in its GEMM's epilogue."""
        y = matmul(x, w.T)
        if b is not None:
            y += b
        return y

    def einsum(equation, *operands):
        if operands and getattr(operands[0].dtype, "type", None) is _BF16:
            return xp.einsum(equation, *[o.astype("float32") for o in operands],
                             optimize=len(operands) > 2).astype(_BF16)
        if _blas_pair(equation, operands):
            out = _pair_gemm(xp, equation, *operands)
            if out is not None:
                return out
            # (from a contiguous copy: NumPy's GEMMs over strided stacks run ~2x slower)
            return xp.einsum(equation, *[xp.ascontiguousarray(o) for o in operands], optimize=True)
        return xp.einsum(equation, *operands, optimize=len(operands) > 2)

    def slogdet(a):
        sign, logabs = la.slogdet(a)
        return sign, logabs

    def qr(a, mode):
        return tuple(la.qr(a, mode=mode))

    def svd(a, full_matrices):
        return finite_svd(xp, a, full_matrices)

    def eigh(a, uplo):
        # the lower triangle of a's adjoint is a's upper one, as the Hermitian matrix it defines reads it
        w, v = la.eigh(a if uplo == "L" else adjoint(xp, a))
        return w, v

    def cholesky(a, upper):
        # upper: U = L^H with L the factor of the Hermitian matrix that a's upper triangle defines (LAPACK's 'U')
        if not upper:
            return la.cholesky(a)
        return xp.array(adjoint(xp, la.cholesky(adjoint(xp, a))), copy=True)

    def solve(a, b):
        return la.solve(a, b)

    def pinv(a, atol, rtol, hermitian):
        # by SVD, dropping singular values at or below max(atol, rtol * the largest); atol and rtol are numbers or
        # arrays over the batch
        u, s, vh = finite_svd(xp, a, False)
        atol, rtol = (t[..., None] if getattr(t, "ndim", 0) else t for t in (atol, rtol))
        cut = xp.maximum(atol, rtol * xp.max(s, axis=-1, keepdims=True)) if s.shape[-1] else s
        s_inv = xp.where(s > cut, 1 / xp.where(s > cut, s, 1), 0)
        return xp.matmul(adjoint(xp, vh) * s_inv[..., None, :], adjoint(xp, u))

    def lu_factor(a):
        # LAPACK's getf2 (partial pivoting, the first largest pivot), one column at a time over the whole batch:
        # (LU, 1-based int32 pivots, info: 0 or the 1-based index of the first zero pivot)
        lu, batch = _flat(xp, a)
        lu = xp.array(lu, copy=True)
        b, m, n = lu.shape
        k = min(m, n)
        piv = xp.zeros((b, k), dtype=xp.int32)
        info = xp.zeros((b,), dtype=xp.int32)
        rows = xp.arange(b)
        for j in range(k):
            p = xp.argmax(_pivot_size(xp, lu[:, j:, j]), axis=1) + j if m > j else xp.zeros((b,), dtype=xp.int64)
            piv[:, j] = p + 1
            top, low = lu[rows, j, :], lu[rows, p, :]
            lu[rows, p, :] = top
            lu[rows, j, :] = low
            d = lu[:, j, j]
            zero = d == 0
            info = xp.where((info == 0) & zero, j + 1, info).astype(xp.int32)
            lu[:, j + 1:, j] /= xp.where(zero, 1, d)[:, None]  # a zero pivot has a zero column below it
            lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
        return (xp.reshape(lu, batch + (m, n)), xp.reshape(piv, batch + (k,)), xp.reshape(info, batch))

    def lu_permutation(piv, lu):
        # P (m x m, lu's dtype) of A = P L U from the row interchanges: P^T A = A[perm]
        m, dtype = lu.shape[-2], lu.dtype
        flat = xp.reshape(piv, (math.prod(piv.shape[:-1]), piv.shape[-1])).astype(xp.int64) - 1
        b = flat.shape[0]
        perm = xp.broadcast_to(xp.arange(m), (b, m)).copy()
        rows = xp.arange(b)
        for j in range(flat.shape[1]):
            p = flat[:, j]
            at_j, at_p = perm[:, j].copy(), perm[rows, p]
            perm[:, j] = at_p
            perm[rows, p] = at_j
        pt = xp.eye(m, dtype=dtype)[perm]
        return xp.reshape(xp.swapaxes(pt, -1, -2), tuple(piv.shape[:-1]) + (m, m))

    def solve_triangular(a, b, upper, unitriangular):
        # substitution one row at a time over the batch and every right-hand side (a zero on the diagonal
        # gives inf/nan, as LAPACK's trtrs does: nothing raises)
        n = a.shape[-1]
        x = xp.zeros(b.shape, dtype=xp.result_type(a, b))
        order = range(n - 1, -1, -1) if upper else range(n)
        for i in order:
            rest = slice(i + 1, n) if upper else slice(0, i)
            r = b[..., i, :] - xp.matmul(a[..., i:i + 1, rest], x[..., rest, :])[..., 0, :]
            x[..., i, :] = r if unitriangular else r / a[..., i, i:i + 1]
        return x

    def geqrf(a):
        # LAPACK's geqr2: Householder reflectors H_j = I - tau_j v_j v_j^H (v_j[j] = 1, stored below R's diagonal);
        # as its ?larfg, R's diagonal is real and each H_j^H is applied to the columns right of j
        flat, batch = _flat(xp, a)
        r = xp.array(flat, copy=True)
        bs, m, n = r.shape
        k = min(m, n)
        tau = xp.zeros((bs, k), dtype=r.dtype)
        cplx = "complex" in str(r.dtype)
        for j in range(k):
            alpha = r[:, j, j]
            xnorm = xp.sqrt(xp.sum(xp.abs(r[:, j + 1:, j]) ** 2, axis=-1))
            beta = -xp.where((xp.real(alpha) if cplx else alpha) >= 0, 1.0, -1.0) * \
                xp.sqrt(xp.abs(alpha) ** 2 + xnorm ** 2)
            trivial = (xnorm == 0) & (xp.imag(alpha) == 0) if cplx else xnorm == 0
            t = xp.where(trivial, 0.0, (beta - alpha) / xp.where(trivial, 1.0, beta))
            scale = xp.where(trivial, 0.0, 1.0 / xp.where(trivial, 1.0, alpha - beta))
            r[:, j + 1:, j] *= scale[:, None]
            tau[:, j] = t
            if j + 1 < n:
                v = xp.concatenate([xp.ones((bs, 1), dtype=r.dtype), r[:, j + 1:, j]], axis=1)
                vc, tc = (xp.conj(v), xp.conj(t)) if cplx else (v, t)
                w = xp.sum(vc[:, :, None] * r[:, j:, j + 1:], axis=1)
                r[:, j:, j + 1:] -= tc[:, None, None] * v[:, :, None] * w[:, None, :]
            r[:, j, j] = xp.where(trivial, alpha, beta)
        return xp.reshape(r, batch + (m, n)), xp.reshape(tau, batch + (k,))

    def eig(a):
        # the array library's general eigensolver; complex results even where every eigenvalue is real
        w, v = la.eig(a)
        c = xp.result_type(a.dtype, xp.complex64)
        return w.astype(c), v.astype(c)

    def ldl_factor(a, hermitian=False):
        flat, batch = _flat(xp, a)
        parts = [_ldl_one(xp, xp.array(m, copy=True), hermitian) for m in flat]
        n = a.shape[-1]
        ld = xp.stack([p[0] for p in parts]) if parts else xp.zeros(flat.shape, dtype=a.dtype)
        piv = xp.asarray([p[1] for p in parts], dtype=xp.int32)
        info = xp.asarray([p[2] for p in parts], dtype=xp.int32)
        return xp.reshape(ld, a.shape), xp.reshape(piv, batch + (n,)), xp.reshape(info, batch)

    def ldl_solve(ld, piv, b, hermitian=False):
        if ld.shape[-1] == 0:  # 0x0 systems: nothing to solve
            return xp.zeros(b.shape, dtype=b.dtype)
        lf, _ = _flat(xp, ld)
        bf, batch = _flat(xp, b)
        pf = xp.reshape(piv, (-1, piv.shape[-1])).tolist()
        out = [_ldl_solve_one(xp, lf[i], pf[i], bf[i], hermitian) for i in range(bf.shape[0])]
        return xp.reshape(xp.stack(out) if out else bf, b.shape)

    return {
        "ldl_factor": ldl_factor, "ldl_solve": ldl_solve,
        "lu_factor": lu_factor, "lu_permutation": lu_permutation, "solve_triangular": solve_triangular,
        **bind(xp, {"matrix_exp": matrix_exp}), "geqrf": geqrf, "eig": eig,
        "matmul": matmul, "einsum": einsum, "inv": la.inv, "det": la.det, "slogdet": slogdet, "solve": solve,
        "cholesky": cholesky, "qr": qr, "svd": svd, "eigh": eigh, "pinv": pinv, "linear": linear,
    }
