"""Case table: indexing and shapes (advanced indexing, 0-d and empty reductions, resizing).  Cases and their
check: :mod:`ember.testing.case`."""
from __future__ import annotations

import numpy as np

from .case import DATA, Case, T, grad_of


# =========================================================================== indexing and shapes
def _index_shape(expr):
    def fn(m, dev):
        x = m.tensor(np.arange(120.0).reshape(2, 3, 4, 5).tolist(), device=dev, requires_grad=True)
        idx = m.tensor([0, 2], device=dev)
        y = eval(f"x[{expr}]", {"x": x, "idx": idx})  # noqa: S307 - a fixed index expression of this table
        (y * y).sum().backward()
        return y.detach(), x.grad
    return fn


def _index_assign(expr):
    def fn(m, dev):
        x = m.zeros(2, 3, 4, 5, device=dev)
        idx = m.tensor([0, 2], device=dev)
        target = eval(f"x[{expr}]", {"x": x, "idx": idx})  # noqa: S307 - a fixed index expression of this table
        exec(f"x[{expr}] = v", {"x": x, "idx": idx,  # noqa: S102 - a fixed index expression of this table
                                "v": m.arange(float(target.numel()), device=dev).reshape(target.shape)})
        return x
    return fn


_INDEX_EXPRS = ["0, :, idx", ":, 0, :, idx", "0, idx", "idx, 0", "0, ..., idx", ":, idx, :, 0", "0, :, idx, None",
                "None, 0, :, idx", "0, :, [[0], [1]], idx", "1, idx, 1", "idx, :, idx", "0, [0, 1], :, idx",
                "-1, :, idx, 4"]

_REDUCTIONS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(d), "prod": lambda x, d: x.prod(d),
    "amax": lambda x, d: x.amax(d), "amin": lambda x, d: x.amin(d), "std": lambda x, d: x.std(d, correction=0),
    "var": lambda x, d: x.var(d, correction=0), "logsumexp": lambda x, d: x.logsumexp(d),
    "argmax": lambda x, d: x.argmax(d), "argmin": lambda x, d: x.argmin(d), "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d), "cumsum": lambda x, d: x.cumsum(d),
    "cumprod": lambda x, d: x.cumprod(d), "max": lambda x, d: x.max(d)[0], "min": lambda x, d: x.min(d)[1],
    "median": lambda x, d: x.median(d)[0], "norm": lambda x, d: x.norm(dim=d), "all": lambda x, d: x.all(d),
    "any": lambda x, d: x.any(d), "nansum": lambda x, d: x.nansum(d), "count_nonzero": lambda x, d: x.count_nonzero(d),
    "sum keepdim": lambda x, d: x.sum(d, keepdim=True), "amax keepdim": lambda x, d: x.amax(d, keepdim=True),
    "nanmean": lambda x, d: x.nanmean(d), "kthvalue": lambda x, d: x.kthvalue(1, d)[0],
    "aminmax": lambda x, d: x.aminmax(dim=d)[0],
}


def _reduce_0d(red, d):
    def fn(m, dev):
        x = m.tensor(2.5, device=dev, requires_grad=True)
        y = red(x, d)
        if y.dtype.is_floating_point:
            y.sum().backward()
        return y.detach(), x.grad
    return fn


def _reduce_empty(red, d):
    def fn(m, dev):
        import warnings
        with warnings.catch_warnings():  # PyTorch warns about var/std without degrees of freedom
            warnings.simplefilter("ignore")
            return red(m.zeros(2, 0, device=dev), d)
    return fn


def _warned(call):
    """``call``'s result and the messages of the warnings it gave (PyTorch's wording, library names aside)."""
    def fn(m, dev):
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = call(m, dev)
        return r, [str(i.message).replace("torch.Size", "Size").replace("ember.Size", "Size") for i in w]
    return fn


def _img(m, dev, shape=(2, 3, 5, 7)):
    return m.tensor((np.arange(np.prod(shape)).reshape(shape) % 11 / 7.0).tolist(), device=dev,
                    dtype=m.float64, requires_grad=True)


def _resize(shape=(2, 3, 5, 7), **kw):
    def fn(m, dev):
        x = _img(m, dev, shape)
        y = m.nn.functional.interpolate(x, **kw)
        (y * y).sum().backward()
        return y.detach(), x.grad
    return fn


def _embedding_freq(m, dev):
    e = m.nn.Embedding(5, 2, scale_grad_by_freq=True).to(dev)
    with m.no_grad():
        e.weight.copy_(m.arange(10.0).reshape(5, 2))
    out = e(m.tensor([[0, 1, 1], [3, 1, 0]], device=dev))
    (out * m.arange(12.0, device=dev).reshape(2, 3, 2)).sum().backward()
    return out.detach(), e.weight.grad


def _index_fill_value_grad(m, dev):
    x = T(m, dev, DATA["m"], rg=True)
    v = m.tensor(2.0, dtype=m.float64, device=dev, requires_grad=True)
    y = x.index_fill(1, m.tensor([0, 2], device=dev), v)
    (y * T(m, dev, DATA["m"])).sum().backward()
    return y.detach(), x.grad, v.grad


