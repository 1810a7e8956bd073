"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, initialised as PyTorch's."""
from __future__ import annotations


from ...ops.creation import empty
from .. import functional as F
from ...ops.nn_conv import ntuple
from ._params import register_weight_bias, reset_fan_in_uniform
from ..parameter import Parameter, UninitializedParameter  # noqa: F401  (shown as in PyTorch's module)
from .module import Module

_PAD_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    _dims = 2
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", output_padding=0, device=None, dtype=None):
        super().__init__()
        d = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PAD_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PAD_MODES)}, but got padding_mode='{padding_mode}'")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of ['valid', 'same']")
            if padding == "same" and any(s != 1 for s in ntuple(stride, d)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = ntuple(kernel_size, d, "kernel_size")
        self.stride = ntuple(stride, d, "stride")
        self.padding = padding if isinstance(padding, str) else ntuple(padding, d, "padding")
        self.dilation = ntuple(dilation, d, "dilation")
        self.output_padding = ntuple(output_padding, d, "output_padding")
        self.groups, self.padding_mode = groups, padding_mode
        shape = ((in_channels, out_channels // groups) if self.transposed else
                 (out_channels, in_channels // groups)) + self.kernel_size
        register_weight_bias(self, empty(shape, device=device, dtype=dtype),
                             empty(out_channels, device=device, dtype=dtype) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_fan_in_uniform(self.weight, self.bias)

    def _check(self, x):
        d = self._dims
        if x.ndim not in (d + 1, d + 2):
            raise RuntimeError(f"{type(self).__name__}: expected {d + 1}D (unbatched) or {d + 2}D (batched) input, "
                               f"but got input of size: {list(x.shape)}")
        c = x.shape[-d - 1]
        if c != self.in_channels:
            raise RuntimeError(f"{type(self).__name__}({self.in_channels}, {self.out_channels}): expected input with "
                               f"{self.in_channels} channels, got input of size {list(x.shape)} with {c} channels")

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * self._dims:
            s += ", padding={padding}"
        if self.dilation != (1,) * self._dims:
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * self._dims:
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class _Conv(_ConvNd):
    _fn = None

    def _pad_explicit(self):
        """F.pad's tuple for a non-zeros padding mode (last spatial dimension first)."""
        if isinstance(self.padding, str):
            pairs = []
            for kk, dd in zip(self.kernel_size, self.dilation):
                total = 0 if self.padding == "valid" else dd * (kk - 1)
                pairs.append((total // 2, total - total // 2))
        else:
            pairs = [(p, p) for p in self.padding]
        flat = []
        for lo, hi in reversed(pairs):
            flat += [lo, hi]
        return tuple(flat)

    def forward(self, input):  # noqa: A002
        self._check(input)
        if self.padding_mode != "zeros":
            x = F.pad(input, self._pad_explicit(), mode=self.padding_mode)
            return type(self)._fn(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C, L)``."""

    _dims = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over ``(N, C, H, W)``; weight ``(out, in/groups, kH, kW)``.

    >>> import ember
    >>> ember.nn.Conv2d(1, 6, 5)(ember.randn(1, 1, 32, 32)).shape
    ember.Size([1, 6, 28, 28])
    """

    _dims = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over ``(N, C, D, H, W)``."""

    _dims = 3
    _fn = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    transposed = True
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device, dtype)

    def _output_padding(self, x, output_size):
        if output_size is None:
            return self.output_padding
        d = self._dims
        size = tuple(output_size)[-d:]
        base = [(i - 1) * s - 2 * p + dd * (k - 1) + 1 for i, s, p, dd, k in
                zip(x.shape[-d:], self.stride, self.padding, self.dilation, self.kernel_size)]
        return tuple(o - b for o, b in zip(size, base))

    def forward(self, input, output_size=None):  # noqa: A002
        self._check(input)
        op = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTranspose):
    _dims = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution; weight ``(in, out/groups, kH, kW)``."""

    _dims = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    _dims = 3
    _fn = staticmethod(F.conv_transpose3d)
