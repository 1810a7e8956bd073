"""Classes of disagreement with PyTorch left open by the differential fuzzer's runs (:mod:`ember.testing.fuzz`),
each swept over its ops, forms and dtypes against PyTorch 2.13: the same calls compute the same values and
gradients, and the same ones raise the same exception class."""
# ruff: noqa: B023 - each case's lambdas are called at once, inside the loop iteration that makes them
import itertools

import numpy as np
import pytest

import ember
from test_fuzz_classes import _have, _outcome

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")


def _same(got, want):
    """Equal arrays, NaN matching NaN (and the sign of an infinity or a zero's 0 compared as values)."""
    got, want = np.asarray(got, dtype=np.complex128), np.asarray(want, dtype=np.complex128)
    return got.shape == want.shape and all(np.allclose(g, w, rtol=1e-3, atol=1e-6, equal_nan=True)
                                           for g, w in ((got.real, want.real), (got.imag, want.imag)))


def _agree(got, want):
    """Nested results alike: tuples item by item, numbers and lists of them by :func:`_same`, the rest equal."""
    if isinstance(got, tuple) and isinstance(want, tuple):
        return len(got) == len(want) and all(_agree(g, w) for g, w in zip(got, want))
    numbers = (int, float, complex, list)
    if isinstance(got, numbers) and isinstance(want, numbers) and not isinstance(got, bool) | isinstance(want, bool):
        return _same(got, want)
    return got == want


def _check(cases, fn, device):
    """``fn(ember, *case, device)`` against ``fn(torch, *case)`` for every case: the same exception class or alike
    results (the assertion counts the cases that differ)."""
    bad = []
    for c in cases:
        got, want = _outcome(lambda: fn(ember, *c, device)), _outcome(lambda: fn(torch, *c))
        if not _agree(got, want):
            bad.append((c, got, want))
    assert not bad, (f"{len(bad)} of {len(cases)} cases differ", bad[:3])


# --------------------------------------------------------------------------- maximum/minimum gradients at NaN and inf
PAIRS = [(NAN, 1.0), (1.0, NAN), (NAN, NAN), (INF, 1.0), (1.0, INF), (INF, INF), (-INF, 2.0), (2.0, 2.0),
         (3.0, -1.0), (-INF, -INF)]


def _pick_grads(m, name, form, dtype, g, device=None):
    a, b = (m.tensor([p[k] for p in PAIRS], dtype=getattr(m, dtype)) for k in (0, 1))
    if device is not None:
        a, b = a.to(device), b.to(device)
    a.requires_grad_(True)
    b.requires_grad_(True)
    f = {"function": lambda: getattr(m, name)(a, b), "method": lambda: getattr(a, name)(b),
         "broadcast": lambda: getattr(m, name)(a[:, None], b[None, :2]).sum(1)}[form]
    out = f()
    out.backward(m.full(out.shape, g, dtype=out.dtype, device=out.device))
    return out.float().tolist(), a.grad.float().tolist(), b.grad.float().tolist()


def test_maximum_minimum_gradients_at_nan_and_inf_as_pytorch(device):
    """maximum and minimum give the incoming gradient to each operand that does not lose (both, where one is NaN),
    half of it to each at a tie, and exact zeros to the loser, also where the incoming gradient is inf (PyTorch's
    formula).  Before: ember gave a NaN operand's partner all of it and the NaN operand none, and took ``g * 0``
    (NaN at an infinite ``g``)."""
    cases = list(itertools.product(("maximum", "minimum"), ("function", "method", "broadcast"),
                                   _have(device, ("float32", "float64", "bfloat16")), (1.5, INF)))
    _check(cases, _pick_grads, device)


# --------------------------------------------------------------------------- polynomials of degrees outside int64
POLYNOMIALS = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p")
DEGREES = {"tensor": [NAN, INF, -INF, 1e30, 4.0, -2.0], "nan": NAN, "inf": INF, "huge": 1e25}


def _polynomial(m, name, degrees, dtype, device=None):
    x = m.tensor([0.5, 2.0, -3.0, 1.0, -0.25, 0.75], dtype=getattr(m, dtype))
    n = DEGREES[degrees]
    n = m.tensor(n, dtype=getattr(m, dtype)) if isinstance(n, list) else n
    if device is not None:
        x, n = x.to(device), n.to(device) if isinstance(n, ember.Tensor) else n
    return getattr(m.special, name)(x, n).tolist()


