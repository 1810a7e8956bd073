"""Convolution and pooling: N-d convolutions (groups, dilation, 'same' padding), transposed convolutions,
unfold and fold; max pooling (with PyTorch's flat indices), average pooling (a depthwise convolution by
ones), adaptive pooling and unpooling.

Three ops form a closed family, each the others' gradient, so every order of
derivative is available: ``Conv`` (x, w -> y), ``ConvInputGrad`` (the
transposed convolution: gy, w -> x-shaped) and ``ConvWeightGrad`` (x, gy -> w-shaped).
Max pooling's gradient scatters into the input by the argmax indices; the
scatter and the gather are each other's gradient (``FlatScatter``/``FlatGather``).
"""
from __future__ import annotations

from .. import dtypes
from ..autograd.function import Op, composite_node, keep_args, keep_saved, rename_node
from ..autograd.grad_mode import no_grad
from ..dispatch import apply, autocasting
from ..layouts import keep_format
from ..registry import check_tensor, export, op_class
from ..tensor import Tensor, _wrap
from .creation import arange, eye, rand
from .nn import pad, torch_form
from .pointwise import div, where
from .shape import cat


def _needs(ctx, i):
    """Whether the op's ``i``-th tensor input needs a gradient."""
    return ctx.next_functions[i][0] is not None


# PyTorch's arguments of a convolution, as its nodes keep them (``ctx.params``: stride, padding pairs, dilation,
# groups; an asymmetric 'same' padding is its lower side, as PyTorch pads the rest of it first)
CONV_ARGS = {"stride": lambda n: n.params[0], "padding": lambda n: tuple(lo for lo, _ in n.params[1]),
             "dilation": lambda n: n.params[2], "groups": lambda n: n.params[3], "transposed": lambda n: False,
             "output_padding": lambda n: (0,) * len(n.params[0])}


def conv_args(node, **given) -> dict:
    """PyTorch's arguments of convolution node ``node`` (read by ``CONV_ARGS``), with ``given`` in their place: the
    values to keep (:func:`ember.autograd.function.keep_args`) where a caller gives PyTorch's op other ones."""
    return {k: given[k] if k in given else how(node) for k, how in CONV_ARGS.items()}


class Conv(Op):
    """The convolution; ``ctx.cols`` keeps what the forward kernel computed from the input for the weight
    gradient (im2col's columns, or Winograd's transformed input, 4x the input where the columns are 9x)."""

    backward_name = "ConvolutionBackward0"
    save_inputs = True
    save_for = ((0, 1, 2), (0, 1, 2), ())  # input and weight for every gradient, never the bias
    saved_names = ("input", "weight")
    saved_args = dict(CONV_ARGS, bias_sym_sizes_opt=lambda n: n._shapes[2][0] if len(n._shapes) > 2 else (0,))

    @staticmethod
    def forward(ctx, k, x, w, b, params):
        out, cols = k["conv_forward"](x, w, b, *params)
        ctx.params, ctx.cols = params, cols
        return out

    @staticmethod
    def backward(ctx, g):
        ins = ctx.inputs
        x, w = ins[:2]
        p = ctx.params
        gx = apply(ConvInputGrad, g, w, tuple(x.shape), p) if _needs(ctx, 0) else None
        gw = apply(ConvWeightGrad, x, g, tuple(w.shape), p, ctx.cols) if _needs(ctx, 1) else None
        ctx.cols = None
        if len(ins) == 2:
            return gx, gw
        return gx, gw, g.sum([0] + list(range(2, g.ndim))) if _needs(ctx, 2) else None


class ConvInputGrad(Op):
    backward_name = "ConvolutionBackwardBackward0"
    save_inputs = True
    saved_args = CONV_ARGS

    @staticmethod
    def forward(ctx, k, g, w, x_shape, params):
        ctx.params = params
        return k["conv_input_grad"](g, w, x_shape, *params)

    @staticmethod
    def backward(ctx, gg):
        g, w = ctx.inputs
        p = ctx.params
        dg = apply(Conv, gg, w, None, p) if _needs(ctx, 0) else None
        dw = apply(ConvWeightGrad, gg, g, tuple(w.shape), p, None) if _needs(ctx, 1) else None
        return dg, dw


class ConvWeightGrad(Op):
    backward_name = "ConvolutionBackwardBackward0"
    save_inputs = True
    saved_args = CONV_ARGS

    @staticmethod
    def forward(ctx, k, x, g, w_shape, params, cols):
        ctx.params = params
        return k["conv_weight_grad"](x, g, w_shape, *params, cols)

    @staticmethod
    def backward(ctx, gw):
        x, g = ctx.inputs
        p = ctx.params
        dx = apply(ConvInputGrad, g, gw, tuple(x.shape), p) if _needs(ctx, 0) else None
        dg = apply(Conv, x, gw, None, p) if _needs(ctx, 1) else None
        return dx, dg


