"""Resampling kernels (``interpolate``) and the source index of each position of a padded dimension: the
weight matrices and index vectors that ``ember.ops`` applies with one product or gather per dimension."""
from __future__ import annotations

import math

from .strategy import bind


def _cast(xp, a, dtype):
    """``a`` as ``dtype`` (the array API's ``xp.astype``, else the array's method)."""
    return xp.astype(a, dtype) if hasattr(xp, "astype") else a.astype(dtype)


def ratio(o, s, scale):
    return s / o if scale is None else 1.0 / scale


def pad_index(xp, size, lo, hi, mode):
    """The source position of each of the ``lo + size + hi`` positions of a dimension padded by ``mode``
    ('reflect': mirrored without repeating the edge, 'replicate': the edge repeated, 'circular': wrapped)."""
    i = xp.arange(-lo, size + hi, dtype=xp.int64)
    if mode == "replicate":
        return xp.minimum(xp.maximum(i, xp.zeros_like(i)), xp.full(i.shape, size - 1, dtype=xp.int64))
    if mode == "circular":
        return i % size
    period = max(2 * (size - 1), 1)
    j = xp.abs(i) % period
    return xp.where(j >= size, period - j, j)


def resize_nearest_index(xp, o, s, scale, exact=False):
    """PyTorch's nearest-mode source of each of ``o`` output positions along a dimension of size ``s``
    (``exact``: 'nearest-exact', sampling at pixel centres)."""
    at = xp.arange(o, dtype=xp.float64)
    src = xp.floor((at + 0.5 if exact else at) * ratio(o, s, scale))
    return xp.minimum(_cast(xp, src, xp.int64), xp.asarray(s - 1, dtype=xp.int64))


def _taps_matrix(xp, o, s, idx, w):
    """The ``(o, s)`` matrix with ``w[:, j]`` added at ``idx[:, j]`` (one tap at a time: a row's taps may
    share a clamped source)."""
    m = xp.zeros((o, s), dtype=xp.float64)
    rows = xp.arange(o)
    for j in range(idx.shape[1]):
        m[rows, idx[:, j]] = m[rows, idx[:, j]] + w[:, j]
    return m


def _cubic(xp, x, a):
    x = xp.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return xp.where(x <= 1, near, xp.where(x < 2, far, xp.zeros_like(x)))


def resize_cubic_weights(xp, o, s, scale, align_corners):
    """The ``(o, s)`` float64 matrix of PyTorch's bicubic weights (A = -0.75, edges replicated)."""
    at = xp.arange(o, dtype=xp.float64)
    if align_corners:
        src = at * ((s - 1) / (o - 1) if o > 1 else 0.0)
    else:
        src = (at + 0.5) * ratio(o, s, scale) - 0.5
    i0 = xp.floor(src)
    t = src - i0
    offs = xp.arange(-1, 3, dtype=xp.float64)
    idx = xp.clip(_cast(xp, i0[:, None] + offs[None, :], xp.int64), 0, s - 1)
    w = _cubic(xp, t[:, None] - offs[None, :], -0.75)
    return _taps_matrix(xp, o, s, idx, w)


def resize_aa_weights(xp, o, s, scale, align_corners, cubic):
    """The ``(o, s)`` float64 matrix of PyTorch's antialiased bilinear or bicubic resampling (the filter
    widened by the downscaling factor, each row normalised)."""
    if align_corners:
        sc = (s - 1) / (o - 1) if o > 1 else 0.0
    else:
        sc = ratio(o, s, scale)
    size = 4 if cubic else 2
    support = size * 0.5 * sc if sc >= 1.0 else size * 0.5
    inv = 1.0 / sc if sc >= 1.0 else 1.0
    centre = sc * (xp.arange(o, dtype=xp.float64) + 0.5)
    lo = xp.maximum(_cast(xp, xp.trunc(centre - support + 0.5), xp.int64), 0)
    hi = xp.minimum(_cast(xp, xp.trunc(centre + support + 0.5), xp.int64), s)
    k = int(math.ceil(2 * support)) + 2
    j = xp.arange(k, dtype=xp.int64)
    idx = lo[:, None] + j[None, :]
    valid = idx < hi[:, None]
    x = (_cast(xp, idx, xp.float64) - centre[:, None] + 0.5) * inv
    w = _cubic(xp, x, -0.5) if cubic else xp.maximum(1 - xp.abs(x), xp.zeros_like(x))
    w = xp.where(valid, w, xp.zeros_like(w))
    total = xp.sum(w, axis=1, keepdims=True)
    w = w / xp.where(total == 0, xp.ones_like(total), total)
    return _taps_matrix(xp, o, s, xp.minimum(idx, s - 1), w)


def resize_linear_weights(xp, o, s, scale, align_corners):
    """The ``(o, s)`` float64 matrix of PyTorch's linear interpolation weights along one dimension."""
    at = xp.arange(o, dtype=xp.float64)
    if align_corners:
        src = at * ((s - 1) / (o - 1) if o > 1 else 0.0)
    else:
        src = xp.maximum((at + 0.5) * ratio(o, s, scale) - 0.5, xp.zeros((), dtype=xp.float64))
    last = xp.asarray(s - 1, dtype=xp.int64)
    i0 = xp.minimum(_cast(xp, xp.floor(src), xp.int64), last)
    i1 = xp.minimum(i0 + 1, last)
    lam = src - _cast(xp, i0, xp.float64)
    rows = xp.arange(o)
    m = xp.zeros((o, s), dtype=xp.float64)
    m[rows, i1] = lam
    m[rows, i0] = m[rows, i0] + (1 - lam)  # at the last source (i0 == i1) the two weights add up
    return m


def kernels(xp, strategy=None) -> dict:
    """The resampling kernels bound for ``xp``."""
    return bind(xp, {"pad_index": pad_index, "resize_nearest_index": resize_nearest_index,
                     "resize_linear_weights": resize_linear_weights, "resize_cubic_weights": resize_cubic_weights,
                     "resize_aa_weights": resize_aa_weights})
