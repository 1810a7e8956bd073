"""Pooling: max (with PyTorch's flat indices), average (a depthwise convolution by ones), adaptive, unpooling.

Max pooling's gradient scatters into the input by the argmax indices; the
scatter and the gather are each other's gradient (``FlatScatter``/``FlatGather``).
"""
from __future__ import annotations

import numpy as np

from ...autograd.function import Op
from ...autograd.grad_mode import no_grad
from ...dispatch import apply
from ...tensor import Tensor, _wrap
from .conv import conv1d, conv2d, conv3d, ntuple
from .padding import pad


class FlatGather(Op):
    """``x[n, c].flat[idx[n, c]]`` per plane."""

    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, idx):
        return k["flat_gather"](x, idx)

    @staticmethod
    def backward(ctx, g):
        x, idx = ctx.inputs
        return apply(FlatScatter, g, idx, tuple(x.shape)), None


class FlatScatter(Op):
    """Zeros of ``shape`` with ``v`` added at flat plane positions ``idx``."""

    save_inputs = True

    @staticmethod
    def forward(ctx, k, v, idx, shape):
        return k["flat_scatter_add"](v, idx, shape)

    @staticmethod
    def backward(ctx, g):
        return apply(FlatGather, g, ctx.inputs[1]), None


class MaxPool(Op):
    """Max pooling; with ``indices`` a second, non-differentiable output holds PyTorch's flat argmax."""

    backward_name = "MaxPoolWithIndicesBackward0"
    nondiff_outputs = (1,)

    @staticmethod
    def forward(ctx, k, x, params, indices):
        best = k["max_pool"](x, *params)
        ctx.x, ctx.best, ctx.params = x, best, params
        return (best, k["max_pool_indices"](x, best, *params)) if indices else best

    @staticmethod
    def backward(ctx, g, _gi=None):
        return apply(MaxPoolBackward, g, ctx.x, ctx.best, ctx.params)


class MaxPoolBackward(Op):
    """The gradient of max pooling (to each window's first maximum); its own gradient gathers at the argmax."""

    backward_name = "MaxPoolWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, k, g, x, best, params):
        ctx.x, ctx.best, ctx.params = x, best, params
        return k["max_pool_backward"](g, x, best, *params)

    @staticmethod
    def backward(ctx, gg):
        idx = gg._dev.kernels["max_pool_indices"](ctx.x, ctx.best, *ctx.params)
        return apply(FlatGather, gg, _wrap(idx, gg._dev))


class AdaptiveMaxPool(Op):
    backward_name = "AdaptiveMaxPool2DBackward0"
    nondiff_outputs = (1,)

    @staticmethod
    def forward(ctx, k, x, osize):
        out, idx = k["adaptive_max_pool"](x, osize)
        ctx.idx, ctx.shape = idx, x.shape
        return out, idx

    @staticmethod
    def backward(ctx, g, _gi):
        return apply(FlatScatter, g, _wrap(ctx.idx, g._dev), tuple(ctx.shape))


# --------------------------------------------------------------------------- helpers
def _batched(op, x, d):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.ndim not in (d + 1, d + 2) or 0 in x.shape[1:]:
        raise RuntimeError(f"{op}: non-empty {d + 1}D or {d + 2}D (batch mode) tensor expected for input, but got "
                           f"input of size {list(x.shape)}")
    return (x.unsqueeze(0), True) if x.ndim == d + 1 else (x, False)


