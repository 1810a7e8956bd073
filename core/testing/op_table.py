"""Op table rows for pointwise ops and reductions (same row format as :mod:`ember.testing.op_table_shape`)."""
from __future__ import annotations

import numpy as np

from .op_table_shape import B, F, I, Row, r  # noqa: F401 - I re-exported for table authors


def pos(*shape, nc=False):
    """Strictly positive data (domains of log, sqrt, ...)."""
    return r(*shape, nc=nc, positive=True)


def unit(*shape):
    """Data inside (-0.9, 0.9) (domains of asin, atanh, ...)."""
    return F(np.random.RandomState(7).uniform(-0.9, 0.9, shape))


def big(*shape):
    return F(np.random.RandomState(8).uniform(1.2, 3.0, shape))


def distinct(*shape):
    """Values without ties and away from 0 (max/min/sort gradients are unique; abs/relu kinks avoided)."""
    n = int(np.prod(shape)) if shape else 1
    return F((np.random.RandomState(9).permutation(n).reshape(shape) - n / 2.0 + 0.25) / 3.0)


def prob(*shape):
    """Data inside (0.05, 0.95) (the domain of logit)."""
    return F(np.random.RandomState(10).uniform(0.05, 0.95, shape))


def with_nan(*shape):
    """Random data with about a third NaN (one row all NaN when there are three rows or more)."""
    a = np.random.RandomState(11).rand(*shape) - 0.5
    a[np.random.RandomState(12).rand(*shape) < 0.35] = np.nan
    if a.ndim == 2 and a.shape[0] >= 3:
        a[2] = np.nan
    return F(a)


QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")

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

