"""Reduction kernels: sums, extremes, statistics, cumulative scans, counts and histograms."""
from __future__ import annotations

import math

from .strategy import takes_out


TINY_LSE, TINY_LSE_AXIS = 128, 32
"""Sizes up to which ``logsumexp`` reduces by ``logaddexp`` (elements in all, along the axis): it costs ~30 ns an
element where the shifted sum's five passes cost ~6 us in all; float32 reduces in float64, within an ulp of the
correctly rounded result."""

QUIET = {"mean", "var", "logsumexp", "prod", "cumprod", "sum", "sum_to", "cumsum",  # 0/0 of empty slices, overflow,
         "logcumsumexp", "logsumexp_backward"}  # inf - inf


def scan(xp, op, x, axis):
    """The inclusive scan of ``x`` along ``axis`` under ``op``, an associative elementwise function of two
    arrays (``xp.maximum``, ``xp.minimum``): ``op.accumulate`` for array libraries that lack it (CuPy's
    maximum and minimum), by doubling (Hillis-Steele: ceil(log2 n) rounds of ``op`` on shifted slices).
    For maximum and minimum it gives what ``accumulate`` gives, NaN propagation included."""
    join = getattr(xp, "concat", None) or xp.concatenate
    y = xp.moveaxis(x, axis, 0)
    n, shift = y.shape[0], 1
    if n < 2:
        y = op(y, y)  # a fresh array, as every kernel returns
    while shift < n:
        y = join((y[:shift, ...], op(y[shift:, ...], y[:n - shift, ...])), axis=0)
        shift *= 2
    return xp.moveaxis(y, 0, axis)


