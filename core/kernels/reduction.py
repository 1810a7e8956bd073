"""Reduction kernels (the basic ``sum``/``mean`` live in ``base``)."""
from __future__ import annotations


def kernels(xp) -> dict:
    def prod(x, axis=None, keepdims=False):
        return xp.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)  # small ints stay small

    def amax(x, axis=None, keepdims=False):
        return xp.max(x, axis=axis, keepdims=keepdims)

    def amin(x, axis=None, keepdims=False):
        return xp.min(x, axis=axis, keepdims=keepdims)

    def argmax(x, axis=None, keepdims=False):
        return xp.argmax(x, axis=axis, keepdims=keepdims)

    def argmin(x, axis=None, keepdims=False):
        return xp.argmin(x, axis=axis, keepdims=keepdims)

    def var(x, axis=None, correction=1, keepdims=False):
        return xp.var(x, axis=axis, ddof=correction, keepdims=keepdims)

    def cumsum(x, axis):
        return xp.cumsum(x, axis=axis, dtype=x.dtype)

    def cumprod(x, axis):
        return xp.cumprod(x, axis=axis, dtype=x.dtype)

    def all_(x, axis=None, keepdims=False):
        return xp.all(x, axis=axis, keepdims=keepdims)

    def any_(x, axis=None, keepdims=False):
        return xp.any(x, axis=axis, keepdims=keepdims)

    def logsumexp(x, axis, keepdims):
        m = xp.max(x, axis=axis, keepdims=True)
        m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
        out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
        return out if keepdims else xp.squeeze(out, axis=axis)

    def take_along(x, idx, axis):
        return xp.take_along_axis(x, idx, axis=axis)

    def sort(x, axis, descending, stable):
        if descending:  # the ascending sort of the reversed axis, read backwards: stable, NaN first (largest)
            n = x.shape[axis]
            idx = (n - 1) - xp.flip(xp.argsort(xp.flip(x, axis=axis), axis=axis, kind="stable"), axis=axis)
        else:
            idx = xp.argsort(x, axis=axis, kind="stable")
        return xp.take_along_axis(x, idx, axis=axis), idx

    def cumextreme(x, axis, largest):
        """Running max (or min) along ``axis`` and the index where it was last reached (NaN propagates)."""
        ufunc = xp.maximum if largest else xp.minimum
        vals = ufunc.accumulate(x, axis=axis)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        at = xp.reshape(xp.arange(x.shape[axis]), tuple(shape))
        hit = (x == vals) | (x != x)
        return vals, xp.maximum.accumulate(xp.where(hit, at, 0), axis=axis)

    def count_nonzero(x, axis=None):
        return xp.count_nonzero(x, axis=axis)

    return {"prod": prod, "amax": amax, "amin": amin, "argmax": argmax, "argmin": argmin, "var": var,
            "cumsum": cumsum, "cumprod": cumprod, "all": all_, "any": any_, "logsumexp": logsumexp,
            "take_along": take_along, "sort": sort, "count_nonzero": count_nonzero,
            "cumextreme": cumextreme}
