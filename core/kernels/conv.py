"""Convolution kernels: im2col through strided views and one GEMM, and for 3x3 stride-1 convolutions with wide
channels Winograd F(2x2, 3x3) (16 smaller GEMMs); the input and weight gradients of both.

Spatial arguments are tuples with one entry per spatial dimension (1-D, 2-D, 3-D alike); ``padding`` is a
tuple of ``(low, high)`` pairs.  Convolution weights are ``(O, C/groups, *k)``.  Every kernel takes the
backend's :class:`~.strategy.Strategy` ``s`` first: large results and scratch come from its allocator, the
copies and transforms run in blocks on its block runner.
"""
from __future__ import annotations

import itertools
import math
import operator

from .linalg import widened
from .strategy import Strategy, bind

WINOGRAD = None
"""Winograd F(2x2, 3x3) for 2-D convolutions with a 3x3 kernel, stride 1 and dilation 1 in float32/float64: None
lets :func:`winograd_pays` decide by the layer's geometry; True or False forces the path on or off."""
WINO_SCRATCH = 2 << 20
"""Bytes of a transform's intermediate passes per round (samples at a time): they stay in cache between passes."""
WINO_NARROW_BYTES = 32 << 20
"""The largest transformed input (bytes) for which Winograd pays where the channels are only 64 wide."""

QUIET = {"conv_forward"}  # masked rows: inf


def offsets(k):
    """Every offset of a kernel of size ``k`` (a tuple per dimension), in row-major order."""
    return list(itertools.product(*[range(kk) for kk in k]))


