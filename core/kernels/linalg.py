"""Linear-algebra kernels (batched over leading dimensions, as ``xp.linalg`` is)."""
from __future__ import annotations


def kernels(xp) -> dict:
    la = xp.linalg

    def einsum(equation, *operands):
        return xp.einsum(equation, *operands, optimize=len(operands) > 2)

    def slogdet(a):
        sign, logabs = la.slogdet(a)
        return sign, logabs

    def qr(a, mode):
        return tuple(la.qr(a, mode=mode))

    def svd(a, full_matrices):
        return tuple(la.svd(a, full_matrices=full_matrices))

    def eigh(a, uplo):
        w, v = la.eigh(a, UPLO=uplo)
        return w, v

    def cholesky(a, upper):
        lo = la.cholesky(a)
        return xp.swapaxes(lo, -1, -2).copy() if upper else lo

    def solve(a, b):
        return la.solve(a, b)

    def pinv(a, rtol, hermitian):
        return la.pinv(a, rcond=rtol, hermitian=hermitian)

    return {
        "einsum": einsum, "inv": la.inv, "det": la.det, "slogdet": slogdet, "solve": solve,
        "cholesky": cholesky, "qr": qr, "svd": svd, "eigh": eigh, "pinv": pinv,
    }
