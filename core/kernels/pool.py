"""Pooling kernels: max pooling with PyTorch's indices and its backward, adaptive max pooling, the flat
gathers and scatters of the pooled indices, and constant padding."""
from __future__ import annotations

import math

from .conv import offsets, out_spatial
from .strategy import Strategy, bind, spans

POOL_CHUNK_BYTES = 1 << 20
"""Input bytes of the planes max pooling hands to one round of ufunc calls: its intermediate stays in cache."""


def pad(s, x, padding, value=0):
    """``x`` padded on its trailing axes (``padding``: a (low, high) pair each) with ``value``."""
    if not any(lo or hi for lo, hi in padding):
        return x
    return s.xp.pad(x, ((0, 0),) * (x.ndim - len(padding)) + tuple(padding), constant_values=value)


def windows(s, x, k, stride, dilation):
    """A view ``(N, C, *out, *k)`` of every sliding window of padded ``x`` ``(N, C, *S)``."""
    st = x.strides
    out = out_spatial(x.shape[2:], k, stride, dilation)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(len(k))) + \
        tuple(st[2 + i] * dilation[i] for i in range(len(k)))
    return s.xp.lib.stride_tricks.as_strided(x, x.shape[:2] + out + tuple(k), strides)


def pool_windows(s, x, k, stride, padding, dilation):
    xp = s.xp
    lowest = xp.iinfo(x.dtype).min if x.dtype.kind in "iu" else -xp.inf  # bfloat16 is kind "V"
    return windows(s, pad(s, x, padding, lowest), k, stride, dilation)


def max_pool(s, x, k, stride, padding, dilation):
    """Max over windows (NaN propagates).  With a block runner one spatial axis at a time (the max over a box is
    the max over each of its sides in turn): per axis a copy and one in-place ``maximum`` per further
    kernel offset, each over the output positions whose window element at that offset lies inside the
    input, so the padding is never built; the planes in cache-sized chunks on the runner, into allocated
    buffers.  Elsewhere one ``maximum`` pass per kernel offset over the padded input's windows."""
    xp = s.xp
    if s.blocked and x.size:
        return separable_max_pool(s, x, k, stride, padding, dilation)
    v = pool_windows(s, x, k, stride, padding, dilation)
    offs = offsets(k)
    best = xp.array(v[(Ellipsis,) + offs[0]], copy=True)
    for off in offs[1:]:
        xp.maximum(best, v[(Ellipsis,) + off], out=best)
    return best


