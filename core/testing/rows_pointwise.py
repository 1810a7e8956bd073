"""Op table: pointwise ops: unary functions, arithmetic and comparisons with broadcasting, their integer and
bool forms under PyTorch's promotion and sign rules, and NumPy scalars as operands.  Row format and checks:
:mod:`ember.testing.row`."""
from __future__ import annotations

import numpy as np

from .row import B, F, I, Row, Sampler, distinct

r = Sampler(1234).r


def pos(*shape, nc=False):
    """Strictly positive data (domains of log, sqrt, ...)."""
    return r(*shape, nc=nc, positive=True)


def unit(*shape):
    """Data inside (-0.9, 0.9) (domains of asin, atanh, ...)."""
    return F(np.random.RandomState(7).uniform(-0.9, 0.9, shape))


def big(*shape):
    return F(np.random.RandomState(8).uniform(1.2, 3.0, shape))


def prob(*shape):
    """Data inside (0.05, 0.95) (the domain of logit)."""
    return F(np.random.RandomState(10).uniform(0.05, 0.95, shape))


UNARY = ["tanh", "sigmoid", "sin", "cos", "atan", "sinh", "cosh", "asinh", "expm1", "erf", "erfc", "exp", "neg",
         "abs", "square"]
UNARY_POS = ["log", "log1p", "log2", "log10", "sqrt", "rsqrt", "reciprocal"]
UNARY_UNIT = ["asin", "acos", "atanh", "tan", "erfinv"]

