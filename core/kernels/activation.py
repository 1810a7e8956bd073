"""Activation kernels, and the softmax family with softmax's fused cross-entropy (log-softmax and the negative
log-likelihood of class indices in one pass, with the gradient it needs)."""
from __future__ import annotations

import math
from functools import partial

from .pointwise import _native, fallbacks
from .strategy import Strategy, bind

QUIET = {"softmax", "softmax_backward", "log_softmax", "cross_entropy_index", "nn_softplus",  # masked rows, inf
         "nn_elu", "nn_silu", "nn_mish", "nn_gelu", "nn_gelu_backward", "nn_log_sigmoid",
         "nn_glu",  # (from nn_elu on: exp of large arguments)
         "nn_threshold"}  # (a float16 input beside a threshold beyond its range, which PyTorch compares in float32)


def _reducers(s):
    """``(max, sum)`` along an axis with ``keepdims``: the ufuncs' own reductions where ``xp``'s elementwise functions
    are ufuncs (without the microseconds of ``np.max``'s argument handling, which a tiny softmax feels), else
    ``xp``'s functions."""
    xp = s.xp
    if s.writes_out:
        return xp.maximum.reduce, xp.add.reduce
    return xp.max, xp.sum


def softmax(s, x, axis):
    xp = s.xp
    if x.size == 0:
        return xp.zeros_like(x)
    amax, add = _reducers(s)
    keep = x.ndim != 1  # a vector's max and sum are scalars (cheaper to broadcast, which a tiny softmax feels)
    e = x - amax(x, axis=axis, keepdims=keep)
    e = xp.exp(e, out=e) if s.writes_out and e.ndim else xp.exp(e)  # in place: one large buffer, not two
    e /= add(e, axis=axis, keepdims=keep)
    return e


def softmax_backward(s, g, y, axis):
    """``y * (g - sum(g * y))`` along ``axis``: softmax's gradient from its output ``y``."""
    gy = g * y
    total = _reducers(s)[1](gy, axis=axis, keepdims=True)
    return y * (g - total)


def log_softmax(s, x, axis):
    xp = s.xp
    if x.size == 0:
        return xp.zeros_like(x)
    amax, add = _reducers(s)
    keep = x.ndim != 1
    e = x - amax(x, axis=axis, keepdims=keep)
    e -= xp.log(add(xp.exp(e), axis=axis, keepdims=keep))
    return e


def cross_entropy_index(xp, x, t, ignore_index, mean, rows=None):
    """Fused log-softmax + NLL of ``x`` ``(N, C)`` at class indices ``t`` ``(N,)``, summed or averaged over
    the rows not ignored.  Returns the loss, the per-row weights ``(N, 1)`` (0 where ignored, ``1/count``
    for the mean), the targets with ignored ones as 0 ``(N,)``, the smallest and largest target kept (bounds
    check) and the log-probabilities ``(N, C)``, from which :func:`cross_entropy_index_backward` makes the
    gradient as PyTorch's log-softmax backward does.  ``rows``: a faster log-softmax of a matrix's rows (the
    CPU backend's float32 form).  A stack ``x`` ``(..., N, C)``, ``t`` ``(..., N)`` (vmap's batch in front)
    gives one loss per sample ``(...)``, each summed or averaged over its own rows (NaN for a mean over no
    row, its gradient 0), the one-hot targets ``(..., N, C)`` in place of the indices, and last the gradient
    for a unit output gradient, ``(softmax(x) - onehot) * weights``."""
    c = x.shape[-1]
    keep = t != ignore_index
    every = bool(xp.all(keep))
    safe = t if every else xp.where(keep, t, 0)
    bounds = (int(xp.min(safe)), int(xp.max(safe))) if safe.size else (0, 0)
    if x.size == 0:
        logp = e = xp.zeros_like(x)
    elif rows is not None and x.ndim == 2:
        logp = rows(x)
    else:  # log_softmax and softmax as their kernels compute them, sharing exp(x - max) and its sum
        s = x - xp.max(x, axis=-1, keepdims=True)
        e = xp.exp(s)
        total = xp.sum(e, axis=-1, keepdims=True)
        s -= xp.log(total)
        logp = s
    idx = safe if 0 <= bounds[0] and bounds[1] < c else xp.clip(safe, 0, c - 1)  # (out of bounds: checked after)
    # each row's entry at its target, taken from the flat array (take_along_axis costs ~3 us of Python)
    picked = xp.reshape(xp.take(xp.reshape(logp, (-1,)), xp.reshape(idx, (-1,)) + xp.arange(0, logp.size, c)),
                        idx.shape) if c else xp.zeros(idx.shape, dtype=x.dtype)
    if not every:  # an ignored row's entry may be -inf (a masked logit): it must not make 0 * inf = NaN
        picked = xp.where(keep, picked, 0)
    if x.ndim > 2:
        onehot = (xp.arange(c) == safe[..., None]).astype(x.dtype)
        loss, coef = cross_entropy_stack(xp, x, keep, every, picked, mean)
        if x.size:
            e /= total
        e -= onehot
        if not (every and coef == 1):
            e *= coef
        return loss, coef, onehot, bounds, e
    count = int(keep.sum())
    scale = (1.0 / count if count else 0.0) if mean else 1.0
    coef = keep.astype(x.dtype) * x.dtype.type(scale)
    loss = -xp.sum(picked * coef) + x.dtype.type(0)  # a zero loss is +0.0, as PyTorch's sum from zero gives
    if mean and not count:  # every target ignored: the mean is 0/0 (NaN), its gradient 0 as in PyTorch
        loss = loss + x.dtype.type(math.nan)
    return loss, coef[:, None], idx, bounds, logp


