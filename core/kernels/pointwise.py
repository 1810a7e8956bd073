"""Elementwise kernels: arithmetic, comparisons, math functions, casts, ``where``."""
from __future__ import annotations

import math

from ..dtypes import bfloat16, finfo
from . import special as _special


def _native(xp, name):
    """The array library's own ``name`` (or SciPy's where it accepts this library's arrays), else None."""
    f = getattr(xp, name, None)
    if f is not None:
        return f
    try:
        import scipy.special

        f = getattr(scipy.special, name)
        probe = xp.zeros(1)
        return f if type(f(probe)) is type(probe) else None
    except Exception:  # noqa: BLE001 - SciPy missing, or it rejects this library's arrays
        return None


def fallbacks(xp) -> dict:
    """``erf``, ``erfc`` and ``erfinv`` written with array-API functions only (used where the library has none).

    erf: its Taylor series for |x| <= 2.5 and the continued fraction of erfc beyond (~1e-14).  erfinv: a
    rational first guess (Giles, a few ulp in single precision), in float64 refined by Newton steps on erf,
    or on log(erfc) near +-1 where erf has no digits left (~1e-15 relative, ~1e-9 within 1e-15 of +-1).
    """

    def parts(x):
        a = xp.abs(x)
        s = xp.minimum(a, 2.5)
        s2, term, total = s * s, s, s
        for n in range(1, 45):
            term = -term * s2 / n
            total = total + term / (2 * n + 1)
        b = xp.maximum(a, 2.5)
        t = b
        for n in range(60, 0, -1):
            t = b + (n / 2) / t
        tail = xp.exp(-b * b) / (math.sqrt(math.pi) * t)  # erfc(b)
        return a <= 2.5, total * (2 / math.sqrt(math.pi)), tail

    def erf(x):
        near, series, tail = parts(x)
        return xp.sign(x) * xp.where(near, series, 1 - tail)

    def erfc(x):
        near, series, tail = parts(x)
        return xp.where(near, 1 - xp.sign(x) * series, xp.where(x > 0, tail, 2 - tail))

    def erfinv(y):
        a = xp.abs(y)
        w = -xp.log((1 - a) * (1 + a))
        central, tail = w - 2.5, xp.sqrt(w) - 3
        p, q = xp.zeros_like(a), xp.zeros_like(a)
        for c in _GILES_CENTRAL:
            p = p * central + c
        for c in _GILES_TAIL:
            q = q * tail + c
        x = xp.where(w < 5, p, q) * a
        # Newton steps in float64 (lower precisions keep the first guess, already within a few ulp); near
        # +-1 on log(erfc), close to quadratic in x there
        for _ in range(3 if y.dtype == xp.float64 else 0):
            slope = (2 / math.sqrt(math.pi)) * xp.exp(-x * x)
            c = erfc(x)
            x = xp.where(a < 0.5, x - (erf(x) - a) / slope, x + (xp.log(c) - xp.log(1 - a)) * c / slope)
        x = xp.where(a == 1, xp.asarray(math.inf, dtype=x.dtype), x)
        return xp.sign(y) * x

    from . import _ignoring_fp_errors  # cycle: the package's helper, defined before its modules load
    wrap = _ignoring_fp_errors()
    return {"erf": wrap(erf), "erfc": wrap(erfc), "erfinv": wrap(erfinv)}


def _int_power(xp, x, y):
    """Integer ``x ** y`` for an integer array ``y``, as PyTorch computes it: a negative exponent gives 1 for
    base 1, +-1 for base -1 (by the exponent's parity) and 0 for any other base (NumPy refuses them)."""
    if not hasattr(x, "dtype"):  # a Python base takes the exponent's dtype, as PyTorch's promotion says
        x = xp.asarray(x, dtype=y.dtype)
    neg = y < 0
    r = xp.power(x, xp.where(neg, xp.zeros_like(y), y))
    one, zero = xp.ones_like(r), xp.zeros_like(r)
    odd = (y % 2) != 0
    minus_one = xp.where(odd, zero - one, one)  # (-1) ** y for a negative y
    return xp.where(neg, xp.where(x == 1, one, xp.where(x == -1, minus_one, zero)), r)


def _log_add(xp, exp, log):
    """``log(exp(x) + exp(y))`` for an exp/log pair, without overflow (for libraries without logaddexp)."""

    def kernel(x, y):
        m = xp.maximum(x, y)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))  # infinities on both sides: no inf - inf
        return m + log(exp(x - m) + exp(y - m))

    return kernel