def axis_taps(size, out, kk, s, d, lo):
    """For each kernel offset along one axis: ``(o0, o1, start)``, the output positions ``o0:o1`` whose
    window element at that offset lies inside the input, and that element's input index for ``o0``."""
    taps = []
    for j in range(kk):
        shift = j * d - lo                       # input index of output position o: o * s + shift
        o0 = max(0, -(shift // s) if shift < 0 else 0)
        o1 = min(out, (size - 1 - shift) // s + 1) if size - 1 - shift >= 0 else 0
        if o1 > o0:
            taps.append((o0, o1, o0 * s + shift))
    return taps


def separable_max_pool(s, x, k, stride, padding, dilation):
    xp = s.xp
    d = len(k)
    n, c = x.shape[:2]
    sp = tuple(x.shape[2:])
    outs = tuple((sz + lo + hi - dd * (kk - 1) - 1) // st + 1
                 for sz, kk, st, (lo, hi), dd in zip(sp, k, stride, padding, dilation))
    rows = xp.reshape(x, (n * c,) + sp)
    # intermediates: axis i reduced, the axes after it still whole
    shapes = [(n * c,) + outs[:i + 1] + sp[i + 1:] for i in range(d)]
    bufs = [s.empty(sh, x.dtype) for sh in shapes]
    taps = [axis_taps(sz, o, kk, st, dd, lo)
            for sz, o, kk, st, (lo, _), dd in zip(sp, outs, k, stride, padding, dilation)]
    lowest = None
    if any(t[0][0] > 0 or t[0][1] < o for t, o in zip(taps, outs)):  # the first tap misses an edge
        lowest = xp.iinfo(x.dtype).min if x.dtype.kind in "iu" else -xp.inf  # bfloat16 is kind "V"
    per = max(1, POOL_CHUNK_BYTES // max(1, math.prod(sp) * x.itemsize))
    maximum = xp.maximum

    def pool(chunk):
        src = rows[chunk]
        for i in range(d):
            dst = bufs[i][chunk]
            lead = (slice(None),) * (i + 1)
            st = stride[i]
            for j, (o0, o1, start) in enumerate(taps[i]):
                part = src[lead + (slice(start, start + st * (o1 - o0 - 1) + 1, st),)]
                target = dst[lead + (slice(o0, o1),)]
                if j == 0:
                    target[...] = part
                    if o0 > 0:
                        dst[lead + (slice(0, o0),)] = lowest
                    if o1 < outs[i]:
                        dst[lead + (slice(o1, None),)] = lowest
                else:
                    maximum(target, part, out=target)
            src = dst

    s.each(pool, spans(n * c, per), x.size)
    return xp.reshape(bufs[-1], (n, c) + outs)


def first_max_masks(s, x, best, k, stride, padding, dilation):
    """``(offset, mask)`` per kernel offset: where that offset holds its window's first maximum."""
    xp = s.xp
    v = pool_windows(s, x, k, stride, padding, dilation)
    free = xp.ones(best.shape, dtype=bool)
    for off in offsets(k):
        m = (v[(Ellipsis,) + off] == best) & free
        free &= ~m
        yield off, m


def max_pool_indices(s, x, best, k, stride, padding, dilation):
    """PyTorch's indices: the flat position of each window's first maximum in its (unpadded) input plane."""
    xp = s.xp
    d = len(k)
    osp = best.shape[2:]
    sp = x.shape[2:]
    idx = xp.zeros(best.shape, dtype=xp.int64)
    grid = 0
    for i in range(d):
        shape = [1] * (2 + d)
        shape[2 + i] = osp[i]
        grid = grid + (xp.arange(osp[i]).reshape(shape) * stride[i] - padding[i][0]) * math.prod(sp[i + 1:])
    for off, m in first_max_masks(s, x, best, k, stride, padding, dilation):
        shift = sum(o * dd * math.prod(sp[i + 1:]) for i, (o, dd) in enumerate(zip(off, dilation)))
        idx += m * shift
    return idx + grid


def tiles(x, k, stride, padding, dilation):
    """``x`` as ``(N, C, o1, k1, o2, k2, ...)`` when the windows tile it exactly (stride == kernel, no
    padding or dilation, sizes divisible), else None."""
    if tuple(stride) != tuple(k) or any(dd != 1 for dd in dilation) or any(lo or hi for lo, hi in padding) \
            or any(s % kk for s, kk in zip(x.shape[2:], k)):
        return None
    return x.reshape(tuple(x.shape[:2]) + sum(((s // kk, kk) for s, kk in zip(x.shape[2:], k)), ()))


def tiled_max_pool_backward(s, g, xt, best, k):
    """``max_pool_backward`` on tiling windows: each offset's share is assigned, not added, and no padding."""
    xp = s.xp
    gx = xp.empty(xt.shape, dtype=g.dtype)
    left = xp.array(g, copy=True)
    for off in offsets(k):
        idx = (slice(None), slice(None)) + sum(((slice(None), o) for o in off), ())
        sel = left * (xt[idx] == best)
        gx[idx] = sel
        left -= sel
    return gx


def max_pool_backward(s, g, x, best, k, stride, padding, dilation):
    """Each output gradient goes to its window's first maximum: one masked slice-add per kernel offset.

    ``left`` holds the gradient not yet placed, so a tie further on in the window receives nothing.
    """
    xp = s.xp
    xt = tiles(x, k, stride, padding, dilation)
    if xt is not None:
        return tiled_max_pool_backward(s, g, xt, best, k).reshape(x.shape)
    v = pool_windows(s, x, k, stride, padding, dilation)
    padded = tuple(sz + lo + hi for sz, (lo, hi) in zip(x.shape[2:], padding))
    gx = xp.zeros(tuple(x.shape[:2]) + padded, dtype=g.dtype)
    osp = g.shape[2:]
    left = xp.array(g, copy=True)
    for off in offsets(k):
        sel = left * (v[(Ellipsis,) + off] == best)
        sl = tuple(slice(o * dd, o * dd + st * (m - 1) + 1, st) for o, dd, st, m in zip(off, dilation, stride, osp))
        gx[(Ellipsis,) + sl] += sel
        left -= sel
    crop = tuple(slice(lo, lo + sz) for sz, (lo, _) in zip(x.shape[2:], padding))
    return xp.ascontiguousarray(gx[(Ellipsis,) + crop])


def flat_gather(s, x, idx):
    """``x[n, c].flat[idx[n, c]]`` for every plane."""
    xp = s.xp
    n, c = idx.shape[:2]
    return xp.take_along_axis(x.reshape(n, c, -1), idx.reshape(n, c, -1), -1).reshape(idx.shape)


def flat_scatter_add(s, v, idx, shape):
    """Zeros of ``shape`` with ``v`` added at flat plane positions ``idx`` (repeats accumulate)."""
    xp = s.xp
    n, c = shape[:2]
    plane = math.prod(shape[2:])
    where = (idx.reshape(n * c, idx.size // max(n * c, 1)) + xp.arange(n * c).reshape(-1, 1) * plane).ravel()
    out = xp.bincount(where, weights=v.ravel(), minlength=n * c * plane)
    return out.astype(v.dtype, copy=False).reshape(shape)


def adaptive_max_pool(s, x, osize):
    """Adaptive max pooling: windows of PyTorch's bounds, padded by repeating their last element."""
    xp = s.xp
    sp = x.shape[2:]
    d = len(sp)
    if 0 in osize or not x.size:  # (an empty output has no windows to reduce)
        empty = tuple(x.shape[:2]) + tuple(osize)
        return xp.empty(empty, dtype=x.dtype), xp.zeros(empty, dtype=xp.int64)
    gathered = x
    grids = []
    for i, (size, o) in enumerate(zip(sp, osize)):
        start = (xp.arange(o) * size) // o
        end = -((-(xp.arange(o) + 1) * size) // o)
        width = int((end - start).max())
        ix = xp.minimum(start[:, None] + xp.arange(width)[None, :], end[:, None] - 1)
        grids.append(ix)
        gathered = xp.take(gathered, ix.ravel(), axis=2 + 2 * i).reshape(
            gathered.shape[:2 + 2 * i] + (o, width) + gathered.shape[3 + 2 * i:])
    perm = (0, 1) + tuple(2 + 2 * i for i in range(d)) + tuple(3 + 2 * i for i in range(d))
    w = gathered.transpose(perm)
    flat = w.reshape(w.shape[:2 + d] + (-1,))
    am = flat.argmax(-1)
    out = xp.take_along_axis(flat, am[..., None], -1)[..., 0]
    idx = xp.zeros(am.shape, dtype=xp.int64)
    rest = am
    for i in reversed(range(d)):
        width = grids[i].shape[1]
        li = rest % width
        rest = rest // width
        shape = [1] * (2 + d)
        shape[2 + i] = osize[i]
        oi = xp.arange(osize[i]).reshape(shape)
        idx += grids[i][oi, li] * math.prod(sp[i + 1:])
    return out, idx


def kernels(xp, strategy=None) -> dict:
    """The pooling kernels bound for ``xp`` and the backend's hooks (``strategy``, plain by default)."""
    return bind(strategy or Strategy(xp), {
        "max_pool": max_pool, "max_pool_indices": max_pool_indices, "max_pool_backward": max_pool_backward,
        "adaptive_max_pool": adaptive_max_pool, "flat_gather": flat_gather, "flat_scatter_add": flat_scatter_add,
        "constant_pad": pad})
