"""Op table rows for the special functions and the pointwise ops around them (row format and
checks: :mod:`ember.testing.row`): ``ember.special``, the gamma family and Bessel functions at top
level, ``sgn``/``copysign``/``heaviside``/``gcd``/``frexp``/... and the in-place forms of them all."""
from __future__ import annotations

import numpy as np

from .row import B, F, I, Row, Sampler

_S = Sampler(4321)
r = _S.r
_RNG = _S.rng


def uniform(lo, hi, *shape, grad=True):
    """Float data drawn from ``(lo, hi)``."""
    return F(_RNG.uniform(lo, hi, shape), grad=grad)


def fixed(*values, grad=True):
    return F(np.array(values, dtype=float), grad=grad)


NAN, INF = float("nan"), float("inf")
EDGES = fixed(0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 2.5, -3.5, grad=False)

# --------------------------------------------------------------------------- unary special functions
# name -> (sample builder, with gradient): a function of ember.special, checked on each sample
SPECIAL_UNARY = {
    "gammaln": ([[uniform(0.2, 4, 2, 3)], [uniform(-2.8, -2.2, 3)]], True),
    "digamma": ([[uniform(0.2, 4, 2, 3)], [uniform(-1.8, -1.2, 3)]], True),
    "psi": ([[uniform(0.5, 3, 4)]], True),
    "i0": ([[uniform(-3, 3, 2, 3)], [fixed(0.0, 1.5)]], True),
    "i0e": ([[uniform(-3, 3, 2, 3)]], True),
    "i1": ([[uniform(-3, 3, 2, 3)], [fixed(0.0, 0.5)]], True),
    "i1e": ([[uniform(-3, 3, 2, 3)]], True),
    "sinc": ([[uniform(-2, 2, 2, 3)]], True),
    "entr": ([[uniform(0.1, 2, 2, 3)]], True),
    "erfcx": ([[uniform(-2, 5, 2, 3)]], True),
    "log_ndtr": ([[uniform(-6, 4, 2, 3)]], True),
    "bessel_j0": ([[uniform(-8, 8, 2, 3)]], False),
    "bessel_j1": ([[uniform(-8, 8, 2, 3)]], False),
    "bessel_y0": ([[uniform(0.1, 8, 2, 3)]], False),
    "bessel_y1": ([[uniform(0.1, 8, 2, 3)]], False),
    "modified_bessel_i0": ([[uniform(-4, 4, 2, 3)]], False),
    "modified_bessel_i1": ([[uniform(-4, 4, 2, 3)]], False),
    "modified_bessel_k0": ([[uniform(0.1, 4, 2, 3)]], False),
    "modified_bessel_k1": ([[uniform(0.1, 4, 2, 3)]], False),
    "scaled_modified_bessel_k0": ([[uniform(0.1, 4, 2, 3)]], False),
    "scaled_modified_bessel_k1": ([[uniform(0.1, 4, 2, 3)]], False),
    "spherical_bessel_j0": ([[uniform(-6, 6, 2, 3)], [fixed(0.0, INF, -INF, 0.3)]], False),
    "airy_ai": ([[uniform(-4, 3, 2, 3)]], False),
}

POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")
DEGREES = I(np.array([[-1, 0, 1, 2, 3, 5], [7, 9, 10, 12, 4, 6]]))
POINTS = fixed(-0.95, -0.5, 0.0, 0.3, 0.8, 1.0, grad=False)
WIDE = fixed(-1.0, -2.5, 0.0, 0.5, 1.5, 3.0, grad=False)


def _special(name):
    return lambda m, x: getattr(m.special, name)(x)


def _poly(name):
    return lambda m, x, n: (getattr(m.special, name)(x, n), getattr(m.special, name)(x, 3),
                            getattr(m.special, name)(0.25, n), getattr(m.special, name)(x, 2.7))