def test_polynomials_of_degrees_outside_int64_as_pytorch(device):
    """A degree that is NaN, infinite or beyond int64 gives 0, as PyTorch's conversion of it to int64 (INT64_MIN
    on x86) makes it negative.  Before: all 96 cases differed: ember refused a NaN or infinite degree (converting
    it to an integer) and ran its recurrence up to a huge one (1e25 steps).  (The value at
    a NaN point is a listed difference: PyTorch's is uninitialised memory, different on each run.)"""
    cases = list(itertools.product(POLYNOMIALS, DEGREES, _have(device, ("float32", "float64"))))
    _check(cases, _polynomial, device)


# --------------------------------------------------------------------------- pow with a bool or special exponent
POW_FORMS = {"pow": lambda m, x, e: m.pow(x, e), "method": lambda m, x, e: x.pow(e), "operator": lambda m, x, e: x ** e,
             "inplace": lambda m, x, e: (x * 1).pow_(e), "float_power": lambda m, x, e: m.float_power(x, e)}
POW_BASES = {"real": [1.5, -2.0, 0.0, INF, NAN, 0.5, -INF, -0.0], "int": [1, -2, 0, 3, 4, 5, 6, 7],
             "complex": [-4.0, complex(-INF, 1.0), complex(1.0, INF), -0.0, complex(-1.0, -0.0), complex(NAN, 1.0),
                         complex(-INF, 0.0), 2.5j]}


def _power(m, form, exponent, dtype, device=None):
    kind = "complex" if dtype.startswith("complex") else "real" if "float" in dtype else "int"
    x = m.tensor(POW_BASES[kind], dtype=getattr(m, dtype))
    e = {"bool0d": m.tensor(False), "bool": m.tensor([True, False, False, True, False, True, True, False])}.get(
        exponent, exponent)
    if device is not None:
        x, e = x.to(device), e.to(device) if isinstance(e, ember.Tensor) else e
    grad = kind == "real" and not isinstance(e, ember.Tensor) and not hasattr(e, "dtype")
    x.requires_grad_(grad)
    y = POW_FORMS[form](m, x, e)
    if grad:  # (a bool tensor exponent: PyTorch's backward raises; a listed difference)
        y.backward(m.tensor([1.0, 2.0, INF, 3.0, 4.0, 5.0, -1.0, 2.0], dtype=y.dtype, device=y.device))
    return str(y.dtype).split(".")[-1], y.tolist(), x.grad.tolist() if grad else None


def _power_cases(device, exponents, dtypes):
    return list(itertools.product(POW_FORMS, exponents, _have(device, dtypes)))


def test_pow_with_a_bool_exponent_as_pytorch(device):
    """A bool exponent: values, dtypes and the base's gradient as PyTorch's.  PyTorch's Scalar False is not equal
    to 0, so ``x ** False`` takes the power formula (0 * x ** -1: NaN at x == 0 and at NaN) where a numeric 0
    exponent gives zeros.  Before: ember took False as 0 (12 of the 80 cases differed)."""
    _check(_power_cases(device, (True, False, "bool0d", "bool"), ("float32", "float64", "bfloat16", "int64")),
           _power, device)


def test_pow_with_exponent_one_half_or_minus_one_as_pytorch(device):
    """A number exponent of 0.5, -0.5 or -1 runs PyTorch's sqrt, rsqrt and reciprocal kernels (except for float16),
    which differ from pow at -inf, at -0.0 and on complex input (``(-4+0j) ** 0.5`` is exactly 2j); the power
    formula's gradient meets them too (``x ** 1.5`` takes ``x ** 0.5``).  Before: 66 of the 150 cases differed."""
    _check(_power_cases(device, (0.5, -0.5, -1, 1.5, 2),
                        ("float32", "float64", "bfloat16", "float16", "complex64", "complex128")), _power, device)


# --------------------------------------------------------------------------- in-place ops: the cast check first
INPLACE_BINARY = ("copysign_", "atan2_", "fmod_", "remainder_", "hypot_", "xlogy_", "nextafter_", "heaviside_",
                  "igamma_", "floor_divide_", "gcd_", "bitwise_and_", "pow_", "mul_", "ldexp_")
INPLACE_OPERANDS = [("float32", "complex64"), ("int64", "float32"), ("int64", 1.5), ("float32", 2j),
                    ("bool", "float32"), ("int32", "complex64"), ("float64", "int64")]


def _inplace_cast(m, name, self_dtype, other, device=None):
    x = m.tensor([1.0, -2.0, 3.0]).to(getattr(m, self_dtype))
    y = m.tensor([0.5, 2.0, -1.0]).to(getattr(m, other)) if isinstance(other, str) else other
    if device is not None:
        x, y = x.to(device), y.to(device) if isinstance(y, ember.Tensor) else y
    r = getattr(x, name)(y)
    return str(r.dtype).split(".")[-1], r.tolist()


