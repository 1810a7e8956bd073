"""Deformable convolution v1/v2 (Dai et al. 2017; Zhu et al. 2019) written with ember ops.

Every kernel tap samples the input at its regular position plus a learned offset, by bilinear interpolation
with zeros outside the map (torchvision's rule), optionally scaled by a modulation mask. The samples of all
taps form im2col columns gathered in one step, and the convolution is a grouped matrix product; gradients
for the input, offsets, mask, weight and bias all come from those ops.
"""
from __future__ import annotations

import math

import ember
from ember import Tensor, nn

from .roi_align import _pair


def _corner_columns(flat: Tensor, y: Tensor, x: Tensor, height: int, width: int) -> Tensor:
    """Bilinear samples of ``flat`` (``[N, G, Cg, H*W]``) at ``y, x`` (``[N, G, K*L]``), zero outside."""
    inside = (y > -1) & (y < height) & (x > -1) & (x < width)
    y0, x0 = ember.floor(y), ember.floor(x)
    ly, lx = y - y0, x - x0
    cg = flat.shape[2]
    out = 0
    for dy, wy in ((0, 1 - ly), (1, ly)):
        for dx, wx in ((0, 1 - lx), (1, lx)):
            yy, xx = y0 + dy, x0 + dx
            ok = inside & (yy >= 0) & (yy <= height - 1) & (xx >= 0) & (xx <= width - 1)
            idx = (yy.clamp(0, height - 1) * width + xx.clamp(0, width - 1)).long()
            vals = ember.gather(flat, 3, idx[:, :, None, :].expand(-1, -1, cg, -1))
            out = out + vals * (wy * wx * ok)[:, :, None, :]
    return out


def deform_conv2d(input: Tensor, offset: Tensor, weight: Tensor, bias: Tensor | None = None, stride=(1, 1),
                  padding=(0, 0), dilation=(1, 1), mask: Tensor | None = None) -> Tensor:
    """Deformable 2-D convolution: ``input [N, C, H, W]``, ``offset [N, 2 * G * kh * kw, oh, ow]`` ((dy, dx)
    per offset group ``G`` and tap), ``weight [O, C / groups, kh, kw]``, optional ``mask
    [N, G * kh * kw, oh, ow]`` (v2). Returns ``[N, O, oh, ow]``."""
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    n, c, h, w = input.shape
    o, cin_g, kh, kw = weight.shape
    k = kh * kw
    oh, ow = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    groups = c // cin_g
    g = offset.shape[1] // (2 * k)
    if offset.shape[1] != 2 * g * k or g == 0 or c % g:
        raise RuntimeError(f"deform_conv2d: the shape of the offset tensor at dimension 1 is not valid. It should "
                           f"be a multiple of 2 * weight.size[2] * weight.size[3].\nGot offset.shape[1]="
                           f"{offset.shape[1]}, while 2 * weight.size[2] * weight.size[3]={2 * k}")
    if tuple(offset.shape[2:]) != (oh, ow):
        raise RuntimeError(f"deform_conv2d: offset output dims: ({offset.shape[2]}, {offset.shape[3]}) - computed "
                           f"output dims: ({oh}, {ow})")
    if mask is not None and tuple(mask.shape) != (n, g * k, oh, ow):
        raise RuntimeError(f"deform_conv2d: mask should have shape {(n, g * k, oh, ow)}, got {tuple(mask.shape)}")
    dev, dt = input.device, input.dtype
    tap_y = (ember.arange(kh, device=dev, dtype=dt) * dh)[:, None].expand(kh, kw).reshape(k)
    tap_x = (ember.arange(kw, device=dev, dtype=dt) * dw)[None, :].expand(kh, kw).reshape(k)
    base_y = ember.arange(oh, device=dev, dtype=dt) * sh - ph
    base_x = ember.arange(ow, device=dev, dtype=dt) * sw - pw
    off = offset.reshape(n, g, k, 2, oh, ow)
    y = tap_y[:, None, None] + base_y[:, None] + off[:, :, :, 0]  # N, G, K, oh, ow
    x = tap_x[:, None, None] + base_x[None, :] + off[:, :, :, 1]
    cols = _corner_columns(input.reshape(n, g, c // g, h * w), y.reshape(n, g, -1), x.reshape(n, g, -1), h, w)
    cols = cols.reshape(n, g, c // g, k, oh * ow)
    if mask is not None:
        cols = cols * mask.reshape(n, g, 1, k, oh * ow)
    cols = cols.reshape(n, groups, cin_g * k, oh * ow)
    out = weight.reshape(groups, o // groups, cin_g * k) @ cols  # N, groups, O/groups, L
    out = out.reshape(n, o, oh, ow)
    return out if bias is None else out + bias.reshape(1, o, 1, 1)


class DeformConv2d(nn.Module):
    """See :func:`deform_conv2d`; ``forward(input, offset, mask=None)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        self.groups = groups
        self.weight = nn.Parameter(ember.empty(out_channels, in_channels // groups, *self.kernel_size))
        self.bias = nn.Parameter(ember.empty(out_channels)) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Kaiming-uniform weight and a uniform bias, as ``nn.Conv2d``."""
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            bound = 1 / math.sqrt(fan_in)
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor, offset: Tensor, mask: Tensor | None = None) -> Tensor:
        return deform_conv2d(input, offset, self.weight, self.bias, self.stride, self.padding, self.dilation, mask)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, groups={self.groups}, bias={self.bias is not None})")