SPECIAL_ROWS = (
    # PyTorch's float64 Bessel functions are good to about 1e-6 near their zeros (SciPy's to a few ulp)
    [Row(name, _special(name), samples, grad=grad, rtol=None if grad else 1e-5, atol=None if grad else 1e-6)
     for name, (samples, grad) in SPECIAL_UNARY.items()]
    + [Row(name, _poly(name), [[POINTS, DEGREES], [WIDE, DEGREES]], grad=False)
       for name in POLYNOMIALS]
    + [
        Row("polygamma", lambda m, x: (m.special.polygamma(1, x), m.polygamma(2, x), x.polygamma(3),
                                       m.polygamma(0, x)), [[uniform(0.3, 3, 2, 3)]]),
        Row("multigammaln", lambda m, x: (m.special.multigammaln(x, 1), m.mvlgamma(x, 3), x.mvlgamma(p=2)),
            [[uniform(1.2, 4, 2, 3)]]),
        Row("zeta", lambda m, s, q: (m.special.zeta(s, q), m.special.zeta(s, 2.0), m.special.zeta(3.0, q)),
            [[uniform(1.5, 4, 2, 3, grad=False), uniform(0.5, 3, 3)]]),
        Row("zeta_poles", lambda m, s, q: m.special.zeta(s, q), [[fixed(1.0, 0.5, 2.0, grad=False),
                                                                  fixed(1.0, 1.0, -1.0, grad=False)]], grad=False),
        Row("gammainc", lambda m, a, x: (m.special.gammainc(a, x), m.special.gammaincc(a, x), m.igamma(a, x),
                                         a.igammac(x)), [[uniform(0.5, 3, 2, 3, grad=False), uniform(0.2, 4, 3)]]),
        Row("xlog1py", lambda m, x, y: (m.special.xlog1py(x, y), m.special.xlog1py(x, 2.5), m.special.xlog1py(2, y)),
            [[uniform(-2, 2, 2, 3), uniform(-0.5, 2, 3)], [fixed(0.0, 1.5, -0.5), uniform(0.1, 2, 2, 3)]]),
        Row("xlog1py_edges", lambda m, x, y: m.special.xlog1py(x, y), [[fixed(0.0, 0.0, 1.0, 0.0, grad=False),
                                                                        fixed(-2.0, NAN, -1.0, -1.0, grad=False)]],
            grad=False),
        # at 0: the first derivatives (PyTorch's masked formulas); e^-|x| has a kink there, and PyTorch's
        # sinc gradient is masked to 0 there, so no second derivative is compared
        Row("special_at_zero", lambda m, x: (m.special.i0e(x), m.special.i1e(x), m.special.sinc(x), m.special.i1(x)),
            [[fixed(0.0, -1.5, 0.5)]], gradgrad=False),
        Row("special_edges", lambda m, x: (m.special.entr(x), m.lgamma(x), m.digamma(x), m.special.sinc(x),
                                           m.special.erfcx(x), m.special.log_ndtr(x), m.special.i0e(x)), [[EDGES]],
            grad=False),
    ]
)