def test_inplace_ops_check_the_cast_before_the_kernel_dtype_as_pytorch(device):
    """An in-place op whose result type cannot be cast into ``self`` and whose kernel has no code for the operands
    (``real.copysign_(complex)``) raises PyTorch's cast RuntimeError: TensorIterator checks the cast before the
    kernel runs.  Before: 33 of the 105 cases raised the kernel's NotImplementedError."""
    cases = [(name, *pair) for name, pair in itertools.product(INPLACE_BINARY, INPLACE_OPERANDS)]
    _check(cases, _inplace_cast, device)


# --------------------------------------------------------------------------- complex gradients at infinite parts
COMPLEX_UNARY = {"square": lambda m, z: z.square(), "pow2": lambda m, z: m.pow(z, 2), "operator": lambda m, z: z ** 2,
                 "square_": lambda m, z: (z * 1).square_(),
                 "sqrt": lambda m, z: z.sqrt(), "pow_half": lambda m, z: z ** 0.5}
COMPLEX_POINTS = [(INF, 1.0), (1.0, INF), (-INF, 2.0), (2.0, -INF), (INF, INF), (1.5, -0.5)]


def _complex_grad(m, name, dtype, device=None):
    re, im = (m.tensor([p[k] for p in COMPLEX_POINTS], dtype=getattr(m, dtype)) for k in (0, 1))
    if device is not None:
        re, im = re.to(device), im.to(device)
    re.requires_grad_(True)
    im.requires_grad_(True)
    out = m.view_as_real(COMPLEX_UNARY[name](m, m.complex(re, im)))
    out.backward(m.tensor([[1.0, 0.5]] * len(COMPLEX_POINTS), dtype=out.dtype, device=out.device))
    return out.tolist(), re.grad.tolist(), im.grad.tolist()


def test_complex_gradients_at_infinite_parts_as_pytorch(device):
    """Gradients of complex squares and powers where a part is infinite: PyTorch's formula ``g * conj(2 * z)``
    multiplies ``2 * z`` first, a complex product whose other part is NaN (ember took ``2 * g`` first).  Before: 2
    of the 12 cases differed."""
    cases = list(itertools.product(COMPLEX_UNARY, _have(device, ("float32", "float64"))))
    _check(cases, _complex_grad, device)


# --------------------------------------------------------------------------- empty complex views and their gradients
EMPTY_COMPLEX = {"view_as_complex": lambda m, x, y: m.view_as_complex(x),
                 "view_as_complex_copy": lambda m, x, y: m.view_as_complex_copy(x),
                 "complex_grad": lambda m, x, y: m.view_as_real(m.complex(x[..., 0], y)),
                 "polar_grad": lambda m, x, y: m.view_as_real(m.polar(x[..., 0], y)),
                 "real_grad": lambda m, x, y: m.view_as_real(x[..., 0].to(m.complex64) * 1j).real,
                 "conj_grad": lambda m, x, y: m.view_as_real(m.complex(x[..., 0], y).conj() * 2)}
EMPTY_SHAPES = [(0, 2), (0, 3, 2), (2, 0, 2), (3, 2)]


def _empty_complex(m, name, shape, device=None):
    x = m.zeros(shape)
    y = m.zeros(()) if name != "polar_grad" else m.ones(())
    if device is not None:
        x, y = x.to(device), y.to(device)
    grad = name.endswith("_grad")
    x.requires_grad_(grad)
    y.requires_grad_(grad)
    out = EMPTY_COMPLEX[name](m, x, y)
    if grad:
        out.backward(m.ones(out.shape, device=out.device))
    return tuple(out.shape), (tuple(x.grad.shape), y.grad.tolist()) if grad else None


def test_empty_complex_views_and_gradients_as_pytorch(device):
    """``view_as_complex`` of an empty tensor (NumPy gives it strides of 0, which failed the stride-1 check) and the
    gradients that pass through it (``complex``, ``polar``, ``real`` and ``conj`` of empty input).  Before: 18 of
    the 24 cases differed."""
    cases = list(itertools.product(EMPTY_COMPLEX, EMPTY_SHAPES))
    _check(cases, _empty_complex, device)