# --------------------------------------------------------------------------- argument handling
def ntuple(v, n: int, name: str = "argument") -> tuple:
    """``v`` as an n-tuple of ints (an int repeats)."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1 and n > 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise ValueError(f"{name} must have {n} elements, got {list(v)}")
        return tuple(int(i) for i in v)
    return (int(v),) * n


def _check_input(op, x, w, d, groups):
    if not isinstance(x, Tensor) or not isinstance(w, Tensor):
        raise TypeError(f"{op}(): expected Tensor input and weight, got {type(x).__name__} and {type(w).__name__}")
    if x.ndim not in (d + 1, d + 2):
        raise RuntimeError(f"Expected {d + 1}D (unbatched) or {d + 2}D (batched) input to {op}, but got input of "
                           f"size: {list(x.shape)}")
    if w.ndim != d + 2:
        raise RuntimeError(f"{op}: expected weight to be {d + 2}-dimensional, but got weight of size {list(w.shape)}")
    if x.dtype is not w.dtype and not autocasting(x):
        raise RuntimeError(f"{op}: Input type ({x.dtype}) and weight type ({w.dtype}) should be the same")
    if x.device != w.device:
        raise RuntimeError(f"{op}: Input ({x.device}) and weight ({w.device}) should be on the same device")


def _same_or_valid(padding, op, w, dilation, stride):
    if padding == "valid":
        return ((0, 0),) * len(dilation)
    if padding == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
        pads = []
        for kk, dd in zip(w.shape[2:], dilation):
            total = dd * (kk - 1)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    raise ValueError(f"{op}: invalid padding string {padding!r}, should be one of 'valid', 'same'")


# the dtypes PyTorch's CPU convolutions compute: all but bool; the dilated and transposed kernels no narrow integers
_CONV = dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES | dtypes.COMPLEX_TYPES
_CONV_NARROW = dtypes.FLOATING_AND_HALF | dtypes.COMPLEX_TYPES | {dtypes.int64}


def _one_if_empty(x: Tensor) -> Tensor:
    """``x``, or for an empty batch (a detector's head given no boxes) one zero sample joined to ``x``'s graph:
    the kernels need a sample, and the caller keeps none of its output."""
    return x if x.shape[0] else x.new_zeros((1,) + tuple(x.shape[1:])) + x.sum()


def _conv(op, d, x, w, b, stride, padding, dilation, groups):
    _check_input(op, x, w, d, groups)
    unbatched = x.ndim == d + 1
    if unbatched:
        x = x.unsqueeze(0)
    stride, dilation = ntuple(stride, d, "stride"), ntuple(dilation, d, "dilation")
    if any(v <= 0 for v in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (got stride={list(stride)})")
    if any(v <= 0 for v in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero (got dilation={list(dilation)})")
    if isinstance(padding, str):
        pads = _same_or_valid(padding, op, w, dilation, stride)
    else:
        pads = tuple((p, p) for p in ntuple(padding, d, "padding"))
    c = x.shape[1]
    if c != w.shape[1] * groups or w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[1] * groups} channels, but got {c} channels instead")
    padded = [s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads)]
    spans = [dd * (kk - 1) + 1 for kk, dd in zip(w.shape[2:], dilation)]
    if any(s < k for s, k in zip(padded, spans)):  # every spatial size in the message, as PyTorch's (3 x 1)
        raise RuntimeError(f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, spans))}). Kernel size can't be greater than actual "
                           "input size")
    if b is not None and (b.ndim != 1 or b.shape[0] != w.shape[0]):
        raise RuntimeError(f"{op}: expected bias of shape [{w.shape[0]}], got {list(b.shape)}")
    if d == 2 and any(v != 1 for v in dilation):
        dtypes.check_kernel("slow_conv_dilated<>", x, _CONV_NARROW)
    dtypes.check_kernel("slow_conv2d_{device}" if d < 3 else "compute_columns3d", x, _CONV)
    xin = _one_if_empty(x)
    out = apply(Conv, xin, w, b, (stride, pads, dilation, groups))
    if xin is not x:
        out = out[:0]
    if unbatched:
        return out.squeeze(0)
    return keep_format(out, x) if d == 2 else out  # (PyTorch's conv3d gives a contiguous result)


@export(to=("nn.functional", "torch"))
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,  # noqa: A002
           groups: int = 1) -> Tensor:
    """1-D convolution over ``(N, C, L)``.

    >>> import ember
    >>> ember.nn.functional.conv1d(ember.ones(1, 1, 5), ember.ones(1, 1, 3)).tolist()
    [[[3.0, 3.0, 3.0]]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@export(to=("nn.functional", "torch"))
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,  # noqa: A002
           groups: int = 1) -> Tensor:
    """2-D convolution over ``(N, C, H, W)``: im2col through a strided view and one GEMM, or for a 3x3
    kernel at stride 1 with wide channels Winograd F(2x2, 3x3) (``ember.kernels.conv.WINOGRAD`` forces it).

    >>> import ember
    >>> ember.nn.functional.conv2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 2, 2)).shape
    ember.Size([1, 1, 2, 2])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@export(to=("nn.functional", "torch"))
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,  # noqa: A002
           groups: int = 1) -> Tensor:
    """3-D convolution over ``(N, C, D, H, W)``."""
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, d, x, w, b, stride, padding, output_padding, groups, dilation):
    _check_input(op, x, w, d, groups)
    unbatched = x.ndim == d + 1
    if unbatched:
        x = x.unsqueeze(0)
    stride, dilation = ntuple(stride, d, "stride"), ntuple(dilation, d, "dilation")
    if any(v <= 0 for v in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (got stride={list(stride)})")
    if any(v <= 0 for v in dilation):
        raise RuntimeError(f"{op}: dilation should be greater than zero (got dilation={list(dilation)})")
    pad, opad = ntuple(padding, d, "padding"), ntuple(output_padding, d, "output_padding")
    dtypes.check_kernel(f"slow_conv_transpose{max(d, 2)}d_out_{{device}}", x, _CONV_NARROW)
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[0]} channels, but got {x.shape[1]} channels instead")
    for o, s, dd in zip(opad, stride, dilation):
        if o >= max(s, dd):
            raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={list(opad)}")
    sp = tuple((i - 1) * s - 2 * p + dd * (kk - 1) + o + 1
               for i, s, p, dd, kk, o in zip(x.shape[2:], stride, pad, dilation, w.shape[2:], opad))
    xin = _one_if_empty(x)
    out_shape = (xin.shape[0], w.shape[1] * groups) + sp
    out = apply(ConvInputGrad, xin, w, out_shape, (stride, tuple((p, p) for p in pad), dilation, groups))
    if xin is not x:
        out = out[:0]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * d)
    # (PyTorch's one node of a transposed convolution, bias included: ember's stands for it, keeping its own values)
    out = composite_node(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out


@export(to=("nn.functional", "torch"))
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1) -> Tensor:
    """Transposed 1-D convolution (the gradient of conv1d with respect to its input)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


@export(to=("nn.functional", "torch"))
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1) -> Tensor:
    """Transposed 2-D convolution.

    >>> import ember
    >>> ember.nn.functional.conv_transpose2d(ember.ones(1, 1, 2, 2), ember.ones(1, 1, 2, 2)).shape
    ember.Size([1, 1, 3, 3])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


@export(to=("nn.functional", "torch"))
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1) -> Tensor:
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


# --------------------------------------------------------------------------- unfold / fold
def _identity_kernel(c, k, like):
    """Weight ``(c*K, c, *k)`` that copies each window element to its own output channel."""
    kk = 1
    for i in k:
        kk *= i
    return eye(c * kk, dtype=like.dtype, device=like.device).reshape((c * kk, c) + tuple(k))


@export(to=("nn.functional",))
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """Sliding local blocks ``(N, C*K, L)`` of a batched image (im2col).

    >>> import ember
    >>> ember.nn.functional.unfold(ember.ones(1, 2, 3, 3), 2).shape
    ember.Size([1, 8, 4])
    """
    if input.ndim != 4:
        raise RuntimeError(f"unfold: Input Error: Only 4D input Tensors are supported (got {input.ndim}D)")
    k = ntuple(kernel_size, 2, "kernel_size")
    w = _identity_kernel(input.shape[1], k, input)
    out = conv2d(input, w, None, stride, padding, dilation)
    return out.reshape(out.shape[0], out.shape[1], -1)


@export(to=("nn.functional",))
def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """Sum sliding blocks ``(N, C*K, L)`` back into ``(N, C, *output_size)`` (col2im)."""
    if input.ndim != 3:
        raise RuntimeError(f"fold: Input Error: Only 3D input Tensors are supported (got {input.ndim}D)")
    k = ntuple(kernel_size, 2, "kernel_size")
    osz = ntuple(output_size, 2, "output_size")
    st, pd, dl = ntuple(stride, 2), ntuple(padding, 2), ntuple(dilation, 2)
    kk = k[0] * k[1]
    if input.shape[1] % kk:
        raise RuntimeError(f"fold: Expected size of input's dimension 1 to be divisible by the product of "
                           f"kernel_size, but got input.size(1)={input.shape[1]} and kernel_size={k}")
    c = input.shape[1] // kk
    blocks = [(o + 2 * p - d * (kx - 1) - 1) // s + 1 for o, p, d, kx, s in zip(osz, pd, dl, k, st)]
    if blocks[0] * blocks[1] != input.shape[2]:
        raise RuntimeError(f"fold: Given output_size={osz}, kernel_size={k}, dilation={dl}, padding={pd}, "
                           f"stride={st}, expected size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={input.shape[2]}.")
    w = _identity_kernel(c, k, input)
    x = input.reshape(input.shape[0], input.shape[1], *blocks)
    shape = (input.shape[0], c) + osz
    return apply(ConvInputGrad, x, w, shape, (st, tuple((p, p) for p in pd), dl, 1))


# --------------------------------------------------------------------------- pooling
# ``x[n, c].flat[idx[n, c]]`` per plane.
def _flat_gather_vjp(ctx, g):
    x, idx = ctx.inputs
    return apply(FlatScatter, g, idx, tuple(x.shape)), None


FlatGather = op_class("FlatGather", "flat_gather", saves="input", vjp=_flat_gather_vjp, arity=2)


# Zeros of ``shape`` with ``v`` added at flat plane positions ``idx``.
def _flat_scatter_vjp(ctx, g):
    return apply(FlatGather, g, ctx.inputs[1]), None


FlatScatter = op_class("FlatScatter", "flat_scatter_add", saves="input", vjp=_flat_scatter_vjp, arity=3)


class MaxPool(Op):
    """Max pooling; with ``indices`` a second, non-differentiable output holds PyTorch's flat argmax."""

    backward_name = "MaxPoolWithIndicesBackward0"
    nondiff_outputs = (1,)
    save_inputs = True  # (as PyTorch's node: an in-place change of the input refuses the backward)
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, k, x, params, indices):
        best = k["max_pool"](x, *params)
        ctx.x, ctx.best, ctx.params = x, best, params
        return (best, k["max_pool_indices"](x, best, *params)) if indices else best

    @staticmethod
    def backward(ctx, g, _gi=None):
        ctx.check_saved()
        gx = apply(MaxPoolBackward, g, ctx.x, ctx.best, ctx.params)
        d = len(ctx.params[0])  # (PyTorch's 1-d pool is its 2-d one squeezed: no node of its own)
        return composite_node(gx, f"MaxPool{d}DWithIndicesBackwardBackward0") if d > 1 else gx


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
    save_inputs = True
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, k, x, osize):
        out, idx = k["adaptive_max_pool"](x, osize)
        ctx.idx, ctx.shape = idx, x.shape
        return out, idx

    @staticmethod
    def backward(ctx, g, _gi):
        ctx.check_saved()
        if 0 in g.shape[1:]:  # (PyTorch's backward refuses an empty output past the batch dimension)
            d = len(ctx.shape) - 2
            raise RuntimeError(f"adaptive_max_pool{max(d, 2)}d_backward(): Expected grad_output to have non-zero "
                               f"size for non-batch dimensions, but grad_output has sizes {list(g.shape)}")
        return apply(FlatScatter, g, _wrap(ctx.idx, g._dev), tuple(ctx.shape))