def cross_entropy_stack(xp, x, keep, every, picked, mean):
    """Per-sample losses ``(...)`` of a stack and the weight of each row, ``(..., N, 1)`` or one number
    (0-dim) when every row is kept."""
    dtype = x.dtype
    if every:  # each sample's rows all kept: one weight, 1 or 1 / N
        n = picked.shape[-1]
        scale = 1.0 / n if mean and n else 1.0
        loss = -(picked[..., 0] if n == 1 else xp.sum(picked, axis=-1))
        if scale != 1.0:
            loss *= dtype.type(scale)
        elif mean and not n:
            loss = loss + dtype.type(math.nan)
        return loss, xp.asarray(scale, dtype=dtype)
    w = keep.astype(dtype)
    if not mean:
        return -xp.sum(picked * w, axis=-1), w[..., None]
    count = xp.sum(w, axis=-1, keepdims=True)
    empty = count == 0
    w = w / xp.where(empty, xp.ones_like(count), count)
    loss = -xp.sum(picked * w, axis=-1)
    if bool(xp.any(empty)):
        loss = xp.where(empty[..., 0], xp.asarray(math.nan, dtype=dtype), loss)
    return loss, w[..., None]


def cross_entropy_index_backward(s, logp, t, coef, g):
    """``(exp(logp) - onehot(t)) * coef * g``: the gradient of :func:`cross_entropy_index` with respect to its
    input ``(N, C)``, from the log-probabilities ``logp`` and targets ``t`` ``(N,)`` it returned (a 0-dim
    ``g``).  Where ``xp`` writes in place, each row's target entry is lowered by one through the flat array
    (no one-hot array)."""
    xp = s.xp
    e = xp.exp(logp)
    c = e.shape[-1]
    if s.writes_out and e.size:
        e = xp.ascontiguousarray(e)  # (exp of a transposed input's log-probabilities is not: no flat view)
        flat = e.reshape(-1)
        flat[t + xp.arange(0, e.size, c)] -= 1
    else:
        e = e - (xp.arange(c) == t[:, None]).astype(e.dtype)
    e *= coef * g
    return e


def softplus(xp, x, beta, threshold):
    bx = x * beta
    return xp.where(bx > threshold, x, xp.logaddexp(0, bx) / beta).astype(x.dtype, copy=False)


def neg_part(xp, x):  # min(x, 0): keeps exp() of the branch where() drops finite
    return xp.minimum(x, xp.zeros_like(x))


def elu(xp, x, alpha, scale, input_scale):
    # PyTorch's elu (elu, selu and celu): scale x above 0, alpha scale (exp(input_scale x) - 1) below
    return xp.where(x > 0, x * scale, xp.expm1(neg_part(xp, x) * input_scale) * (alpha * scale))


