"""Activation layers: each calls its functional form with the settings given at construction."""
from __future__ import annotations

import warnings

from ...ops.creation import full
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class _Activation(Module):
    """Base: ``forward(x) = _fn(x, *settings)``; ``_args`` names the settings, in the functional's order."""

    _fn = None
    _args: tuple = ()

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, *[getattr(self, a) for a in self._args])

    def extra_repr(self) -> str:
        parts = [f"{a}={getattr(self, a)!r}" for a in self._args if a != "inplace"]
        if getattr(self, "inplace", False):
            parts.append("inplace=True")
        return ", ".join(parts)


class ReLU(_Activation):
    """``max(x, 0)``.

    >>> import ember
    >>> ember.nn.ReLU()(ember.tensor([-1., 1.])).tolist()
    [0.0, 1.0]
    """

    _fn = staticmethod(F.relu)
    _args = ("inplace",)

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace


class ReLU6(ReLU):
    _fn = staticmethod(F.relu6)


class SELU(ReLU):
    _fn = staticmethod(F.selu)


class SiLU(ReLU):
    _fn = staticmethod(F.silu)


class Mish(ReLU):
    _fn = staticmethod(F.mish)


class Hardsigmoid(ReLU):
    _fn = staticmethod(F.hardsigmoid)


class Hardswish(ReLU):
    _fn = staticmethod(F.hardswish)


class _NoArgs(_Activation):
    def __init__(self, *args, **kwargs):
        super().__init__()


class Sigmoid(_NoArgs):
    _fn = staticmethod(F.sigmoid)


class Tanh(_NoArgs):
    _fn = staticmethod(F.tanh)


class Softsign(_NoArgs):
    _fn = staticmethod(F.softsign)


class LogSigmoid(_NoArgs):
    _fn = staticmethod(F.logsigmoid)


class Tanhshrink(_NoArgs):
    _fn = staticmethod(F.tanhshrink)


class LeakyReLU(_Activation):
    _fn = staticmethod(F.leaky_relu)
    _args = ("negative_slope", "inplace")

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace


class ELU(_Activation):
    _fn = staticmethod(F.elu)
    _args = ("alpha", "inplace")

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace


class CELU(ELU):
    _fn = staticmethod(F.celu)


class GELU(_Activation):
    """``x * Phi(x)``; ``approximate='tanh'`` for the tanh formula."""

    _fn = staticmethod(F.gelu)
    _args = ("approximate",)

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate


class Hardtanh(_Activation):
    _fn = staticmethod(F.hardtanh)
    _args = ("min_val", "max_val", "inplace")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False, min_value=None,
                 max_value=None):
        super().__init__()
        for old, new, value in (("min_value", "min_val", min_value), ("max_value", "max_val", max_value)):
            if value is not None:  # PyTorch's deprecated spellings
                warnings.warn(f"keyword argument `{old}` is deprecated and renamed to `{new}`", FutureWarning,
                              stacklevel=2)
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace


class Softplus(_Activation):
    _fn = staticmethod(F.softplus)
    _args = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold


class Threshold(_Activation):
    _fn = staticmethod(F.threshold)
    _args = ("threshold", "value", "inplace")

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace


class Hardshrink(_Activation):
    _fn = staticmethod(F.hardshrink)
    _args = ("lambd",)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    _fn = staticmethod(F.softshrink)


class GLU(_Activation):
    _fn = staticmethod(F.glu)
    _args = ("dim",)

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim


class Softmax(GLU):
    """``softmax(x, dim)``."""

    _fn = staticmethod(F.softmax)

    def __init__(self, dim: int | None = None):
        super().__init__(dim)

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    _fn = staticmethod(F.log_softmax)


class Softmin(Softmax):
    _fn = staticmethod(F.softmin)


class PReLU(Module):
    """``x`` if positive else ``a * x`` with a learnable ``a`` (one, or one per channel), initialised to 0.25."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), init, device=device, dtype=dtype))

    def forward(self, input):  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(_Activation):
    """Randomized leaky ReLU: slopes drawn from ``U(lower, upper)`` in training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):  # noqa: A002
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of ``(N, C, H, W)`` or ``(C, H, W)``."""

    def forward(self, input):  # noqa: A002
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)
