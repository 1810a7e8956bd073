"""Special-function kernels: gamma and Bessel families, orthogonal polynomials, and their kin.

Where a function has a short exact formula in array operations (``sinc``, ``entr``, ``xlog1py``,
``spherical_bessel_j0``, the polynomial recurrences) it is written against ``xp`` and runs on every
library.  The rest come from the SciPy-style special-function module that computes on ``xp``'s
arrays: ``scipy.special`` for NumPy (the optional extra ``ember[special]``), ``cupyx.scipy.special``
for CuPy.  Where none does (another array-API library), those kernels raise ``TypeError``, and such a
backend computes them through NumPy as it does any kernel its library lacks.
"""
from __future__ import annotations

import importlib
import math

# the special-function modules that may compute on an array library's own arrays, tried in order
LIBRARIES = ("scipy.special", "cupyx.scipy.special")
EXTRA = 'pip install "ember[special]"'


def _library(xp):
    """``(module, None)`` for the first of :data:`LIBRARIES` that computes on ``xp``'s arrays, else
    ``(None, exception)`` saying why: SciPy missing, or no module for this library."""
    probe = xp.zeros(1)
    found = False
    for name in LIBRARIES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        found = found or name == "scipy.special"
        try:
            if type(mod.gammaln(probe)) is type(probe):
                return mod, None
        except Exception:  # noqa: BLE001,S112 - this module refuses the library's arrays: try the next
            continue
    if not found:
        return None, ImportError(f"this special function needs SciPy, which is not installed: {EXTRA}")
    return None, TypeError(f"no special-function module computes on {getattr(xp, '__name__', xp)} arrays")


def _from(lib, err, name, pick=None):
    """Kernel ``name`` of ``lib`` (its first output with ``pick``), computed in its first argument's dtype."""
    f = getattr(lib, name, None) if lib is not None else None
    if f is None:
        reason = err or TypeError(f"{lib.__name__} has no {name}")

        def missing(*args):
            raise type(reason)(f"{name}: {reason}")

        return missing

    def kernel(x, *args):
        r = f(x, *args) if pick is None else f(x, *args)[pick]
        return r if r.dtype == x.dtype else r.astype(x.dtype)  # float16 has few SciPy loops

    return kernel


def _recurrence(xp, step, first, trig=None, threshold=None):
    """``p(x, n)``: a polynomial family from ``P_0 = 1``, ``P_1 = first(x)`` and
    ``P_{k+1} = step(k, x, P_k, P_{k-1})``; 0 for ``n < 0`` (``n`` truncated toward zero, as PyTorch
    does).  With ``trig``, degrees above ``threshold`` inside ``|x| < 1`` take its closed form, as in
    PyTorch; the recurrence then runs only to the highest degree that still needs it.  A degree outside int64
    (inf, NaN, 1e30) gives 0, as PyTorch's conversion of it to int64 (INT64_MIN on x86) makes it negative."""

    def kernel(x, n):
        n = xp.trunc(n)
        n = xp.where(xp.abs(n) < 2.0 ** 63, n, -xp.ones_like(n))  # (NaN compares false)
        x, n = xp.broadcast_arrays(x, n)
        zero, one = xp.zeros_like(x), xp.ones_like(x)
        closed = None
        need = n
        if trig is not None:
            closed = xp.logical_and(n > threshold, xp.abs(x) < 1)
            need = xp.where(closed, zero, n)
        top = int(xp.max(need)) if need.size else 0
        p, q = one, first(x)
        out = xp.where(n == 0, one, xp.where(n == 1, q, zero))
        for k in range(1, top):  # q = P_k, p = P_{k-1}; loops over degrees, not elements
            p, q = q, step(k, x, q, p)
            out = xp.where(n == k + 1, q, out)
        if closed is not None:
            out = xp.where(closed, trig(x, n), out)
        return xp.where(n < 0, zero, out)

    return kernel