def leaky_relu(xp, x, slope):  # slope: a number, or an array of slopes (rrelu's noise)
    return xp.where(x > 0, x, x * slope)


def threshold(xp, x, th, value):
    return xp.where(x <= th, xp.full_like(x, value), x)  # PyTorch's test: a NaN threshold or input keeps x


def hardsigmoid(xp, x):
    return xp.clip(x + 3, 0, 6) / 6


def silu(xp, x):
    return x / (1 + xp.exp(-x))


def _gelu_erf(erf, x):
    return x * 0.5 * (1 + erf(x * (1.0 / math.sqrt(2.0))))


def gelu(xp, erf, x, approximate):
    """``erf``: the error function for ``xp``'s arrays (bound by :func:`kernels`).  The CPU backend has a faster
    float32 form (``ember_cpu_numpy.fastmath``)."""
    if approximate == "tanh":
        return x * 0.5 * (1 + xp.tanh((x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)))
    return _gelu_erf(erf, x)


def gelu_backward(xp, erf, g, x, approximate):
    """``g * gelu'(x)``: gelu's gradient in one kernel, the formula of its vjp (``ember.ops.nn``) on arrays.  The
    CPU backend has a faster float32 form (``ember_cpu_numpy.fastmath``)."""
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        t = xp.tanh((x + x * x * x * 0.044715) * k)
        return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * k * (x * x * (3 * 0.044715) + 1))
    cdf = (erf(x * (1.0 / math.sqrt(2.0))) + 1) * 0.5
    return g * (cdf + x * xp.exp(x * x * -0.5) * (1.0 / math.sqrt(2.0 * math.pi)))


def log_sigmoid(xp, x):
    return neg_part(xp, x) - xp.log1p(xp.exp(-xp.abs(x)))


def softshrink(xp, x, lambd):
    return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, xp.zeros_like(x)))


def hardshrink(xp, x, lambd):
    return xp.where(xp.abs(x) > lambd, x, xp.zeros_like(x))


def glu(xp, x, axis):
    a, b = xp.split(x, 2, axis=axis)
    return a / (1 + xp.exp(-b))


def hardswish(xp, x):
    return x * hardsigmoid(xp, x)


def mish(xp, x):
    return x * xp.tanh(softplus(xp, x, 1.0, 20.0))


def _keep_low_precision(fn):
    """``fn`` whose result keeps a low-precision float input's dtype: ml_dtypes' bfloat16 times a Python float is
    float32, so a formula with float constants widens it (kind "V": ml_dtypes' types), and SciPy's erf of float16
    is float64 (gelu)."""
    def kernel(x, *args):
        out = fn(x, *args)
        return out.astype(x.dtype) if out.dtype != x.dtype and x.dtype.kind in "Vf" else out

    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


def kernels(xp, strategy=None) -> dict:
    """The activation and softmax kernels bound for ``xp``."""
    s = strategy or Strategy(xp)
    table = bind(s, {"softmax": softmax, "softmax_backward": softmax_backward, "log_softmax": log_softmax,
                     "cross_entropy_index_backward": cross_entropy_index_backward})
    table.update(bind(xp, {
        "cross_entropy_index": cross_entropy_index,
        "nn_softplus": softplus, "nn_elu": elu, "nn_leaky_relu": leaky_relu, "nn_threshold": threshold,
        "nn_hardsigmoid": hardsigmoid, "nn_hardswish": hardswish, "nn_silu": silu, "nn_mish": mish,
        "nn_log_sigmoid": log_sigmoid, "nn_softshrink": softshrink, "nn_hardshrink": hardshrink,
        "nn_prelu": leaky_relu, "nn_glu": glu}))
    table["nn_gelu"] = partial(gelu, xp, _native(xp, "erf") or fallbacks(xp)["erf"])
    table["nn_gelu"].__name__ = "gelu"
    table["nn_gelu_backward"] = partial(gelu_backward, xp, table["nn_gelu"].args[1])
    table["nn_gelu_backward"].__name__ = "gelu_backward"
    return {name: _keep_low_precision(fn) if name.startswith("nn_") else fn for name, fn in table.items()}
