"""Activations and the softmax family.

Fused ops (softmax, log_softmax, softplus, hardtanh) compute on
the device kernels; their backward is written with ember ops.  The rest are
composed of those and of ember pointwise ops, so they need no backward.
"""
from __future__ import annotations

import math

from ...autograd.function import Op
from ...dispatch import unary
from ...ops.pointwise import relu as _relu
from ...ops.pointwise import sigmoid as _sigmoid
from ...ops.pointwise import tanh as _tanh
from ...ops.pointwise import where
from ...tensor import Tensor, _wrap_dim


class Softmax(Op):
    save_output = True

    @staticmethod
    def forward(ctx, k, x, dim):
        ctx.dim = dim
        return k["softmax"](x, dim)

    @staticmethod
    def backward(ctx, g):
        y = ctx.output
        return y * (g - (g * y).sum(ctx.dim, keepdim=True))


class LogSoftmax(Op):
    save_output = True

    @staticmethod
    def forward(ctx, k, x, dim):
        ctx.dim = dim
        return k["log_softmax"](x, dim)

    @staticmethod
    def backward(ctx, g):
        return g - ctx.output.exp() * g.sum(ctx.dim, keepdim=True)


class Softplus(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, beta, threshold):
        ctx.beta, ctx.threshold = beta, threshold
        return k["nn_softplus"](x, beta, threshold)

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        bx = x * ctx.beta
        return where(bx > ctx.threshold, g, g * _sigmoid(bx))


class Hardtanh(Op):
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, lo, hi):
        ctx.lo, ctx.hi = lo, hi
        return k["clamp"](x, lo, hi)

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        zero = g.new_zeros(())
        return where(x > ctx.lo, where(x < ctx.hi, g, zero), zero)


def _t(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x


def _softmax_dim(x, dim, op):
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return _wrap_dim(dim, max(x.ndim, 1), op)


def _float(x, dtype):
    return x.to(dtype) if dtype is not None else x


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """``exp(x) / exp(x).sum(dim)``, computed stably (the max is subtracted first).

    >>> import ember
    >>> ember.nn.functional.softmax(ember.tensor([0., 1000.]), dim=0).tolist()
    [0.0, 1.0]
    """
    x = _float(_t(input, "softmax"), dtype)
    return unary(Softmax, x, _softmax_dim(x, dim, "softmax"))


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """``log(softmax(x))`` computed stably.

    >>> import ember
    >>> ember.nn.functional.log_softmax(ember.tensor([0., 0.]), dim=0).tolist()
    [-0.6931471824645996, -0.6931471824645996]
    """
    x = _float(_t(input, "log_softmax"), dtype)
    return unary(LogSoftmax, x, _softmax_dim(x, dim, "log_softmax"))


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """``softmax(-x)``."""
    return softmax(-_t(input, "softmin"), dim, dtype=dtype)


def sigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """``1 / (1 + exp(-x))`` (``ember.sigmoid``)."""
    return _sigmoid(_t(input, "sigmoid"))


def tanh(input: Tensor) -> Tensor:  # noqa: A002
    """``ember.tanh``."""
    return _tanh(_t(input, "tanh"))


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``max(x, 0)``."""
    return _inplace(input, _relu(_t(input, "relu")), inplace)


def _inplace(x, out, inplace):
    return x.copy_(out) if inplace else out


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``clamp(x, min_val, max_val)``."""
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    return _inplace(input, unary(Hardtanh, _t(input, "hardtanh"), min_val, max_val), inplace)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    x = _t(input, "leaky_relu")
    return _inplace(input, where(x > 0, x, x * negative_slope), inplace)


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """``x`` where positive, ``weight * x`` elsewhere (``weight`` per channel, dim 1)."""
    x = _t(input, "prelu")
    if weight.numel() != 1:
        c = x.shape[1] if x.ndim >= 2 else x.shape[0]
        if weight.numel() != c:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {weight.numel()} and channel size = {c}.")
        if x.ndim >= 2:
            weight = weight.reshape((1, -1) + (1,) * (x.ndim - 2))
    return where(x > 0, x, weight * x)


def _neg_part(x):
    # min(x, 0) without a max op; keeps exp() of the unused branch finite
    return where(x > 0, x.new_zeros(()), x)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    x = _t(input, "elu")
    return _inplace(input, where(x > 0, x, (_neg_part(x).exp() - 1) * alpha), inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    x = _t(input, "celu")
    return _inplace(input, where(x > 0, x, ((_neg_part(x) / alpha).exp() - 1) * alpha), inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, elu(input, _SELU_ALPHA) * _SELU_SCALE, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """``x * Phi(x)``; ``approximate='tanh'`` uses PyTorch's tanh formula."""
    x = _t(input, "gelu")
    if approximate == "tanh":
        inner = (x + x * x * x * 0.044715) * math.sqrt(2.0 / math.pi)
        return x * 0.5 * (tanh(inner) + 1)
    if approximate != "none":
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got {approximate!r}")
    from ... import erf

    return x * 0.5 * (erf(x * (1.0 / math.sqrt(2.0))) + 1)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * sigmoid(x)``."""
    return _inplace(input, input * sigmoid(input), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""
    return unary(Softplus, _t(input, "softplus"), beta, threshold)


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input * tanh(softplus(input)), inplace)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    return -softplus(-_t(input, "logsigmoid"))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, hardtanh(input + 3, 0.0, 6.0) / 6, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    return _inplace(input, input * hardsigmoid(input), inplace)


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    x = _t(input, "softsign")
    return x / (x.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    return input - tanh(input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > threshold``, else ``value``."""
    x = _t(input, "threshold")
    return _inplace(input, where(x > threshold, x, x.new_full((), value)), inplace)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    x = _t(input, "hardshrink")
    return where(x.abs() > lambd, x, x.new_zeros(()))


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    x = _t(input, "softshrink")
    zero = x.new_zeros(())
    return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, zero))


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    a, b = _t(input, "glu").chunk(2, dim)
    return a * sigmoid(b)