# --------------------------------------------------------------------------- Hermitian LDL of complex input
def _hermitian_matrices(kind, n, seed):
    rng = np.random.RandomState(seed)
    a = rng.randn(2, n, n) + 1j * rng.randn(2, n, n)
    a = a + a.conj().swapaxes(-1, -2)
    if kind == "small_pivot":  # 2x2 blocks: a tiny diagonal beside large off-diagonal entries
        a[:, np.arange(n), np.arange(n)] *= 1e-3
    elif kind == "singular":
        a[:, :, 0] = a[:, 0, :] = 0
    return a


def _ldl(m, kind, n, dtype, hermitian, device=None):
    a = m.tensor(_hermitian_matrices(kind, n, n)).to(getattr(m, dtype))
    b = m.tensor(np.random.RandomState(1).randn(2, n, 2) + 0j).to(a.dtype)
    if device is not None:
        a, b = a.to(device), b.to(device)
    ld, piv, info = m.linalg.ldl_factor_ex(a, hermitian=hermitian)
    x = m.linalg.ldl_solve(ld, piv, b, hermitian=hermitian)
    return ld.tolist(), piv.tolist(), info.tolist(), x.tolist() if not info.any() else None


def test_hermitian_ldl_of_complex_input_as_pytorch(device):
    """``ldl_factor(_ex)`` and ``ldl_solve`` with ``hermitian=True`` compute complex input as LAPACK's zhetrf and
    zhetrs (a real diagonal, conjugates in the interchanges and updates): the same factors, pivots, info and
    solutions as PyTorch's, and complex symmetric input (``hermitian=False``) keeps its own.  Before: the 18
    Hermitian cases were refused (18 of 36 differed)."""
    cases = list(itertools.product(("plain", "small_pivot", "singular"), (1, 4, 6),
                                   _have(device, ("complex64", "complex128")), (True, False)))
    _check(cases, _ldl, device)


# --------------------------------------------------------------------------- lobpcg of other dtypes than float32/64
def _lobpcg(m, dtype, largest, device=None):
    a = m.tensor(np.diag(np.arange(1.0, 9.0)) + 0.1).to(getattr(m, dtype))
    if device is not None:
        a = a.to(device)
    e, _ = m.lobpcg(a, k=1, largest=largest, niter=200, tol=1e-10)
    return round(float(e[0]), 3)


def test_lobpcg_refuses_other_dtypes_as_pytorch(device):
    """lobpcg computes float32 and float64 input and refuses complex, integer and bfloat16 input with PyTorch's
    RuntimeError (ember raised TypeError; float16's KeyError in PyTorch is a listed difference).  Before: 8 of the
    12 cases differed."""
    cases = list(itertools.product(_have(device, ("float32", "float64", "complex64", "complex128", "int64",
                                                  "bfloat16")), (True, False)))
    _check(cases, _lobpcg, device)


# --------------------------------------------------------------------------- cond of empty input
COND_ORDERS = (None, "fro", "nuc", INF, -INF, 1, -1, 2, -2, 3)


def _empty_cond(m, dtype, shape, p, device=None):
    a = m.zeros(shape, dtype=getattr(m, dtype))
    if device is not None:
        a = a.to(device)
    r = m.linalg.cond(a, p)
    return str(r.dtype).split(".")[-1], tuple(r.shape), r.tolist()


def test_cond_of_empty_input_as_pytorch(device):
    """``linalg.cond`` of an empty batch or of 0x0 matrices is PyTorch's zeros of the input's real dtype (any
    dtype, bool and integers too), returned after the order's check and, for a string order, the square check.
    Before: 164 of the 240 cases differed."""
    cases = list(itertools.product(_have(device, ("bool", "int64", "float16", "float32", "complex64", "bfloat16")),
                                   ((0, 2, 2), (2, 0, 0), (0, 2, 3), (3, 0, 2)), COND_ORDERS))
    _check(cases, _empty_cond, device)


# --------------------------------------------------------------------------- classes of seeds 12-14
def _int_division(m, op, dividend, divisor, device=None):
    x = m.zeros(dividend, dtype=m.int64)
    y = m.tensor(divisor, dtype=m.int32) if isinstance(divisor, list) else divisor
    if device is not None:
        x, y = x.to(device), y.to(device) if isinstance(y, ember.Tensor) else y
    kw = {"rounding_mode": "floor"} if op == "div" else {}
    return tuple(getattr(m, op)(x, y, **kw).shape)


def test_integer_division_of_empty_input_as_pytorch(device):
    """Integer division by a divisor holding 0 raises PyTorch's RuntimeError only where an element is divided: an
    empty dividend (an empty result) computes.  Before: 8 of the 16 cases differed."""
    cases = list(itertools.product(("remainder", "fmod", "floor_divide", "div"), ((0, 3), (2, 3)),
                                   ([0, 1, 2], 0)))
    _check(cases, _int_division, device)


