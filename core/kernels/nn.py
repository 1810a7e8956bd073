"""Neural-network kernels: convolution and pooling by im2col through strided views and one GEMM (3x3
stride-1 convolutions with wide channels by Winograd F(2x2, 3x3): 16 smaller GEMMs), softmax family, and
fused activations.

Spatial arguments are tuples with one entry per spatial dimension (1-D, 2-D, 3-D alike);
``padding`` is a tuple of ``(low, high)`` pairs.  Convolution weights are ``(O, C/groups, *k)``.
"""
from __future__ import annotations

import itertools
import math
import operator

from . import parallel, workspace
from .linalg import widened
from .pointwise import _native, fallbacks




# Winograd F(2x2, 3x3) for 2-D convolutions with a 3x3 kernel, stride 1 and dilation 1 in float32/float64:
# None lets ``winograd_pays`` decide by the layer's geometry; True or False forces the path on or off.
WINOGRAD = None
# elements of one block of batch norm's passes (see ``bn_blocks``)
BN_BLOCK = 1 << 15
# bytes of a transform's intermediate passes per round (samples at a time): they stay in cache between passes
WINO_SCRATCH = 2 << 20
# the largest transformed input (bytes) for which Winograd pays where the channels are only 64 wide
WINO_NARROW_BYTES = 32 << 20

QUIET = {"softmax", "log_softmax", "cross_entropy_index", "nn_softplus", "conv_forward",  # masked rows, inf
         "nn_elu", "nn_silu", "nn_mish", "nn_gelu", "nn_log_sigmoid", "nn_glu"}  # exp of large arguments