def _out_size(s, k, st, p, d, ceil):
    span = s + 2 * p - d * (k - 1) - 1
    o = (-(-span // st) if ceil else span // st) + 1
    if ceil and (o - 1) * st >= s + p:
        o -= 1
    return o


def _pool_geometry(op, x, kernel_size, stride, padding, dilation, ceil_mode, d):
    k = ntuple(kernel_size, d, "kernel_size")
    st = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else ntuple(stride, d)
    p, dl = ntuple(padding, d, "padding"), ntuple(dilation, d, "dilation")
    for kk, pp, dd in zip(k, p, dl):
        if pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    outs = [_out_size(s, kk, ss, pp, dd, ceil_mode) for s, kk, ss, pp, dd in zip(x.shape[2:], k, st, p, dl)]
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"{op}: Given input size: {tuple(x.shape[1:])}. Calculated output size: "
                           f"{(x.shape[1], *outs)}. Output size is too small")
    pads = tuple((pp, (o - 1) * ss + dd * (kk - 1) + 1 - s - pp)
                 for s, kk, ss, pp, dd, o in zip(x.shape[2:], k, st, p, dl, outs))
    return k, st, pads, dl


def _max_pool(op, d, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unb = _batched(op, x, d)
    k, st, pads, dl = _pool_geometry(op, x, kernel_size, stride, padding, dilation, ceil_mode, d)
    pads = tuple((lo, max(hi, 0)) for lo, hi in pads)
    if not return_indices:
        out = apply(MaxPool, x, (k, st, pads, dl), False)
        return out.squeeze(0) if unb else out
    out, idx = apply(MaxPool, x, (k, st, pads, dl), True)
    return (out.squeeze(0), idx.squeeze(0)) if unb else (out, idx)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max over ``kernel_size`` windows; with ``return_indices`` also the flat argmax in each input plane.

    >>> import ember
    >>> ember.nn.functional.max_pool2d(ember.arange(16.).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


_CONVS = {1: conv1d, 2: conv2d, 3: conv3d}


def _avg_pool(op, d, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unb = _batched(op, x, d)
    k, st, pads, _ = _pool_geometry(op, x, kernel_size, stride, padding, 1, ceil_mode, d)
    n, c = x.shape[:2]
    conv = _CONVS[d]
    ones = x.new_ones((1, 1) + k)
    flat = x.reshape((n * c, 1) + tuple(x.shape[2:]))
    padded = pad(flat, _torch_pad([(lo, max(hi, 0)) for lo, hi in pads]))
    total = conv(padded, ones, None, st)
    total = total.reshape((n, c) + tuple(total.shape[2:]))
    if divisor_override:
        out = total / divisor_override
    else:
        with no_grad():
            mask = x.new_ones((1, 1) + tuple(x.shape[2:]))
            lo_pads = [(lo, lo) for lo, _ in pads]
            mask = pad(mask, _torch_pad(lo_pads), value=1.0 if count_include_pad else 0.0)
            extra = [(0, max(hi - lo, 0)) for lo, hi in pads]
            counts = conv(pad(mask, _torch_pad(extra)), ones, None, st)
            counts = counts[(0, 0) + tuple(slice(0, o) for o in total.shape[2:])]
        out = total / counts
    return out.squeeze(0) if unb else out


def _torch_pad(pairs):
    """Per-dimension ``(lo, hi)`` pairs (first spatial dim first) in F.pad's last-dim-first order."""
    flat = []
    for lo, hi in reversed(pairs):
        flat += [lo, hi]
    return tuple(flat)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """Mean over ``kernel_size`` windows.

    >>> import ember
    >>> ember.nn.functional.avg_pool2d(ember.arange(16.).reshape(1, 1, 4, 4), 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# --------------------------------------------------------------------------- adaptive
def _osize(output_size, x, d):
    osz = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * d
    return tuple(s if o is None else int(o) for o, s in zip(osz, x.shape[-d:]))


def _adaptive_matrix(s, o, like):
    """``(o, s)`` averaging matrix over PyTorch's adaptive windows ``[floor(i*s/o), ceil((i+1)*s/o))``."""
    from ...ops.creation import tensor

    i = np.arange(o)[:, None]
    a, b = (i * s) // o, -(-((i + 1) * s) // o)
    j = np.arange(s)[None, :]
    m = ((j >= a) & (j < b)) / (b - a)
    return tensor(m, dtype=like.dtype, device=like.device)


def _adaptive_avg(op, d, x, output_size):
    x, unb = _batched(op, x, d)
    osz = _osize(output_size, x, d)
    out = x
    for i in range(d):
        axis = 2 + i
        m = _adaptive_matrix(x.shape[axis], osz[i], x)
        out = (out.transpose(axis, -1) @ m.t()).transpose(axis, -1)
    return out.squeeze(0) if unb else out


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Mean pooling to a fixed output size.

    >>> import ember
    >>> ember.nn.functional.adaptive_avg_pool2d(ember.ones(1, 2, 5, 7), (2, 3)).shape
    ember.Size([1, 2, 2, 3])
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(op, d, x, output_size, return_indices):
    x, unb = _batched(op, x, d)
    out, idx = apply(AdaptiveMaxPool, x, _osize(output_size, x, d))
    if unb:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling to a fixed output size."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


# --------------------------------------------------------------------------- unpooling
def _max_unpool(op, d, x, indices, kernel_size, stride, padding, output_size):
    x, unb = _batched(op, x, d)
    if unb:
        indices = indices.unsqueeze(0)
    if indices.shape != x.shape:
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input tensor "
                           f"({list(x.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    k = ntuple(kernel_size, d, "kernel_size")
    st = k if stride is None else ntuple(stride, d)
    p = ntuple(padding, d, "padding")
    if output_size is None:
        sp = tuple((i - 1) * s - 2 * pp + kk for i, s, pp, kk in zip(x.shape[2:], st, p, k))
    else:
        sp = tuple(output_size)[-d:]
    out = apply(FlatScatter, x, indices, tuple(x.shape[:2]) + tuple(sp))
    return out.squeeze(0) if unb else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """Place pooled values back at their argmax positions (zeros elsewhere)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)