def _cross(m, a, b, form, device=None):
    x, y = m.ones(2, 3, dtype=getattr(m, a)), m.ones(2, 3, dtype=getattr(m, b))
    if device is not None:
        x, y = x.to(device), y.to(device)
    r = m.cross(x, y, dim=1) if form == "cross" else m.linalg.cross(x, y)
    return str(r.dtype).split(".")[-1], r.tolist()


def test_cross_of_two_dtypes_as_pytorch(device):
    """cross and linalg.cross refuse operands of two dtypes with PyTorch's RuntimeError (ember promoted them).
    Before: 6 of the 12 cases differed."""
    pairs = [("float32", "float64"), ("int64", "float32"), ("float64", "complex64"), ("float32", "float32"),
             ("float64", "float64"), ("int64", "int64")]
    cases = [(a, b, form) for (a, b), form in itertools.product(pairs, ("cross", "linalg"))]
    _check(cases, _cross, device)


def _interpolate(m, ndim, mode, size, device=None):
    x = m.ones((2,) * ndim)
    if device is not None:
        x = x.to(device)
    kw = {"size": 4} if size == "size" else {"scale_factor": 2} if size == "scale" else {}
    return tuple(m.nn.functional.interpolate(x, mode=mode, **kw).shape)


def test_interpolate_of_unbatched_input_as_pytorch(device):
    """interpolate of a 0-d, 1-d or 2-d input raises PyTorch's NotImplementedError ("Only 3D, 4D and 5D input
    Tensors supported"), after its check that one of size and scale_factor is given (ValueError); ember raised
    ValueError for both.  Before: 18 of the 36 cases differed."""
    cases = list(itertools.product((0, 1, 2, 3), ("nearest", "linear", "bilinear"), ("size", "scale", "neither")))
    _check(cases, _interpolate, device)


# --------------------------------------------------------------------------- cumprod gradients at zeros, inf, complex
CUMPROD_VALUES = [0.0, INF, -INF, NAN, 2.0, -0.5, 3.0]


def _cumprod_grad(m, shape, dim, dtype, seed, device=None):
    rng = np.random.RandomState(seed)
    data = rng.choice(CUMPROD_VALUES, shape)
    if dtype.startswith("complex"):  # (finite complex entries, some zero)
        data = rng.randn(*shape) + 1j * rng.randn(*shape)
        data[rng.rand(*shape) < 0.3] = 0
    x = m.tensor(data).to(getattr(m, dtype))
    g = m.tensor(rng.randn(*shape)).to(x.dtype)
    if device is not None:
        x, g = x.to(device), g.to(device)
    x.requires_grad_(True)
    (x.cumprod(dim) if seed % 2 else m.cumprod(x, dim=dim)).backward(g)
    return x.grad.tolist()


def test_cumprod_gradients_as_pytorch(device):
    """cumprod's gradient: an input holding zeros takes PyTorch's first-order algorithm (the reversed cumulative sum
    before the first zero, the products up to the second zero at it, 0 after), which fixes where inf and NaN
    entries land; complex input takes the conjugate products.  Before: 90 of the 96 cases differed (every complex
    gradient was the unconjugated one)."""
    cases = list(itertools.product((((5,), 0), ((4, 3), 0), ((3, 4), 1), ((2, 3, 4), -1)),
                                   _have(device, ("float32", "float64", "complex64", "complex128")), range(6)))
    cases = [(shape, dim, dtype, seed) for (shape, dim), dtype, seed in cases]
    _check(cases, _cumprod_grad, device)


# --------------------------------------------------------------------------- zeta at infinities
ZETA_POINTS = [INF, -INF, NAN, 0.0, 1.0, 2.0, -1.5, 0.5, 3.0]


def _zeta(m, dtype, form, device=None):
    x, q = (m.tensor(v, dtype=getattr(m, dtype)) for v in zip(*itertools.product(ZETA_POINTS, ZETA_POINTS)))
    if device is not None:
        x, q = x.to(device), q.to(device)
    return (m.special.zeta(x, q) if form == "tensor" else m.special.zeta(x, INF)).tolist()


def test_zeta_at_infinities_as_pytorch(device):
    """The Hurwitz zeta function at q = inf is NaN as PyTorch's series gives it (SciPy's limit is 0), except at
    its pole x = 1 (inf); the other infinities and NaN agree.  Before: 4 of the 4 cases differed."""
    _check(list(itertools.product(_have(device, ("float32", "float64")), ("tensor", "number"))), _zeta, device)
