"""Neural-network kernels: convolution and pooling by im2col through strided views and one GEMM,
softmax family, and fused activations.

Spatial arguments are tuples with one entry per spatial dimension (1-D, 2-D, 3-D alike);
``padding`` is a tuple of ``(low, high)`` pairs.  Convolution weights are ``(O, C/groups, *k)``.
"""
from __future__ import annotations

import itertools
import math


def kernels(xp) -> dict:
    as_strided = xp.lib.stride_tricks.as_strided

    def pad(x, padding, value=0):
        if not any(lo or hi for lo, hi in padding):
            return x
        return xp.pad(x, ((0, 0),) * (x.ndim - len(padding)) + tuple(padding), constant_values=value)

    def windows(x, k, stride, dilation):
        """A view ``(N, C, *out, *k)`` of every sliding window of padded ``x`` ``(N, C, *S)``."""
        st = x.strides
        sp = x.shape[2:]
        out = tuple((s - d * (kk - 1) - 1) // s_ + 1 for s, kk, s_, d in zip(sp, k, stride, dilation))
        strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(len(k))) + \
            tuple(st[2 + i] * dilation[i] for i in range(len(k)))
        return as_strided(x, x.shape[:2] + out + tuple(k), strides, writeable=False)

    def im2col(x, k, stride, padding, dilation, groups):
        """``(N, G, C/G*K, L)`` columns of unrolled windows: one copy of the strided view, output positions last."""
        v = windows(pad(x, padding), k, stride, dilation)
        n, c = x.shape[:2]
        d = len(k)
        osp = v.shape[2:2 + d]
        v = v.reshape((n, groups, c // groups) + osp + tuple(k))
        perm = (0, 1, 2) + tuple(range(3 + d, 3 + 2 * d)) + tuple(range(3, 3 + d))
        cols = xp.ascontiguousarray(v.transpose(perm))
        return cols.reshape(n, groups, -1, math.prod(osp)), osp

    def conv_forward(x, w, b, stride, padding, dilation, groups):
        # out[n, g] = W[g] @ cols[n, g]: a batched GEMM whose result is already (N, O, L)
        k = w.shape[2:]
        cols, osp = im2col(x, k, stride, padding, dilation, groups)
        wm = w.reshape(groups, w.shape[0] // groups, -1)
        out = (wm @ cols).reshape((x.shape[0], w.shape[0]) + osp)
        if b is not None:
            out += b.reshape((1, -1) + (1,) * len(osp))
        return out, cols

    def col2im(cols, x_shape, k, stride, padding, dilation, osp):
        """Sum window columns ``(N, G, Cg*K, L)`` back into an input-shaped array, one slice-add per kernel offset."""
        n, g = cols.shape[:2]
        c = x_shape[1]
        cols = cols.reshape((n, g, c // g) + tuple(k) + tuple(osp))
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(x_shape[2:], padding))
        gx = xp.zeros((n, g, c // g) + padded, dtype=cols.dtype)
        for off in itertools.product(*[range(kk) for kk in k]):
            sl = tuple(slice(o * dd, o * dd + s * (m - 1) + 1, s) for o, dd, s, m in zip(off, dilation, stride, osp))
            gx[(Ellipsis,) + sl] += cols[(slice(None),) * 3 + off]
        gx = gx.reshape((n, c) + padded)
        crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(x_shape[2:], padding))
        return gx[(Ellipsis,) + crop]

    def conv_input_grad(g, w, x_shape, stride, padding, dilation, groups):
        k = w.shape[2:]
        n, o = g.shape[:2]
        wm = w.reshape(groups, o // groups, -1)
        cols = wm.transpose(0, 2, 1) @ g.reshape(n, groups, o // groups, -1)
        return xp.ascontiguousarray(col2im(cols, x_shape, k, stride, padding, dilation, g.shape[2:]))

    def conv_weight_grad(x, g, w_shape, stride, padding, dilation, groups, cols=None):
        if cols is None:
            cols, _ = im2col(x, w_shape[2:], stride, padding, dilation, groups)
        n, o = g.shape[:2]
        gm = g.reshape(n, groups, o // groups, -1)
        return (gm @ cols.transpose(0, 1, 3, 2)).sum(0).reshape(w_shape)

    # ---------------------------------------------------------------- pooling
    def offsets(k):
        return list(itertools.product(*[range(kk) for kk in k]))

    def max_pool(x, k, stride, padding, dilation):
        """Max over windows, one elementwise pass per kernel offset (the first maximum wins, NaN propagates).

        Returns the maxima, PyTorch's flat indices into each (unpadded) input plane, and the winning offset.
        """
        lowest = -xp.inf if x.dtype.kind == "f" else xp.iinfo(x.dtype).min
        v = windows(pad(x, padding, lowest), k, stride, dilation)
        d = len(k)
        osp = v.shape[2:2 + d]
        best = arg = None
        for j, off in enumerate(offsets(k)):
            cur = v[(Ellipsis,) + off]
            if best is None:
                best, arg = xp.array(cur, copy=True), xp.zeros(cur.shape, dtype=xp.int64)
                continue
            m = (cur > best) | (cur != cur)
            best = xp.where(m, cur, best)
            arg = xp.where(m, j, arg)
        idx = xp.zeros(arg.shape, dtype=xp.int64)
        sp = x.shape[2:]
        for i in range(d):
            ki = (arg // math.prod(k[i + 1:])) % k[i]
            shape = [1] * (2 + d)
            shape[2 + i] = osp[i]
            pos = xp.arange(osp[i]).reshape(shape) * stride[i] - padding[i][0] + ki * dilation[i]
            idx += pos * math.prod(sp[i + 1:])
        return best, idx, arg

    def max_pool_backward(g, arg, x_shape, k, stride, padding, dilation):
        """Route each output gradient to its window's winning offset: one slice-add per kernel offset."""
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(x_shape[2:], padding))
        gx = xp.zeros(tuple(x_shape[:2]) + padded, dtype=g.dtype)
        zero = xp.zeros((), dtype=g.dtype)
        osp = g.shape[2:]
        for j, off in enumerate(offsets(k)):
            sl = tuple(slice(o * dd, o * dd + s * (m - 1) + 1, s) for o, dd, s, m in zip(off, dilation, stride, osp))
            gx[(Ellipsis,) + sl] += xp.where(arg == j, g, zero)
        crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(x_shape[2:], padding))
        return xp.ascontiguousarray(gx[(Ellipsis,) + crop])

    def flat_gather(x, idx):
        """``x[n, c].flat[idx[n, c]]`` for every plane."""
        n, c = idx.shape[:2]
        return xp.take_along_axis(x.reshape(n, c, -1), idx.reshape(n, c, -1), -1).reshape(idx.shape)

    def flat_scatter_add(v, idx, shape):
        """Zeros of ``shape`` with ``v`` added at flat plane positions ``idx`` (repeats accumulate)."""
        n, c = shape[:2]
        plane = math.prod(shape[2:])
        where = (idx.reshape(n * c, -1) + xp.arange(n * c).reshape(-1, 1) * plane).ravel()
        out = xp.bincount(where, weights=v.ravel(), minlength=n * c * plane)
        return out.astype(v.dtype, copy=False).reshape(shape)

    def adaptive_max_pool(x, osize):
        """Adaptive max pooling: windows of PyTorch's bounds, padded by repeating their last element."""
        sp = x.shape[2:]
        d = len(sp)
        gathered = x
        grids = []
        for i, (s, o) in enumerate(zip(sp, osize)):
            start = (xp.arange(o) * s) // o
            end = -((-(xp.arange(o) + 1) * s) // o)
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

    # ---------------------------------------------------------------- softmax family
    def softmax(x, axis):
        e = xp.exp(x - x.max(axis=axis, keepdims=True))
        e /= e.sum(axis=axis, keepdims=True)
        return e

    def log_softmax(x, axis):
        s = x - x.max(axis=axis, keepdims=True)
        s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
        return s

    # ---------------------------------------------------------------- activations
    def softplus(x, beta, threshold):
        bx = x * beta
        return xp.where(bx > threshold, x, xp.logaddexp(0, bx) / beta).astype(x.dtype, copy=False)

    return {
        "conv_forward": conv_forward, "conv_input_grad": conv_input_grad, "conv_weight_grad": conv_weight_grad,
        "max_pool": max_pool, "max_pool_backward": max_pool_backward, "adaptive_max_pool": adaptive_max_pool,
        "flat_gather": flat_gather, "flat_scatter_add": flat_scatter_add, "constant_pad": pad,
        "softmax": softmax, "log_softmax": log_softmax,
        "nn_softplus": softplus,
    }