SHAPE_CASES = (
    [Case(f"x[{e}]", _index_shape(e)) for e in _INDEX_EXPRS]
    + [Case(f"x[{e}] = v", _index_assign(e)) for e in _INDEX_EXPRS]
    + [Case(f"0-d {n} dim={d}", _reduce_0d(r, d)) for n, r in _REDUCTIONS.items() for d in (0, -1)]
    + [Case(f"0-d {n} dim=1", _reduce_0d(r, 1)) for n, r in list(_REDUCTIONS.items())[:4]]
    + [Case(f"empty {n} dim={d}", _reduce_empty(r, d)) for n, r in _REDUCTIONS.items() for d in (0, 1)]
    + [Case(f"empty {n}", _reduce_empty(lambda x, d, n=n: getattr(x, n)(), None))
       for n in ("max", "min", "amax", "amin", "argmax", "argmin", "sum", "mean", "prod", "median", "nanmedian",
                 "logsumexp", "std", "var", "aminmax", "all", "any", "norm")]
    + [
        Case("logsumexp of empty", lambda m, dev: m.logsumexp(m.zeros(0, device=dev), 0)),
        Case("logsumexp of empty rows", lambda m, dev: m.logsumexp(m.zeros(3, 0, device=dev), 1, keepdim=True)),
        Case("2.0 in 2-d", lambda m, dev: (2.0 in T(m, dev, [[1.0, 2.0]]), 5 in T(m, dev, [[1.0, 2.0]]))),
        Case("tensor in 2-d", lambda m, dev: (T(m, dev, [1.0, 2.0]) in T(m, dev, [[1.0, 2.0]]),
                                              T(m, dev, [3.0]) in T(m, dev, [[1.0, 2.0]]))),
        Case("2 in 0-d", lambda m, dev: 2 in m.tensor(2, device=dev)),
        Case("str in tensor", lambda m, dev: "a" in m.tensor([1], device=dev)),
        Case("unique_consecutive dim=0", lambda m, dev: m.unique_consecutive(
            m.tensor([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]], device=dev), return_inverse=True,
            return_counts=True, dim=0)),
        Case("unique_consecutive dim=1", lambda m, dev: m.unique_consecutive(
            m.tensor([[1, 1, 2], [1, 1, 3]], device=dev), return_counts=True, dim=1)),
        Case("F.normalize p=inf", grad_of(lambda m, dev: T(m, dev, [[3.0, -4.0], [1.0, 2.0]], rg=True),
                                           lambda m, x: m.nn.functional.normalize(x, p=float("inf")))),
        Case("F.normalize p=inf dim=0", grad_of(lambda m, dev: T(m, dev, [[3.0, -4.0], [1.0, 2.0]], rg=True),
                                                 lambda m, x: m.nn.functional.normalize(x, p=float("inf"), dim=0))),
        Case("F.normalize p=3", grad_of(lambda m, dev: T(m, dev, [[3.0, -4.0], [1.0, 2.0]], rg=True),
                                         lambda m, x: m.nn.functional.normalize(x, p=3.0))),
        Case("Embedding(scale_grad_by_freq=True)", _embedding_freq),
        Case("index_fill with a 0-d tensor value", _index_fill_value_grad),
        Case("mse_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.mse_loss(
            m.ones(3, 1, device=dev), m.zeros(3, device=dev)))),
        Case("MSELoss broadcasts and warns", _warned(lambda m, dev: m.nn.MSELoss()(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("l1_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.l1_loss(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("smooth_l1_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.smooth_l1_loss(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("huber_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.huber_loss(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("mse_loss of shapes that do not broadcast", _warned(lambda m, dev: m.nn.functional.mse_loss(
            m.ones(3, 2, device=dev), m.zeros(4, device=dev)))),
        Case("fmax/fmin ignore NaN", lambda m, dev: (
            m.fmax(T(m, dev, [float("nan"), 1.0, float("nan")]), T(m, dev, [2.0, float("nan"), float("nan")])),
            m.fmin(T(m, dev, [float("nan"), 1.0]), T(m, dev, [2.0, float("nan")])))),
    ]
    + [Case(f"interpolate {kw}", _resize(**kw)) for kw in (
        {"size": (7, 9), "mode": "bicubic"}, {"size": (3, 4), "mode": "bicubic"},
        {"scale_factor": 1.5, "mode": "bicubic", "align_corners": True},
        {"scale_factor": 0.5, "mode": "bicubic", "align_corners": False},
        {"size": (7, 3), "mode": "nearest-exact"}, {"scale_factor": 2.3, "mode": "nearest-exact"},
        {"size": 11, "mode": "nearest-exact", "shape": (2, 3, 5)},
        {"size": (2, 3), "mode": "bilinear", "antialias": True},
        {"size": (3, 2), "mode": "bicubic", "antialias": True},
        {"size": (9, 11), "mode": "bilinear", "antialias": True},
        {"size": (9, 11), "mode": "bicubic", "antialias": True},
        {"scale_factor": 0.4, "mode": "bilinear", "antialias": True},
        {"size": (2, 5), "mode": "bicubic", "antialias": True},
        {"size": 3, "mode": "linear", "antialias": True, "shape": (2, 3, 5)},
        {"size": (4, 4), "mode": "bicubic", "shape": (2, 3, 4, 5, 6)},
    )]
)