def kernels(xp) -> dict:
    as_strided = xp.lib.stride_tricks.as_strided
    astype = getattr(xp, "astype", None) or (lambda a, dtype: a.astype(dtype))

    pooled = getattr(xp, "__name__", "") == "numpy"

    def fresh(shape, dtype):
        """An uninitialised array; with NumPy on reused pages (``ember.kernels.workspace``): the
        convolutions' outputs, gradients and layout copies are megabytes, which fresh pages fault in."""
        return workspace.empty(shape, dtype) if pooled else xp.empty(shape, dtype=dtype)

    def product(a, b):
        """``a @ b`` (stacks of matrices, broadcast), into a :func:`fresh` array."""
        if not pooled:
            return a @ b
        out = workspace.empty(xp.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]),
                              xp.result_type(a, b))
        return xp.matmul(a, b, out=out)

    def split(body, n, size):
        """``body(lo, hi)`` over ``range(n)``: with NumPy in blocks on the CPU thread pool when ``size`` elements
        are worth it (``ember.kernels.parallel``), else once on this thread.  Every body below writes each
        block of its output from the same block of its inputs by the same ufunc calls, so the result is
        bit-identical however the range is cut."""
        if pooled:
            parallel.rows(body, n, size)
        else:
            body(0, n)

    def contiguous(v):
        """A C-contiguous copy of ``v`` in a :func:`fresh` array."""
        return copy(v) if pooled else xp.ascontiguousarray(v)

    def zeroed(shape, dtype):
        out = fresh(shape, dtype)
        out[...] = 0
        return out

    def copy(v):
        """A C-contiguous copy of the view ``v`` in a :func:`fresh` array (im2col's columns), cut along its first
        axis of length >= 2 (the copies of im2col and of the layout changes are memory-bound: one thread does
        not saturate the memory bus)."""
        return embed_into(fresh(v.shape, v.dtype), v, ())

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
        return as_strided(x, x.shape[:2] + out + tuple(k), strides)

    def offsets(k):
        return list(itertools.product(*[range(kk) for kk in k]))

    # Convolution columns come in one of two layouts, chosen by the output's row length:
    #   batch-major (N, G, Cg*K, L) when rows are long: no transposes of x or y, one small GEMM per sample;
    #   batch-last  (G, Cg*K, L*N) when rows are short: one long GEMM per group, and im2col/col2im copy
    #   contiguous runs of N instead of short rows.
    def batch_major(osp):
        return osp[-1] >= 16

    def out_spatial(sp, k, stride, dilation):
        return tuple((s - dd * (kk - 1) - 1) // s_ + 1 for s, kk, s_, dd in zip(sp, k, stride, dilation))

    def to_batch_last(x, groups):
        """``(N, C, *S)`` -> ``(G, C/G, *S, N)`` (a copy)."""
        n, c = x.shape[:2]
        d = x.ndim - 2
        y = x.reshape((n, groups, c // groups) + x.shape[2:])
        return contiguous(y.transpose((1, 2) + tuple(range(3, 3 + d)) + (0,)))

    def from_batch_last(y):
        """``(G, Cg, *S, N)`` -> ``(N, G*Cg, *S)`` (a copy)."""
        d = y.ndim - 3
        out = contiguous(y.transpose((2 + d, 0, 1) + tuple(range(2, 2 + d))))
        return out.reshape((out.shape[0], -1) + out.shape[3:])

    def kernel_windows(x, k, stride, dilation):
        """A view ``(A, B, *k, *out, *rest)`` of ``x`` ``(A, B, *S, *rest)``: kernel offsets before positions."""
        d = len(k)
        st = x.strides
        osp = out_spatial(x.shape[2:2 + d], k, stride, dilation)
        shape = x.shape[:2] + tuple(k) + osp + x.shape[2 + d:]
        strides = st[:2] + tuple(st[2 + i] * dilation[i] for i in range(d)) + \
            tuple(st[2 + i] * stride[i] for i in range(d)) + st[2 + d:]
        return as_strided(x, shape, strides), osp

    def embed(v, shape, lows):
        """``v`` copied into a :func:`fresh` array of ``shape`` at offsets ``lows`` of its trailing axes, zeros
        around it (only the border is zeroed: one pass over the data instead of ``pad``'s allocation + copy)."""
        if tuple(v.shape) == tuple(shape):
            return copy(v)
        return embed_into(fresh(shape, v.dtype), v, lows)

    def fill(out, v, lows):
        """``v`` into ``out`` at offsets ``lows`` of its trailing axes, the border zeroed (one thread: the
        bodies run by :func:`split` call this, never a splitting kernel, as the pool does not nest)."""
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

    def embed_into(out, v, lows):
        """:func:`embed` into ``out``, cut along its first leading axis of length >= 2 (see :func:`split`)."""
        lead = out.ndim - len(lows)
        ax = next((i for i in range(lead) if out.shape[i] >= 2), None)
        if ax is None or not pooled:
            fill(out, v, lows)
            return out
        before = (slice(None),) * ax

        def body(lo, hi):
            fill(out[before + (slice(lo, hi),)], v[before + (slice(lo, hi),)], lows)

        split(body, out.shape[ax], out.size)
        return out

    def padded(v, padding):
        """``v`` ``(A, B, *S, *rest)`` zero-padded on the axes ``S`` (``padding``: a (low, high) pair each)."""
        d = len(padding)
        shape = tuple(v.shape[:2]) + tuple(s + lo + hi for s, (lo, hi) in zip(v.shape[2:2 + d], padding)) + \
            tuple(v.shape[2 + d:])
        if not any(lo or hi for lo, hi in padding):
            return v
        return embed(v, shape, tuple(lo for lo, _ in padding) + (0,) * (v.ndim - 2 - d))

    def im2col(x, k, stride, padding, dilation, groups):
        """Columns in the layout ``batch_major`` picks for this geometry: one copy of a strided view."""
        n = x.shape[0]
        sp = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))
        if batch_major(out_spatial(sp, k, stride, dilation)):
            v, osp = kernel_windows(padded(x, padding), k, stride, dilation)
            return copy(v).reshape(n, groups, -1, math.prod(osp)), osp
        d = x.ndim - 2
        bl = x.reshape((n, groups, x.shape[1] // groups) + x.shape[2:]).transpose((1, 2) + tuple(range(3, 3 + d)) +
                                                                                (0,))
        if any(lo or hi for lo, hi in padding):   # batch-last layout and padding in one copy
            bl = embed(bl, bl.shape[:2] + sp + (n,), tuple(lo for lo, _ in padding) + (0,))
        else:
            bl = contiguous(bl)
        v, osp = kernel_windows(bl, k, stride, dilation)
        return copy(v).reshape(groups, -1, math.prod(osp) * n), osp

    def rows_batch_last(g, groups):
        """``(N, O, *osp)`` gradient -> ``(G, O/G, L*N)``."""
        gt = to_batch_last(g, groups)
        return gt.reshape(groups, gt.shape[1], -1)

    def pointwise(k, padding):
        """A 1x1 kernel without padding: the columns are the (strided) input itself, no im2col."""
        return all(kk == 1 for kk in k) and not any(lo or hi for lo, hi in padding)

    def sampled(x, stride, groups):
        """``x`` at the strided positions as batch-major columns ``(N, G, C/G, L)``, and the output size."""
        v = x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
        return xp.reshape(v, (x.shape[0], groups, x.shape[1] // groups, -1)), v.shape[2:]

    def conv_forward(x, w, b, stride, padding, dilation, groups):
        """``(y, saved)``: ``saved`` is what the weight gradient reuses (im2col columns, or the Winograd
        transform of the input)."""
        if winograd(x.shape, w.shape, stride, padding, dilation, groups, x.dtype):
            return winograd_forward(x, w, b, padding)
        k = w.shape[2:]
        if pointwise(k, padding):
            cols, osp = sampled(x, stride, groups)
        else:
            cols, osp = im2col(x, k, stride, padding, dilation, groups)
        wm = w.reshape(groups, w.shape[0] // groups, -1)
        bshape = (-1,) + (1,) * len(osp)
        if cols.ndim == 4:
            y = product(wm, cols).reshape((x.shape[0], w.shape[0]) + osp)
            if b is not None:
                y += b.reshape(bshape)
            return y, cols
        y = product(wm, cols).reshape((groups, w.shape[0] // groups) + osp + (x.shape[0],))
        if b is not None:
            y += b.reshape((groups,) + bshape + (1,))
        return from_batch_last(y), cols

    def conv_input_grad(g, w, x_shape, stride, padding, dilation, groups):
        """Transposed convolution: one GEMM to columns, then col2im by one contiguous slice-add per offset."""
        if winograd(x_shape, w.shape, stride, padding, dilation, groups, g.dtype):
            return winograd_input_grad(g, w, x_shape, padding)
        k = w.shape[2:]
        o = g.shape[1]
        osp = g.shape[2:]
        wm = w.reshape(groups, o // groups, -1)
        if pointwise(k, padding):  # one GEMM per sample straight into x's layout; strided: into every s-th place
            gx = product(wm.transpose(0, 2, 1), xp.reshape(g, (g.shape[0], groups, o // groups, -1)))
            gx = xp.reshape(gx, (x_shape[0], x_shape[1]) + tuple(osp))
            if all(st == 1 for st in stride):
                return gx
            full = zeroed(x_shape, gx.dtype)
            full[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in stride)] = gx
            return full
        cols = product(wm.transpose(0, 2, 1), rows_batch_last(g, groups))
        cg = x_shape[1] // groups
        cols = cols.reshape((groups, cg) + tuple(k) + tuple(osp) + (x_shape[0],))
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(x_shape[2:], padding))
        gx = zeroed((groups, cg) + padded + (x_shape[0],), cols.dtype)
        sls = [(off, tuple(slice(o_ * dd, o_ * dd + s * (m - 1) + 1, s)
                           for o_, dd, s, m in zip(off, dilation, stride, osp))) for off in offsets(k)]

        def body(lo, hi):  # the input channels lo:hi, the offsets in the same order on every block
            for off, sl in sls:
                gx[(slice(None), slice(lo, hi)) + sl] += cols[(slice(None), slice(lo, hi)) + off]

        split(body, cg, cols.size)
        crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(x_shape[2:], padding))
        return from_batch_last(gx[(slice(None), slice(None)) + crop])

    def conv_weight_grad(x, g, w_shape, stride, padding, dilation, groups, cols=None):
        if cols is not None and cols.ndim == 5 or \
                cols is None and winograd(x.shape, w_shape, stride, padding, dilation, groups, x.dtype):
            return winograd_weight_grad(x, g, w_shape, padding, cols)
        if cols is None:
            cols, _ = (sampled(x, stride, groups) if pointwise(w_shape[2:], padding)
                       else im2col(x, w_shape[2:], stride, padding, dilation, groups))
        if cols.ndim == 4:
            gm = g.reshape(g.shape[0], groups, g.shape[1] // groups, -1)
            return product(gm, cols.swapaxes(-1, -2)).sum(0).reshape(w_shape)
        return product(rows_batch_last(g, groups), cols.transpose(0, 2, 1)).reshape(w_shape)

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
    wino_gg = tuple(tuple(wino_g[a][r] * wino_g[b][s] for r in range(3) for s in range(3))
                    for a in range(4) for b in range(4))

    def winograd(x_shape, w_shape, stride, padding, dilation, groups, dtype):
        """Whether this convolution runs as Winograd F(2x2, 3x3) (``WINOGRAD`` forces it either way)."""
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

    def into(ufunc, op):
        """``f(a, b, out)``: ``op(a, b)`` written into ``out`` (with NumPy the ufunc's ``out=``, no temporary)."""
        if pooled:
            return lambda a, b, out: ufunc(a, b, out=out)

        def assign(a, b, out):
            out[...] = op(a, b)
        return assign

    add, sub = into(xp.add, operator.add), into(xp.subtract, operator.sub)
    mul, div = into(xp.multiply, operator.mul), into(xp.divide, operator.truediv)

    def neg(a, out):
        if pooled:
            xp.negative(a, out=out)
        else:
            out[...] = -a

    def wino_step(n, sample_bytes):
        """Samples per pass of a transform whose scratch takes ``sample_bytes`` a sample: the scratch of one
        pass fits ``WINO_SCRATCH`` bytes (at least one sample; all of them on a non-NumPy backend)."""
        return n if not pooled else max(1, min(n, WINO_SCRATCH // max(sample_bytes, 1)))

    def wino_tiles(h, w, padding):
        (pt, pb), (pl, pr) = padding
        return -(-(h + pt + pb - 2) // 2), -(-(w + pl + pr - 2) // 2)

    def bt(d, out):
        """``out = B^T d`` along one axis of 4-point pieces ``d`` (four arrays; ``out``: four targets)."""
        sub(d[0], d[2], out[0])
        add(d[1], d[2], out[1])
        sub(d[2], d[1], out[2])
        sub(d[1], d[3], out[3])

    def at(m, out):
        """``out = A^T m`` along one axis: four pieces to two."""
        add(m[0], m[1], out[0])
        add(out[0], m[2], out[0])
        sub(m[1], m[2], out[1])
        sub(out[1], m[3], out[1])

    def a_adj(y, out):
        """``out = A y``: the adjoint of :func:`at`, two pieces to four."""
        out[0][...] = y[0]
        add(y[0], y[1], out[1])
        sub(y[0], y[1], out[2])
        neg(y[1], out[3])

    def b_adj(d, lo, hi, last):
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

    def wino_input(x, padding):
        """V ``(16, N*th*tw, C)``: ``B^T d B`` of every 4x4 tile ``d`` of padded ``x`` (tile ``(i, j)`` at
        ``(2i, 2j)``), from one channels-last padded copy."""
        n, c, h, w = x.shape
        th, tw = wino_tiles(h, w, padding)
        xt = x.transpose(0, 2, 3, 1)
        v = fresh((4, 4, n, th, tw, c), x.dtype)
        step = wino_step(n, 6 * th * (2 * tw + 2) * c * x.dtype.itemsize)

        def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
            k = min(step, hi - lo)
            p = fresh((k, 2 * th + 2, 2 * tw + 2, c), x.dtype)
            r = fresh((4, k, th, 2 * tw + 2, c), x.dtype)
            for i in range(lo, hi, k):
                j = min(i + k, hi)
                pp, rr = p[:j - i], r[:, :j - i]
                fill(pp, xt[i:j], (padding[0][0], padding[1][0], 0))
                bt([pp[:, a:a + 2 * th:2] for a in range(4)], rr)
                bt([rr[:, :, :, b:b + 2 * tw:2] for b in range(4)], [v[:, b, i:j] for b in range(4)])

        split(body, n, v.size)
        return v.reshape(16, n * th * tw, c)

    def wino_weight(w):
        """U ``(16, O, C)``: ``G g G^T`` of every 3x3 kernel ``g``, one GEMM ``(16, 9) @ (9, O C)``."""
        o, c = w.shape[:2]
        return product(xp.asarray(wino_gg, dtype=w.dtype), xp.reshape(w, (o * c, 9)).T).reshape(16, o, c)

    def wino_weight_adjoint(du, w_shape):
        """``G^T dU G`` for every kernel: the adjoint of :func:`wino_weight`."""
        o, c = w_shape[:2]
        return product(du.reshape(16, o * c).T, xp.asarray(wino_gg, dtype=du.dtype)).reshape(w_shape)

    def wino_output(m, n, th, tw, ho, wo):
        """``A^T m A`` of every tile, cropped to ``(N, O, ho, wo)``, from ``m`` ``(16, N*th*tw, O)``."""
        o = m.shape[-1]
        m = m.reshape(4, 4, n, th, tw, o)
        out = fresh((n, o, ho, wo), m.dtype)
        step = wino_step(n, 12 * th * tw * o * m.dtype.itemsize)

        def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
            k = min(step, hi - lo)
            s = fresh((2, 4, k, th, tw, o), m.dtype)
            y = fresh((k, 2 * th, 2 * tw, o), m.dtype)
            for i in range(lo, hi, k):
                j = min(i + k, hi)
                ss, yy = s[:, :, :j - i], y[:j - i]
                at(m[:, :, i:j], ss)
                yv = yy.reshape(j - i, th, 2, tw, 2, o)
                at([ss[:, b] for b in range(4)], [yv[:, :, :, :, b].transpose(2, 0, 1, 3, 4) for b in range(2)])
                out[i:j] = yy[:, :ho, :wo].transpose(0, 3, 1, 2)

        split(body, n, m.size)
        return out

    def wino_output_grad(g, th, tw):
        """dM ``(16, N*th*tw, O)``: the adjoint of :func:`wino_output` applied to ``g``."""
        n, o = g.shape[:2]
        gt = g.transpose(0, 2, 3, 1)
        dm = fresh((4, 4, n, th, tw, o), g.dtype)
        step = wino_step(n, 12 * th * tw * o * g.dtype.itemsize)

        def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
            k = min(step, hi - lo)
            gp = fresh((k, 2 * th, 2 * tw, o), g.dtype)
            q = fresh((4, 2, k, th, tw, o), g.dtype)
            for i in range(lo, hi, k):
                j = min(i + k, hi)
                qq = q[:, :, :j - i]
                fill(gp[:j - i], gt[i:j], (0, 0, 0))
                gv = gp[:j - i].reshape(j - i, th, 2, tw, 2, o)
                a_adj([gv[:, :, a].transpose(3, 0, 1, 2, 4) for a in range(2)], qq)
                a_adj([qq[:, b] for b in range(2)], [dm[:, b, i:j] for b in range(4)])

        split(body, n, dm.size)
        return dm.reshape(16, n * th * tw, o)

    def wino_input_adjoint(dv, x_shape, padding, th, tw):
        """The adjoint of :func:`wino_input`: overlapping tiles add (columns, then rows), the padding is cropped."""
        n, c, h, w = x_shape
        dv = dv.reshape(4, 4, n, th, tw, c)
        out = fresh((n, c, h, w), dv.dtype)
        pt, pl = padding[0][0], padding[1][0]
        step = wino_step(n, 12 * (th + 1) * (tw + 1) * c * dv.dtype.itemsize)

        def body(lo, hi):  # the samples lo:hi, ``step`` at a time through scratch that stays in cache
            k = min(step, hi - lo)
            e = fresh((4, k, th, tw + 1, 2, c), dv.dtype)
            p = fresh((k, th + 1, 2, 2 * tw + 2, c), dv.dtype)
            for i in range(lo, hi, k):
                j = min(i + k, hi)
                ee, pp = e[:, :j - i], p[:j - i]
                b_adj([dv[:, b, i:j] for b in range(4)], lambda q, ee=ee: ee[:, :, :, :tw, q],
                      lambda q, ee=ee: ee[:, :, :, 1:, q], ee[:, :, :, tw])
                ee = ee.reshape(4, j - i, th, 2 * tw + 2, c)
                b_adj([ee[a] for a in range(4)], lambda q, pp=pp: pp[:, :th, q],
                      lambda q, pp=pp: pp[:, 1:, q], pp[:, th])
                pp = pp.reshape(j - i, 2 * th + 2, 2 * tw + 2, c)
                out[i:j] = pp[:, pt:pt + h, pl:pl + w].transpose(0, 3, 1, 2)

        split(body, n, dv.size)
        return out

    def winograd_forward(x, w, b, padding):
        """``(y, V)``: V (5-d, unlike im2col's columns) is what :func:`winograd_weight_grad` reuses."""
        n, _, h, wd = x.shape
        th, tw = wino_tiles(h, wd, padding)
        v = wino_input(x, padding)
        m = product(v, wino_weight(w).swapaxes(-1, -2))
        y = wino_output(m, n, th, tw, h + sum(padding[0]) - 2, wd + sum(padding[1]) - 2)
        if b is not None:
            y += xp.reshape(b, (-1, 1, 1))
        return y, v.reshape(4, 4, n, th * tw, v.shape[-1])

    def winograd_input_grad(g, w, x_shape, padding):
        th, tw = wino_tiles(x_shape[2], x_shape[3], padding)
        dv = product(wino_output_grad(g, th, tw), wino_weight(w))
        return wino_input_adjoint(dv, x_shape, padding, th, tw)

    def winograd_weight_grad(x, g, w_shape, padding, v=None):
        th, tw = wino_tiles(x.shape[2], x.shape[3], padding)
        v = wino_input(x, padding) if v is None else v.reshape(16, -1, v.shape[-1])
        dm = wino_output_grad(g, th, tw)
        return wino_weight_adjoint(product(dm.swapaxes(-1, -2), v), w_shape)

    def bn_blocks(x):
        """``x`` as ``(N, C, S)`` and as ``(N, C*S)``, and its samples cut into blocks of about :data:`BN_BLOCK`
        elements (with NumPy; one block elsewhere): a block's temporaries stay in cache between its ufunc calls,
        and per-block partial sums added in block order give the same statistics on any number of threads."""
        x = xp.ascontiguousarray(x)
        x3 = xp.reshape(x, x.shape[:2] + (-1,))
        per = max(1, BN_BLOCK // max(1, x3.shape[1] * x3.shape[2])) if pooled else max(1, x3.shape[0])
        return x3, xp.reshape(x3, (x3.shape[0], -1)), [slice(i, i + per) for i in range(0, x3.shape[0], per)]

    def each(body, items, size):
        """``body(item)`` for every item: with NumPy on the CPU thread pool when ``size`` elements are worth it
        (:func:`ember.kernels.parallel.each`), elsewhere in order."""
        parallel.each(body, items, size if pooled else 0)

    def bn_sums(body, blocks, c, dtype, size, k=1):
        """Run ``body(block, out)`` on every block (:func:`each`), ``out`` a row of ``k`` per-channel partial
        sums; their totals, shape ``(k, C)``, summed in block order."""
        parts = xp.empty((len(blocks), k, c), dtype=dtype)
        each(lambda i: body(blocks[i], parts[i]), range(len(blocks)), size)
        return parts.sum(0)

    def per_channel(v, x3):
        """The per-channel vector ``v`` repeated over a sample's positions, ``(C*S,)``: against it, a sample
        row ``(C*S,)`` meets a contiguous operand (NumPy's broadcast of ``(C, 1)`` runs at half the speed)."""
        return xp.repeat(xp.reshape(v, (-1,)).astype(x3.dtype, copy=False), x3.shape[2])

    def batch_norm_train(x, w, b, eps):
        """Training-mode batch norm over every axis but 1: ``(y, mean, biased variance, 1/std)``, the
        statistics in the shape ``(1, C, 1, ...)``.  The variance is the mean of ``(x - mean)**2`` (two
        passes, as PyTorch's); each pass runs block by block (:func:`bn_blocks`), on threads when large."""
        c = x.shape[1]
        shape = (1, c) + (1,) * (x.ndim - 2)
        x3, x2, blocks = bn_blocks(x)
        m = x.size // c
        einsum = xp.einsum
        y = fresh(x2.shape, x.dtype)
        y3 = xp.reshape(y, x3.shape)

        def total(blk, out):
            out[0] = einsum("nci->c", x3[blk])

        mean = (bn_sums(total, blocks, c, x.dtype, x.size)[0] / m).astype(x.dtype, copy=False)
        mean_row = per_channel(mean, x3)

        def centre(blk, out):
            xp.subtract(x2[blk], mean_row, out=y[blk])
            out[0] = einsum("nci,nci->c", y3[blk], y3[blk])

        var = (bn_sums(centre, blocks, c, x.dtype, x.size)[0] / m).astype(x.dtype, copy=False)
        invstd = 1 / xp.sqrt(var + eps)
        scale = per_channel(invstd if w is None else invstd * w, x3)
        shift = None if b is None else per_channel(b, x3)

        def affine(blk):
            xp.multiply(y[blk], scale, out=y[blk])
            if shift is not None:
                xp.add(y[blk], shift, out=y[blk])

        each(affine, blocks, x.size)
        return (xp.reshape(y, x.shape), xp.reshape(mean, shape), xp.reshape(var, shape),
                xp.reshape(invstd, shape))

    def batch_norm_backward(g, x, w, mean, invstd, input_grad=True):
        """The gradients of training-mode batch norm, PyTorch's closed form: ``(gx, gw, gb)`` with
        ``gb = sum(g)``, ``gw = sum(g * xhat)`` per channel and
        ``gx = (g - gb / m - xhat * gw / m) * w / std`` (None unless ``input_grad``), ``xhat = (x - mean) / std``
        over the ``m`` values of a channel; ``mean`` and ``invstd`` as :func:`batch_norm_train` gave them.
        Two block-wise passes (:func:`bn_blocks`): the sums, then ``gx``."""
        c = x.shape[1]
        m = x.size // c
        x3, x2, blocks = bn_blocks(x)
        g3, g2, _ = bn_blocks(g)
        mean_row = per_channel(mean, x3)
        invstd = xp.reshape(invstd, (c,))
        einsum = xp.einsum

        def sums(blk, out):
            d = x2[blk] - mean_row
            out[0] = einsum("nci->c", g3[blk])
            out[1] = einsum("nci,nci->c", g3[blk], xp.reshape(d, g3[blk].shape))

        gb, dot = bn_sums(sums, blocks, c, g.dtype, x.size, k=2)
        gw = dot * invstd
        if not input_grad:
            return None, gw, gb
        k = per_channel(gw * invstd / m, x3)
        mean_g = per_channel(gb / m, x3)
        scale = per_channel(invstd if w is None else invstd * w, x3)
        gx = fresh(x2.shape, g.dtype)

        def grad(blk):
            d, out = x2[blk] - mean_row, gx[blk]
            xp.multiply(d, k, out=d)
            xp.subtract(g2[blk], d, out=out)
            xp.subtract(out, mean_g, out=out)
            xp.multiply(out, scale, out=out)

        each(grad, blocks, x.size)
        return xp.reshape(gx, x.shape), gw, gb

    def batch_norm_eval(x, mean, var, w, b, eps):
        """Inference batch norm, ``x * alpha + beta`` per channel (dim 1) with ``alpha = w / sqrt(var + eps)``
        and ``beta = b - mean * alpha``, computed as the composed ops compute it, bit for bit.  With NumPy the
        two passes write into one reused buffer (no fresh pages, no intermediate), the samples split over
        ``ember.get_num_threads()`` threads when large.  (Cutting the passes into cache-sized chunks was
        measured slower on ResNet-18's shapes: the extra ufunc calls cost more than the cache saves.)"""
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        alpha = 1 / xp.sqrt(xp.reshape(var, shape) + eps)
        if w is not None:
            alpha = alpha * xp.reshape(w, shape)
        beta = -xp.reshape(mean, shape) * alpha
        if b is not None:
            beta = beta + xp.reshape(b, shape)
        if not pooled or x.dtype != alpha.dtype or x.dtype != beta.dtype or x.size == 0:
            return x * alpha + beta
        n, c = x.shape[:2]
        x3 = xp.reshape(x, (n, c, -1))  # a view when x is contiguous enough, else a copy
        out = workspace.empty(x3.shape, x.dtype)
        a2, b2 = xp.reshape(alpha, (c, 1)), xp.reshape(beta, (c, 1))
        multiply, add = xp.multiply, xp.add

        def body(lo, hi):
            o = out[lo:hi]
            multiply(x3[lo:hi], a2, out=o)
            add(o, b2, out=o)

        parallel.rows(body, n, x.size)
        return xp.reshape(out, x.shape)

    def layer_norm(x, w, b, nd, eps):
        """Layer norm over the last ``nd`` axes: ``(y, mean, 1/std)``, the statistics with those axes kept
        (size 1).  ``y = (x - mean) / std * w + b`` by the same array operations as the composed ops (bit for bit:
        a traced or exported model replays those), the later passes in place."""
        axes = tuple(range(x.ndim - nd, x.ndim))
        mean = xp.mean(x, axis=axes, keepdims=True)
        d = x - mean
        std = xp.sqrt(xp.mean(d * d, axis=axes, keepdims=True) + eps)
        div(d, std, d)
        if w is not None:
            mul(d, w, d)
        if b is not None:
            add(d, b, d)
        return d, mean, 1 / std

    # ---------------------------------------------------------------- pooling
    # input bytes of the planes max pooling hands to one round of ufunc calls: its intermediate stays in cache
    POOL_CHUNK_BYTES = 1 << 20

    def pool_windows(x, k, stride, padding, dilation):
        lowest = -xp.inf if x.dtype.kind == "f" else xp.iinfo(x.dtype).min
        return windows(pad(x, padding, lowest), k, stride, dilation)

    def max_pool(x, k, stride, padding, dilation):
        """Max over windows (NaN propagates).  With NumPy one spatial axis at a time (the max over a box is
        the max over each of its sides in turn): per axis a copy and one in-place ``maximum`` per further
        kernel offset, each over the output positions whose window element at that offset lies inside the
        input, so the padding is never built; the planes in cache-sized chunks on threads, into reused
        buffers.  Elsewhere one ``maximum`` pass per kernel offset over the padded input's windows."""
        if pooled and x.size:
            return separable_max_pool(x, k, stride, padding, dilation)
        v = pool_windows(x, k, stride, padding, dilation)
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

    def separable_max_pool(x, k, stride, padding, dilation):
        d = len(k)
        n, c = x.shape[:2]
        sp = tuple(x.shape[2:])
        outs = tuple((sz + lo + hi - dd * (kk - 1) - 1) // st + 1
                     for sz, kk, st, (lo, hi), dd in zip(sp, k, stride, padding, dilation))
        rows = xp.reshape(x, (n * c,) + sp)
        # intermediates: axis i reduced, the axes after it still whole
        shapes = [(n * c,) + outs[:i + 1] + sp[i + 1:] for i in range(d)]
        bufs = [workspace.empty(sh, x.dtype) for sh in shapes]
        taps = [axis_taps(sz, o, kk, st, dd, lo)
                for sz, o, kk, st, (lo, _), dd in zip(sp, outs, k, stride, padding, dilation)]
        lowest = None
        if any(t[0][0] > 0 or t[0][1] < o for t, o in zip(taps, outs)):  # the first tap misses an edge
            lowest = -xp.inf if x.dtype.kind == "f" else xp.iinfo(x.dtype).min
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

        parallel.each(pool, parallel.spans(n * c, per), x.size)
        return xp.reshape(bufs[-1], (n, c) + outs)

    def first_max_masks(x, best, k, stride, padding, dilation):
        """``(offset, mask)`` per kernel offset: where that offset holds its window's first maximum."""
        v = pool_windows(x, k, stride, padding, dilation)
        free = xp.ones(best.shape, dtype=bool)
        for off in offsets(k):
            m = (v[(Ellipsis,) + off] == best) & free
            free &= ~m
            yield off, m

    def max_pool_indices(x, best, k, stride, padding, dilation):
        """PyTorch's indices: the flat position of each window's first maximum in its (unpadded) input plane."""
        d = len(k)
        osp = best.shape[2:]
        sp = x.shape[2:]
        idx = xp.zeros(best.shape, dtype=xp.int64)
        grid = 0
        for i in range(d):
            shape = [1] * (2 + d)
            shape[2 + i] = osp[i]
            grid = grid + (xp.arange(osp[i]).reshape(shape) * stride[i] - padding[i][0]) * math.prod(sp[i + 1:])
        for off, m in first_max_masks(x, best, k, stride, padding, dilation):
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

    def tiled_max_pool_backward(g, xt, best, k):
        """``max_pool_backward`` on tiling windows: each offset's share is assigned, not added, and no padding."""
        gx = xp.empty(xt.shape, dtype=g.dtype)
        left = xp.array(g, copy=True)
        for off in offsets(k):
            idx = (slice(None), slice(None)) + sum(((slice(None), o) for o in off), ())
            sel = left * (xt[idx] == best)
            gx[idx] = sel
            left -= sel
        return gx

    def max_pool_backward(g, x, best, k, stride, padding, dilation):
        """Each output gradient goes to its window's first maximum: one masked slice-add per kernel offset.

        ``left`` holds the gradient not yet placed, so a tie further on in the window receives nothing.
        """
        xt = tiles(x, k, stride, padding, dilation)
        if xt is not None:
            return tiled_max_pool_backward(g, xt, best, k).reshape(x.shape)
        v = pool_windows(x, k, stride, padding, dilation)
        padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], padding))
        gx = xp.zeros(tuple(x.shape[:2]) + padded, dtype=g.dtype)
        osp = g.shape[2:]
        left = xp.array(g, copy=True)
        for off in offsets(k):
            sel = left * (v[(Ellipsis,) + off] == best)
            sl = tuple(slice(o * dd, o * dd + s * (n - 1) + 1, s) for o, dd, s, n in zip(off, dilation, stride, osp))
            gx[(Ellipsis,) + sl] += sel
            left -= sel
        crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], padding))
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

    # ---------------------------------------------------------------- embeddings
    def embedding_bag_segments(offsets, n, keep):
        """Bags of ``n`` entries starting at ``offsets`` (ascending, the first 0): each entry's bag, and the
        number of entries of each bag where ``keep`` (every entry where ``keep`` is None)."""
        at = xp.arange(n, dtype=offsets.dtype)
        bag = xp.searchsorted(offsets, at, side="right") - 1
        kept = xp.cumsum(astype(keep, xp.int64)) if keep is not None else astype(at, xp.int64) + 1
        kept = xp.concatenate((xp.zeros(1, dtype=xp.int64), kept))  # kept entries before each position
        ends = xp.concatenate((offsets[1:], xp.full(1, n, dtype=offsets.dtype)))
        return astype(bag, xp.int64), xp.take(kept, ends) - xp.take(kept, offsets)

    # ---------------------------------------------------------------- resampling (interpolate)
    def ratio(o, s, scale):
        return s / o if scale is None else 1.0 / scale

    def pad_index(size, lo, hi, mode):
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

    def resize_nearest_index(o, s, scale, exact=False):
        """PyTorch's nearest-mode source of each of ``o`` output positions along a dimension of size ``s``
        (``exact``: 'nearest-exact', sampling at pixel centres)."""
        at = xp.arange(o, dtype=xp.float64)
        src = xp.floor((at + 0.5 if exact else at) * ratio(o, s, scale))
        return xp.minimum(astype(src, xp.int64), xp.asarray(s - 1, dtype=xp.int64))

    def _taps_matrix(o, s, idx, w):
        """The ``(o, s)`` matrix with ``w[:, j]`` added at ``idx[:, j]`` (one tap at a time: a row's taps may
        share a clamped source)."""
        m = xp.zeros((o, s), dtype=xp.float64)
        rows = xp.arange(o)
        for j in range(idx.shape[1]):
            m[rows, idx[:, j]] = m[rows, idx[:, j]] + w[:, j]
        return m

    def _cubic(x, a):
        x = xp.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return xp.where(x <= 1, near, xp.where(x < 2, far, xp.zeros_like(x)))

    def resize_cubic_weights(o, s, scale, align_corners):
        """The ``(o, s)`` float64 matrix of PyTorch's bicubic weights (A = -0.75, edges replicated)."""
        at = xp.arange(o, dtype=xp.float64)
        if align_corners:
            src = at * ((s - 1) / (o - 1) if o > 1 else 0.0)
        else:
            src = (at + 0.5) * ratio(o, s, scale) - 0.5
        i0 = xp.floor(src)
        t = src - i0
        offs = xp.arange(-1, 3, dtype=xp.float64)
        idx = xp.clip(astype(i0[:, None] + offs[None, :], xp.int64), 0, s - 1)
        w = _cubic(t[:, None] - offs[None, :], -0.75)
        return _taps_matrix(o, s, idx, w)

    def resize_aa_weights(o, s, scale, align_corners, cubic):
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
        lo = xp.maximum(astype(xp.trunc(centre - support + 0.5), xp.int64), 0)
        hi = xp.minimum(astype(xp.trunc(centre + support + 0.5), xp.int64), s)
        k = int(math.ceil(2 * support)) + 2
        j = xp.arange(k, dtype=xp.int64)
        idx = lo[:, None] + j[None, :]
        valid = idx < hi[:, None]
        x = (astype(idx, xp.float64) - centre[:, None] + 0.5) * inv
        w = _cubic(x, -0.5) if cubic else xp.maximum(1 - xp.abs(x), xp.zeros_like(x))
        w = xp.where(valid, w, xp.zeros_like(w))
        total = xp.sum(w, axis=1, keepdims=True)
        w = w / xp.where(total == 0, xp.ones_like(total), total)
        return _taps_matrix(o, s, xp.minimum(idx, s - 1), w)

    def resize_linear_weights(o, s, scale, align_corners):
        """The ``(o, s)`` float64 matrix of PyTorch's linear interpolation weights along one dimension."""
        at = xp.arange(o, dtype=xp.float64)
        if align_corners:
            src = at * ((s - 1) / (o - 1) if o > 1 else 0.0)
        else:
            src = xp.maximum((at + 0.5) * ratio(o, s, scale) - 0.5, xp.zeros((), dtype=xp.float64))
        last = xp.asarray(s - 1, dtype=xp.int64)
        i0 = xp.minimum(astype(xp.floor(src), xp.int64), last)
        i1 = xp.minimum(i0 + 1, last)
        lam = src - astype(i0, xp.float64)
        rows = xp.arange(o)
        m = xp.zeros((o, s), dtype=xp.float64)
        m[rows, i1] = lam
        m[rows, i0] = m[rows, i0] + (1 - lam)  # at the last source (i0 == i1) the two weights add up
        return m

    # ---------------------------------------------------------------- softmax family
    def softmax(x, axis):
        if x.size == 0:
            return xp.zeros_like(x)
        e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
        e /= xp.sum(e, axis=axis, keepdims=True)
        return e

    def log_softmax(x, axis):
        if x.size == 0:
            return xp.zeros_like(x)
        s = x - xp.max(x, axis=axis, keepdims=True)
        s -= xp.log(xp.sum(xp.exp(s), axis=axis, keepdims=True))
        return s

    def cross_entropy_index(x, t, ignore_index, mean):
        """Fused log-softmax + NLL of ``x`` ``(N, C)`` at class indices ``t`` ``(N,)``, summed or averaged over
        the rows not ignored.  Returns the loss, the per-row weights ``(N, 1)`` (0 where ignored, ``1/count``
        for the mean), the one-hot targets ``(N, C)``, the smallest and largest target kept (bounds check) and
        None.  A stack ``x`` ``(..., N, C)``, ``t`` ``(..., N)`` (vmap's batch in front) gives one loss per
        sample ``(...)``, each summed or averaged over its own rows (NaN for a mean over no row, its gradient
        0), and last the gradient for a unit output gradient, ``(softmax(x) - onehot) * weights``."""
        c = x.shape[-1]
        keep = t != ignore_index
        every = bool(xp.all(keep))
        safe = t if every else xp.where(keep, t, 0)
        bounds = (int(xp.min(safe)), int(xp.max(safe))) if safe.size else (0, 0)
        if x.size == 0:
            logp = e = xp.zeros_like(x)
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
        onehot = (xp.arange(c) == safe[..., None]).astype(x.dtype)
        if x.ndim > 2:
            loss, coef = cross_entropy_stack(x, keep, every, picked, mean)
            if x.size:
                e /= total
            e -= onehot
            if not (every and coef == 1):
                e *= coef
            return loss, coef, onehot, bounds, e
        count = int(keep.sum())
        scale = (1.0 / count if count else 0.0) if mean else 1.0
        coef = keep.astype(x.dtype) * x.dtype.type(scale)
        loss = -xp.sum(picked * coef)
        if mean and not count:  # every target ignored: the mean is 0/0 (NaN), its gradient 0 as in PyTorch
            loss = loss + x.dtype.type(math.nan)
        return loss, coef[:, None], onehot, bounds, None

    def cross_entropy_stack(x, keep, every, picked, mean):
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

    def cross_entropy_index_backward(x, onehot, coef, g):
        """``(softmax(x) - onehot) * coef * g``: the gradient of :func:`cross_entropy_index` with respect to
        ``x`` (a 0-dim ``g``; for a stack, one per sample)."""
        e = softmax(x, -1)
        e -= onehot
        e *= coef * g[..., None, None]
        return e

    # ---------------------------------------------------------------- activations
    def softplus(x, beta, threshold):
        bx = x * beta
        return xp.where(bx > threshold, x, xp.logaddexp(0, bx) / beta).astype(x.dtype, copy=False)

    erf = _native(xp, "erf") or fallbacks(xp)["erf"]

    def neg_part(x):  # min(x, 0): keeps exp() of the branch where() drops finite
        return xp.minimum(x, xp.zeros_like(x))

    def elu(x, alpha, scale, input_scale):
        # PyTorch's elu (elu, selu and celu): scale x above 0, alpha scale (exp(input_scale x) - 1) below
        return xp.where(x > 0, x * scale, xp.expm1(neg_part(x) * input_scale) * (alpha * scale))

    def leaky_relu(x, slope):  # slope: a number, or an array of slopes (rrelu's noise)
        return xp.where(x > 0, x, x * slope)

    def threshold(x, th, value):
        return xp.where(x > th, x, xp.full_like(x, value))

    def hardsigmoid(x):
        return xp.clip(x + 3, 0, 6) / 6

    def silu(x):
        return x / (1 + xp.exp(-x))

    def gelu(x, approximate):
        if approximate == "tanh":
            return x * 0.5 * (1 + xp.tanh((x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)))
        return x * 0.5 * (1 + erf(x * (1.0 / math.sqrt(2.0))))

    def log_sigmoid(x):
        return neg_part(x) - xp.log1p(xp.exp(-xp.abs(x)))

    def softshrink(x, lambd):
        return xp.where(x > lambd, x - lambd, xp.where(x < -lambd, x + lambd, xp.zeros_like(x)))

    def hardshrink(x, lambd):
        return xp.where(xp.abs(x) > lambd, x, xp.zeros_like(x))

    def glu(x, axis):
        a, b = xp.split(x, 2, axis=axis)
        return a / (1 + xp.exp(-b))

    def triu_pairs(n):
        """``(2, n (n - 1) / 2)`` int64: the row and column of each entry above the diagonal, row by row."""
        i, j = xp.triu_indices(n, 1) if hasattr(xp, "triu_indices") else _np_triu(n)
        return xp.stack([xp.asarray(i, dtype=xp.int64), xp.asarray(j, dtype=xp.int64)])

    def _np_triu(n):
        r = xp.arange(n)
        keep = r[:, None] < r[None, :]
        return xp.broadcast_to(r[:, None], (n, n))[keep], xp.broadcast_to(r[None, :], (n, n))[keep]

    return {
        "triu_pairs": triu_pairs,
        "conv_forward": widened(conv_forward), "conv_input_grad": widened(conv_input_grad),
        "conv_weight_grad": widened(conv_weight_grad),
        "max_pool": max_pool, "max_pool_indices": max_pool_indices, "max_pool_backward": max_pool_backward,
        "adaptive_max_pool": adaptive_max_pool,
        "flat_gather": flat_gather, "flat_scatter_add": flat_scatter_add, "constant_pad": pad,
        "batch_norm_train": batch_norm_train, "batch_norm_backward": batch_norm_backward,
        "batch_norm_eval": batch_norm_eval, "layer_norm": layer_norm,
        "softmax": softmax, "log_softmax": log_softmax, "cross_entropy_index": cross_entropy_index,
        "cross_entropy_index_backward": cross_entropy_index_backward,
        "nn_softplus": softplus, "embedding_bag_segments": embedding_bag_segments,
        "nn_elu": elu, "nn_leaky_relu": leaky_relu, "nn_threshold": threshold, "nn_hardsigmoid": hardsigmoid,
        "nn_hardswish": lambda x: x * hardsigmoid(x), "nn_silu": silu,
        "nn_mish": lambda x: x * xp.tanh(softplus(x, 1.0, 20.0)), "nn_gelu": gelu, "nn_log_sigmoid": log_sigmoid,
        "nn_softshrink": softshrink, "nn_hardshrink": hardshrink, "nn_prelu": leaky_relu, "nn_glu": glu,
        "pad_index": pad_index,
        "resize_nearest_index": resize_nearest_index, "resize_linear_weights": resize_linear_weights,
        "resize_cubic_weights": resize_cubic_weights, "resize_aa_weights": resize_aa_weights,
    }