def out_spatial(sp, k, stride, dilation):
    """The output size of a window ``k`` sliding over the (padded) spatial size ``sp``."""
    return tuple((n - dd * (kk - 1) - 1) // st + 1 for n, kk, st, dd in zip(sp, k, stride, dilation))


def _arith(s):
    """``(add, sub, neg)`` that write into their last argument (:meth:`.Strategy.into`)."""
    xp = s.xp
    return s.into(xp.add, operator.add), s.into(xp.subtract, operator.sub), s.into(xp.negative, operator.neg)


def zeroed(s, shape, dtype):
    out = s.empty(shape, dtype)
    out[...] = 0
    return out


def copy(s, v):
    """A C-contiguous copy of the view ``v`` in an allocated array (im2col's columns), cut along its first
    axis of length >= 2 (the copies of im2col and of the layout changes are memory-bound: one thread does
    not saturate the memory bus)."""
    return embed_into(s, s.empty(v.shape, v.dtype), v, ())


# Convolution columns come in one of two layouts, chosen by the output's row length:
#   batch-major (N, G, Cg*K, L) when rows are long: no transposes of x or y, one small GEMM per sample;
#   batch-last  (G, Cg*K, L*N) when rows are short: one long GEMM per group, and im2col/col2im copy
#   contiguous runs of N instead of short rows.
def batch_major(osp):
    return osp[-1] >= 16


def to_batch_last(s, x, groups):
    """``(N, C, *S)`` -> ``(G, C/G, *S, N)`` (a copy)."""
    n, c = x.shape[:2]
    d = x.ndim - 2
    y = x.reshape((n, groups, c // groups) + x.shape[2:])
    return copy(s, y.transpose((1, 2) + tuple(range(3, 3 + d)) + (0,)))


def from_batch_last(s, y):
    """``(G, Cg, *S, N)`` -> ``(N, G*Cg, *S)`` (a copy)."""
    d = y.ndim - 3
    out = copy(s, y.transpose((2 + d, 0, 1) + tuple(range(2, 2 + d))))
    return out.reshape((out.shape[0], -1) + out.shape[3:])


def kernel_windows(s, x, k, stride, dilation):
    """A view ``(A, B, *k, *out, *rest)`` of ``x`` ``(A, B, *S, *rest)``: kernel offsets before positions."""
    d = len(k)
    st = x.strides
    osp = out_spatial(x.shape[2:2 + d], k, stride, dilation)
    shape = x.shape[:2] + tuple(k) + osp + x.shape[2 + d:]
    strides = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(d)) + \
        tuple(st[2 + i] * stride[i] for i in range(d)) + st[2 + d:]
    return s.xp.lib.stride_tricks.as_strided(x, shape, strides), osp


def embed(s, v, shape, lows):
    """``v`` copied into an allocated array of ``shape`` at offsets ``lows`` of its trailing axes, zeros
    around it (only the border is zeroed: one pass over the data instead of ``pad``'s allocation + copy)."""
    if tuple(v.shape) == tuple(shape):
        return copy(s, v)
    return embed_into(s, s.empty(shape, v.dtype), v, lows)


def fill(out, v, lows):
    """``v`` into ``out`` at offsets ``lows`` of its trailing axes, the border zeroed (one thread: the
    bodies handed to the block runner call this, never a splitting kernel: runners do not nest)."""
    lead = out.ndim - len(lows)
    box = []
    for i, lo in enumerate(lows):
        ax = lead + i
        hi = lo + v.shape[ax]
        before = (slice(None),) * lead + tuple(box)
        if lo:
            out[before + (slice(0, lo),)] = 0
        if hi < out.shape[ax]:
            out[before + (slice(hi, None),)] = 0
        box.append(slice(lo, hi))
    out[(slice(None),) * lead + tuple(box)] = v


def embed_into(s, out, v, lows):
    """:func:`embed` into ``out``, cut along its first leading axis of length >= 2 (the blocks on the runner)."""
    lead = out.ndim - len(lows)
    ax = next((i for i in range(lead) if out.shape[i] >= 2), None)
    if ax is None:
        fill(out, v, lows)
        return out
    before = (slice(None),) * ax

    def body(lo, hi):
        fill(out[before + (slice(lo, hi),)], v[before + (slice(lo, hi),)], lows)

    s.rows(body, out.shape[ax], out.size)
    return out


def padded(s, v, padding):
    """``v`` ``(A, B, *S, *rest)`` zero-padded on the axes ``S`` (``padding``: a (low, high) pair each)."""
    d = len(padding)
    shape = tuple(v.shape[:2]) + tuple(n + lo + hi for n, (lo, hi) in zip(v.shape[2:2 + d], padding)) + \
        tuple(v.shape[2 + d:])
    if not any(lo or hi for lo, hi in padding):
        return v
    return embed(s, v, shape, tuple(lo for lo, _ in padding) + (0,) * (v.ndim - 2 - d))


def im2col(s, x, k, stride, padding, dilation, groups):
    """Columns in the layout ``batch_major`` picks for this geometry: one copy of a strided view."""
    n = x.shape[0]
    sp = tuple(sz + lo + hi for sz, (lo, hi) in zip(x.shape[2:], padding))
    if batch_major(out_spatial(sp, k, stride, dilation)):
        v, osp = kernel_windows(s, padded(s, x, padding), k, stride, dilation)
        return copy(s, v).reshape(n, groups, -1, math.prod(osp)), osp
    d = x.ndim - 2
    bl = x.reshape((n, groups, x.shape[1] // groups) + x.shape[2:]).transpose((1, 2) + tuple(range(3, 3 + d)) +
                                                                            (0,))
    if any(lo or hi for lo, hi in padding):   # batch-last layout and padding in one copy
        bl = embed(s, bl, bl.shape[:2] + sp + (n,), tuple(lo for lo, _ in padding) + (0,))
    else:
        bl = copy(s, bl)
    v, osp = kernel_windows(s, bl, k, stride, dilation)
    return copy(s, v).reshape(groups, -1, math.prod(osp) * n), osp


def rows_batch_last(s, g, groups):
    """``(N, O, *osp)`` gradient -> ``(G, O/G, L*N)``."""
    gt = to_batch_last(s, g, groups)
    return gt.reshape(groups, gt.shape[1], -1)


def pointwise(k, padding):
    """A 1x1 kernel without padding: the columns are the (strided) input itself, no im2col."""
    return all(kk == 1 for kk in k) and not any(lo or hi for lo, hi in padding)


def sampled(s, x, stride, groups):
    """``x`` at the strided positions as batch-major columns ``(N, G, C/G, L)``, and the output size."""
    xp = s.xp
    v = x[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in stride)]
    return xp.reshape(v, (x.shape[0], groups, x.shape[1] // groups, -1)), v.shape[2:]


def conv_forward(s, x, w, b, stride, padding, dilation, groups):
    """``(y, saved)``: ``saved`` is what the weight gradient reuses (im2col columns, or the Winograd
    transform of the input)."""
    if winograd(s, x.shape, w.shape, stride, padding, dilation, groups, x.dtype):
        return winograd_forward(s, x, w, b, padding)
    k = w.shape[2:]
    if pointwise(k, padding):
        cols, osp = sampled(s, x, stride, groups)
    else:
        cols, osp = im2col(s, x, k, stride, padding, dilation, groups)
    wm = w.reshape(groups, w.shape[0] // groups, -1)
    bshape = (-1,) + (1,) * len(osp)
    if cols.ndim == 4:
        y = s.product(wm, cols).reshape((x.shape[0], w.shape[0]) + osp)
        if b is not None:
            y += b.reshape(bshape)
        return y, cols
    y = s.product(wm, cols).reshape((groups, w.shape[0] // groups) + osp + (x.shape[0],))
    if b is not None:
        y += b.reshape((groups,) + bshape + (1,))
    return from_batch_last(s, y), cols


def conv_input_grad(s, g, w, x_shape, stride, padding, dilation, groups):
    """Transposed convolution: one GEMM to columns, then col2im by one contiguous slice-add per offset."""
    xp = s.xp
    if winograd(s, x_shape, w.shape, stride, padding, dilation, groups, g.dtype):
        return winograd_input_grad(s, g, w, x_shape, padding)
    k = w.shape[2:]
    o = g.shape[1]
    osp = g.shape[2:]
    wm = w.reshape(groups, o // groups, -1)
    if pointwise(k, padding):  # one GEMM per sample straight into x's layout; strided: into every s-th place
        gx = s.product(wm.transpose(0, 2, 1), xp.reshape(g, (g.shape[0], groups, o // groups, -1)))
        gx = xp.reshape(gx, (x_shape[0], x_shape[1]) + tuple(osp))
        if all(st == 1 for st in stride):
            return gx
        full = zeroed(s, x_shape, gx.dtype)
        full[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in stride)] = gx
        return full
    cols = s.product(wm.transpose(0, 2, 1), rows_batch_last(s, g, groups))
    cg = x_shape[1] // groups
    cols = cols.reshape((groups, cg) + tuple(k) + tuple(osp) + (x_shape[0],))
    padded = tuple(sz + lo + hi for sz, (lo, hi) in zip(x_shape[2:], padding))
    gx = zeroed(s, (groups, cg) + padded + (x_shape[0],), cols.dtype)
    sls = [(off, tuple(slice(o_ * dd, o_ * dd + st * (m - 1) + 1, st)
                       for o_, dd, st, m in zip(off, dilation, stride, osp))) for off in offsets(k)]

    def body(lo, hi):  # the input channels lo:hi, the offsets in the same order on every block
        for off, sl in sls:
            gx[(slice(None), slice(lo, hi)) + sl] += cols[(slice(None), slice(lo, hi)) + off]

    s.rows(body, cg, cols.size)
    crop = tuple(slice(lo, lo + sz) for sz, (lo, _) in zip(x_shape[2:], padding))
    return from_batch_last(s, gx[(slice(None), slice(None)) + crop])


def conv_weight_grad(s, x, g, w_shape, stride, padding, dilation, groups, cols=None):
    if cols is not None and cols.ndim == 5 or \
            cols is None and winograd(s, x.shape, w_shape, stride, padding, dilation, groups, x.dtype):
        return winograd_weight_grad(s, x, g, w_shape, padding, cols)
    if cols is None:
        cols, _ = (sampled(s, x, stride, groups) if pointwise(w_shape[2:], padding)
                   else im2col(s, x, w_shape[2:], stride, padding, dilation, groups))
    if cols.ndim == 4:
        gm = g.reshape(g.shape[0], groups, g.shape[1] // groups, -1)
        return s.product(gm, cols.swapaxes(-1, -2)).sum(0).reshape(w_shape)
    return s.product(rows_batch_last(s, g, groups), cols.transpose(0, 2, 1)).reshape(w_shape)


# ---------------------------------------------------------------- Winograd F(2x2, 3x3)
# Each 2x2 output tile is A^T [(G g G^T) * (B^T d B)] A of its 4x4 input tile d (tiles overlap by 2), the
# products summed over input channels: 16 GEMMs, one stacked matmul (16, tiles, C) @ (16, C, O), 2.25x
# fewer multiplications than im2col's one GEMM; the transformed input is 4x the input (im2col's columns
# are 9x).  The transforms are slice adds, rows first (on the padded image, before tiling), then columns,
# on channels-last copies ``(N, H, W, C)``: every pass runs over contiguous channel rows, and the layout
# changes are one copy of the input and one of the output.  The backward passes are the exact adjoints
# of these linear maps.
wino_g = ((1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0.0, 0.0, 1.0))
# G g G^T of a 3x3 kernel as one (16, 9) matrix on the flattened kernel: kron(G, G)
wino_gg = tuple(tuple(wino_g[a][r] * wino_g[b][q] for r in range(3) for q in range(3))
                for a in range(4) for b in range(4))


def winograd(s, x_shape, w_shape, stride, padding, dilation, groups, dtype):
    """Whether this convolution runs as Winograd F(2x2, 3x3) (``WINOGRAD`` forces it either way)."""
    xp = s.xp
    if len(w_shape) != 4 or tuple(w_shape[2:]) != (3, 3) or tuple(stride) != (1, 1) or \
            tuple(dilation) != (1, 1) or groups != 1 or not math.prod(x_shape) or not math.prod(w_shape):
        return False
    if dtype != xp.float32 and dtype != xp.float64:
        return False
    if WINOGRAD is not None:
        return bool(WINOGRAD)
    return winograd_pays(x_shape, w_shape, padding)


def winograd_pays(x_shape, w_shape, padding):
    """The rule measured on ResNet-18's layers (OpenBLAS, 2 threads, AVX2 and AVX-512 kernels): Winograd wins
    where the GEMMs are wide (both channel counts >= 64), there are tiles enough to amortise the weight
    transform (>= 128: not at 2x2 or 4x4 maps of a small batch), the tiles are mostly used (an odd 7x7
    output wastes a quarter of them), and, where the channels are only 64 wide, the transformed input is at
    most ``WINO_NARROW_BYTES`` (32 MB): the transforms run a few samples at a time through cache-sized
    scratch (split over the thread pool), which makes ResNet-18's 56x56 stage at batch 8 (26 MB) pay
    (0.9x im2col's time forward and forward + backward with AVX2 kernels; about even with AVX-512 ones),
    while at 51 MB (batch 16, or 112x112 maps) the memory traffic of V and M still eats the GEMM's savings
    in the forward pass."""
    n, c, h, w = x_shape
    narrow = min(c, w_shape[0])
    th, tw = wino_tiles(h, w, padding)
    ho, wo = h + sum(padding[0]) - 2, w + sum(padding[1]) - 2
    tiles = n * th * tw
    return narrow >= 64 and tiles >= 128 and 9 * ho * wo >= 32 * th * tw and \
        (narrow >= 128 or 64 * tiles * c <= WINO_NARROW_BYTES)


def wino_step(s, n, sample_bytes):
    """Samples per pass of a transform whose scratch takes ``sample_bytes`` a sample: the scratch of one
    pass fits ``WINO_SCRATCH`` bytes (at least one sample; all of them without a block runner)."""
    return max(1, min(n, WINO_SCRATCH // max(sample_bytes, 1))) if s.blocked else n


def wino_tiles(h, w, padding):
    (pt, pb), (pl, pr) = padding
    return -(-(h + pt + pb - 2) // 2), -(-(w + pl + pr - 2) // 2)


def bt(d, out, add, sub):
    """``out = B^T d`` along one axis of 4-point pieces ``d`` (four arrays; ``out``: four targets)."""
    sub(d[0], d[2], out[0])
    add(d[1], d[2], out[1])
    sub(d[2], d[1], out[2])
    sub(d[1], d[3], out[3])


def at(m, out, add, sub):
    """``out = A^T m`` along one axis: four pieces to two."""
    add(m[0], m[1], out[0])
    add(out[0], m[2], out[0])
    sub(m[1], m[2], out[1])
    sub(out[1], m[3], out[1])


def a_adj(y, out, add, sub, neg):
    """``out = A y``: the adjoint of :func:`at`, two pieces to four."""
    out[0][...] = y[0]
    add(y[0], y[1], out[1])
    sub(y[0], y[1], out[2])
    neg(y[1], out[3])


def b_adj(d, lo, hi, last, add, sub):
    """The adjoint of :func:`bt` on tiles that overlap by two: tile ``j``'s point ``i`` lands at ``2 j + i``.
    ``lo(k)``/``hi(k)``: the targets of points ``k`` and ``k + 2`` of every tile (pairs ``0..t-1`` and
    ``1..t`` of the output), ``last``: pair ``t``, which only ``hi`` reaches."""
    lo(0)[...] = d[0]
    last[...] = 0
    sub(d[1], d[2], lo(1))
    add(lo(1), d[3], lo(1))
    add(hi(0), d[1], hi(0))
    add(hi(0), d[2], hi(0))
    sub(hi(0), d[0], hi(0))
    sub(hi(1), d[3], hi(1))


def wino_input(s, x, padding):
    """V ``(16, N*th*tw, C)``: ``B^T d B`` of every 4x4 tile ``d`` of padded ``x`` (tile ``(i, j)`` at
    ``(2i, 2j)``), from one channels-last padded copy."""
    n, c, h, w = x.shape
    th, tw = wino_tiles(h, w, padding)
    xt = x.transpose(0, 2, 3, 1)
    v = s.empty((4, 4, n, th, tw, c), x.dtype)
    add, sub, _ = _arith(s)
    step = wino_step(s, n, 6 * th * (2 * tw + 2) * c * x.dtype.itemsize)

    def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
        k = min(step, hi - lo)
        p = s.empty((k, 2 * th + 2, 2 * tw + 2, c), x.dtype)
        r = s.empty((4, k, th, 2 * tw + 2, c), x.dtype)
        for i in range(lo, hi, k):
            j = min(i + k, hi)
            pp, rr = p[:j - i], r[:, :j - i]
            fill(pp, xt[i:j], (padding[0][0], padding[1][0], 0))
            bt([pp[:, a:a + 2 * th:2] for a in range(4)], rr, add, sub)
            bt([rr[:, :, :, b:b + 2 * tw:2] for b in range(4)], [v[:, b, i:j] for b in range(4)], add, sub)

    s.rows(body, n, v.size)
    return v.reshape(16, n * th * tw, c)


def wino_weight(s, w):
    """U ``(16, O, C)``: ``G g G^T`` of every 3x3 kernel ``g``, one GEMM ``(16, 9) @ (9, O C)``."""
    xp = s.xp
    o, c = w.shape[:2]
    return s.product(xp.asarray(wino_gg, dtype=w.dtype), xp.reshape(w, (o * c, 9)).T).reshape(16, o, c)


def wino_weight_adjoint(s, du, w_shape):
    """``G^T dU G`` for every kernel: the adjoint of :func:`wino_weight`."""
    xp = s.xp
    o, c = w_shape[:2]
    return s.product(du.reshape(16, o * c).T, xp.asarray(wino_gg, dtype=du.dtype)).reshape(w_shape)


def wino_output(s, m, n, th, tw, ho, wo):
    """``A^T m A`` of every tile, cropped to ``(N, O, ho, wo)``, from ``m`` ``(16, N*th*tw, O)``."""
    o = m.shape[-1]
    m = m.reshape(4, 4, n, th, tw, o)
    out = s.empty((n, o, ho, wo), m.dtype)
    add, sub, _ = _arith(s)
    step = wino_step(s, n, 12 * th * tw * o * m.dtype.itemsize)

    def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
        k = min(step, hi - lo)
        r = s.empty((2, 4, k, th, tw, o), m.dtype)
        y = s.empty((k, 2 * th, 2 * tw, o), m.dtype)
        for i in range(lo, hi, k):
            j = min(i + k, hi)
            ss, yy = r[:, :, :j - i], y[:j - i]
            at(m[:, :, i:j], ss, add, sub)
            yv = yy.reshape(j - i, th, 2, tw, 2, o)
            at([ss[:, b] for b in range(4)], [yv[:, :, :, :, b].transpose(2, 0, 1, 3, 4) for b in range(2)], add,
               sub)
            out[i:j] = yy[:, :ho, :wo].transpose(0, 3, 1, 2)

    s.rows(body, n, m.size)
    return out


def wino_output_grad(s, g, th, tw):
    """dM ``(16, N*th*tw, O)``: the adjoint of :func:`wino_output` applied to ``g``."""
    n, o = g.shape[:2]
    gt = g.transpose(0, 2, 3, 1)
    dm = s.empty((4, 4, n, th, tw, o), g.dtype)
    add, sub, neg = _arith(s)
    step = wino_step(s, n, 12 * th * tw * o * g.dtype.itemsize)

    def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
        k = min(step, hi - lo)
        gp = s.empty((k, 2 * th, 2 * tw, o), g.dtype)
        q = s.empty((4, 2, k, th, tw, o), g.dtype)
        for i in range(lo, hi, k):
            j = min(i + k, hi)
            qq = q[:, :, :j - i]
            fill(gp[:j - i], gt[i:j], (0, 0, 0))
            gv = gp[:j - i].reshape(j - i, th, 2, tw, 2, o)
            a_adj([gv[:, :, a].transpose(3, 0, 1, 2, 4) for a in range(2)], qq, add, sub, neg)
            a_adj([qq[:, b] for b in range(2)], [dm[:, b, i:j] for b in range(4)], add, sub, neg)

    s.rows(body, n, dm.size)
    return dm.reshape(16, n * th * tw, o)


def wino_input_adjoint(s, dv, x_shape, padding, th, tw):
    """The adjoint of :func:`wino_input`: overlapping tiles add (columns, then rows), the padding is cropped."""
    n, c, h, w = x_shape
    dv = dv.reshape(4, 4, n, th, tw, c)
    out = s.empty((n, c, h, w), dv.dtype)
    pt, pl = padding[0][0], padding[1][0]
    add, sub, _ = _arith(s)
    step = wino_step(s, n, 12 * (th + 1) * (tw + 1) * c * dv.dtype.itemsize)

    def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
        k = min(step, hi - lo)
        e = s.empty((4, k, th, tw + 1, 2, c), dv.dtype)
        p = s.empty((k, th + 1, 2, 2 * tw + 2, c), dv.dtype)
        for i in range(lo, hi, k):
            j = min(i + k, hi)
            ee, pp = e[:, :j - i], p[:j - i]
            b_adj([dv[:, b, i:j] for b in range(4)], lambda q, ee=ee: ee[:, :, :, :tw, q],
                  lambda q, ee=ee: ee[:, :, :, 1:, q], ee[:, :, :, tw], add, sub)
            ee = ee.reshape(4, j - i, th, 2 * tw + 2, c)
            b_adj([ee[a] for a in range(4)], lambda q, pp=pp: pp[:, :th, q],
                  lambda q, pp=pp: pp[:, 1:, q], pp[:, th], add, sub)
            pp = pp.reshape(j - i, 2 * th + 2, 2 * tw + 2, c)
            out[i:j] = pp[:, pt:pt + h, pl:pl + w].transpose(0, 3, 1, 2)

    s.rows(body, n, dv.size)
    return out


def winograd_forward(s, x, w, b, padding):
    """``(y, V)``: V (5-d, unlike im2col's columns) is what :func:`winograd_weight_grad` reuses."""
    xp = s.xp
    n, _, h, wd = x.shape
    th, tw = wino_tiles(h, wd, padding)
    v = wino_input(s, x, padding)
    m = s.product(v, wino_weight(s, w).swapaxes(-1, -2))
    y = wino_output(s, m, n, th, tw, h + sum(padding[0]) - 2, wd + sum(padding[1]) - 2)
    if b is not None:
        y += xp.reshape(b, (-1, 1, 1))
    return y, v.reshape(4, 4, n, th * tw, v.shape[-1])


def winograd_input_grad(s, g, w, x_shape, padding):
    th, tw = wino_tiles(x_shape[2], x_shape[3], padding)
    dv = s.product(wino_output_grad(s, g, th, tw), wino_weight(s, w))
    return wino_input_adjoint(s, dv, x_shape, padding, th, tw)


def winograd_weight_grad(s, x, g, w_shape, padding, v=None):
    th, tw = wino_tiles(x.shape[2], x.shape[3], padding)
    v = wino_input(s, x, padding) if v is None else v.reshape(16, -1, v.shape[-1])
    dm = wino_output_grad(s, g, th, tw)
    return wino_weight_adjoint(s, s.product(dm.swapaxes(-1, -2), v), w_shape)


def kernels(xp, strategy=None) -> dict:
    """The convolution kernels bound for ``xp`` and the backend's hooks (``strategy``, plain by default)."""
    table = bind(strategy or Strategy(xp), {"conv_forward": conv_forward, "conv_input_grad": conv_input_grad,
                                            "conv_weight_grad": conv_weight_grad})
    return {name: widened(fn) for name, fn in table.items()}