REDUCTION_ROWS = [
    Row("sum", lambda m, x: x.sum(), [[r(2, 3)], [r()], [r(0, 3)], [r(2, 3, nc=True)]], ints=True),
    Row("sum_dim", lambda m, x: x.sum(1), [[r(2, 3)]], ints=True),
    Row("sum_dims_keep", lambda m, x: x.sum((0, 2), keepdim=True), [[r(2, 3, 4)]]),
    Row("mean", lambda m, x: x.mean(), [[r(2, 3)]]),
    Row("mean_dim", lambda m, x: x.mean(-1, keepdim=True), [[r(2, 3)]]),
    Row("prod", lambda m, x: x.prod(), [[r(2, 3)]]),
    Row("prod_dim", lambda m, x: x.prod(1), [[r(2, 3)], [F(np.array([[1.0, 0.0, 2.0], [0.5, 0.25, 3.0]]))]]),
    Row("amax", lambda m, x: x.amax(1), [[distinct(2, 3)]]),
    Row("amin", lambda m, x: m.amin(x, (0, 1)), [[distinct(2, 3)]]),
    Row("max_all", lambda m, x: x.max(), [[distinct(2, 3)]]),
    Row("max_dim", lambda m, x: x.max(1).values, [[distinct(2, 3)]]),
    Row("max_dim_keep", lambda m, x: m.max(x, 0, keepdim=True)[0], [[distinct(2, 3)]]),
    Row("min_dim", lambda m, x: x.min(-1)[0], [[distinct(2, 3)]]),
    Row("max_indices", lambda m, x: x.max(1).indices, [[distinct(2, 3)]], grad=False),
    Row("argmax", lambda m, x: x.argmax(), [[distinct(2, 3)]], grad=False),
    Row("argmin_dim", lambda m, x: x.argmin(0, keepdim=True), [[distinct(2, 3)]], grad=False),
    Row("var", lambda m, x: x.var(), [[r(2, 3)]]),
    Row("var_dim", lambda m, x: x.var(1, keepdim=True), [[r(2, 3)]]),
    Row("var_biased", lambda m, x: m.var(x, 0, unbiased=False), [[r(2, 3)]]),
    Row("var_correction", lambda m, x: x.var(1, correction=0), [[r(2, 3)]]),
    Row("std", lambda m, x: x.std(0), [[r(3, 2)]]),
    Row("logsumexp", lambda m, x: m.logsumexp(x, 1), [[r(2, 3)]]),
    Row("logsumexp_keep", lambda m, x: x.logsumexp((0, 1), keepdim=True), [[r(2, 3)]]),
    Row("cumsum", lambda m, x: x.cumsum(1), [[r(2, 3)]], ints=True),
    Row("cumprod", lambda m, x: x.cumprod(0), [[r(3, 2)], [F(np.array([[1.5, 0.0, 2.0], [0.0, 0.5, 0.0]]).T)]]),
    Row("norm", lambda m, x: x.norm(), [[r(2, 3)]]),
    Row("norm_dim", lambda m, x: x.norm(dim=1), [[r(2, 3)]]),
    Row("norm_p1", lambda m, x: x.norm(p=1, dim=0), [[r(2, 3)]]),
    Row("all", lambda m, x: (x > 0).all(1), [[r(2, 3)]], grad=False),
    Row("any", lambda m, x: m.any(x > 0.3), [[r(2, 3)]], grad=False),
    Row("sort", lambda m, x: x.sort(1).values, [[distinct(2, 4)]]),
    Row("sort_desc_idx", lambda m, x: x.sort(0, descending=True).indices, [[distinct(3, 2)]], grad=False),
    Row("argsort", lambda m, x: m.argsort(x), [[distinct(2, 4)]], grad=False),
    Row("topk", lambda m, x: x.topk(2, 1).values, [[distinct(2, 4)]]),
    Row("topk_smallest", lambda m, x: m.topk(x, 2, 0, largest=False)[1], [[distinct(3, 2)]], grad=False),
    Row("kthvalue", lambda m, x: x.kthvalue(2, 1).values, [[distinct(2, 4)]]),
    Row("median", lambda m, x: x.median(), [[distinct(2, 3)]]),
    Row("median_dim", lambda m, x: x.median(1).values, [[distinct(2, 4)]]),
    Row("count_nonzero", lambda m, x: m.count_nonzero(x > 0, 1), [[r(2, 3)]], grad=False),
    Row("count_nonzero_dims", lambda m, x: m.count_nonzero(x > 0, (0, 1)), [[r(2, 3)]], grad=False),
    Row("std_mean", lambda m, x: m.std_mean(x, 1), [[r(2, 3)]]),
    Row("var_mean_keep", lambda m, x: m.var_mean(x, (0, 1), keepdim=True, correction=0), [[r(2, 3)]]),
    Row("sum_to_size", lambda m, x: x.sum_to_size(1, 3), [[r(2, 3)]]),
    Row("sum_empty_dim", lambda m, x: x.sum(0), [[r(0, 3)]]),
    Row("mean_nc", lambda m, x: x.mean(0), [[r(3, 2, nc=True)]]),
    Row("prod_all_zero", lambda m, x: x.prod(), [[F(np.array([[1.5, 0.0], [2.0, -0.5]]))]]),
    Row("vector_norm", lambda m, x: m.linalg.vector_norm(x, 3, dim=1), [[r(2, 3)]]),
    Row("vector_norm_inf", lambda m, x: m.linalg.vector_norm(x, float("inf")), [[distinct(2, 3)]]),
    Row("vector_norm_0", lambda m, x: m.linalg.vector_norm(x, 0, dim=0, keepdim=True), [[distinct(2, 3)]],
        grad=False),
    Row("matrix_norm_fro", lambda m, x: m.linalg.matrix_norm(x), [[r(2, 3, 3)]]),
    Row("matrix_norm_1", lambda m, x: m.linalg.matrix_norm(x, 1, keepdim=True), [[distinct(2, 3)]]),
    Row("matrix_norm_inf", lambda m, x: m.linalg.matrix_norm(x, -float("inf"), dim=(1, 0)), [[distinct(2, 3)]]),
    Row("matrix_norm_nuc", lambda m, x: m.linalg.matrix_norm(x, "nuc"), [[r(3, 3)]], rtol=1e-4, atol=1e-5),
    Row("matrix_norm_2", lambda m, x: m.linalg.matrix_norm(x, 2), [[r(2, 3, 3)]], rtol=1e-4, atol=1e-5),
    Row("linalg_norm", lambda m, x: (m.linalg.norm(x), m.linalg.norm(x, 1), m.linalg.norm(x, dim=0)),
        [[distinct(2, 3)]]),
    Row("norm_p3_keep", lambda m, x: x.norm(3, 1, True), [[r(2, 3)]]),
    Row("logsumexp_int", lambda m, x: m.logsumexp(x, 0), [[I(np.array([[1, 2], [3, 4]]))]], grad=False),
    Row("logsumexp_inf", lambda m, x: m.logsumexp(x, 1), [[F(np.array([[-np.inf, -np.inf], [1.0, -np.inf]]),
                                                               grad=False)]], grad=False),
    Row("cumsum_dtype", lambda m, x: x.cumsum(0, dtype=m.float64), [[r(3, 2)]]),
    Row("mode_dim", lambda m, x: m.mode(x, 0), [[I(np.array([[1, 2, 2], [3, 2, 1], [1, 5, 1]]))]], grad=False),
    Row("mode_keep_ties", lambda m, x: x.mode(-1, keepdim=True), [[F(np.array([[3.0, 1, 3, 1], [2, 2, 5, 5]]))],
                                                                     [F(np.array([[[4.0]]]))]], grad=False),
    Row("cummax", lambda m, x: m.cummax(x, 1), [[distinct(2, 4)]]),
    Row("cummax_0d", lambda m, x: m.cummax(x, 0), [[r()]]),
    Row("cummin_ties", lambda m, x: x.cummin(0), [[F(np.array([[2.0, 1.0], [1.0, 3.0], [1.0, 0.5]]))]],
        grad=False),
    Row("cummax_int", lambda m, x: x.cummax(1), [[I(np.array([[1, 3, 3, 2], [5, 0, 5, 7]]))]], grad=False),
    Row("aminmax", lambda m, x: (*m.aminmax(x), *m.aminmax(x, dim=1, keepdim=True)), [[distinct(2, 3)]]),
    Row("median_even", lambda m, x: x.median(0), [[distinct(4, 3)]]),
    Row("sort_desc_nan_stable", lambda m, x: (*x.sort(dim=1, descending=True, stable=True), *x.topk(3, 1)),
        [[F(np.array([[1.0, np.nan, np.inf, 1.0, -np.inf, np.nan, 2.0]]), grad=False)]], grad=False),
    Row("sort_desc_bool_stable", lambda m, x: x.sort(dim=0, descending=True, stable=True).indices, [[BA]], grad=False),
    Row("sum_mean_all_keepdim", lambda m, x: (x.sum(None, keepdim=True), x.mean(None, keepdim=True)), [[r(2, 3)]]),
    Row("nanmedian", lambda m, x: (x.nanmedian(), *x.nanmedian(1), *x.nanmedian(0, keepdim=True)),
        [[F(np.array([[1.0, np.nan, 3.0, np.nan], [np.nan, 2.0, 6.0, 1.0], [4.0, 2.5, 3.5, 0.5]]))]]),
    Row("median_nan", lambda m, x: (x.median(), *x.median(1), *x.median(0, keepdim=True)),
        [[F(np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, 3.0, 1.0]]), grad=False)]], grad=False),
    Row("empty_reductions", lambda m, x: (x.sum(1), x.prod(1), x.mean(0), x.amax(1), x.all(1)), [[r(0, 3)]],
        grad=False),
    Row("nansum", lambda m, x: (x.nansum(), m.nansum(x, 1, keepdim=True), m.nansum(x, (0, 1), dtype=m.float64)),
        [[with_nan(3, 4)], [r(2, 3)]]),
    Row("nanmean", lambda m, x: (x.nanmean(), m.nanmean(x, 0), x.nanmean(-1, keepdim=True)), [[with_nan(3, 4)]]),
    Row("diff", lambda m, x: x.diff(), [[r(2, 4)], [r(3, 2, nc=True)], [r(3)]], ints=True),
    Row("diff_n_dim", lambda m, x: (m.diff(x, n=2, dim=0), m.diff(x, 3, 0), x.diff(0)), [[r(4, 3)], [r(2, 3)]]),
    Row("diff_prepend_append", lambda m, x, p, a: (m.diff(x, 1, 1, p, a), x.diff(2, 1, prepend=p), x.diff(append=a)),
        [[r(2, 3), r(2, 1), r(2, 2)]]),
    Row("quantile", lambda m, x: (m.quantile(x, 0.3), x.quantile(1.0), m.quantile(x, 0)), [[distinct(2, 4)]]),
    Row("quantile_dim_q", lambda m, x, q: (x.quantile(q, dim=1, keepdim=True), m.quantile(x, q, 0), x.quantile(q)),
        [[distinct(3, 5), F(np.array([0.1, 0.5, 0.85]), grad=False)]]),
    Row("quantile_modes", lambda m, x, q: tuple(m.quantile(x, q, -1, interpolation=i) for i in QUANTILE_MODES)
        + tuple(m.quantile(x, 0.4, 0, True, interpolation=i) for i in QUANTILE_MODES),
        [[distinct(5, 6), F(np.array([0.0, 0.15, 0.5, 0.7, 1.0]), grad=False)]]),
    Row("quantile_nan", lambda m, x: (m.quantile(x, 0.5, 1), m.quantile(x, 0.2)), [[with_nan(3, 4)]], grad=False),
    Row("nanquantile", lambda m, x, q: (m.nanquantile(x, q, 1), x.nanquantile(0.6, 0, keepdim=True),
                                        x.nanquantile(q, interpolation="nearest")),
        [[with_nan(3, 5), F(np.array([0.25, 0.5]), grad=False)]]),
    Row("nanquantile_modes", lambda m, x: tuple(m.nanquantile(x, 0.35, 1, interpolation=i) for i in QUANTILE_MODES),
        [[F(np.array([[0.3, np.nan, 1.2, -0.4, 2.0], [np.nan, 0.7, np.nan, -1.1, 0.1]]))]]),
    Row("quantile_0d", lambda m, x: (m.quantile(x, 0.5), m.quantile(x, 0.5, 0, keepdim=True)), [[r()]]),
    # counting and searching: values and dtypes only
    Row("histc", lambda m, x: (m.histc(x, 4, 0, 3), x.histc(3, -0.25, 0.25), m.histc(x * 0 + 1, 5)),
        [[r(3, 4)], [r(3, 4, nc=True)]], grad=False),
    Row("histc_range_from_data", lambda m, x: (m.histc(x), x.histc(bins=7, min=0.5, max=0.5)), [[r(2, 5)]],
        grad=False),
    Row("histc_edges", lambda m, x: m.histc(x, 4, 0, 3),
        [[F(np.array([0.0, 0.75, 1.5, 2.25, 3.0, 3.001, -1e-9, np.nan]))]], grad=False),
    Row("bincount", lambda m, x, w: (m.bincount(x), x.bincount(minlength=7), m.bincount(x, w), m.bincount(x, w, 2),
                                     m.bincount(x, w.to(m.int64)), m.bincount(x[:0])),
        [[I(np.array([1, 3, 1, 0, 5, 3, 3])), F(np.array([0.5, 1.0, 2.0, 3.0, -1.5, 0.25, 4.0]), grad=False)]],
        grad=False),
    Row("searchsorted", lambda m, s, v: (m.searchsorted(s, v), m.searchsorted(s, v, right=True),
                                         m.searchsorted(s, v, side="right", out_int32=True), m.searchsorted(s, 0.25)),
        [[F(np.array([-0.5, -0.1, 0.0, 0.25, 0.25, 0.4])), F(np.array([[0.25, -0.7, 0.1], [0.0, 0.5, -0.1]]))]],
        grad=False),
    Row("searchsorted_rows", lambda m, s, v: (m.searchsorted(s, v), m.searchsorted(s, v, right=True)),
        [[F(np.array([[1.0, 2.0, 2.0, 5.0], [-3.0, 0.0, 0.5, 0.5]])),
          F(np.array([[2.0, 0.0, 6.0], [0.5, -3.0, 0.7]]))]], grad=False),
    Row("searchsorted_sorter", lambda m, s, v, o: (m.searchsorted(s, v, sorter=o), m.searchsorted(s, v, right=True,
                                                                                                 sorter=o)),
        [[F(np.array([5.0, 1.0, 3.0])), F(np.array([2.0, 3.0, 0.0, 6.0])), I(np.array([1, 2, 0]))]], grad=False),
    Row("searchsorted_int", lambda m, s, v: (m.searchsorted(s, v), m.searchsorted(s, 3), m.searchsorted(s.float(), v),
                                             m.searchsorted(s, v.float() + 0.5)),
        [[I(np.array([1, 3, 3, 5])), I(np.array([[3, 0], [6, 5]]))]], grad=False),
    Row("bucketize", lambda m, x, b: (m.bucketize(x, b), m.bucketize(x, b, right=True), m.bucketize(0.1, b),
                                      m.bucketize(x, b, out_int32=True), m.bucketize(x > 0, b)),
        [[F(np.array([[-0.2, 0.1, 0.3], [0.45, -0.5, 0.0]])), F(np.array([-0.2, 0.0, 0.1, 0.4]))]], grad=False),
]

ROWS = POINTWISE_ROWS + INT_ROWS + REDUCTION_ROWS