# --------------------------------------------------------------------------- helpers
def _batched(op, x, d):
    check_tensor(x, op)
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
    if any(v == 0 for v in st):
        raise RuntimeError(f"{op}: stride should not be zero (got stride={list(st)})")
    p, dl = ntuple(padding, d, "padding"), ntuple(dilation, d, "dilation")
    for kk, pp, dd in zip(k, p, dl):
        if pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    outs = [_out_size(s, kk, ss, pp, dd, ceil_mode) for s, kk, ss, pp, dd in zip(x.shape[2:], k, st, p, dl)]
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, (x.shape[1], *outs)))}). Output size is too small")
    pads = tuple((pp, (o - 1) * ss + dd * (kk - 1) + 1 - s - pp)
                 for s, kk, ss, pp, dd, o in zip(x.shape[2:], k, st, p, dl, outs))
    return k, st, pads, dl


def _max_pool(op, d, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unb = _batched(op, x, d)
    if d == 1 and not return_indices:  # (PyTorch's own 1-d kernel, floating only; with indices it runs the 2-d one)
        dtypes.check_kernel("max_pool1d_impl", x, dtypes.FLOATING_TYPES | dtypes.REDUCED_FLOATING_TYPES, False)
    # (checked on an empty input too, as PyTorch's kernels dispatch on the dtype first)
    dtypes.check_kernel(f"max_pool{max(d, 2)}d", x, dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES, False)
    k, st, pads, dl = _pool_geometry(op, x, kernel_size, stride, padding, dilation, ceil_mode, d)
    pads = tuple((lo, max(hi, 0)) for lo, hi in pads)
    res = apply(MaxPool, x, (k, st, pads, dl), return_indices)
    out, idx = res if return_indices else (res, None)
    if unb:
        out, idx = out.squeeze(0), None if idx is None else idx.squeeze(0)
    elif d > 1:
        out = _max_pool_node(out, d, kernel_size, stride, padding, dilation, ceil_mode)
    if d == 1:
        out = _squeezed_node(out)
    return (out, idx) if return_indices else out


def _squeezed_node(out):
    """``out``, a 1-d pooling's result, under the node PyTorch's leaves: its 1-d pools are 2-d ones over the input
    unsqueezed at -2, squeezed back (SqueezeBackward1, keeping dim -2 and the 2-d result's sizes); ember's one
    node stands for them (composite: it keeps its own values)."""
    if out._fn is None:
        return out
    shape = out._data.shape
    return keep_args(composite_node(out, "SqueezeBackward1"), dim=-2, self_sym_sizes=shape[:-1] + (1, shape[-1]))


def _pool_node(out, name, d):
    """``out`` under PyTorch's node name for a ``d``-d pooling (its 1-d pools are 2-d ones squeezed: kept)."""
    return rename_node(out, name.format(d)) if d > 1 else out


def _as_given(v, d):
    """A pooling argument as PyTorch's node keeps it: a number repeated ``d`` times, a sequence as given (no
    stride: empty)."""
    return () if v is None else tuple(int(e) for e in v) if isinstance(v, (list, tuple)) else (int(v),) * d


def _max_pool_node(out, d, kernel_size, stride, padding, dilation, ceil_mode):
    """``out`` under PyTorch's node of a ``d``-d max pooling (``d`` > 1: see :func:`_squeezed_node`), keeping its
    arguments as given."""
    fn, dev = out._fn, out._dev

    def indices():  # (PyTorch's node keeps the indices output, _saved_result1: made here when read)
        return _wrap(dev.kernels["max_pool_indices"](fn.x, fn.best, *fn.params), dev)

    return keep_args(rename_node(out, f"MaxPool{d}DWithIndicesBackward0"), result1=indices,
                     kernel_size=_as_given(kernel_size, d), stride=_as_given(stride, d),
                     padding=_as_given(padding, d), dilation=_as_given(dilation, d), ceil_mode=bool(ceil_mode))


@export(to=("nn.functional", "torch"))
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@export(to=("nn.functional", "torch"))
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """Max over ``kernel_size`` windows; with ``return_indices`` also the flat argmax in each input plane.

    >>> import ember
    >>> ember.nn.functional.max_pool2d(ember.arange(16.).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


@export(to=("nn.functional", "torch"))
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


_CONVS = {1: conv1d, 2: conv2d, 3: conv3d}


def _avg_pool(op, d, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unb = _batched(op, x, d)
    if d < 3:  # PyTorch's kernels: floating and int64 (whose mean truncates); the 3-d one no half precision
        dtypes.check_kernel("avg_pool2d", x, dtypes.FLOATING_AND_HALF | {dtypes.int64})
    else:
        dtypes.check_kernel("avg_pool3d_out_frame", x, dtypes.FLOATING_TYPES | {dtypes.int64})
    mode = "trunc" if x.dtype is dtypes.int64 else None
    k, st, pads, _ = _pool_geometry(op, x, kernel_size, stride, padding, 1, ceil_mode, d)
    n, c = x.shape[:2]
    conv = _CONVS[d]
    ones = x.new_ones((1, 1) + k)
    flat = x.reshape((n * c, 1) + tuple(x.shape[2:]))
    padded = pad(flat, _torch_pad([(lo, max(hi, 0)) for lo, hi in pads]))
    total = conv(padded, ones, None, st)
    total = total.reshape((n, c) + tuple(total.shape[2:]))
    if divisor_override:
        out = div(total, divisor_override, rounding_mode=mode)
    else:
        with no_grad():
            mask = x.new_ones((1, 1) + tuple(x.shape[2:]))
            lo_pads = [(lo, lo) for lo, _ in pads]
            mask = pad(mask, _torch_pad(lo_pads), value=1.0 if count_include_pad else 0.0)
            extra = [(0, max(hi - lo, 0)) for lo, hi in pads]
            counts = conv(pad(mask, _torch_pad(extra)), ones, None, st)
            counts = counts[(0, 0) + tuple(slice(0, o) for o in total.shape[2:])]
        out = div(total, counts, rounding_mode=mode)
    return out.squeeze(0) if unb else _pool_node(out, "AvgPool{}DBackward0", d)


def _torch_pad(pairs):
    """Per-dimension ``(lo, hi)`` pairs (first spatial dim first) in F.pad's last-dim-first order."""
    flat = []
    for lo, hi in reversed(pairs):
        flat += [lo, hi]
    return tuple(flat)


@export(to=("nn.functional", "torch"))
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


@export(to=("nn.functional",))
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    """Mean over ``kernel_size`` windows.

    >>> import ember
    >>> ember.nn.functional.avg_pool2d(ember.arange(16.).reshape(1, 1, 4, 4), 2).tolist()
    [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@export(to=("nn.functional",))
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,  # noqa: A002
               divisor_override=None):
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# --------------------------------------------------------------------------- adaptive
def _osize(output_size, x, d):
    osz = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * d
    osz = tuple(s if o is None else int(o) for o, s in zip(osz, x.shape[-d:]))
    if any(o < 0 for o in osz):
        raise RuntimeError(f"adaptive pooling: elements of output_size must be greater than or equal to 0 but "
                           f"received {list(osz)}")
    return osz


def _adaptive_mean(x, axis, o):
    """Means of ``x`` along ``axis`` over PyTorch's adaptive windows ``[floor(i*s/o), ceil((i+1)*s/o))``: one
    reshaped mean where the windows tile the axis, else one mean per window (a window's inf stays in it)."""
    s = x.shape[axis]
    if o and s % o == 0:
        return x.reshape(tuple(x.shape[:axis]) + (o, s // o) + tuple(x.shape[axis + 1:])).mean(axis + 1)
    parts = [x.narrow(axis, (i * s) // o, -(-((i + 1) * s) // o) - (i * s) // o).mean(axis, keepdim=True)
             for i in range(o)]
    return cat(parts, axis) if parts else x.narrow(axis, 0, 0)


def adaptive_avg(op, d, x, output_size):
    """Adaptive average pooling of the last ``d`` dimensions (``op`` names it in errors)."""
    x, unb = _batched(op, x, d)
    osz = _osize(output_size, x, d)
    if d < 3 and any(o != 1 for o in osz):  # (PyTorch's 3-d kernel and its global mean also compute complex)
        dtypes.check_kernel("adaptive_avg_pool2d", x, dtypes.FLOATING_AND_HALF)
    out = x
    for i in range(d):
        out = _adaptive_mean(out, 2 + i, osz[i])
    return out.squeeze(0) if unb else out


@export(to=("nn.functional", "torch"))
def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    return adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


@export(to=("nn.functional",))
def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Mean pooling to a fixed output size.

    >>> import ember
    >>> ember.nn.functional.adaptive_avg_pool2d(ember.ones(1, 2, 5, 7), (2, 3)).shape
    ember.Size([1, 2, 2, 3])
    """
    return adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


@export(to=("nn.functional",))
def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    return adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(op, d, x, output_size, return_indices):
    x, unb = _batched(op, x, d)
    dtypes.check_kernel("adaptive_max_pool2d" if d < 3 else "adaptive_max_pool3d_{device}", x,
                        dtypes.FLOATING_AND_HALF)
    out, idx = apply(AdaptiveMaxPool, x, _osize(output_size, x, d))
    if unb:
        out, idx = out.squeeze(0), idx.squeeze(0)
    out = composite_node(out, f"AdaptiveMaxPool{d}DBackward0") if d > 1 else _squeezed_node(out)
    return (out, idx) if return_indices else out


@export(to=("nn.functional",))
def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


@export(to=("torch",))
@torch_form("adaptive_max_pool1d")
def torch_adaptive_max_pool1d(input, output_size):  # noqa: A002
    """``torch.adaptive_max_pool1d``: always ``(output, indices)``."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, True)


@export(to=("nn.functional",))
def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling to a fixed output size."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


# --------------------------------------------------------------------------- unpooling
def _max_unpool(op, d, x, indices, kernel_size, stride, padding, output_size):
    x, unb = _batched(op, x, d)
    dtypes.check_kernel(f"max_unpool{max(d, 2)}d", x, dtypes.FLOATING_AND_HALF)
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
    out = out.squeeze(0) if unb else out
    return composite_node(out, f"MaxUnpool{d}DBackward0") if d > 1 else out  # (1-d: PyTorch's 2-d between views)


@export(to=("nn.functional",))
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


@export(to=("nn.functional",))
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """Place pooled values back at their argmax positions (zeros elsewhere)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


# --------------------------------------------------------------------------- the ``*_with_indices`` forms, 3-d
def _with_indices(name, d):
    def fn(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
           return_indices=False):
        return _max_pool(name, d, input, kernel_size, stride, padding, dilation, ceil_mode, True)

    fn.__name__ = fn.__qualname__ = f"{name}_with_indices"
    fn.__doc__ = f"``{name}`` returning ``(output, indices)`` whatever ``return_indices`` says."
    return export(fn, to=("nn.functional",))


max_pool1d_with_indices = _with_indices("max_pool1d", 1)
max_pool2d_with_indices = _with_indices("max_pool2d", 2)
max_pool3d_with_indices = _with_indices("max_pool3d", 3)


@export(to=("torch",))
@torch_form("max_pool1d_with_indices")
def torch_max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
    """``torch.max_pool1d_with_indices``: ``(output, indices)``."""
    return _max_pool("max_pool1d_with_indices", 1, input, kernel_size, stride, padding, dilation, ceil_mode, True)


@export(to=("nn.functional",))
def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def _adaptive_with_indices(d):
    def fn(input, output_size, return_indices=False):  # noqa: A002
        return _adaptive_max(f"adaptive_max_pool{d}d", d, input, output_size, True)

    fn.__name__ = fn.__qualname__ = f"adaptive_max_pool{d}d_with_indices"
    fn.__doc__ = f"``adaptive_max_pool{d}d`` returning ``(output, indices)``."
    return export(fn, to=("nn.functional",))


adaptive_max_pool1d_with_indices = _adaptive_with_indices(1)
adaptive_max_pool2d_with_indices = _adaptive_with_indices(2)
adaptive_max_pool3d_with_indices = _adaptive_with_indices(3)


@export(to=("nn.functional",))
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# --------------------------------------------------------------------------- power-average pooling
_AVGS = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}
_MAXS = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}


def _lp_pool(d, x, norm_type, kernel_size, stride, ceil_mode):
    k = ntuple(kernel_size, d, "kernel_size")
    if norm_type == float("inf"):
        return _MAXS[d](x.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -_MAXS[d](-x.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = _AVGS[d](x ** norm_type, kernel_size, stride, 0, ceil_mode)
    size = 1
    for i in k:
        size *= i
    return (out.sign() * out.abs().relu() * size) ** (1.0 / norm_type)


@export(to=("nn.functional",))
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """``(sum over each window of x^p) ^ (1/p)``."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


@export(to=("nn.functional",))
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """``(sum over each window of x^p) ^ (1/p)``.

    >>> import ember
    >>> ember.nn.functional.lp_pool2d(ember.ones(1, 1, 2, 2), 2, 2).tolist()
    [[[[2.0]]]]
    """
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


@export(to=("nn.functional",))
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# --------------------------------------------------------------------------- fractional max pooling
def _fractional_starts(sample, size, out, pool):
    """PyTorch's window starts for one dimension: ``int((i + u) a) - int(u a)`` with ``a = (size - pool) /
    (out - 1)``, the last window ending at the edge (``sample``: ``(N, C)`` uniform draws)."""
    o = arange(out, dtype=sample.dtype, device=sample.device)
    if out > 1:
        alpha = (size - pool) / (out - 1)
        starts = ((o + sample.unsqueeze(-1)) * alpha).floor() - (sample * alpha).floor().unsqueeze(-1)
    else:
        starts = o.expand(tuple(sample.shape) + (out,))
    last = (o == out - 1).expand(starts.shape)
    return where(last, starts.new_full((), float(size - pool)), starts).long()


def _fractional_max_pool(op, d, x, kernel_size, output_size, output_ratio, samples):
    check_tensor(x, op)
    if x.ndim not in (d + 1, d + 2):
        raise RuntimeError(f"{op}: Expected {d + 1}D or {d + 2}D tensor, but got input of size {list(x.shape)}")
    dtypes.check_kernel(f"{op}_out_frame", x, dtypes.FLOATING_AND_HALF)
    unb = x.ndim == d + 1
    if unb:
        x = x.unsqueeze(0)
    k = ntuple(kernel_size, d, "kernel_size")
    sp = tuple(x.shape[2:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
        ratio = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * d
        if len(ratio) != d:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        osz = tuple(int(s * float(r)) for s, r in zip(sp, ratio))
    else:
        osz = ntuple(output_size, d, "output_size")
    for s, o, kk in zip(sp, osz, k):
        if o + kk - 1 > s:
            raise RuntimeError(f"{op}: kernel_size {list(k)} too large relative to input size {list(sp)} and "
                               f"output size {list(osz)} (output + kernel - 1 must not exceed input)")
    n, c = x.shape[:2]
    if samples is None:
        samples = rand((n, c, d), dtype=x.dtype, device=x.device)
    if tuple(samples.shape) != (n, c, d):
        raise RuntimeError(f"{op}: Expect _random_samples to be of shape {[n, c, d]}, got {list(samples.shape)}")
    # PyTorch reads the draws of a 2-d pool as (w, h), of a 3-d pool as (t, h, w)
    order = (1, 0) if d == 2 else tuple(range(d))
    flat = None
    stride = 1
    for i in reversed(range(d)):
        st = _fractional_starts(samples[..., order[i]], sp[i], osz[i], k[i])        # (N, C, o_i)
        pos = st.unsqueeze(-1) + arange(k[i], device=x.device)                     # (N, C, o_i, k_i)
        shape = [n, c] + [1] * (2 * d)
        shape[2 + i], shape[2 + d + i] = osz[i], k[i]
        term = pos.reshape(shape) * stride
        flat = term if flat is None else flat + term
        stride *= sp[i]
    flat = flat.expand((n, c) + osz + k).reshape(n, c, -1)
    kk = flat.shape[2] // max(1, _prod(osz))
    vals = x.reshape(n, c, -1).gather(2, flat).reshape((n, c) + osz + (kk,))
    out, am = vals.max(-1)
    idx = flat.reshape((n, c) + osz + (kk,)).gather(-1, am.unsqueeze(-1)).squeeze(-1)
    out = keep_saved(composite_node(out.squeeze(0) if unb else out, f"FractionalMaxPool{d}DBackward0"), x)
    return (out, idx.squeeze(0)) if unb else (out, idx)


def _prod(v):
    r = 1
    for i in v:
        r *= i
    return r


@export(to=("nn.functional",))
def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling (Graham, 2014): windows at pseudo-random steps, ``(output, indices)``."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                                _random_samples)


@export(to=("nn.functional",))
def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    """Fractional max pooling over ``(N, C, H, W)``; with ``return_indices`` also the flat argmax."""
    out, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, True,
                                                  _random_samples)
    return (out, idx) if return_indices else out


@export(to=("nn.functional",))
def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices=False, _random_samples=None):
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                                _random_samples)


@export(to=("nn.functional",))
def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,  # noqa: A002
                          _random_samples=None):
    out, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, True,
                                                  _random_samples)
    return (out, idx) if return_indices else out


# --------------------------------------------------------------------------- the general convolution forms
@export(to=("torch",))
def convolution(input, weight, bias, stride, padding, dilation, transposed: bool, output_padding,  # noqa: A002
                groups: int) -> Tensor:
    """``torch.convolution``: the N-d (transposed) convolution named by the weight's dimensions."""
    d = weight.ndim - 2
    if d not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a weight of 3, 4 or 5 dimensions, got {list(weight.shape)}")
    # (the functional forms compose complex from real convolutions; PyTorch's aten kernels have no complex code)
    kernel = f"slow_conv_transpose{max(d, 2)}d_out_{{device}}" if transposed else \
        "slow_conv2d_{device}" if d < 3 else "slow_conv3d_forward_{device}"
    dtypes.check_kernel(kernel, input, dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES)
    if transposed:
        return _conv_transpose(f"conv_transpose{d}d", d, input, weight, bias, stride, padding, output_padding,
                               groups, dilation)
    return _conv(f"conv{d}d", d, input, weight, bias, stride, padding, dilation, groups)


@export(to=("nn.functional", "torch"))
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:  # noqa: A002
    """1-d convolution of a ``(time, batch, channels)`` input with a ``(width, in, out)`` weight."""
    if input.ndim != 3 or weight.ndim != 3:
        raise RuntimeError(f"conv_tbc: Input must have 3 dims: time, batch, in_channel and weight 3 dims, got "
                           f"input of size {list(input.shape)} and weight of size {list(weight.shape)}")
    if weight.shape[1] != input.shape[2]:
        raise RuntimeError(f"conv_tbc: Input dim 2 (input channels) is not == dim 1 in the weight tensor "
                           f"({input.shape[2]} != {weight.shape[1]})")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return keep_saved(composite_node(out.permute(2, 0, 1), "ConvTbcBackward0"), input, weight, bias)