# --------------------------------------------------------------------------- pointwise ops at top level
SIGNS = fixed(-1.5, -0.25, 0.5, 2.0, -3.0, 0.75)
POINTWISE_ROWS = [
    Row("lgamma", lambda m, x: (m.lgamma(x), x.lgamma(), m.digamma(x), x.digamma(), m.i0(x), x.i0(), m.sinc(x)),
        [[uniform(0.3, 3, 2, 3)], [r()]]),
    Row("sgn", lambda m, x: (m.sgn(x) * x, x.sgn() * x), [[SIGNS]]),  # PyTorch's zero gradient is a ZeroTensor
    Row("copysign", lambda m, x, y: (m.copysign(x, y), x.copysign(-2), m.copysign(x, 0.0)),
        [[r(2, 3), r(3)], [fixed(-0.5, 1.5, -2.0), fixed(-1.0, -0.5, 3.0)]]),
    Row("copysign_zeros", lambda m, x, y: (m.copysign(x, y), m.copysign(x, -0.0)),
        [[fixed(0.0, -0.0, 1.5, NAN, grad=False), fixed(-1.0, 2.0, -0.0, -1.0, grad=False)]], grad=False),
    Row("heaviside", lambda m, x, v: (m.heaviside(x, v), x.heaviside(v)),
        [[fixed(-1.0, 0.0, 2.0, NAN, -0.0, grad=False), fixed(0.5, grad=False)]], grad=False),
    Row("signbit", lambda m, x: (m.signbit(x), x.signbit()), [[EDGES]], grad=False),
    Row("predicates", lambda m, x: (m.isneginf(x), x.isposinf(), m.isreal(x)), [[EDGES]], grad=False),
    Row("deg2rad", lambda m, x: (m.deg2rad(x * 90), x.rad2deg(), m.rad2deg(x)), [[r(2, 3)]]),
    Row("positive", lambda m, x: (m.positive(x), x.positive() * 2), [[r(2, 3)]]),
    Row("rsub", lambda m, x, y: (m.rsub(x, y), m.rsub(x, y, alpha=2), m.rsub(x, 3)), [[r(2, 3), r(3)]]),
    Row("fmax_fmin", lambda m, x, y: (m.fmax(x, y), m.fmin(x, y), x.fmax(y), x.fmin(y)),
        [[r(2, 3), r(3)], [fixed(1.0, 2.0, -1.0, 0.5), fixed(0.5, 2.5, -3.0, 0.0)]]),
    Row("fmax_nan", lambda m, x, y: (m.fmax(x, y), m.fmin(x, y)),
        [[fixed(NAN, 1.0, NAN, -INF, grad=False), fixed(2.0, NAN, NAN, 1.0, grad=False)]], grad=False),
    Row("frexp", lambda m, x: tuple(m.frexp(x)) + (x.frexp().mantissa,), [[r(2, 3)]]),
    Row("frexp_edges", lambda m, x: tuple(m.frexp(x)), [[EDGES]], grad=False),
    # (PyTorch's gradient for a negative integer exponent is 0: 2 ** -k computed in integers)
    Row("ldexp", lambda m, x, e: (m.ldexp(x, e), x.ldexp(e)), [[r(2, 3), I(np.array([1, 0, 3]))]]),
    Row("ldexp_negative", lambda m, x, e: m.ldexp(x, e), [[r(2, 3, grad=False), I(np.array([-2, 0, -9]))]],
        grad=False),
    Row("float_power", lambda m, x, y: (m.float_power(x.abs() + 0.5, y), m.float_power(x, 2), x.float_power(2),
                                        m.float_power(2, y)), [[r(2, 3), r(3)]]),
    Row("nextafter", lambda m, x, y: (m.nextafter(x, y) - x, x.nextafter(y)), [[r(2, 3), r(3)]], rtol=1e-6,
        atol=1e-30),
]

# integer and bool inputs: PyTorch's result dtypes, compared exactly
IA = I(np.array([[7, -4, 5], [-6, 0, 9]]))
IB = I(np.array([3, -6, 2]))
BA = B(np.array([[True, False, True], [False, False, True]]))
INT_ROWS = [
    Row("int_gcd_lcm", lambda m, x, y: (m.gcd(x, y), x.lcm(y), m.gcd(x, x.new_zeros(())), m.lcm(y, y)), [[IA, IB]],
        grad=False),
    Row("int_to_float", lambda m, x: (m.lgamma(x + 10), m.digamma(x + 10), m.i0(x), m.sinc(x), m.deg2rad(x),
                                      m.special.bessel_j0(x), m.special.entr(x), m.polygamma(1, x + 10),
                                      m.mvlgamma(x + 10, 2), m.special.log_ndtr(x)), [[IA]], grad=False),
    Row("int_binary_to_float", lambda m, x, y: (m.special.xlog1py(x, y + 7), m.special.zeta(x + 10, y + 7),
                                                m.copysign(x, y), m.ldexp(x, y), m.float_power(x, y),
                                                m.special.chebyshev_polynomial_t(x, y), m.rsub(x, y, alpha=2)),
        [[IA, IB]], grad=False),
    Row("int_kept", lambda m, x, y: (m.sgn(x), m.fmax(x, y), m.fmin(x, y), m.heaviside(x, y), m.positive(x),
                                     m.signbit(x), m.isneginf(x), m.isreal(x)), [[IA, IB]], grad=False),
    Row("bool_kept", lambda m, b: (m.sgn(b), m.fmax(b, b), m.heaviside(b, b), m.signbit(b), m.lgamma(b)),
        [[BA]], grad=False),
    Row("int_float_mixed", lambda m, x, y: (m.nextafter(x, y), m.special.gammainc(x, y.abs() + 1),
                                            m.float_power(x, 0.5)), [[IA, uniform(-2, 2, 3, grad=False)]],
        grad=False),
]

# --------------------------------------------------------------------------- in-place forms and out=
def _inplace_unary(m, x):
    names = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "deg2rad", "erf", "erfc", "exp", "exp2",
             "expm1", "fix", "floor", "frac", "i0", "log", "log10", "log1p", "log2", "neg", "negative", "rad2deg",
             "reciprocal", "round", "rsqrt", "sigmoid", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh",
             "trunc", "arccos", "arcsin", "arctan")
    return tuple(getattr(m, n + "_")(x * 1) for n in names)


