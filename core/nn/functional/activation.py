"""Activations composed of ember ops (they need no backward of their own).

The softmax family and the activations that are ops or that PyTorch also
shows as ``torch.*`` (``softplus``, ``hardtanh``, ``elu``, ``celu``, ``selu``,
``prelu``, ``threshold``, ``hardshrink``) are in :mod:`ember.ops.nn`.
"""
from __future__ import annotations

import math

from ...ops.nn import _inplace
from ...ops.nn import (  # noqa: F401  (re-exported: the functional namespace's activations that are ops)
    _softmax_dim, celu, elu, hardshrink, hardtanh, log_softmax, prelu, selu, softmax, softplus, threshold,
)
from ...ops.pointwise import erf, where
from ...ops.pointwise import relu as _relu
from ...ops.pointwise import sigmoid as _sigmoid
from ...ops.pointwise import tanh as _tanh
from ...registry import check_tensor, export
from ...tensor import Tensor




@export(to=("nn.functional",))
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """``softmax(-x)``."""
    x = check_tensor(input, "softmin")
    if dim is None:
        dim = _softmax_dim(x, dim, "softmin", _stacklevel)
    return softmax(-x, dim, dtype=dtype)


@export(to=("nn.functional",))
def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """``1 / (1 + exp(-x))`` (``ember.sigmoid``)."""
    return _sigmoid(check_tensor(input, "sigmoid"))


@export(to=("nn.functional",))
def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """``ember.tanh``."""
    return _tanh(check_tensor(input, "tanh"))


@export(to=("nn.functional",))
def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``max(x, 0)``."""
    check_tensor(input, "relu")
    return input.relu_() if inplace else _relu(input)


@export(to=("nn.functional",))
def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return hardtanh(input, 0.0, 6.0, inplace)


@export(to=("nn.functional",))
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    check_tensor(input, "leaky_relu")
    return _inplace(input, lambda x: where(x > 0, x, x * negative_slope), inplace, "leaky_relu")


@export(to=("nn.functional",))
def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """``x * Phi(x)``; ``approximate='tanh'`` uses PyTorch's tanh formula."""
    x = check_tensor(input, "gelu")
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (tanh(inner) + 1)
    if approximate != "none":
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got {approximate!r}")
    return x * 0.5 * (erf(x * (1.0 / math.sqrt(2.0))) + 1)


@export(to=("nn.functional",))
def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * sigmoid(x)``."""
    check_tensor(input, "silu")
    return _inplace(input, lambda x: x * sigmoid(x), inplace, "silu")


@export(to=("nn.functional",))
def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    check_tensor(input, "mish")
    return _inplace(input, lambda x: x * tanh(softplus(x)), inplace, "mish")


@export(to=("nn.functional",))
def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return -softplus(-check_tensor(input, "logsigmoid"))


@export(to=("nn.functional",))
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    check_tensor(input, "hardsigmoid")
    return _inplace(input, lambda x: hardtanh(x + 3, 0.0, 6.0) / 6, inplace, "hardsigmoid")


@export(to=("nn.functional",))
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    check_tensor(input, "hardswish")
    return _inplace(input, lambda x: x * hardsigmoid(x), inplace, "hardswish")


@export(to=("nn.functional",))
def softsign(input: Tensor) -> Tensor:  # noqa: A002
    x = check_tensor(input, "softsign")
    return x / (x.abs() + 1)


@export(to=("nn.functional",))
def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    return input - tanh(input)


@export(to=("nn.functional",))
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    x = check_tensor(input, "softshrink")
    zero = x.new_zeros(())
    return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, zero))


@export(to=("nn.functional",))
def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    a, b = check_tensor(input, "glu").chunk(2, dim)
    return a * sigmoid(b)