def kernels(xp, strategy=None) -> dict:
    ufuncs = takes_out(xp)  # the ufuncs' own reductions (without np.max's argument handling) and in-place writes
    top, bottom, add = (xp.maximum.reduce, xp.minimum.reduce, xp.add.reduce) if ufuncs else (xp.max, xp.min, xp.sum)
    pairwise = getattr(getattr(xp, "logaddexp", None), "reduce", None) if ufuncs else None
    pairwise_dtypes = {xp.dtype(xp.float32), xp.dtype(xp.float64)} if pairwise is not None else ()

    def sum_(x, axis=None, keepdims=False, dtype=None):
        return xp.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)

    def mean(x, axis=None, keepdims=False, dtype=None):
        return xp.mean(x, axis=axis, keepdims=keepdims, dtype=dtype)

    def sum_to(x, shape):
        # reduce x to `shape` by summing the dimensions broadcasting added
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and x.shape[i + lead] != 1)
        if axes:
            x = add(x, axis=axes, keepdims=True)
        return xp.reshape(x, shape) if lead else x

    def prod(x, axis=None, keepdims=False):
        return xp.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)  # small ints stay small

    def amax(x, axis=None, keepdims=False):
        return top(x, axis=axis, keepdims=keepdims)

    def amin(x, axis=None, keepdims=False):
        return bottom(x, axis=axis, keepdims=keepdims)

    def argmax(x, axis=None, keepdims=False):
        return xp.argmax(x, axis=axis, keepdims=keepdims)

    def argmin(x, axis=None, keepdims=False):
        return xp.argmin(x, axis=axis, keepdims=keepdims)

    def var(x, axis=None, correction=1, keepdims=False):
        n = 1
        for a in (range(x.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))):
            n *= x.shape[a]
        if n - correction > 0:
            return xp.var(x, axis=axis, ddof=correction, keepdims=keepdims)
        # no degrees of freedom left: inf or NaN (IEEE), without NumPy's warning
        d = x - xp.sum(x, axis=axis, keepdims=True) / x.dtype.type(n)
        s = xp.sum((d * xp.conj(d)).real if xp.iscomplexobj(d) else d * d, axis=axis, keepdims=keepdims)
        return s / s.dtype.type(max(n - correction, 0))

    def cumsum(x, axis):
        if getattr(x.dtype, "itemsize", 0) == 2 and getattr(x.dtype, "kind", "") in ("f", "V"):
            # float16, bfloat16: accumulate in float32 (PyTorch)
            return xp.cumsum(x, axis=axis, dtype=xp.float32).astype(x.dtype)
        return xp.cumsum(x, axis=axis, dtype=x.dtype)

    def cumprod(x, axis):
        return xp.cumprod(x, axis=axis, dtype=x.dtype)

    def all_(x, axis=None, keepdims=False):
        return xp.all(x, axis=axis, keepdims=keepdims)

    def any_(x, axis=None, keepdims=False):
        return xp.any(x, axis=axis, keepdims=keepdims)

    def logsumexp(x, axis, keepdims):
        if pairwise is not None and 0 < x.size <= TINY_LSE and len(axis) == 1 and x.dtype in pairwise_dtypes and \
                x.shape[axis[0]] <= TINY_LSE_AXIS:
            # a few elements: one ufunc reduce, log(e^a + e^b) from the larger term, which meets infinities and
            # NaN as PyTorch's shifted sum does (a third of the passes' fixed costs on a 7x7 matrix); float32 in
            # float64, rounded once (its own rounding at each step would drift a few ulp along a row)
            if x.dtype == xp.float32:
                return pairwise(x.astype(xp.float64), axis=axis[0], keepdims=keepdims).astype(xp.float32)
            return pairwise(x, axis=axis[0], keepdims=keepdims)
        if x.size == 0:  # log of an empty sum: -inf
            return xp.log(xp.sum(xp.exp(x), axis=axis, keepdims=keepdims))
        m = top(x, axis=axis, keepdims=True)
        if not math.isfinite(float(add(m, axis=None))):  # a row of infinities or NaN is shifted by 0, so that
            m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))  # it gives -inf, inf or NaN as PyTorch does
        e = x - m
        e = xp.exp(e, out=e) if ufuncs and e.ndim else xp.exp(e)
        out = xp.log(add(e, axis=axis, keepdims=True))
        out += m
        return out if keepdims else xp.squeeze(out, axis=axis)

    def logsumexp_backward(g, x, y, axis, keepdims):
        """``g * exp(x - y)``: logsumexp's gradient from its output ``y``, ``g`` and ``y`` broadcast over the
        reduced ``axis`` (kept as size 1 unless ``keepdims``)."""
        if not keepdims:
            kept = tuple([1 if i in axis else n for i, n in enumerate(x.shape)])
            g, y = (g.reshape(kept), y.reshape(kept)) if ufuncs else (xp.reshape(g, kept), xp.reshape(y, kept))
        e = x - y
        if ufuncs and e.ndim:
            xp.exp(e, out=e)
            e *= g
            return e
        return xp.exp(e) * g

    native_scan = [None]  # whether xp's maximum/minimum have a working .accumulate (found on first use)

    def running(ufunc, x, axis):
        if native_scan[0] is not False:
            try:
                out = ufunc.accumulate(x, axis=axis)
            except (AttributeError, NotImplementedError):  # CuPy declares .accumulate and raises
                native_scan[0] = False
            else:
                native_scan[0] = True
                return out
        return scan(xp, ufunc, x, axis)

    def cumextreme(x, axis, largest):
        """Running max (or min) along ``axis`` and the index where it was last reached (NaN propagates)."""
        ufunc = xp.maximum if largest else xp.minimum
        vals = running(ufunc, x, axis)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        at = xp.reshape(xp.arange(x.shape[axis]), tuple(shape))
        hit = (x == vals) | (x != x)
        return vals, running(xp.maximum, xp.where(hit, at, 0), axis)

    astype = getattr(xp, "astype", None) or (lambda a, dtype: a.astype(dtype))

    def histc(x, bins, lo, hi):
        """Counts of ``x`` in ``bins`` equal bins over ``[lo, hi]`` (the last closed), in ``x``'s dtype, as
        PyTorch computes them: ``trunc((x - lo) * bins / (hi - lo))`` in that dtype."""
        x = xp.reshape(x, (-1,))
        lo, hi = xp.asarray(lo, dtype=x.dtype), xp.asarray(hi, dtype=x.dtype)
        inside = xp.logical_and(x >= lo, x <= hi)  # NaN is outside
        pos = astype(xp.where(inside, (x - lo) * bins / (hi - lo), xp.zeros_like(x)), xp.int64)
        pos = xp.where(inside, xp.minimum(pos, bins - 1), bins)  # outside: one extra bin, dropped below
        return astype(xp.bincount(pos, minlength=bins + 1)[:bins], x.dtype)

    def logcumsumexp(x, axis):
        acc = getattr(getattr(xp, "logaddexp", None), "accumulate", None)
        if acc is not None:
            return acc(x, axis=axis)
        # a log-space scan by doubling (exact where exp would underflow): log2(n) rounds of logaddexp
        join = getattr(xp, "concat", None) or xp.concatenate
        y = xp.moveaxis(x, axis, 0)
        n, shift = y.shape[0], 1
        while shift < n:
            pad = xp.full((shift,) + tuple(y.shape[1:]), -math.inf, dtype=y.dtype)
            y = xp.logaddexp(y, join((pad, y[:n - shift, ...]), axis=0))
            shift *= 2
        return xp.moveaxis(y, 0, axis)

    def histogram(x, edges, weight, density):
        """Counts (or weights) of ``x`` in the bins between ``edges`` (the last bin closed), in ``x``'s dtype."""
        x = xp.reshape(x, (-1,))
        bins = edges.shape[0] - 1
        pos = xp.searchsorted(edges, x, side="right") - 1
        pos = xp.where(x == edges[-1], bins - 1, pos)  # the last edge belongs to the last bin
        inside = xp.logical_and(x >= edges[0], x <= edges[-1])  # NaN is outside
        pos = xp.where(inside, pos, bins)
        w = None if weight is None else xp.reshape(weight, (-1,))
        hist = astype(xp.bincount(pos, weights=w, minlength=bins + 1)[:bins], x.dtype)
        if density:
            hist = hist / (xp.sum(hist) * (edges[1:] - edges[:-1]))
        return astype(hist, x.dtype)

    def histogramdd(points, edges, weight, density):
        """Counts of ``points`` (``[N, D]``) in the grid of bins between ``edges`` (one array per dimension)."""
        sizes = [e.shape[0] - 1 for e in edges]
        flat = xp.zeros(points.shape[0], dtype=xp.int64)
        inside = points[:, 0] == points[:, 0] if points.shape[1] else xp.zeros(points.shape[0], dtype=xp.int64) == 0
        for i, e in enumerate(edges):
            x = points[:, i]
            pos = xp.searchsorted(e, x, side="right") - 1
            pos = xp.where(x == e[-1], sizes[i] - 1, pos)
            inside = xp.logical_and(inside, xp.logical_and(x >= e[0], x <= e[-1]))
            flat = flat * sizes[i] + astype(xp.clip(pos, 0, sizes[i] - 1), xp.int64)
        total = 1
        for s in sizes:
            total *= s
        flat = xp.where(inside, flat, total)
        w = weight
        hist = xp.bincount(flat, weights=w, minlength=total + 1)[:total]
        hist = xp.reshape(astype(hist, points.dtype), tuple(sizes))
        if density:
            vol = None
            for i, e in enumerate(edges):
                shape = [1] * len(edges)
                shape[i] = sizes[i]
                wid = xp.reshape(e[1:] - e[:-1], tuple(shape))
                vol = wid if vol is None else vol * wid
            hist = hist / (xp.sum(hist) * vol)
        return astype(hist, points.dtype)

    def bincount(x, weights, minlength):
        return xp.bincount(x, weights=weights, minlength=minlength)

    def count_nonzero(x, axis=None):
        return xp.count_nonzero(x, axis=axis)

    return {"sum": sum_, "mean": mean, "sum_to": sum_to, "prod": prod, "amax": amax, "amin": amin,
            "argmax": argmax, "argmin": argmin, "var": var, "cumsum": cumsum, "cumprod": cumprod, "all": all_,
            "any": any_, "logsumexp": logsumexp, "count_nonzero": count_nonzero, "cumextreme": cumextreme,
            "logsumexp_backward": logsumexp_backward, "histc": histc, "bincount": bincount,
            "logcumsumexp": logcumsumexp, "histogram": histogram, "histogramdd": histogramdd}
