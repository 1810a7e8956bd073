"""Building blocks of torchvision's models (torchvision.ops.misc), with torchvision's module names."""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import ember
from ember import Tensor, nn


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d whose statistics and affine parameters are fixed buffers (``num_batches_tracked`` in a
    loaded state_dict is ignored)."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", ember.ones(num_features))
        self.register_buffer("bias", ember.zeros(num_features))
        self.register_buffer("running_mean", ember.zeros(num_features))
        self.register_buffer("running_var", ember.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        state_dict.pop(prefix + "num_batches_tracked", None)  # a BatchNorm2d's counter: no state of a frozen one
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def forward(self, x: Tensor) -> Tensor:
        scale = self.weight.reshape(1, -1, 1, 1) * (self.running_var.reshape(1, -1, 1, 1) + self.eps).rsqrt()
        return x * scale + (self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


def _same_padding(kernel_size, dilation):
    if isinstance(kernel_size, int) and isinstance(dilation, int):
        return (kernel_size - 1) // 2 * dilation
    n = len(kernel_size) if isinstance(kernel_size, Sequence) else len(dilation)
    k = tuple(kernel_size) if isinstance(kernel_size, Sequence) else (kernel_size,) * n
    d = tuple(dilation) if isinstance(dilation, Sequence) else (dilation,) * n
    return tuple((k[i] - 1) // 2 * d[i] for i in range(n))


class ConvNormActivation(nn.Sequential):
    """Convolution, optional norm layer, optional activation (children ``0``, ``1``, ``2``); padding defaults
    to "same" for odd kernels and the conv has a bias only without a norm layer."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None, groups: int = 1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace: bool | None = True,
                 bias: bool | None = None, conv_layer=nn.Conv2d) -> None:
        if padding is None:
            padding = _same_padding(kernel_size, dilation)
        if bias is None:
            bias = norm_layer is None
        layers = [conv_layer(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                             groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels
        if self.__class__ == ConvNormActivation:
            warnings.warn("Don't use ConvNormActivation directly, please use Conv2dNormActivation and "
                          "Conv3dNormActivation instead.")


class Conv2dNormActivation(ConvNormActivation):
    """Conv2d + norm (BatchNorm2d by default) + activation (ReLU by default)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None, groups: int = 1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv2d)


class Conv3dNormActivation(ConvNormActivation):
    """Conv3d + norm (BatchNorm3d by default) + activation (ReLU by default)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None, groups: int = 1,
                 norm_layer=nn.BatchNorm3d, activation_layer=nn.ReLU, dilation=1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv3d)


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation (Hu et al. 2018): channels rescaled by a gate computed from their global mean."""

    def __init__(self, input_channels: int, squeeze_channels: int, activation=nn.ReLU,
                 scale_activation=nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: Tensor) -> Tensor:
        return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(input)))))

    def forward(self, input: Tensor) -> Tensor:
        return self._scale(input) * input


class MLP(nn.Sequential):
    """Linear layers of widths ``hidden_channels``, each but the last followed by the optional norm, the
    activation and Dropout; the last followed by Dropout."""

    def __init__(self, in_channels: int, hidden_channels: list[int], norm_layer=None, activation_layer=nn.ReLU,
                 inplace: bool | None = None, bias: bool = True, dropout: float = 0.0):
        params = {} if inplace is None else {"inplace": inplace}
        layers, in_dim = [], in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers += [activation_layer(**params), nn.Dropout(dropout, **params)]
            in_dim = hidden_dim
        layers += [nn.Linear(in_dim, hidden_channels[-1], bias=bias), nn.Dropout(dropout, **params)]
        super().__init__(*layers)


class Permute(nn.Module):
    """``x.permute(dims)`` as a Module."""

    def __init__(self, dims: list[int]):
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return ember.permute(x, self.dims)
