"""Special functions the distributions need, written as composites of ember ops (so they run on every backend
and differentiate to any order).  They are local to this package: ``lgamma`` and ``digamma`` are defined for
positive arguments, which is all the distributions pass them.
"""
from __future__ import annotations

import math

import ember

# Lanczos approximation, g = 7, nine coefficients: relative error about 1e-15 for x >= 0.5
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def lgamma(x):
    """``log(Gamma(x))`` for ``x > 0``: Lanczos for ``x >= 0.5``, ``lgamma(x + 1) - log(x)`` below."""
    small = x < 0.5
    z = ember.where(small, x + 1, x) - 1
    series = _LANCZOS[0]
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + i)
    t = z + (_LANCZOS_G + 0.5)
    out = _HALF_LOG_2PI + (z + 0.5) * ember.log(t) - t + ember.log(series)
    return out - ember.where(small, ember.log(ember.where(small, x, ember.ones_like(x))), ember.zeros_like(x))


# asymptotic series of digamma: log y - 1/(2y) - sum B_2k / (2k y^2k)
_DIGAMMA_B = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760)
_SHIFT = 8


def digamma(x):
    """``d/dx log(Gamma(x))`` for ``x > 0``: the recurrence up to ``x + 8``, then the asymptotic series."""
    acc = 0
    for k in range(_SHIFT):
        acc = acc + 1 / (x + k)
    y = x + _SHIFT
    inv2 = 1 / (y * y)
    poly = 0
    for c in reversed(_DIGAMMA_B):
        poly = (poly + c) * inv2
    return ember.log(y) - 0.5 / y - poly - acc


def mvlgamma(x, p: int):
    """The multivariate log-gamma function of dimension ``p``."""
    out = p * (p - 1) / 4 * math.log(math.pi)
    for j in range(p):
        out = out + lgamma(x - j / 2)
    return out


def log_beta(a, b):
    """``log(B(a, b))``."""
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def normal_cdf(x):
    return 0.5 * (1 + ember.erf(x * (1 / math.sqrt(2))))


_GAMMAINC_TERMS = 200


def gammainc(a, x):
    """The regularised lower incomplete gamma function ``P(a, x)`` for ``a > 0``, ``x >= 0``: its power
    series where ``x < a + 1``, ``1 - Q`` from Legendre's continued fraction (modified Lentz) elsewhere, each
    with a fixed number of terms so it runs as whole-tensor ops."""
    tiny = 1e-300 if a.dtype == ember.float64 else 1e-30
    use_series = x < a + 1
    xs = ember.where(use_series, x, ember.ones_like(x))
    term = 1 / a
    total = term
    for n in range(1, _GAMMAINC_TERMS):
        term = term * xs / (a + n)
        total = total + term
    series = ember.exp(ember.xlogy(a, xs) - xs - lgamma(a)) * total
    xc = ember.where(use_series, a + 1, x)
    b = xc + 1 - a
    c = ember.full_like(b, 1 / tiny)
    d = 1 / b
    h = d
    for i in range(1, _GAMMAINC_TERMS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = ember.where(d.abs() < tiny, ember.full_like(d, tiny), d)
        c = b + an / c
        c = ember.where(c.abs() < tiny, ember.full_like(c, tiny), c)
        d = 1 / d
        h = h * d * c
    upper = ember.exp(a * ember.log(xc) - xc - lgamma(a)) * h
    return ember.where(use_series, series, 1 - upper)
