"""Identity, Linear, Bilinear, Flatten, Unflatten."""
from __future__ import annotations

import math

from ...ops.creation import empty
from .. import functional as F
from .. import init
from ._params import register_weight_bias, reset_fan_in_uniform
from ..parameter import Parameter, UninitializedParameter  # noqa: F401  (shown as in PyTorch's module)
from .module import Module


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002
        return input


class Linear(Module):
    """``y = x W^T + b``; W and b start as U(-1/sqrt(in), 1/sqrt(in)), as in PyTorch.

    >>> import ember
    >>> ember.nn.Linear(20, 30)(ember.randn(128, 20)).shape
    ember.Size([128, 30])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        register_weight_bias(self, empty((out_features, in_features), device=device, dtype=dtype),
                             empty(out_features, device=device, dtype=dtype) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_fan_in_uniform(self.weight, self.bias)

    def forward(self, input):  # noqa: A002
        # the current weight's width, which code may have replaced (PyTorch reads it too); read once, since a
        # parametrized weight is computed on each read (spectral norm's power iteration would run twice)
        weight = self.weight
        shape = input.shape
        if not shape or shape[-1] != weight.shape[-1]:
            k = weight.shape[-1]
            raise RuntimeError(f"{type(self).__name__}(in_features={k}): expected input of shape [*, {k}], got "
                               f"{list(shape)}")
        return F.linear(input, weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with weight ``(out, in1, in2)``."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        register_weight_bias(self, empty((out_features, in1_features, in2_features), device=device, dtype=dtype),
                             empty(out_features, device=device, dtype=dtype) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module):
    """Flatten dimensions ``start_dim..end_dim`` (default: all but the batch)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` under PyTorch's name for MultiheadAttention's output projection (pickles name it)."""