INPLACE_ROWS = [
    Row("torch_inplace_unary", _inplace_unary, [[uniform(0.2, 0.8, 2, 3)]]),
    # PyTorch has no gradient for in-place atanh_/acosh_/asinh_: compared forward only
    Row("torch_inplace_no_grad", lambda m, x: (m.atanh_(x * 1), m.arctanh_(x * 1), m.acosh_(x + 2), m.arccosh_(x + 2),
                                               m.asinh_(x * 1), m.arcsinh_(x * 1)),
        [[uniform(0.2, 0.8, 2, 3, grad=False)]], grad=False),
    Row("torch_inplace_more", lambda m, x: (m.clamp_(x * 1, 0.3, 0.6),
                                            m.clip_(x * 1, max=0.5), m.clamp_min_(x * 1, 0.4),
                                            m.clamp_max_(x * 1, 0.4), m.logit_(x * 1), m.nan_to_num_(x * 1),
                                            m.xlogy_(x * 1, x + 1), m.ldexp_(x * 1, m.ones_like(x).long())),
        [[uniform(0.2, 0.8, 2, 3)]]),
    Row("tensor_inplace_special", lambda m, x, y: ((x * 1).lgamma_(), (x * 1).digamma_(), (x * 1).polygamma_(1),
                                                   (x + 2).mvlgamma_(2), (x * 1).i0_(), (x * 1).sinc_(),
                                                   (x * 1).sgn_(), (x * 1).copysign_(y - 0.5),
                                                   (x * 1).deg2rad_(), (x * 1).rad2deg_(),
                                                   (x * 1).nextafter_(y), (x * 1).ldexp_(m.ones_like(x).long()),
                                                   (x.double() * 1).float_power_(y)),
        [[uniform(0.2, 3, 2, 3), uniform(0.2, 1, 3)]]),
    Row("tensor_inplace_igamma", lambda m, a, x: ((a * 1).igamma_(x), (a * 1).igammac_(x)),
        [[uniform(0.5, 3, 2, 3, grad=False), uniform(0.2, 3, 3)]]),
    Row("inplace_compare", lambda m, x, y: ((x * 1).eq_(y), (x * 1).ne_(y), (x * 1).lt_(y), (x * 1).le_(y),
                                            (x * 1).gt_(y), (x * 1).ge_(y), (x * 1).greater_(y),
                                            (x * 1).greater_equal_(y), (x * 1).less_(y), (x * 1).less_equal_(y),
                                            (x * 1).not_equal_(y), (x * 1).heaviside_(y)),
        [[fixed(0.5, 1.0, -2.0, grad=False), fixed(0.5, 2.0, -3.0, grad=False)]], grad=False),
    Row("inplace_integer", lambda m, x, y: ((x * 1).gcd_(y), (x * 1).lcm_(y), m.gcd_(x * 1, y), m.lcm_(x * 1, y),
                                            (x * 1).bitwise_left_shift_(y.abs()),
                                            (x * 1).bitwise_right_shift_(y.abs()), (x * 1).eq_(y)),
        [[IA, IB]], grad=False),
    Row("out", lambda m, x, y: (m.lgamma(x, out=m.empty_like(x)), m.special.zeta(x + 1, y, out=m.empty_like(x)),
                                m.special.bessel_j0(x, out=m.empty_like(x)),
                                m.special.chebyshev_polynomial_u(x, 3, out=m.empty_like(x)),
                                m.copysign(x, y, out=m.empty_like(x)), m.fmax(x, y, out=m.empty_like(x)),
                                m.polygamma(1, x, out=m.empty_like(x)),
                                m.float_power(x, 2, out=m.empty_like(x).double()),
                                m.special.gammainc(x, y, out=m.empty_like(x)), m.sinc(x, out=m.empty_like(x)),
                                m.frexp(x, out=(m.empty_like(x), m.empty_like(x, dtype=m.int32)))[1]),
        [[uniform(0.5, 3, 2, 3, grad=False), uniform(0.5, 2, 3, grad=False)]], grad=False),
]

ROWS = SPECIAL_ROWS + POINTWISE_ROWS + INT_ROWS + INPLACE_ROWS