# kernels that meet zeros, negative arguments or overflow on ordinary inputs: NumPy's floating-point error
# reports are off while they run (see ember.kernels.library); the special functions (ember.kernels.special) too.
# Arithmetic and casts overflow to +-inf (and inf - inf is NaN) silently, as in PyTorch; comparisons,
# maximum and minimum report NaN operands in some libraries (ml_dtypes' bfloat16)
QUIET = {"add", "sub", "mul", "add_into", "sub_into", "mul_into", "astype", "clamp", "masked_fill", "gt", "ge",
         "lt", "le", "eq", "ne", "minimum", "maximum", "fmax", "fmin", "where", "nan_to_num", "sin", "cos",
         "div", "div_into", "pow", "sqrt", "rsqrt", "log", "log2", "log10", "log1p", "exp", "exp2", "expm1",
         "reciprocal", "asin", "acos", "atanh", "acosh", "sinh", "cosh", "tan", "xlogy", "fmod", "remainder",
         "floor_divide", "int_div_floor", "div_floor", "int_div_trunc", "erfinv", "logaddexp", "logaddexp2", "hypot",
         "lerp", "nextafter", "frexp", "erfc", "erf", "square", "sign",
         "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p", "tuvw",
         "sinc", "spherical_bessel_j0", "entr", "xlog1py", "lgamma", "digamma", "polygamma", "i0", "i0e", "i1", "i1e",
         "k0", "k1", "k0e", "k1e", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai", "erfcx",
         "log_ndtr", "zeta", "gammainc", "gammaincc", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u",
         "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"}

# computed in float32/float64 by some array libraries: a float16/bfloat16 input's result is rounded back to its
# dtype, as PyTorch's (see ember.kernels.library)
LOW_PRECISION = {"erf", "erfc", "erfinv", "sinc", "lgamma", "deg2rad", "rad2deg", "ldexp", "angle"}

MUTATING = {"add_into": (0,), "sub_into": (0,), "mul_into": (0,), "div_into": (0,)}  # ``x op= y``: into x