def polynomials(xp) -> dict:
    """The orthogonal polynomial families of ``torch.special`` as ``kernel(x, n)``."""

    def cheb_step(k, x, q, p):
        return (x + x) * q - p

    acos = getattr(xp, "acos", None) or xp.arccos

    def t_closed(x, n):
        return xp.cos(n * acos(x))

    def u_closed(x, n):
        a = acos(x)
        return xp.sin((n + 1) * a) / xp.sin(a)

    def v_closed(x, n):
        a = acos(x)
        return xp.cos((n + 0.5) * a) / xp.cos(a / 2)

    def w_closed(x, n):
        a = acos(x)
        return xp.sin((n + 0.5) * a) / xp.sin(a / 2)

    table = {
        "chebyshev_polynomial_t": _recurrence(xp, cheb_step, lambda x: x, t_closed, 6),
        "chebyshev_polynomial_u": _recurrence(xp, cheb_step, lambda x: x + x, u_closed, 8),
        "chebyshev_polynomial_v": _recurrence(xp, cheb_step, lambda x: x + x - 1, v_closed, 8),
        "chebyshev_polynomial_w": _recurrence(xp, cheb_step, lambda x: x + x + 1, w_closed, 8),
        "hermite_polynomial_h": _recurrence(xp, lambda k, x, q, p: (x + x) * q - (2 * k) * p, lambda x: x + x),
        "hermite_polynomial_he": _recurrence(xp, lambda k, x, q, p: x * q - k * p, lambda x: x),
        "laguerre_polynomial_l": _recurrence(xp, lambda k, x, q, p: ((2 * k + 1 - x) * q - k * p) / (k + 1),
                                             lambda x: 1 - x),
        "legendre_polynomial_p": _recurrence(xp, lambda k, x, q, p: ((2 * k + 1) * x * q - k * p) / (k + 1),
                                             lambda x: x),
    }
    for kind in "tuvw":  # the shifted families: the same polynomials of 2x - 1
        base = table[f"chebyshev_polynomial_{kind}"]
        table[f"shifted_chebyshev_polynomial_{kind}"] = (lambda f: lambda x, n: f(x + x - 1, n))(base)
    return table


def kernels(xp) -> dict:
    lib, err = _library(xp)

    def sci(name, pick=None):
        return _from(lib, err, name, pick)

    pi = math.pi

    def sinc(x):
        safe = xp.where(x == 0, xp.ones_like(x), x)
        return xp.where(x == 0, xp.ones_like(x), xp.sin(pi * safe) / (pi * safe))

    def spherical_bessel_j0(x):
        safe = xp.where(xp.logical_or(x == 0, xp.isinf(x)), xp.ones_like(x), x)
        r = xp.where(x == 0, xp.ones_like(x), xp.sin(safe) / safe)
        return xp.where(xp.isinf(x), xp.zeros_like(x), r)

    def entr(x):
        safe = xp.where(x > 0, x, xp.ones_like(x))
        r = xp.where(x < 0, xp.full_like(x, -math.inf), -safe * xp.log(safe))
        return xp.where(x == x, r, x)  # NaN stays NaN

    def xlog1py(x, y):
        r = x * xp.log1p(y)
        return xp.where(xp.logical_and(x == 0, y == y), xp.zeros_like(r), r)  # 0 where x == 0, unless y is NaN

    of_order = sci("polygamma")

    def polygamma(x, n):  # SciPy's argument order is (n, x)
        r = of_order(xp.full_like(x, n), x) if lib is not None else of_order(x, n)
        # PyTorch's: order 2 and up is n! zeta(n + 1, x), NaN at x = inf as its zeta; trigamma's reflection step
        # takes sin(pi x), NaN at x = -inf
        nan_at = math.inf if n >= 2 else -math.inf if n == 1 else None
        return r if nan_at is None else xp.where(x == nan_at, xp.full_like(r, math.nan), r)

    gammaln = sci("gammaln")

    def lgamma(x):
        r = gammaln(x)
        return xp.where(x == -math.inf, xp.full_like(r, math.inf), r)  # log|Gamma(-inf)| = inf, as in PyTorch

    hurwitz = sci("zeta")

    def zeta(x, q):
        r = hurwitz(x, q)
        # PyTorch's series is NaN at q = inf (after its pole at x = 1)
        return xp.where(xp.logical_and(q == math.inf, x != 1), xp.full_like(r, math.nan), r)

    table = {
        "sinc": sinc, "spherical_bessel_j0": spherical_bessel_j0, "entr": entr, "xlog1py": xlog1py,
        "lgamma": lgamma, "digamma": sci("psi"), "polygamma": polygamma,
        "i0": sci("i0"), "i0e": sci("i0e"), "i1": sci("i1"), "i1e": sci("i1e"),
        "k0": sci("k0"), "k1": sci("k1"), "k0e": sci("k0e"), "k1e": sci("k1e"),
        "bessel_j0": sci("j0"), "bessel_j1": sci("j1"), "bessel_y0": sci("y0"), "bessel_y1": sci("y1"),
        "airy_ai": sci("airy", pick=0), "erfcx": sci("erfcx"), "log_ndtr": sci("log_ndtr"),
        "zeta": zeta, "gammainc": sci("gammainc"), "gammaincc": sci("gammaincc"),
    }
    table.update(polynomials(xp))
    return table
