"""Swish and Mish activations as an ember op plugin.

Installing the distribution registers, through the ``ember`` entry point:

* ``ember.ops.swish.swish(x)`` = ``x * sigmoid(x)``: a custom ``autograd.Function``
  with a hand-written backward, also ``Tensor.swish()`` and the Module ``Swish``
  (``ember.nn.Swish``);
* ``ember.ops.swish.mish(x)`` = ``x * tanh(softplus(x))``: a forward kernel on
  arrays (any array-API library, with a NumPy-specific kernel for ``cpu``) and a
  backward written with ember ops, also ``Tensor.mish()``.

>>> import ember
>>> ember.ops.swish.swish(ember.tensor([0.0, 2.0]))
tensor([0.0000, 1.7616])
"""
import ember
from ember.backend import array_namespace
from ember.nn import Module
from ember.plugins import hookimpl


def _sigmoid(x):
    return 1 / (1 + (-x).exp())


class SwishFunction(ember.autograd.Function):
    """``x * sigmoid(x)``; backward ``g * s * (1 + x * (1 - s))`` with ``s = sigmoid(x)``.

    The backward recomputes ``s`` from the saved input with ember ops, so it is itself differentiable
    (a value computed inside ``forward`` carries no graph).
    """

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * _sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = _sigmoid(x)
        return grad * s * (1 + x * (1 - s))


def swish(x):
    """Swish (SiLU) of ``x``."""
    return SwishFunction.apply(x)


class Swish(Module):
    """``Swish()(x) == ember.ops.swish.swish(x)``."""

    def forward(self, x):
        return SwishFunction.apply(x)


def _mish_kernel(x):
    # tanh(softplus(x)) = (n - 1) / (n + 1) with n = (1 + e^x)^2
    xp = array_namespace(x)  # numpy, cupy, ... (CuPy's arrays have no __array_namespace__)
    n = (1 + xp.exp(x)) ** 2
    return x * (n - 1) / (n + 1)


def _mish_kernel_numpy(x):
    import numpy as np

    e = np.exp(x)
    e += 1
    e *= e
    return x * (e - 1) / (e + 1)


def _mish_backward(ctx, grad):
    (x,) = ctx.inputs
    e = x.exp()
    n = (1 + e) ** 2
    return grad * ((n - 1) / (n + 1) + x * 4 * (1 + e) * e / (n + 1) ** 2)


@hookimpl
def ember_ops(registry):
    registry.add_op("swish", "swish", SwishFunction, method="swish", module=Swish)
    registry.add_op("swish", "mish", forward=_mish_kernel, backward=_mish_backward, method="mish",
                    kernels={"cpu": _mish_kernel_numpy})