# Giles, "Approximating the erfinv function" (GPU Computing Gems), single precision, highest power first
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
               -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def kernels(xp, strategy=None) -> dict:
    def relu(x):
        return xp.maximum(x, 0)

    def relu_backward(g, out):
        # zero where the output is <= 0; a nan output passes its gradient on, as in PyTorch
        zero = xp.zeros((), dtype=g.dtype)
        return xp.where(out <= zero, zero, g)

    def tanh_backward(g, out):  # tanh's gradient from its output, in one kernel call
        return g * (1 - out * out)

    def sigmoid_backward(g, out):
        return g * (out * (1 - out))

    def clamp_backward(g, x, lo, hi):  # g inside [lo, hi], 0 outside (and at NaN)
        return xp.where(xp.logical_and(x >= lo, x <= hi), g, xp.zeros((), dtype=g.dtype))

    def where(cond, x, y):
        return xp.where(cond, x, y)

    uint8, int64 = getattr(xp, "uint8", None), getattr(xp, "int64", None)

    def astype(x, dtype):
        if dtype == uint8 and getattr(x.dtype, "kind", "") in ("f", "c", "V"):  # V: bfloat16
            # through int64, as PyTorch casts floats to uint8: negative values wrap (-1.5 -> 255) on every
            # device, where a direct conversion is undefined and GPUs saturate (-1.5 -> 0)
            return (x.real if x.dtype.kind == "c" else x).astype(int64).astype(dtype)
        return x.astype(dtype)

    expit = _native(xp, "expit")  # SciPy's one-pass logistic function, where it takes this library's arrays
    # cycle: ember.kernels imports this module as it starts up
    from . import quiet
    logistic = quiet(lambda x: 1 / (1 + xp.exp(-x)))  # exp(-x) overflows to inf below -88 (float32): 0, silently

    def sigmoid(x):  # (not in QUIET: SciPy's expit reports no floating-point errors, and the guard costs ~0.4 us)
        if expit is not None and getattr(x.dtype, "char", None) in ("f", "d"):  # (its own float32/64 loops)
            return expit(x)
        return logistic(x)

    def rsqrt(x):
        return 1 / xp.sqrt(x)

    special = {name: _native(xp, name) or fn for name, fn in fallbacks(xp).items()}

    def xlogy(x, y):
        r = x * xp.log(y)
        return xp.where(xp.logical_and(x == 0, y == y), xp.zeros_like(r), r)  # 0 where x == 0, unless y is NaN

    def frac(x):
        return x - xp.trunc(x)

    def clamp(x, lo, hi):
        # clip is one pass (half the time of maximum then minimum on large arrays), but its argument handling costs
        # more than the second pass on small ones; NaN propagates either way; bfloat16's clip widens: cast back
        r = xp.clip(x, lo, hi) if x.size >= 4096 else xp.minimum(xp.maximum(x, lo), hi)
        return r.astype(x.dtype, copy=False)

    def lerp(a, b, w):
        # PyTorch's two-sided formula, from the nearer end: exact at w = 1, and inf - inf (NaN) only on the far side
        if isinstance(w, (int, float, complex)):
            return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1 - w)
        return xp.where(xp.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))

    def fmod(a, b):
        return xp.fmod(a, b)

    def int_div_floor(a, b):
        return xp.floor_divide(a, b)

    def div_floor(a, b):
        # PyTorch's floor division of floating operands (as Python's float //): from fmod, so inf // 3 is NaN,
        # -5 // inf is -1 and 5 // 0.1 is 49; a zero divisor gives the true quotient (+-inf, or NaN at 0 / 0)
        mod = xp.fmod(a, b)
        q = (a - mod) / b
        q = xp.where(xp.logical_and(mod != 0, (b < 0) != (mod < 0)), q - 1, q)
        r = xp.floor(q)
        r = xp.where(q - r > 0.5, r + 1, r)
        r = xp.where(q != 0, r, xp.copysign(xp.zeros_like(r), a / b))
        return xp.where(b == 0, a / b, r)

    def int_div_trunc(a, b):
        q = xp.floor_divide(a, b)
        # floor differs from trunc where the signs differ and there is a remainder
        fix = xp.logical_and(xp.remainder(a, b) != 0, (a < 0) != (b < 0))
        return xp.where(fix, q + 1, q)

    def nan_to_num(x, nan, posinf, neginf):
        if x.dtype.kind == "V":  # ml_dtypes' bfloat16, which NumPy's nan_to_num leaves as it is: in float32
            big = float(finfo(bfloat16).max)
            return xp.nan_to_num(x.astype("float32"), nan=nan, posinf=big if posinf is None else posinf,
                                 neginf=-big if neginf is None else neginf).astype(x.dtype)
        return xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    def masked_fill(x, mask, value):
        return xp.where(mask, xp.asarray(value, dtype=x.dtype), x)

    def heaviside(x, values):
        # PyTorch's rule: ``values`` where x == 0, else x > 0 (so NaN gives 0)
        return xp.where(x == 0, values, xp.where(x > 0, xp.ones_like(x), xp.zeros_like(x)))

    def signbit(x):
        return xp.signbit(x)

    def sign(x):
        if x.dtype.kind == "c":  # PyTorch's sgn: z / |z|, 0 at 0; NaN where its product makes it (at inf)
            r = xp.abs(x)
            r = xp.where(r == 0, xp.ones_like(r), r)
            if x.dtype.itemsize == 8:  # (PyTorch's complex64 kernel takes a complex product, complex128 each part)
                s = x * (1 / r)
            else:
                s = xp.empty_like(x)
                s.real[...], s.imag[...] = x.real / r, x.imag / r
            return xp.where(x == 0, xp.zeros_like(x), s)
        s = xp.sign(x)
        return xp.where(s == s, s, xp.zeros_like(s))  # PyTorch's sign of NaN is 0

    def isneginf(x):
        return xp.logical_and(xp.isinf(x), x < 0)

    def isposinf(x):
        return xp.logical_and(xp.isinf(x), x > 0)

    def frexp(x):
        m, e = xp.frexp(x)
        return m, e.astype(xp.int32)

    signed = tuple(getattr(xp, n) for n in ("int8", "int16", "int32", "int64") if hasattr(xp, n))

    # PyTorch's kernels for a number exponent of 0.5, -0.5 and -1 (not for float16): sqrt, rsqrt and 1 / x, which
    # differ from pow at -inf, -0.0 and on complex input
    by_number = {0.5: xp.sqrt, -0.5: rsqrt, -1: lambda x: 1 / x}
    half = getattr(xp, "float16", None)

    def power(x, y):
        if getattr(y, "dtype", None) in signed:  # (operands promoted: a signed exponent has a signed base)
            return _int_power(xp, x, y)
        if (not hasattr(y, "__len__") and (type(y) in (int, float, complex) or hasattr(x, "__len__"))
                and y in by_number and x.dtype != half and getattr(x.dtype, "kind", "f") in "fcV"):
            return by_number[y](x)  # (an array ** a number: Python's, or a NumPy scalar; an array exits first)
        return xp.power(x, y)

    table = {
        "add": xp.add, "sub": xp.subtract, "mul": xp.multiply, "div": xp.divide, "neg": xp.negative,
        "exp": xp.exp, "log": xp.log, "pow": power, "sqrt": xp.sqrt, "abs": xp.abs, "sign": sign,
        "relu": relu, "relu_backward": relu_backward, "tanh_backward": tanh_backward,
        "sigmoid_backward": sigmoid_backward, "clamp_backward": clamp_backward,
        "gt": xp.greater, "ge": xp.greater_equal, "lt": xp.less, "le": xp.less_equal, "eq": xp.equal,
        "ne": xp.not_equal, "where": where, "astype": astype,
        "tanh": xp.tanh, "sigmoid": sigmoid, "sin": xp.sin, "cos": xp.cos, "tan": xp.tan, "asin": xp.arcsin,
        "acos": xp.arccos, "atan": xp.arctan, "sinh": xp.sinh, "cosh": xp.cosh, "asinh": xp.arcsinh,
        "acosh": xp.arccosh, "atanh": xp.arctanh, "atan2": xp.arctan2, "expm1": xp.expm1, "log1p": xp.log1p,
        "log2": xp.log2, "log10": xp.log10, "rsqrt": rsqrt, "erf": special["erf"], "erfc": special["erfc"],
        "erfinv": special["erfinv"], "xlogy": xlogy, "hypot": xp.hypot,
        "exp2": getattr(xp, "exp2", None) or (lambda v: 2.0 ** v),
        "logaddexp": getattr(xp, "logaddexp", None) or _log_add(xp, xp.exp, xp.log),
        "logaddexp2": getattr(xp, "logaddexp2", None) or _log_add(xp, lambda v: 2.0 ** v, xp.log2),
        "floor": xp.floor, "ceil": xp.ceil,
        "round": xp.round, "trunc": xp.trunc, "frac": frac, "reciprocal": xp.reciprocal, "square": xp.square,
        "add_into": lambda x, y: xp.add(x, y, out=x), "sub_into": lambda x, y: xp.subtract(x, y, out=x),
        "mul_into": lambda x, y: xp.multiply(x, y, out=x), "div_into": lambda x, y: xp.divide(x, y, out=x),
        "clamp": clamp, "lerp": lerp, "fmod": fmod, "remainder": xp.remainder, "floor_divide": xp.floor_divide,
        "int_div_floor": int_div_floor, "div_floor": div_floor, "int_div_trunc": int_div_trunc,
        "minimum": xp.minimum, "maximum": xp.maximum, "nan_to_num": nan_to_num, "masked_fill": masked_fill,
        "isnan": xp.isnan, "isinf": xp.isinf, "isfinite": xp.isfinite, "logical_and": xp.logical_and,
        "logical_or": xp.logical_or, "logical_xor": xp.logical_xor, "logical_not": xp.logical_not,
        "bitwise_and": xp.bitwise_and, "bitwise_or": xp.bitwise_or, "bitwise_xor": xp.bitwise_xor,
        "bitwise_not": xp.invert, "bitwise_left_shift": xp.left_shift, "bitwise_right_shift": xp.right_shift,
        "fmax": xp.fmax, "fmin": xp.fmin, "copysign": xp.copysign, "heaviside": heaviside, "signbit": signbit,
        "isneginf": isneginf, "isposinf": isposinf, "isreal": xp.isreal, "gcd": xp.gcd, "lcm": xp.lcm,
        "frexp": frexp, "nextafter": xp.nextafter, "deg2rad": lambda x: x * (math.pi / 180),
        "rad2deg": lambda x: x * (180 / math.pi),
    }
    table.update(_special.kernels(xp))  # the special functions, kept in their own module for size
    return table