POINTWISE_ROWS = (
    [Row(n, (lambda name: lambda m, x: getattr(m, name)(x))(n), [[r(2, 3)], [r(2, 3, nc=True)], [r()], [r(0, 2)]])
     for n in UNARY]
    + [Row(n, (lambda name: lambda m, x: getattr(x, name)())(n), [[pos(2, 3)], [pos(3, nc=False)]]) for n in UNARY_POS]
    + [Row(n, (lambda name: lambda m, x: getattr(m, name)(x))(n), [[unit(2, 3)]]) for n in UNARY_UNIT]
    + [Row("acosh", lambda m, x: m.acosh(x), [[big(2, 3)]])]
    + [Row("exp2", lambda m, x: (m.exp2(x), x.exp2(), (x * 1).exp2_()), [[r(2, 3)], [r()], [r(0, 2)]])]
    + [Row(n, (lambda name: lambda m, x: getattr(m, name)(x))(n), [[r(2, 3)]], ints=True, gradgrad=False)
       for n in ("floor", "ceil", "round", "trunc")]
    + [Row("frac", lambda m, x: m.frac(x), [[r(2, 3)]], gradgrad=False)]
    # data on a grid of 1/50, well inside the steps of both roundings (random data can fall within gradcheck's
    # step of a rounding boundary)
    + [Row("round_decimals", lambda m, x: (m.round(x * 50, decimals=2), (x * 500).round(decimals=-1)),
           [[F(np.array([[-20.0, -7.0, 3.0], [11.0, 17.0, 24.0]]) / 50)]], gradgrad=False)]
    + [
        Row("add", lambda m, x, y: x + y, [[r(2, 3), r(3)], [r(2, 1), r(1, 4)], [r(2, 3, nc=True), r(2, 3)]],
            ints=True),
        Row("add_alpha", lambda m, x, y: m.add(x, y, alpha=2.5), [[r(2, 3), r(2, 3)]]),
        Row("sub", lambda m, x, y: x - y, [[r(2, 3), r(3)]], ints=True),
        Row("rsub_scalar", lambda m, x: 2.0 - x, [[r(2, 3)]]),
        Row("mul", lambda m, x, y: x * y, [[r(2, 3), r(2, 1)], [r(), r(2)]], ints=True),
        Row("div", lambda m, x, y: x / y, [[r(2, 3), pos(3)]]),
        Row("div_scalar", lambda m, x: 1.5 / x, [[pos(2, 3)]]),
        Row("div_floor", lambda m, x, y: m.div(x, y, rounding_mode="floor"), [[r(2, 3), pos(3)]], gradgrad=False),
        Row("div_trunc", lambda m, x, y: m.div(x, y, rounding_mode="trunc"), [[r(2, 3), pos(3)]], gradgrad=False),
        Row("pow", lambda m, x, y: x ** y, [[pos(2, 3), r(2, 3)]]),
        Row("pow_scalar", lambda m, x: x ** 3, [[r(2, 3)]]),
        Row("rpow", lambda m, x: 2 ** x, [[r(2, 3)]]),
        Row("atan2", lambda m, x, y: m.atan2(x, y), [[r(2, 3), pos(2, 3)]]),
        Row("maximum", lambda m, x, y: m.maximum(x, y), [[distinct(2, 3), r(2, 3)]]),
        Row("minimum", lambda m, x, y: m.minimum(x, y), [[distinct(2, 3), r(3)]]),
        Row("clamp", lambda m, x: m.clamp(x, -0.2, 0.3), [[distinct(2, 3)]]),
        Row("clamp_min", lambda m, x: x.clamp(min=0.1), [[distinct(2, 3)]]),
        Row("clamp_tensor", lambda m, x, lo, hi: x.clamp(lo, hi),
            [[distinct(2, 3), F(np.full(3, -0.1)), F(np.full((2, 1), 0.4))]]),
        Row("lerp", lambda m, x, y: m.lerp(x, y, 0.3), [[r(2, 3), r(2, 3)]]),
        Row("lerp_tensor", lambda m, x, y, w: m.lerp(x, y, w), [[r(2, 3), r(2, 3), r(2, 3)]]),
        Row("fmod", lambda m, x: m.fmod(x, 0.3), [[distinct(2, 3)]]),
        Row("remainder", lambda m, x: m.remainder(x, 0.3), [[distinct(2, 3)]]),
        Row("where", lambda m, c, x, y: m.where(c, x, y), [[B(np.array([[1, 0, 1]], bool)), r(2, 3), r(2, 1)]]),
        Row("masked_fill", lambda m, x, mk: x.masked_fill(mk, -1.0), [[r(2, 3), B(np.array([1, 0, 1], bool))]]),
        Row("relu", lambda m, x: m.relu(x), [[distinct(2, 3)]]),
        Row("relu_grad", lambda m, x, g: m.autograd.grad(m.relu(x), x, g, create_graph=True)[0] + x,
            [[distinct(2, 3), r(2, 3)]]),
        Row("sign", lambda m, x: m.sign(x), [[distinct(2, 3)]], grad=False),
        Row("nan_to_num", lambda m, x: m.nan_to_num(x / (x * 0)), [[distinct(2, 3)]], grad=False),
        Row("nan_to_num_finite", lambda m, x: m.nan_to_num(x), [[r(2, 3)]]),
        Row("eq", lambda m, x, y: x == y, [[r(2, 3), r(2, 3)]], grad=False, ints=True),
        Row("lt", lambda m, x, y: m.lt(x, y), [[r(2, 3), r(3)]], grad=False),
        Row("ge_scalar", lambda m, x: x >= 0.1, [[r(2, 3)]], grad=False, ints=True),
        Row("isfinite", lambda m, x: m.isfinite(x / x), [[r(2, 3)]], grad=False),
        Row("logical_and", lambda m, x, y: m.logical_and(x > 0, y > 0), [[r(2, 3), r(2, 3)]], grad=False),
        Row("logical_not", lambda m, x: m.logical_not(x > 0), [[r(2, 3)]], grad=False),
        Row("xlogy", lambda m, x, y: m.xlogy(x, y), [[r(2, 3), pos(3)], [F(np.array([[0.0, 1.5, -0.5]])), pos(2, 3)]]),
        Row("xlogy_scalar", lambda m, x: (m.xlogy(x, 2.5), m.xlogy(2, x), x.xlogy(x)), [[pos(2, 3)]]),
        Row("logaddexp", lambda m, x, y: m.logaddexp(x, y), [[r(2, 3), r(3)], [r(2, 3, nc=True), r(2, 3)]]),
        Row("logaddexp2", lambda m, x, y: x.logaddexp2(y * 30), [[r(2, 3), r(2, 1)]]),
        Row("logaddexp_inf", lambda m, x, y: (m.logaddexp(x, y), m.logaddexp2(x, y)),
            [[F(np.array([np.inf, -np.inf, np.inf, 1.0])), F(np.array([np.inf, -np.inf, -np.inf, np.nan]))]],
            grad=False),
        Row("hypot", lambda m, x, y: m.hypot(x, y), [[r(2, 3), r(2, 1)]]),
        Row("logit", lambda m, x: m.logit(x), [[prob(2, 3)]]),
        Row("logit_eps", lambda m, x: x.logit(eps=0.2), [[prob(3, 4)]]),
        Row("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=0.5), [[r(2, 3), r(3), r(2, 1)]]),
        Row("addcdiv", lambda m, x, a, b: (x.addcdiv(a, b, value=-2), m.addcdiv(x, a, b)),
            [[r(2, 3), r(2, 3), pos(3)]]),
        Row("addc_inplace", lambda m, x, a, b: ((x * 1).addcmul_(a, b, value=2), (x * 1).addcdiv_(a, b, value=-0.5)),
            [[r(2, 3), r(3), pos(2, 3)]]),
        Row("special_inplace", lambda m, x, y: ((x * 1).hypot_(y), (x.sigmoid() * 1).logit_(0.1), (x * 1).xlogy_(y),
                                                (x * 1).erfc_(), (x.tanh() * 0.5).erfinv_()), [[r(2, 3), pos(3)]]),
    ]
)

# integer and bool operands: PyTorch's promotion and sign rules, compared exactly
IA = I(np.array([[7, -7, 5], [-5, 0, 9]]))
IB = I(np.array([2, -3, -2]))
BA = B(np.array([[True, False, True], [False, False, True]]))
BB = B(np.array([True, True, False]))
INT_ROWS = [
    Row(name, op, samples, grad=False) for name, op, samples in [
        ("int_floor_divide", lambda m, x, y: x // y, [[IA, IB]]),
        ("int_div_trunc", lambda m, x, y: m.div(x, y, rounding_mode="trunc"), [[IA, IB]]),
        ("int_div_floor_scalar", lambda m, x: m.div(x, -2, rounding_mode="floor"), [[IA]]),
        ("int_remainder", lambda m, x, y: x % y, [[IA, IB]]),
        ("int_rmod", lambda m, x: 10 % x, [[IB]]),
        ("int_fmod", lambda m, x, y: m.fmod(x, y), [[IA, IB]]),
        ("int_true_div", lambda m, x, y: x / y, [[IA, IB]]),
        ("int_div_int_scalar", lambda m, x: x / 2, [[IA]]),
        ("int_add_float_scalar", lambda m, x: x + 1.5, [[IA]]),
        ("int_mul_bool", lambda m, x, b: x * b, [[IA, BB]]),
        ("int_pow", lambda m, x: x ** 2, [[IA]]),
        ("int_abs_neg_sign", lambda m, x: (x.abs(), -x, x.sign()), [[IA]]),
        ("int_clamp", lambda m, x: x.clamp(-1, 3), [[IA]]),
        ("int_clamp_float", lambda m, x: x.clamp(max=2.5), [[IA]]),
        ("int_max_min", lambda m, x, y: (m.maximum(x, y), m.minimum(x, y)), [[IA, IB]]),
        ("int_where_scalar", lambda m, c, x: m.where(c, x, 0.5), [[BA, IA]]),
        ("int_exp_float", lambda m, x: (x.exp(), x.sqrt().isnan(), m.sigmoid(x)), [[IA]]),
        ("int_float_compare", lambda m, x: (x < 0.5, x == 7), [[IA]]),
        ("bool_add", lambda m, a, b: (a + b, a * b, a + 1, a * 2.5), [[BA, BB]]),
        ("bitwise", lambda m, x, y: (x & y, x | y, x ^ y, ~x, 3 & x, x << 1, x >> 1), [[IA, IB]]),
        ("bool_bitwise", lambda m, a, b: (a & b, a | b, a ^ b, ~a), [[BA, BB]]),
        ("logical_ints", lambda m, x, y: (m.logical_and(x, y), m.logical_or(x, y * 0), m.logical_xor(x, y),
                                          m.logical_not(x)), [[IA, IB]]),
        ("int_predicates", lambda m, x: (m.isnan(x), m.isfinite(x), m.isinf(x)), [[IA]]),
        ("int_rounding", lambda m, x: (m.floor(x), x.ceil(), x.round(), x.trunc()), [[IA]]),
        ("int_sum_prod", lambda m, x: (x.sum(), x.sum(0), x.prod(1), x.cumsum(1), x.cumprod(0)), [[IA]]),
        ("bool_sum", lambda m, b: (b.sum(), b.sum(1, keepdim=True), b.cumsum(0), b.count_nonzero()), [[BA]]),
        ("int_max_dim", lambda m, x: (x.max(), x.max(1).values, x.max(1).indices, x.amin(0), x.argmax(),
                                      x.argmin(1)), [[IA]]),
        ("int_all_any", lambda m, x: (x.all(), x.any(1), x.all(0)), [[IA]]),
        ("int_mean_dtype", lambda m, x: x.mean(1, dtype=m.float64), [[IA]]),
        ("int_sum_dtype", lambda m, x: x.sum(dtype=m.float32), [[IA]]),
        ("small_int_dtype_kept", lambda m, x: (x.sum(dtype=m.int32), x.sum(1, dtype=m.int16), x.prod(1, dtype=m.int16),
                                               x.cumsum(0, dtype=m.int16), x.cumprod(1, dtype=m.int32),
                                               x.float().sum(dtype=m.int32)), [[IA]]),
        ("int_square", lambda m, x: (x.square(), m.square(x > 0)), [[IA]]),
        ("bool_sign", lambda m, b: b.sign(), [[BA]]),
        ("where_two_numbers", lambda m, c: (m.where(c, 1.0, 0), m.where(c, 1, True)), [[BA]]),
        ("int_sort_topk", lambda m, x: (x.sort(1).values, x.sort(1).indices, x.topk(2, 1).values), [[I(
            np.array([[3, 1, 2], [9, 7, 8]]))]]),
        ("unique_dim", lambda m, x: m.unique(x, dim=0, return_inverse=True, return_counts=True),
         [[I(np.array([[1, 2], [0, 5], [1, 2]]))]]),
        ("unique_unsorted_counts", lambda m, x: m.unique(x, return_counts=True), [[I(np.array([4, 1, 4, 4, 0]))]]),
        ("nan_to_num_args", lambda m: m.nan_to_num(m.tensor([float("nan"), float("inf"), -float("inf"), 1.0]),
                                                   1.0, 2.0, -3.0), [[]]),
        ("int_special_float", lambda m, x, y: (m.erfc(x), m.erfinv(x * 0), m.erfinv(x), m.xlogy(x, y.abs()),
                                               m.xlogy(x, 3), m.xlogy(2, y), m.logit(x), m.logit(x, 0.25)), [[IA, IB]]),
        ("int_addc", lambda m, x, y: (m.addcmul(x, x, y, value=2), m.addcmul(x, x, y, value=0.5),
                                      m.addcdiv(x, x.float(), y), m.addcdiv(x.double(), x, y.float(), value=3)),
         [[IA, IB]]),
        ("int_diff_nansum", lambda m, x, b: (m.diff(x), m.diff(x, dim=0, append=x * 2), m.diff(b, dim=0), m.nansum(x),
                                             x.nansum(1), m.diff(x, prepend=b.to(m.int32))), [[IA, BA]]),
        ("isclose_nan", lambda m: m.isclose(m.tensor([1.0, float("nan")]), m.tensor([1.0, float("nan")]),
                                            equal_nan=True), [[]]),
    ]
]

NUMPY_SCALAR_ROWS = [
    Row("numpy_scalar", lambda m, x: (x / np.sqrt(np.float64(4.0)), np.float64(2) * x, x + np.int64(1),
                                      x.long() + np.int64(2), x.int() * np.int64(3), x - np.float32(0.5)),
        [[r(2, 3)]]),
]

ROWS = POINTWISE_ROWS + INT_ROWS + NUMPY_SCALAR_ROWS
