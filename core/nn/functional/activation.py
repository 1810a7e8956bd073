"""Activations composed of ember ops (they need no backward of their own).

The softmax family and the activations that are ops, with PyTorch's nodes (``softplus``, ``hardtanh``,
``elu``, ``celu``, ``selu``, ``leaky_relu``, ``gelu``, ``silu``, ``mish``, ``hardsigmoid``, ``hardswish``,
``logsigmoid``, ``softshrink``, ``hardshrink``, ``threshold``, ``prelu``, ``glu``, ``rrelu``) are in
:mod:`ember.ops.nn`.
"""
from __future__ import annotations


from ...ops.nn import (  # noqa: F401  (re-exported: the functional namespace's activations that are ops)
    _softmax_dim, celu, elu, gelu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, leaky_relu, log_softmax,
    logsigmoid, mish, prelu, selu, silu, softmax, softplus, softshrink, threshold,
)
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
def softsign(input: Tensor) -> Tensor:  # noqa: A002
    x = check_tensor(input, "softsign")
    return x / (x.abs() + 1)


@export(to=("nn.functional",))
def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    return input - tanh(input)
