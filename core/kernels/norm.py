"""Normalisation kernels: batch norm (training passes block by block, inference in one allocated buffer) and
layer norm."""
from __future__ import annotations

import operator

from .strategy import Strategy, bind

BN_BLOCK = 1 << 15
"""Elements of one block of batch norm's passes (see :func:`bn_blocks`)."""


def bn_blocks(s, x):
    """``x`` as ``(N, C, S)`` and as ``(N, C*S)``, and its samples cut into blocks of about :data:`BN_BLOCK`
    elements (one block without a block runner): a block's temporaries stay in cache between its ufunc calls,
    and per-block partial sums added in block order give the same statistics on any number of threads."""
    xp = s.xp
    x = xp.ascontiguousarray(x)
    x3 = xp.reshape(x, x.shape[:2] + (-1,))
    per = max(1, BN_BLOCK // max(1, x3.shape[1] * x3.shape[2])) if s.blocked else max(1, x3.shape[0])
    return x3, xp.reshape(x3, (x3.shape[0], -1)), [slice(i, i + per) for i in range(0, x3.shape[0], per)]


def bn_sums(s, body, blocks, c, dtype, size, k=1):
    """Run ``body(block, out)`` on every block (:meth:`.Strategy.each`), ``out`` a row of ``k`` per-channel
    partial sums; their totals, shape ``(k, C)``, summed in block order."""
    xp = s.xp
    parts = xp.empty((len(blocks), k, c), dtype=dtype)
    s.each(lambda i: body(blocks[i], parts[i]), range(len(blocks)), size)
    return parts.sum(0)


def per_channel(s, v, x3):
    """The per-channel vector ``v`` repeated over a sample's positions, ``(C*S,)``: against it, a sample
    row ``(C*S,)`` meets a contiguous operand (NumPy's broadcast of ``(C, 1)`` runs at half the speed)."""
    xp = s.xp
    return xp.repeat(xp.reshape(v, (-1,)).astype(x3.dtype, copy=False), x3.shape[2])


def _float32(s, *arrays):
    """``arrays`` in float32 (None kept)."""
    return [None if a is None else a.astype(s.xp.float32) for a in arrays]


def batch_norm_train(s, x, w, b, eps):
    """Training-mode batch norm over every axis but 1: ``(y, mean, biased variance, 1/std)``, the
    statistics in the shape ``(1, C, 1, ...)``.  The variance is the mean of ``(x - mean)**2`` (two
    passes, as PyTorch's); each pass runs block by block (:func:`bn_blocks`), on threads when large."""
    if x.dtype.kind in "fV" and x.dtype.itemsize == 2:
        # half precision as PyTorch's kernel computes it: in float32, rounded once (NumPy's einsum has no loop for
        # ml_dtypes' bfloat16)
        return tuple(r.astype(x.dtype) for r in batch_norm_train(s, *_float32(s, x, w, b), eps))
    xp = s.xp
    c = x.shape[1]
    shape = (1, c) + (1,) * (x.ndim - 2)
    x3, x2, blocks = bn_blocks(s, x)
    m = x.size // c
    einsum = xp.einsum
    y = s.empty(x2.shape, x.dtype)
    y3 = xp.reshape(y, x3.shape)

    def total(blk, out):
        out[0] = einsum("nci->c", x3[blk])

    mean = (bn_sums(s, total, blocks, c, x.dtype, x.size)[0] / m).astype(x.dtype, copy=False)
    mean_row = per_channel(s, mean, x3)

    def centre(blk, out):
        xp.subtract(x2[blk], mean_row, out=y[blk])
        out[0] = einsum("nci,nci->c", y3[blk], y3[blk])

    var = (bn_sums(s, centre, blocks, c, x.dtype, x.size)[0] / m).astype(x.dtype, copy=False)
    invstd = 1 / xp.sqrt(var + eps)
    scale = per_channel(s, invstd if w is None else invstd * w, x3)
    shift = None if b is None else per_channel(s, b, x3)

    def affine(blk):
        xp.multiply(y[blk], scale, out=y[blk])
        if shift is not None:
            xp.add(y[blk], shift, out=y[blk])

    s.each(affine, blocks, x.size)
    return (xp.reshape(y, x.shape), xp.reshape(mean, shape), xp.reshape(var, shape),
            xp.reshape(invstd, shape))


def batch_norm_backward(s, g, x, w, mean, invstd, input_grad=True):
    """The gradients of training-mode batch norm, PyTorch's closed form: ``(gx, gw, gb)`` with
    ``gb = sum(g)``, ``gw = sum(g * xhat)`` per channel and
    ``gx = (g - gb / m - xhat * gw / m) * w / std`` (None unless ``input_grad``), ``xhat = (x - mean) / std``
    over the ``m`` values of a channel; ``mean`` and ``invstd`` as :func:`batch_norm_train` gave them.
    Two block-wise passes (:func:`bn_blocks`): the sums, then ``gx``."""
    if x.dtype.kind in "fV" and x.dtype.itemsize == 2:  # half precision, as in batch_norm_train
        grads = batch_norm_backward(s, *_float32(s, g, x, w, mean, invstd), input_grad)
        return tuple(None if r is None else r.astype(x.dtype) for r in grads)
    xp = s.xp
    c = x.shape[1]
    m = x.size // c
    x3, x2, blocks = bn_blocks(s, x)
    g3, g2, _ = bn_blocks(s, g)
    mean_row = per_channel(s, mean, x3)
    invstd = xp.reshape(invstd, (c,))
    einsum = xp.einsum

    def sums(blk, out):
        d = x2[blk] - mean_row
        out[0] = einsum("nci->c", g3[blk])
        out[1] = einsum("nci,nci->c", g3[blk], xp.reshape(d, g3[blk].shape))

    gb, dot = bn_sums(s, sums, blocks, c, g.dtype, x.size, k=2)
    gw = dot * invstd
    if not input_grad:
        return None, gw, gb
    k = per_channel(s, gw * invstd / m, x3)
    mean_g = per_channel(s, gb / m, x3)
    scale = per_channel(s, invstd if w is None else invstd * w, x3)
    gx = s.empty(x2.shape, g.dtype)

    def grad(blk):
        d, out = x2[blk] - mean_row, gx[blk]
        xp.multiply(d, k, out=d)
        xp.subtract(g2[blk], d, out=out)
        xp.subtract(out, mean_g, out=out)
        xp.multiply(out, scale, out=out)

    s.each(grad, blocks, x.size)
    return xp.reshape(gx, x.shape), gw, gb


def batch_norm_eval(s, x, mean, var, w, b, eps):
    """Inference batch norm, ``x * alpha + beta`` per channel (dim 1) with ``alpha = w / sqrt(var + eps)``
    and ``beta = b - mean * alpha``, computed as the composed ops compute it, bit for bit.  With a block runner the
    two passes write into one allocated buffer (the CPU's: reused pages, no intermediate), the samples in blocks
    on the runner (the CPU's thread pool).  (Cutting the passes into cache-sized chunks was
    measured slower on ResNet-18's shapes: the extra ufunc calls cost more than the cache saves.)"""
    xp = s.xp
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    alpha = 1 / xp.sqrt(xp.reshape(var, shape) + eps)
    if w is not None:
        alpha = alpha * xp.reshape(w, shape)
    beta = -xp.reshape(mean, shape) * alpha
    if b is not None:
        beta = beta + xp.reshape(b, shape)
    if not s.blocked or x.dtype != alpha.dtype or x.dtype != beta.dtype or x.size == 0:
        return x * alpha + beta
    n, c = x.shape[:2]
    x3 = xp.reshape(x, (n, c, -1))  # a view when x is contiguous enough, else a copy
    out = s.empty(x3.shape, x.dtype)
    a2, b2 = xp.reshape(alpha, (c, 1)), xp.reshape(beta, (c, 1))
    multiply, add = xp.multiply, xp.add

    def body(lo, hi):
        o = out[lo:hi]
        multiply(x3[lo:hi], a2, out=o)
        add(o, b2, out=o)

    s.rows(body, n, x.size)
    return xp.reshape(out, x.shape)


def _trailing_mean(xp, nd):
    """The mean over the last ``nd`` axes, kept (size 1), as ``xp.mean`` computes it."""
    def mean(a):
        return xp.mean(a, axis=tuple(range(a.ndim - nd, a.ndim)), keepdims=True)
    return mean


def layer_norm(s, x, w, b, nd, eps, mean=None):
    """Layer norm over the last ``nd`` axes: ``(y, mean, 1/std)``, the statistics with those axes kept
    (size 1).  ``y = (x - mean) / std * w + b`` by the same array operations as the composed ops (bit for bit:
    a traced or exported model replays those), the later passes in place.  ``mean``: the mean over those axes,
    kept (a backend passes its own: the CPU's is a matrix-vector product, as its ``mean`` kernel)."""
    xp = s.xp
    avg = mean or _trailing_mean(xp, nd)
    mean = avg(x)
    d = x - mean
    std = xp.sqrt(avg(d * d) + eps)
    s.into(xp.divide, operator.truediv)(d, std, d)
    if w is not None:
        s.into(xp.multiply, operator.mul)(d, w, d)
    if b is not None:
        s.into(xp.add, operator.add)(d, b, d)
    return d, mean, 1 / std


def layer_norm_backward(s, g, x, w, mean, rstd, nd, need, avg=None, total=None):
    """``(dx, dw, db)`` of layer norm over the last ``nd`` axes from the forward's statistics: PyTorch's closed
    form ``(gx - mean(gx) - xhat * mean(gx * xhat)) / std``, ``gx = g * w`` (``NativeLayerNorm.backward``'s
    formula on arrays).  ``need``: which of the three to compute (None in place of the others); ``avg``: as
    :func:`layer_norm`'s ``mean``; ``total``: the sum over the leading axes (``xp.sum`` by default)."""
    xp = s.xp
    avg = avg or _trailing_mean(xp, nd)
    lead = tuple(range(x.ndim - nd))
    total = total or (lambda a: xp.sum(a, axis=lead))
    xhat = (x - mean) * rstd
    dx = dw = db = None
    if need[0]:
        gx = g if w is None else g * w
        dx = gx - avg(gx)
        dx -= xhat * avg(gx * xhat)
        dx *= rstd
    if need[1]:
        dw = total(g * xhat) if lead else g * xhat
    if need[2]:
        db = total(g) if lead else xp.asarray(g, copy=True)
    return dx, dw, db


def kernels(xp, strategy=None) -> dict:
    """The normalisation kernels bound for ``xp`` and the backend's hooks (``strategy``, plain by default)."""
    return bind(strategy or Strategy(xp), {
        "batch_norm_train": batch_norm_train, "batch_norm_backward": batch_norm_backward,
        "batch_norm_eval": batch_norm_eval, "layer_norm": layer_norm,
        "layer_norm_backward": layer_norm_backward})
