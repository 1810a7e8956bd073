"""Convolutions (N-d, groups, dilation, 'same' padding), transposed convolutions, pad, unfold and fold.

Three ops form a closed family, each the others' gradient, so every order of
derivative is available: ``Conv`` (x, w -> y), ``ConvInputGrad`` (the
transposed convolution: gy, w -> x-shaped) and ``ConvWeightGrad`` (x, gy -> w-shaped).
"""
from __future__ import annotations

from ...autograd.function import Op
from ...dispatch import apply
from ...tensor import Tensor


def _needs(ctx, i):
    """Whether the op's ``i``-th tensor input needs a gradient."""
    return ctx.next_functions[i][0] is not None


class Conv(Op):
    backward_name = "ConvolutionBackward0"
    save_inputs = True

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
    if x.dtype is not w.dtype:
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


def _conv(op, d, x, w, b, stride, padding, dilation, groups):
    _check_input(op, x, w, d, groups)
    unbatched = x.ndim == d + 1
    if unbatched:
        x = x.unsqueeze(0)
    stride, dilation = ntuple(stride, d, "stride"), ntuple(dilation, d, "dilation")
    if isinstance(padding, str):
        pads = _same_or_valid(padding, op, w, dilation, stride)
    else:
        pads = tuple((p, p) for p in ntuple(padding, d, "padding"))
    c = x.shape[1]
    if c != w.shape[1] * groups or w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[1] * groups} channels, but got {c} channels instead")
    for s, kk, dd, (lo, hi) in zip(x.shape[2:], w.shape[2:], dilation, pads):
        if s + lo + hi < dd * (kk - 1) + 1:
            raise RuntimeError(f"{op}: Calculated padded input size per channel: ({s + lo + hi}). Kernel size: "
                               f"({dd * (kk - 1) + 1}). Kernel size can't be greater than actual input size")
    if b is not None and (b.ndim != 1 or b.shape[0] != w.shape[0]):
        raise RuntimeError(f"{op}: expected bias of shape [{w.shape[0]}], got {list(b.shape)}")
    out = apply(Conv, x, w, b, (stride, pads, dilation, groups))
    return out.squeeze(0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,  # noqa: A002
           groups: int = 1) -> Tensor:
    """1-D convolution over ``(N, C, L)``.

    >>> import ember
    >>> ember.nn.functional.conv1d(ember.ones(1, 1, 5), ember.ones(1, 1, 3)).tolist()
    [[[3.0, 3.0, 3.0]]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,  # noqa: A002
           groups: int = 1) -> Tensor:
    """2-D convolution over ``(N, C, H, W)``: im2col through a strided view and one GEMM.

    >>> import ember
    >>> ember.nn.functional.conv2d(ember.ones(1, 1, 3, 3), ember.ones(1, 1, 2, 2)).shape
    ember.Size([1, 1, 2, 2])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


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
    pad, opad = ntuple(padding, d, "padding"), ntuple(output_padding, d, "output_padding")
    if x.shape[1] != w.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected input{list(x.shape)} to "
                           f"have {w.shape[0]} channels, but got {x.shape[1]} channels instead")
    for o, s, dd in zip(opad, stride, dilation):
        if o >= max(s, dd):
            raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={list(opad)}")
    sp = tuple((i - 1) * s - 2 * p + dd * (kk - 1) + o + 1
               for i, s, p, dd, kk, o in zip(x.shape[2:], stride, pad, dilation, w.shape[2:], opad))
    out_shape = (x.shape[0], w.shape[1] * groups) + sp
    out = apply(ConvInputGrad, x, w, out_shape, (stride, tuple((p, p) for p in pad), dilation, groups))
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * d)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1) -> Tensor:
    """Transposed 1-D convolution (the gradient of conv1d with respect to its input)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1) -> Tensor:
    """Transposed 2-D convolution.

    >>> import ember
    >>> ember.nn.functional.conv_transpose2d(ember.ones(1, 1, 2, 2), ember.ones(1, 1, 2, 2)).shape
    ember.Size([1, 1, 3, 3])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1) -> Tensor:
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


# --------------------------------------------------------------------------- unfold / fold
def _identity_kernel(c, k, like):
    """Weight ``(c*K, c, *k)`` that copies each window element to its own output channel."""
    from ...ops.creation import eye

    kk = 1
    for i in k:
        kk *= i
    return eye(c * kk, dtype=like.dtype, device=like.device).reshape((c * kk, c) + tuple(k))


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
