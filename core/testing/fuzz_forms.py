"""Call forms for the differential fuzzer (:mod:`ember.testing.fuzz`): ``dim`` arguments (which the
fuzzer pushes out of range), ``out=``, in-place and method forms, Tensor-or-number operands, index and
embedding arguments.  The pointwise names come from :mod:`ember.testing.rows_pointwise`; the data from the
same samplers as the other tables.  These rows are for the fuzzer only (the kit does not run them)."""
from __future__ import annotations

import numpy as np

from .row import F, I, Row, Sampler
from .rows_pointwise import UNARY, UNARY_POS, pos

r = Sampler(2468).r

UNARY_FORMS = UNARY + UNARY_POS + ["floor", "ceil", "round", "trunc", "frac", "sign", "erfinv"]
BINARY = ["add", "sub", "mul", "div", "atan2", "maximum", "minimum", "fmod", "remainder", "pow", "hypot",
          "logical_or", "logical_and", "logical_xor", "bitwise_and", "eq", "lt", "ge", "copysign", "heaviside",
          "xlogy", "float_power", "fmax", "fmin", "ldexp", "nextafter"]
DIM_REDUCTIONS = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "logsumexp", "std", "var", "nansum",
                  "nanmean", "median", "nanmedian", "cumsum", "cumprod", "softmax", "log_softmax", "all", "any",
                  "count_nonzero", "norm"]


def _unary(name):
    def op(m, x):
        f = getattr(m, name)
        return f(x), getattr(x * 1, name + "_")(), f(x, out=m.empty(0, dtype=x.dtype, device=x.device))
    return op


NO_INPLACE = {"maximum", "minimum", "fmax", "fmin"}  # (PyTorch has no in-place form of these)


def _binary(name):
    def op(m, x, y):
        f = getattr(m, name)
        inplace = () if name in NO_INPLACE else (getattr(x.clone(), name + "_")(y),)
        return (f(x, y), getattr(x, name)(y), *inplace)
    return op


def _binary_out(name):
    return lambda m, x, y: getattr(m, name)(x, y, out=m.empty(0, dtype=x.dtype, device=x.device))


def _reduction(name):
    def op(m, x, dim):
        f = getattr(m, name)
        if name in ("cumsum", "cumprod", "softmax", "log_softmax"):
            return f(x, dim)
        return f(x, dim=dim), f(x, dim, keepdim=True)
    return op


ROWS = (
    [Row(f"{n}_forms", _unary(n), [[r(2, 3)], [pos(3)]]) for n in UNARY_FORMS]
    + [Row(f"{n}_forms", _binary(n), [[r(2, 3), r(3)], [pos(2, 3), 1.5]]) for n in BINARY]
    + [Row(f"{n}_out", _binary_out(n), [[r(2, 3), r(2, 3)]]) for n in BINARY[:8]]
    + [Row(f"{n}_dim_forms", _reduction(n), [[r(2, 3), 1], [r(2, 3, 4), -1]]) for n in DIM_REDUCTIONS]
    + [
        Row("clamp_forms", lambda m, x, lo, hi: (m.clamp(x, min=lo, max=hi), x.clamp(lo), x.clone().clamp_(lo, hi)),
            [[r(2, 3), F(np.full(3, -0.1)), 0.3], [r(2, 3), -0.2, F(np.full(3, 0.2))]]),
        Row("lerp_forms", lambda m, x, y, w: (m.lerp(x, y, w), x.clone().lerp_(y, w)),
            [[r(2, 3), r(2, 3), 0.25], [r(2, 3), r(3), r(2, 3)]]),
        Row("isclose_forms", lambda m, x, y: (m.isclose(x, y), m.allclose(x, y)), [[r(2, 3), r(2, 3)], [r(3), r(3)]],
            grad=False),
        Row("meshgrid_forms", lambda m, x, y: m.meshgrid(x, y, indexing="ij"), [[r(3), r(4)]]),
        Row("gather_forms", lambda m, x, i, d: (m.gather(x, d, i), x.scatter(d, i, x), m.take_along_dim(x, i, d)),
            [[r(2, 3), I(np.array([[0, 2, 1], [1, 0, 0]])), 1], [r(3), I(np.array([1])), 0]]),
        # a 0-d index into a vector picks one element (PyTorch counts a 0-d tensor as one dimension); no
        # gradients: PyTorch's scatter backward refuses a 0-d index ("invalid gradient")
        Row("index_0d_forms", lambda m, x, i: (m.gather(x, 0, i), x.scatter(0, i, x), x.scatter_add(0, i, x),
                                               x.scatter_reduce(0, i, x, "amax"), x.scatter(0, i, 2.0)),
            [[F(np.array([1.5, -0.5, 2.0]), grad=False), I(np.array(1))]]),
        Row("scatter_reduce_forms", lambda m, x, i, s: x.scatter_reduce(0, i, s, "amax"),
            [[r(4), I(np.array([0, 2, 2])), r(3)]]),
        Row("embedding_forms", lambda m, i, w, p: m.nn.functional.embedding(i, w, padding_idx=p),
            [[I(np.array([[0, 2], [1, 3]])), r(4, 3), 1], [I(np.array([1, 0])), r(4, 3), -1]]),
        Row("mv_forms",
            lambda m, a, v: (m.mv(a, v), a.mv(v), m.mv(a, v, out=m.empty(0, dtype=a.dtype, device=a.device))),
            [[r(2, 3), r(3)]]),
        Row("solve_forms", lambda m, a, b: m.linalg.solve(a, b), [[Sampler(1).well(3), r(3, 2)]]),
        Row("cosine_similarity_forms", lambda m, x, y, d: m.nn.functional.cosine_similarity(x, y, d),
            [[r(2, 3), r(3), 1], [r(), r(2, 3), -1]]),
        Row("threshold_forms", lambda m, x, t, v: m.nn.functional.threshold(x, t, v),
            [[r(2, 3), 0.1, -1.0], [r(2, 3), float("nan"), 2.0]]),
        Row("adaptive_avg_pool2d_forms", lambda m, x, s: m.nn.functional.adaptive_avg_pool2d(x, s),
            [[r(1, 2, 5, 4), 3], [r(2, 4, 4), 2]]),
        Row("max_pool2d_forms", lambda m, x, c: m.nn.functional.max_pool2d(x, 2, ceil_mode=c),
            [[r(1, 2, 5, 5), True], [r(1, 3, 4), False]]),
        Row("interpolate_forms", lambda m, x, mode: m.nn.functional.interpolate(x, scale_factor=2, mode=mode),
            [[r(1, 2, 3), "linear"], [r(1, 1, 2, 3), "nearest"], [r(1, 1, 2, 3), "bilinear"]]),
        Row("scalar_alpha_forms", lambda m, x, a, b, v: (m.addcmul(x, a, b, value=v), m.add(x, a, alpha=v),
                                                         m.addcdiv(x, a, b.abs() + 1, value=v)),
            [[r(2, 3), r(2, 3), r(3), 0.3], [r(2, 3), r(2, 3), r(3), 3]]),
        Row("baddbmm_forms", lambda m, x, a, b: (m.baddbmm(x, a, b), m.addbmm(x[0], a, b)),
            [[r(2, 2, 4), r(2, 2, 3), r(2, 3, 4)], [r(0, 2, 4), r(0, 2, 3), r(0, 3, 4)]]),
    ]
)
