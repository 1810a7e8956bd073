"""Neural-network ops: softmax, the fused activations, linear maps, embeddings, dropout, normalisation,
distances, pixel shuffle and constant padding.

Each op is exported to ``nn.functional`` and, where PyTorch has it there,
to ``torch`` (``ember.*``) and ``Tensor``.  Where ``torch.<name>`` has
another signature than ``torch.nn.functional.<name>`` (``softmax``'s
``dtype`` in third place, ``dropout``'s ``train``, ``batch_norm``'s
argument order, ``embedding``'s weight first...), the torch form is its own
function beside the functional one.  Convolution and pooling are in
:mod:`ember.ops.nn_conv`, losses in :mod:`ember.ops.nn_loss`, the fused
recurrent layers in :mod:`ember.ops.nn_recurrent`.

>>> import ember
>>> ember.softmax(ember.tensor([0., 1000.]), 0).tolist()
[0.0, 1.0]
"""
from __future__ import annotations

import inspect
import math
import warnings
import threading
import weakref

from .. import dtypes
from ..autograd.function import Op, composite_node, keep_args, keep_saved, named_node, optional
from ..autograd.grad_mode import no_grad
from ..dispatch import apply, autocasting, on_arrays, result_type, unary
from ..interception import HANDLERS
from ..interception import observed
from ..layouts import keep_format
from ..writes import inplace_result, out_or
from ..registry import NAMESPACES, _type_name, check_tensor, export, inplace_form, op_class
from ..state import is_grad_enabled
from ..tensor import Tensor, _wrap, _wrap_dim
from .creation import arange, rand
from .creation import create as _create
from .pointwise import erf, sigmoid, where
from .shape import broadcast_tensors, cat


def torch_form(name: str):
    """Name the decorated function ``name``: the ``torch.<name>`` form of a functional op of the same name."""
    def deco(fn):
        fn.__name__ = fn.__qualname__ = name
        return fn
    return deco


def inplace_torch(fn, name: str, to=("torch",)):
    """Export ``name_``, ``fn`` computed out of place and written into its input, to ``to`` (default ``torch``);
    it shows ``fn``'s parameters, which are the ones it passes ``fn``."""
    method = inplace_form(fn, name)
    method.__signature__ = inspect.signature(fn)
    return export(method, name + "_", to=to)


class _CompileCapture(threading.local):
    """How ``ember.compile``'s capture records ops in this thread, set by :mod:`ember._dynamo` while it captures
    (its replay runs every op it records, where other tracers and exporters know only the composed forms):
    ``native``, the one-node forms of normalisations; ``first_order``, while it records a training step's
    backward, which is never differentiated: the formulas record their one-kernel gradient ops in place of their
    composite forms."""

    native = False
    first_order = False


CompileCapture = _CompileCapture()


def _kernel_grads() -> bool:
    """Whether a backward formula that records ops records its one-kernel gradient op (``ember.compile``'s
    first-order capture, in this thread) rather than its composite, differentiable form."""
    return CompileCapture.first_order and len(HANDLERS) == 1


# --------------------------------------------------------------------------- softmax and fused activations
def _softmax_grad(g, y, dim):
    """Softmax's gradient ``y * (g - sum(g * y))`` from its output ``y``: one SoftmaxGrad op, or the formula's own
    ops while vmap, forward-mode AD or a tracer watches."""
    if HANDLERS and not _kernel_grads():
        return y * (g - (g * y).sum(dim, keepdim=True))
    return apply(SoftmaxGrad, g, y, dim)


def _softmax_vjp(ctx, g):
    return _softmax_grad(g, ctx.output, ctx.dim)


Softmax = op_class("Softmax", "softmax", saves="output", vjp=_softmax_vjp, params=("dim",))
Softmax.saved_args = {"dim": "dim"}


def _softmax_grad_vjp(ctx, gg):
    # of y * (g - sum(g * y)): for g the same map of gg; for y, gg * (g - sum(g * y)) - g * sum(gg * y)
    g, y = ctx.inputs
    dim = ctx.dim
    return (apply(SoftmaxGrad, gg, y, dim),
            gg * (g - (g * y).sum(dim, keepdim=True)) - g * (gg * y).sum(dim, keepdim=True))


# softmax's gradient from its output as one op (PyTorch's _softmax_backward_data), differentiable again
SoftmaxGrad = op_class("SoftmaxGrad", "softmax_backward", saves="input", vjp=_softmax_grad_vjp, params=("dim",),
                       arity=3, backward_name="SoftmaxBackwardDataBackward0")


def _log_softmax_vjp(ctx, g):
    return g - ctx.output.exp() * g.sum(ctx.dim, keepdim=True)


LogSoftmax = op_class("LogSoftmax", "log_softmax", saves="output", vjp=_log_softmax_vjp, params=("dim",))
LogSoftmax.saved_args = {"dim": "dim"}


def _softplus_vjp(ctx, g):
    x = ctx.inputs[0]
    bx = x * ctx.beta
    return where(bx > ctx.threshold, g, g * sigmoid(bx))


Softplus = op_class("Softplus", "nn_softplus", saves="input", vjp=_softplus_vjp, params=("beta", "threshold"),
                    tags=("pointwise",), autocast={"cuda": "fp32"})
Softplus.saved_args = {"beta": "beta", "threshold": "threshold"}


def _hardtanh_vjp(ctx, g):
    x = ctx.inputs[0]
    zero = g.new_zeros(())
    return where(x > ctx.lo, where(x < ctx.hi, g, zero), zero)


Hardtanh = op_class("Hardtanh", "clamp", saves="input", vjp=_hardtanh_vjp, params=("lo", "hi"), tags=("pointwise",))
Hardtanh.saved_args = {"min_val": "lo", "max_val": "hi"}



def _softmax_dim(x, dim, op, stacklevel=3):
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the call to include dim=X "
                      f"as an argument.", UserWarning, stacklevel=stacklevel)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return _wrap_dim(dim, max(x.ndim, 1), op)


def _float(x, dtype, op="softmax"):
    # no integer or complex kernel (dtype= converts); an empty input returns before the kernel, as in PyTorch
    if dtype is None and x.dtype.category != dtypes.FLOAT and x.numel():
        raise NotImplementedError(f'"{op}_lastdim_kernel_impl" not implemented for \'{_type_name(x.dtype)}\'')
    return x.to(dtype) if dtype is not None else x


@export(to=("nn.functional",))
def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """``exp(x) / exp(x).sum(dim)``, computed stably (the max is subtracted first).

    >>> import ember
    >>> ember.nn.functional.softmax(ember.tensor([0., 1000.]), dim=0).tolist()
    [0.0, 1.0]
    """
    d = _softmax_dim(check_tensor(input, "softmax"), dim, "softmax", _stacklevel)  # (the dim is checked first)
    return unary(Softmax, _float(input, dtype), d)


@export(to=("nn.functional",))
def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:  # noqa: A002
    """``log(softmax(x))`` computed stably.

    >>> import ember
    >>> ember.nn.functional.log_softmax(ember.tensor([0., 0.]), dim=0).tolist()
    [-0.6931471824645996, -0.6931471824645996]
    """
    d = _softmax_dim(check_tensor(input, "log_softmax"), dim, "log_softmax", _stacklevel)  # (the dim is checked first)
    return unary(LogSoftmax, _float(input, dtype, "log_softmax"), d)


@export(to=("torch", "Tensor", "special"))
@torch_form("softmax")
def torch_softmax(input: Tensor, dim: int, dtype=None, *, out=None) -> Tensor:  # noqa: A002
    """``torch.softmax`` / ``Tensor.softmax``: :func:`softmax` along ``dim`` (required), ``dtype`` third."""
    x = _float(check_tensor(input, "softmax"), dtype)
    return out_or(unary(Softmax, x, _wrap_dim(dim, max(x.ndim, 1), "softmax")), out)


@export(to=("torch", "Tensor", "special"))
@torch_form("log_softmax")
def torch_log_softmax(input: Tensor, dim: int, dtype=None, *, out=None) -> Tensor:  # noqa: A002
    """``torch.log_softmax`` / ``Tensor.log_softmax``."""
    x = _float(check_tensor(input, "log_softmax"), dtype, "log_softmax")
    return out_or(unary(LogSoftmax, x, _wrap_dim(dim, max(x.ndim, 1), "log_softmax")), out)


# PyTorch's kernels of the activations, which compute floating dtypes only (silu's also complex ones)
_ACT_KERNELS = {"elu": "elu_{device}", "celu": "elu_{device}", "selu": "elu_{device}", "silu": "silu_{device}",
                "leaky_relu": "leaky_relu_{device}", "rrelu": "leaky_relu_{device}", "mish": "mish_{device}",
                "hardsigmoid": "hardsigmoid_{device}", "hardswish": "hardswish_{device}", "gelu": "GeluKernelImpl",
                "hardshrink": "hardshrink_{device}", "softshrink": "softshrink_check", "glu": "glu_{device}",
                "logsigmoid": "log_sigmoid_{device}", "prelu": "prelu_{device}", "softplus": "softplus_{device}"}


def _act_input(input, name):  # noqa: A002
    """``input``, refused (PyTorch's NotImplementedError) where the kernel of activation ``name`` has no code for
    its dtype; a number raises PyTorch's TypeError."""
    check_tensor(input, name)
    kernel = _ACT_KERNELS.get(name)
    if kernel is not None:
        supported = dtypes.FLOATING_AND_HALF | (dtypes.COMPLEX_TYPES if name == "silu" else frozenset())
        dtypes.check_kernel(kernel, input, supported, empty_ok=False)
    return input


def _inplace(x, compute, inplace, name):
    """``compute(x)``, or with ``inplace`` written into ``x`` (which takes the result's history)."""
    return inplace_result(x, compute, name + "_") if inplace else compute(x)


@export(to=("nn.functional",))
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""
    return unary(Softplus, _act_input(input, "softplus"), beta, threshold)


@export(to=("nn.functional",))
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``clamp(x, min_val, max_val)``."""
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    check_tensor(input, "hardtanh")
    if input.dtype is dtypes.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if input.dtype.category == dtypes.COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")
    if input.dtype is dtypes.uint8 and min(int(min_val), int(max_val)) < 0:  # (limits truncated to integers)
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return _inplace(input, lambda x: unary(Hardtanh, x, min_val, max_val), inplace, "hardtanh")


def _prelu_vjp(ctx, g):
    x, w = ctx.inputs
    pos = x > 0
    return where(pos, g, g * w), where(pos, g.new_zeros(()), g * x)


PreluKernel = op_class("PreluKernel", "nn_prelu", saves="input", vjp=_prelu_vjp, arity=2, tags=("pointwise",))


@export(to=("nn.functional", "torch", "Tensor"))
def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """``x`` where positive, ``weight * x`` elsewhere (``weight`` per channel, dim 1)."""
    x = _act_input(input, "prelu")
    if weight.numel() != 1:
        c = x.shape[1] if x.ndim >= 2 else x.shape[0]
        if weight.numel() != c:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter "
                               f"numbers = {weight.numel()} and channel size = {c}.")
        if x.ndim >= 2:
            weight = weight.reshape((1, -1) + (1,) * (x.ndim - 2))
    return apply(PreluKernel, x, weight if weight.dtype is x.dtype else weight.to(x.dtype))


def _neg_part(x):
    # min(x, 0) without a max op; keeps exp() of the unused branch finite
    return where(x > 0, x.new_zeros(()), x)


# Activations with PyTorch's nodes (``EluBackward0``, ...): one Op each, its kernel in ember.kernels.activation.  Where
# PyTorch's in-place form records another node (``EluBackward1``), a second class with that name.
def _act(input, name, ops, inplace, *params):  # noqa: A002
    """``input`` through the activation Op ``ops[0]``; with ``inplace`` written into ``input`` by ``ops[1]``."""
    _act_input(input, name)
    Op = ops[1] if inplace else ops[0]
    return _inplace(input, lambda x: unary(Op, x, *params), inplace, name)


def _rows(name, kernel, vjp, params=(), inplace_node=False, result_vjp=None):
    """The Op of activation ``name`` (``<name>Backward0``) and the one its in-place form records; with
    ``result_vjp``, that one keeps the result (PyTorch's in-place node: the input is overwritten), its gradient
    computed from it."""
    Op = op_class(name, kernel, saves="input", vjp=vjp, params=params, tags=("pointwise",))
    if not inplace_node:
        return Op, Op
    return Op, op_class(name + "_", kernel, saves="output" if result_vjp else "input", vjp=result_vjp or vjp,
                        params=params, backward_name=name + "Backward1", tags=("pointwise",))


def _zero(g):
    return g.new_zeros(())


def _elu_vjp(ctx, g):
    x = ctx.inputs[0]
    neg = (_neg_part(x) * ctx.input_scale).exp() * (ctx.alpha * ctx.scale * ctx.input_scale)
    return where(x > 0, g * ctx.scale, g * neg)


def _leaky_relu_vjp(ctx, g):
    return where(ctx.inputs[0] > 0, g, g * ctx.slope)


_NEGATIVE_SLOPE_INPLACE = ("In-place {} backward calculation is triggered with a negative slope which is not "
                           "supported. This is caused by calling in-place forward function with a negative slope, "
                           "please call out-of-place version instead.")


def _elu_result_vjp(ctx, g):
    # from the result y: y > 0 where x > 0, and below the slope is input_scale * (y + alpha * scale)
    if ctx.alpha < 0:
        raise RuntimeError(_NEGATIVE_SLOPE_INPLACE.format("elu"))
    y = ctx.output
    return where(y > 0, g * ctx.scale, g * ((y + ctx.alpha * ctx.scale) * ctx.input_scale))


def _leaky_relu_result_vjp(ctx, g):
    if ctx.slope < 0:
        raise RuntimeError(_NEGATIVE_SLOPE_INPLACE.format("leakyReLu"))
    return where(ctx.output > 0, g, g * ctx.slope)


def _threshold_vjp(ctx, g):
    return where(ctx.inputs[0] <= ctx.th, _zero(g), g)  # (a NaN threshold or input passes the gradient)


def _shrink_vjp(ctx, g):
    return where(ctx.inputs[0].abs() > ctx.lambd, g, _zero(g))


_ELU = ("alpha", "scale", "input_scale")
ELU = _rows("Elu", "nn_elu", _elu_vjp, _ELU, True, _elu_result_vjp)  # elu and selu
CELU = _rows("Celu", "nn_elu", _elu_vjp, _ELU, True, _elu_result_vjp)
LEAKY_RELU = _rows("LeakyRelu", "nn_leaky_relu", _leaky_relu_vjp, ("slope",), True, _leaky_relu_result_vjp)
THRESHOLD = _rows("Threshold", "nn_threshold", _threshold_vjp, ("th", "value"), inplace_node=True)
Softshrink, _ = _rows("Softshrink", "nn_softshrink", _shrink_vjp, ("lambd",))
Hardshrink, _ = _rows("Hardshrink", "nn_hardshrink", _shrink_vjp, ("lambd",))
for _op in (*LEAKY_RELU, *THRESHOLD, Softshrink, Hardshrink):  # (each keeps one of these)
    _op.saved_args = {"negative_slope": "slope", "threshold": "th", "lambd": "lambd"}
for _op in ELU:
    _op.saved_args = {k: k for k in _ELU}
for _op in CELU:  # (its input_scale is 1 / alpha, not an argument)
    _op.saved_args = {"alpha": "alpha"}


@export(to=("nn.functional",))
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` above 0, ``alpha * (exp(x) - 1)`` below.

    >>> import ember
    >>> ember.nn.functional.elu(ember.tensor([1.0, 0.0])).tolist()
    [1.0, 0.0]
    """
    return _act(input, "elu", ELU, inplace, alpha, 1, 1)  # (PyTorch's defaults of scale and input_scale: ints)


@export(to=("nn.functional", "torch"))
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` above 0, ``alpha * (exp(x / alpha) - 1)`` below."""
    return _act(input, "celu", CELU, inplace, alpha, 1, _celu_scale(alpha))


def _celu_scale(alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu: alpha must not be 0")
    return 1.0 / alpha


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@export(to=("nn.functional", "torch"))
def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``scale * elu(x, alpha)`` with the self-normalising constants (PyTorch's node: ``EluBackward0``)."""
    return _act(input, "selu", ELU, inplace, _SELU_ALPHA, _SELU_SCALE, 1)


@export(to=("nn.functional", "torch"))
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` where ``x > threshold``, else ``value``."""
    x, threshold, value = _threshold_input(input, threshold, value)
    return _act(x, "threshold", THRESHOLD, inplace, threshold, value)


def _threshold_input(input, threshold, value):  # noqa: A002 - PyTorch's threshold kernel has no bool (nor complex) code
    """``(input, threshold, value)``, the numbers converted to the input's dtype as PyTorch converts them: refused
    where they overflow it (NaN, inf or a float outside an integer type's range too)."""
    d = check_tensor(input, "threshold").dtype
    dtypes.check_kernel("threshold_{device}", input, dtypes.ALL_TYPES | dtypes.REDUCED_FLOATING_TYPES, empty_ok=False)
    converted = []
    # (the threshold of float16 and bfloat16 input is compared in float32)
    for v, to in ((threshold, dtypes.float32 if d in dtypes.REDUCED_FLOATING_TYPES else d), (value, d)):
        if to.category == dtypes.INT and isinstance(v, float) and not dtypes.iinfo(to).min <= v <= dtypes.iinfo(to).max:
            raise RuntimeError(f"value cannot be converted to type {to.name} without overflow (got {v})")
        converted.append(dtypes.checked_scalar(v, to))
    return (input, *converted)


@export(to=("nn.functional", "torch", "Tensor"))
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``x`` where ``|x| > lambd``, else 0."""
    return unary(Hardshrink, _act_input(input, "hardshrink"), lambd)


@export(to=("nn.functional",))
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}.")
    return unary(Softshrink, _act_input(input, "softshrink"), lambd)


@export(to=("nn.functional",))
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x`` above 0, ``negative_slope * x`` below."""
    return _act(input, "leaky_relu", LEAKY_RELU, inplace, negative_slope)


def _hardsigmoid_vjp(ctx, g):
    x = ctx.inputs[0]
    return where((x > -3) & (x < 3), g / 6, _zero(g))


def _hardswish_vjp(ctx, g):
    x = ctx.inputs[0]
    return where(x < -3, _zero(g), where(x <= 3, g * (x / 3 + 0.5), g))


def _silu_vjp(ctx, g):
    x = ctx.inputs[0]
    s = sigmoid(x)
    return g * s * (1 + x * (1 - s))


def _mish_vjp(ctx, g):
    x = ctx.inputs[0]
    t = softplus(x).tanh()
    return g * (t + x * sigmoid(x) * (1 - t * t))


_GELU_K = math.sqrt(2.0 / math.pi)


def _gelu_vjp(ctx, g):
    x = ctx.inputs[0]
    if on_arrays(g, x) and g._data.dtype == x._data.dtype:  # no graph is being built: the formula in one kernel
        return _wrap(g._dev.kernels["nn_gelu_backward"](g._data, x._data, ctx.approximate), g._dev)
    if _kernel_grads() and g.dtype is x.dtype:
        return apply(GeluGrad, g, x, ctx.approximate)
    if ctx.approximate == "tanh":
        t = ((x + x * x * x * 0.044715) * _GELU_K).tanh()
        return g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * _GELU_K * (x * x * (3 * 0.044715) + 1))
    cdf = (erf(x * (1.0 / math.sqrt(2.0))) + 1) * 0.5
    return g * (cdf + x * (x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi)))


def _log_sigmoid_vjp(ctx, g):
    return g * sigmoid(-ctx.inputs[0])


Hardsigmoid, _ = _rows("Hardsigmoid", "nn_hardsigmoid", _hardsigmoid_vjp)
Hardswish, _ = _rows("Hardswish", "nn_hardswish", _hardswish_vjp)
Silu, _ = _rows("Silu", "nn_silu", _silu_vjp)
Mish, _ = _rows("Mish", "nn_mish", _mish_vjp)
Gelu, _ = _rows("Gelu", "nn_gelu", _gelu_vjp, ("approximate",))
# gelu's gradient as one op, for a backward that is recorded but never differentiated (see _kernel_grads)
GeluGrad = op_class("GeluGrad", "nn_gelu_backward", params=("approximate",), arity=3,
                    backward_name="GeluBackwardBackward0")
LogSigmoid, _ = _rows("LogSigmoid", "nn_log_sigmoid", _log_sigmoid_vjp)


@export(to=("nn.functional",))
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``clamp(x + 3, 0, 6) / 6``."""
    return _act(input, "hardsigmoid", (Hardsigmoid, Hardsigmoid), inplace)


@export(to=("nn.functional",))
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * hardsigmoid(x)``."""
    return _act(input, "hardswish", (Hardswish, Hardswish), inplace)


@export(to=("nn.functional",))
def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * sigmoid(x)``.

    >>> import ember
    >>> ember.nn.functional.silu(ember.tensor([0.0])).tolist()
    [0.0]
    """
    return _act(input, "silu", (Silu, Silu), inplace)


@export(to=("nn.functional",))
def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """``x * tanh(softplus(x))``."""
    return _act(input, "mish", (Mish, Mish), inplace)


@export(to=("nn.functional",))
def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """``x * Phi(x)``; ``approximate='tanh'`` uses PyTorch's tanh formula."""
    x = _act_input(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got {approximate!r}")
    return unary(Gelu, x, approximate)


@export(to=("nn.functional",))
def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """``log(sigmoid(x))``, computed stably."""
    return unary(LogSigmoid, _act_input(input, "logsigmoid"))


def _glu_vjp(ctx, g):
    a, b = ctx.inputs[0].chunk(2, ctx.axis)
    s = sigmoid(b)
    return cat([g * s, g * a * s * (1 - s)], ctx.axis)


Glu = op_class("Glu", "nn_glu", saves="input", vjp=_glu_vjp, params=("axis",))


@export(to=("nn.functional",))
def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """``a * sigmoid(b)`` of the two halves of ``dim``."""
    x = _act_input(input, "glu")
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    axis = _wrap_dim(dim, x.ndim, "glu")
    if x.shape[axis] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {axis} is size {x.shape[axis]}")
    return unary(Glu, x, axis)


def _elu_(input, alpha=1.0):  # noqa: A002  (F.elu_ and the other in-place forms record PyTorch's ...Backward1)
    return unary(ELU[1], _act_input(input, "elu"), alpha, 1, 1)


def _celu_(input, alpha=1.0):  # noqa: A002
    return unary(CELU[1], _act_input(input, "celu"), alpha, 1, _celu_scale(alpha))


def _selu_(input):  # noqa: A002
    return unary(ELU[1], _act_input(input, "selu"), _SELU_ALPHA, _SELU_SCALE, 1)


def _threshold_(input, threshold, value):  # noqa: A002
    return unary(THRESHOLD[1], *_threshold_input(input, threshold, value))


def _leaky_relu_(input, negative_slope=0.01):  # noqa: A002
    return unary(LEAKY_RELU[1], _act_input(input, "leaky_relu"), negative_slope)


inplace_torch(_celu_, "celu")
inplace_torch(_selu_, "selu")
inplace_torch(_threshold_, "threshold")
export(NAMESPACES["Tensor"]["relu_"], "relu_", to=("torch",))  # the in-place form ops.pointwise derives for relu


# --------------------------------------------------------------------------- linear maps
def _linear_sizes(node):
    """PyTorch's ``_saved_self_sym_sizes`` of the node its linear leaves: mm's input, or the product (the input's
    leading dims folded into rows) that a view, an unsafe view or ``squeeze_(0)`` takes; addmm keeps none."""
    name, x = type(node).__name__, node._shapes[0][0]
    if name == "AddmmBackward0":
        return None
    return x if name == "MmBackward0" else (math.prod(x[:-1]), node._shapes[1][0][0])


def _linear_operand(name, slot):
    """A ``saved_args`` entry of PyTorch's addmm (``mat1``, ``mat2``) or mm (``self``, ``mat2``) that a 2-d linear
    leaves, for the node named ``name`` (None for another): the input, or the weight transposed (made when read),
    kept as PyTorch keeps them (only for the other operand's gradient)."""
    def read(node):
        if type(node).__name__ not in name:
            return None
        v = node._value_saved(slot)
        return optional(None) if v is None else v if slot == 0 else v.t()
    return read


class Linear(Op):
    """``x @ w.T + b`` in one GEMM; the gradient flattens leading dimensions into one GEMM each."""

    backward_name = "AddmmBackward0"
    save_inputs = True
    save_for = ((1,), (0,), ())  # the input for the weight's gradient, the weight for the input's; never the bias
    saved_names = ()  # (PyTorch's addmm keeps the weight transposed, as mat2: made when read, see saved_args)
    # the sizes of PyTorch's addmm (or mm, without a bias) of a matrix input: x and the weight transposed
    saved_args = {"alpha": lambda n: 1 if type(n).__name__ == "AddmmBackward0" else None,
                  "beta": lambda n: 1 if type(n).__name__ == "AddmmBackward0" else None,
                  "mat1_sym_sizes": lambda n: n._shapes[0][0] if type(n).__name__ == "AddmmBackward0" else None,
                  "self_sym_sizes": _linear_sizes,
                  "dim": lambda n: 0 if type(n).__name__ == "SqueezeBackward4" else None,
                  "mat2_sym_sizes": lambda n: n._shapes[1][0][::-1] if len(n._shapes[0][0]) == 2 else None,
                  "mat1": _linear_operand(("AddmmBackward0",), 0), "self": _linear_operand(("MmBackward0",), 0),
                  "mat2": _linear_operand(("AddmmBackward0", "MmBackward0"), 1)}


    @staticmethod
    def forward(ctx, k, x, w, b):
        return k["linear"](x, w, b)

    @staticmethod
    def backward(ctx, g):
        x, w, nf = _adjoint(ctx, g)
        if on_arrays(g, x, w) and g.dtype.category < dtypes.COMPLEX:  # the three products on arrays, no ops
            return _linear_grads(g, x, w, nf)
        gx = g.matmul(w) if nf[0][0] is not None else None
        g2 = g.reshape(-1, g.shape[-1]) if g.ndim != 2 else g
        gw = g2.t().matmul(x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x) if nf[1][0] is not None else None
        return (gx, gw) if len(nf) == 2 else (gx, gw, g2.sum(0) if nf[2][0] is not None else None)


def _linear_grads(g, x, w, nf):
    """Linear's gradients computed by the kernels themselves (no graph is being built: see ``on_arrays``)."""
    dev = g._dev
    k = dev.kernels
    ga = g._data
    g2 = k["reshape"](ga, (-1, ga.shape[-1])) if ga.ndim != 2 else ga
    gx = gw = gb = None
    if nf[0][0] is not None:
        gx = _wrap(k["matmul"](ga, w._data), dev)
    if nf[1][0] is not None:
        xa = x._data
        gw = _wrap(k["matmul"](k["permute"](g2, (1, 0)), k["reshape"](xa, (-1, xa.shape[-1])) if xa.ndim != 2
                               else xa), dev)
    if len(nf) == 2:
        return gx, gw
    if nf[2][0] is not None:
        gb = _wrap(k["sum"](g2, (0,), False, None), dev)
    return gx, gw, gb


def _adjoint(ctx, g):
    """A linear map's saved input and weight, conjugated for a complex gradient (the adjoint:
    ``g @ conj(w)``, ``g^T @ conj(x)``), and its next functions."""
    x, w = ctx.inputs[0], ctx.inputs[1]
    if g.is_complex():  # (either may be None: not kept where no gradient reads it)
        x, w = x if x is None else x.conj(), w if w is None else w.conj()
    return x, w, ctx.next_functions


class LinearStack(Op):
    """``x @ w.mT + b`` for a stack of weights ``(B, N, K)``, inputs ``(B, M, K)`` and biases ``(B, N)``: the
    Linear of vmap with per-sample weights (``ember.func.batching``).  A weight stack repeated by zero
    strides (a parameter lifted over the batch) multiplies in one GEMM (the matmul kernel sees the strides),
    and each weight's gradient ``g.mT @ x`` is laid out as the weight is."""

    backward_name = "LinearStackBackward0"
    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, w, b):
        y = k["matmul"](x, k["permute"](w, (0, 2, 1)))
        if b is not None:
            y += b[:, None, :]
        return y

    @staticmethod
    def backward(ctx, g):
        dev = g._dev
        if not is_grad_enabled() and type(g._data) is dev.atype and g.dtype.is_floating_point and not observed():
            return LinearStack._grads(ctx, dev, g._data)
        x, w, nf = _adjoint(ctx, g)
        gx = g.matmul(w) if nf[0][0] is not None else None
        gw = g.mT.matmul(x) if nf[1][0] is not None else None
        return (gx, gw) if len(nf) == 2 else (gx, gw, g.sum(1) if nf[2][0] is not None else None)

    @staticmethod
    def _grads(ctx, dev, g):
        """The backward as kernel calls, when no graph of it is wanted (real gradient ``g``, an array)."""
        k, nf = dev.kernels, ctx.next_functions
        x, w = ctx.inputs[0]._data, ctx.inputs[1]._data
        gx = _wrap(k["matmul"](g, w), dev) if nf[0][0] is not None else None
        gw = _wrap(k["matmul"](k["permute"](g, (0, 2, 1)), x), dev) if nf[1][0] is not None else None
        if len(nf) == 2:
            return gx, gw
        return gx, gw, _wrap(k["sum"](g, 1), dev) if nf[2][0] is not None else None


@export(to=("nn.functional",))
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """``input @ weight.T + bias``.

    >>> import ember
    >>> ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
    ember.Size([2, 4])
    """
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"linear(): expected Tensor input and weight, got {type(input).__name__} and "
                        f"{type(weight).__name__}")
    si, sw = input._data.shape, weight._data.shape  # (read once: a hot path)
    if not si or len(sw) not in (1, 2) or si[-1] != sw[-1]:
        a = f"{max(input.numel() // max(input.shape[-1], 1), 1)}x{input.shape[-1] if input.ndim else 1}" \
            if input.ndim else "scalar"
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({a} and "
                           f"{'x'.join(str(s) for s in reversed(weight.shape))}): input of size {list(input.shape)} "
                           f"expects its last dimension to be in_features={weight.shape[-1]}")
    dt = input._data.dtype
    if (dt is not weight._data.dtype or (bias is not None and bias._data.dtype is not dt)) and \
            (input.dtype is not weight.dtype or (bias is not None and bias.dtype is not input.dtype)) \
            and not autocasting(input):
        if input.dtype is weight.dtype:  # (the bias differs: PyTorch's addmm names it self)
            raise RuntimeError(f"linear: self and mat2 must have the same dtype, but got {_type_name(bias.dtype)} "
                               f"and {_type_name(weight.dtype)}")
        raise RuntimeError(f"linear: expected m1 and m2 to have the same dtype, but got: {input.dtype} != "
                           f"{weight.dtype}")
    if input.dtype is dtypes.bool and input.numel():  # (PyTorch's GEMM kernels have no bool code)
        raise NotImplementedError(f"\"{'addmv_impl_' if len(sw) == 1 else 'addmm_impl_'}{input.device.type}"
                                  f"{'' if len(sw) == 1 else '_'}\" not implemented for 'Bool'")
    if len(sw) == 1:
        out = input.matmul(weight)
        return out + bias if bias is not None else out
    # (the node made as PyTorch's node of the matmul/addmm it composes; Linear itself is AddmmBackward0)
    return apply(_LINEAR_NODE.get((min(len(si), 3), bias is None), Linear), input, weight, bias)


_LINEAR_NODE = {k: named_node(Linear, n) for k, n in {
    (1, True): "SqueezeBackward4", (1, False): "ViewBackward0", (2, True): "MmBackward0",
    (3, True): "UnsafeViewBackward0", (3, False): "ViewBackward0"}.items()}


@export(to=("nn.functional", "torch"))
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_k = x1 @ W_k @ x2 + b_k`` for weight ``(out, in1, in2)``."""
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear: input1 of size {list(input1.shape)} and input2 of size {list(input2.shape)} "
                           f"do not match weight of size {list(weight.shape)} (expected last dimensions "
                           f"{weight.shape[1]} and {weight.shape[2]})")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, input1.shape[-1])
    x2 = input2.reshape(-1, input2.shape[-1])
    t = x1.matmul(weight.permute(1, 0, 2).reshape(weight.shape[1], -1))
    out = (t.reshape(x1.shape[0], weight.shape[0], weight.shape[2]) * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        out = out + bias
    return out.reshape(tuple(lead) + (weight.shape[0],))


# --------------------------------------------------------------------------- embeddings
# --------------------------------------------------------------------------- attention
def _swap(k, a):
    """``a`` with its last two axes swapped (a view)."""
    return k["permute"](a, (*range(a.ndim - 2), a.ndim - 1, a.ndim - 2))


def attention_scores(q, key_t, scale, mm):
    """``mm(q, key_t) * scale`` for arrays or Tensors (``mm`` their product), with the scale on the smaller of the
    query and the scores: the one rule of the attention node, its backward and the composed forms, so that they
    agree bit for bit."""
    if q.shape[-1] <= key_t.shape[-1]:
        return mm(q * scale, key_t)
    return mm(q, key_t) * scale


def causal_mask(like, L, S):
    """The ``(L, S)`` float mask of ``is_causal`` attention: 0 on and below the diagonal, -inf above (added to the
    scores, its sum's gradient is g itself), of ``like``'s dtype and device."""
    return like.new_full((L, S), float("-inf")).triu(1)


class ScaledDotProductAttention(Op):
    """``softmax(q k^T * scale + mask) v`` as one node (``scaled_dot_product_attention`` without dropout):
    forward by four kernels, keeping the probabilities ``p``; the backward is ``dv = p^T g``,
    ``ds = softmax_backward(g v^T, p)``, ``dq = scale * ds k``, ``dk = scale * ds^T q``, on the arrays when no graph
    of it is being built, else by differentiable ops with ``p`` recomputed from the inputs (every order exact).
    The mask (added, float) carries no gradient."""

    backward_name = "ScaledDotProductFlashAttentionForCpuBackward0"  # (PyTorch's CPU node, mask or not)
    save_inputs = True

    @staticmethod
    def forward(ctx, k, q, key, v, mask, scale):
        scores = attention_scores(q, _swap(k, key), scale, k["matmul"])
        if mask is not None:
            scores += mask
        ctx.p, ctx.scale = k["softmax"](scores, scores.ndim - 1), scale
        return k["matmul"](ctx.p, v)

    @staticmethod
    def backward(ctx, g):
        q, key, v = ctx.inputs[:3]
        s = ctx.scale
        if on_arrays(g, q, key, v):
            dev = g._dev
            k = dev.kernels
            p = ctx.p
            ds = k["softmax_backward"](k["matmul"](g._data, _swap(k, v._data)), p, p.ndim - 1)
            grads = (k["matmul"](ds, key._data) * s, k["matmul"](_swap(k, ds), q._data) * s,
                     k["matmul"](_swap(k, p), g._data))
            return tuple(_wrap(a, dev) for a in grads) + (None,) * (len(ctx.inputs) - 3)
        scores = attention_scores(q, key.transpose(-2, -1), s, Tensor.matmul)
        if len(ctx.inputs) > 3:
            scores = scores + ctx.inputs[3]
        p = softmax(scores, -1)
        ds = _softmax_grad(g.matmul(v.transpose(-2, -1)), p, -1)
        return (ds.matmul(key) * s, ds.transpose(-2, -1).matmul(q) * s, p.transpose(-2, -1).matmul(g)) + \
            (None,) * (len(ctx.inputs) - 3)


def attention(query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, scale: float,
              is_causal: bool = False) -> Tensor | None:
    """``softmax(query key^T * scale + mask) value`` as one :class:`ScaledDotProductAttention` node, or None
    where it does not serve (``scaled_dot_product_attention`` then composes the ops): float32/float64 operands
    of one dtype and equal batch dimensions, a float ``mask`` of that dtype without gradient (or None), and no
    interception handler watching (vmap, tracing, autocast and the profiler see the composed ops). ``is_causal``
    adds ``-inf`` above the diagonal to the mask, built only once the node serves."""
    d = query.dtype
    if observed() or d not in (dtypes.float32, dtypes.float64) or key.dtype is not d or value.dtype is not d or \
            query.ndim < 2 or not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]) or \
            key.shape[-1] != query.shape[-1] or value.shape[-2] != key.shape[-2]:
        return None
    if mask is not None:
        scores = (*query.shape[:-1], key.shape[-2])
        if mask.dtype is not d or mask.requires_grad or mask.ndim > len(scores) or \
                any(m not in (1, n) for m, n in zip(reversed(mask.shape), reversed(scores))):
            return None
    if is_causal:
        causal = causal_mask(query, query.shape[-2], key.shape[-2])
        mask = causal if mask is None else causal + mask
    return apply(ScaledDotProductAttention, query, key, value, mask, scale)


def index_tensor(idx, op):
    """``idx`` when it is an integer Tensor; PyTorch's error otherwise."""
    if not isinstance(idx, Tensor) or idx.dtype.category > 1 or idx.dtype.name == "bool":
        raise RuntimeError(f"{op}: Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {getattr(idx, 'dtype', type(idx).__name__)} instead")
    return idx


def _renorm_rows(weight, idx, max_norm, norm_type):
    with no_grad():
        rows = weight.index_select(0, idx)
        norms = (rows.abs() ** norm_type).sum(-1, keepdim=True) ** (1.0 / norm_type)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), norms.new_ones(()))
        weight.data.index_copy_(0, idx, rows * scale)


@export(to=("nn.functional",))
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by integer ``input``; the ``padding_idx`` row gets no gradient.

    >>> import ember
    >>> ember.nn.functional.embedding(ember.tensor([2, 0]), ember.eye(3)).tolist()
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    idx = index_tensor(input, "embedding")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:  # (PyTorch asserts)
            raise AssertionError(f"embedding: Padding_idx must be within num_embeddings (got {padding_idx} for {n})")
        padding_idx = padding_idx + n if padding_idx < 0 else padding_idx
    if max_norm is None and not scale_grad_by_freq and weight.ndim == 2 and idx.dtype in _EMBEDDING_INDEX and \
            not observed():
        idx._dev.kernels["index_in_range"](idx._data, n, "embedding")
        return apply(Embedding, weight, idx, padding_idx, sparse)
    flat = apply(IndexInRange, idx.reshape(-1), n, "embedding")
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    out = weight.index_select(0, flat)
    if scale_grad_by_freq and out.requires_grad and flat.numel():
        # each row's gradient divided by how often its index occurs in the batch (the values are unchanged)
        rows = flat.remainder(n)
        counts = rows.bincount(minlength=n).index_select(0, rows).to(out.dtype).unsqueeze(-1)
        out = out.detach() + (out - out.detach()) / counts
    if padding_idx is not None:
        out = where((flat != padding_idx).unsqueeze(-1), out, out.detach())
    return out.reshape(tuple(idx.shape) + (weight.shape[1],))


# The bounds check of an index as an op (not differentiable): ``index`` itself, or an IndexError.
IndexInRange = op_class("IndexInRange", "index_in_range", arity=3, tags=("data-dependent",))


_EMBEDDING_INDEX = (dtypes.int64, dtypes.int32)  # (PyTorch's; the composed form refuses the others)


class Embedding(Op):
    """``weight``'s rows at integer ``indices`` (any shape) as one node, PyTorch's EmbeddingBackward0: the
    gradient adds each row of ``g`` into its index's row (PyTorch's ``embedding_dense_backward``), the
    ``padding_idx`` row's left at zero; on the arrays where no graph of it is being built, else with ember ops
    (every order).  The composed form (index_select) serves the tracers, ``max_norm`` and ``scale_grad_by_freq``."""

    backward_name = "EmbeddingBackward0"
    save_inputs = True
    save_for = ((), (0,))  # the indices, for the weight's gradient
    saved_names = (None, "indices")
    # (no padding_idx: PyTorch's -1, an int64 its node reads back unsigned)
    saved_args = {"padding_idx": lambda n: (1 << 64) - 1 if n.pad is None else n.pad,
                  "scale_grad_by_freq": lambda n: False, "sparse": lambda n: n.sparse, "weight_sym_argsize_0": "rows"}

    @staticmethod
    def forward(ctx, k, w, idx, pad, sparse):
        ctx.rows, ctx.pad, ctx.sparse = w.shape[0], pad, sparse
        return k["reshape"](k["index_select"](w, 0, k["reshape"](idx, (-1,))), tuple(idx.shape) + tuple(w.shape[1:]))

    @staticmethod
    def backward(ctx, g):
        idx = ctx.inputs[1]  # (version-checked: indices changed in place since refuse the backward)
        dev = g._dev
        d = g.shape[-1]
        if on_arrays(g, idx):
            k = dev.kernels
            ga = g._data
            flat = k["reshape"](idx._data, (-1,))
            gw = k["index_add"](k["full"]((ctx.rows, d), 0, ga.dtype), 0, flat, k["reshape"](ga, (-1, d)))
            if ctx.pad is not None:
                gw = k["index_fill"](gw, 0, ctx.pad, 0)
            return _wrap(gw, dev), None
        flat = idx.reshape(-1)
        g2 = g.reshape(-1, d)
        if ctx.pad is not None:
            g2 = where((flat != ctx.pad).unsqueeze(-1), g2, g2.new_zeros(()))
        return g2.new_zeros((ctx.rows, d)).index_add(0, flat, g2), None


@export(to=("torch",))
@torch_form("embedding")
def torch_embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
                    sparse: bool = False) -> Tensor:
    """``torch.embedding``: weight first; a negative ``padding_idx`` means none."""
    return embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


# Each index's bag, and each bag's number of kept indices (not differentiable).
EmbeddingBagSegments = op_class("EmbeddingBagSegments", "embedding_bag_segments", arity=3, tags=("data-dependent",))


def _bags(input, offsets, include_last_offset):
    """Flat indices and the start offset of each bag (``input`` 2-D: one bag per row)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: if input is 2D, then offsets has to be None")
        b, length = input.shape
        return input.reshape(-1), arange(0, b * length, length, device=input.device)
    if offsets is None:
        raise ValueError("embedding_bag: offsets has to be a 1D Tensor but got None")
    return input, offsets[:-1] if include_last_offset else offsets


def _embedding_bag(input, weight, offsets, max_norm, norm_type, mode, per_sample_weights, padding_idx,
                   scale_grad_by_freq=False):
    """The bags' reductions, the bag of each index, the number of kept indices of each bag, and (mode 'max')
    the kept values."""
    emb = embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      "supported for mode='sum'")
        emb = emb * per_sample_weights.unsqueeze(-1)
    n, bags, width = input.shape[0], offsets.shape[0], weight.shape[1]
    keep = None if padding_idx is None else (input != padding_idx).unsqueeze(1)
    bag, counts = apply(EmbeddingBagSegments, offsets.detach(), n, None if keep is None else keep.reshape(-1))
    if mode == "max":
        init = emb.new_full((bags, width), float("-inf"))
        kept = emb if keep is None else where(keep, emb, init[:1])
        out = init.scatter_reduce(0, bag.unsqueeze(1).expand(n, width), kept, "amax", include_self=False)
        return where((counts == 0).unsqueeze(1), out.new_zeros(()), out), bag, counts, kept
    out = emb.new_zeros((bags, width)).index_add(0, bag, emb if keep is None else where(keep, emb, 0))
    if mode == "mean":
        out = out / counts.clamp(min=1).unsqueeze(1).to(out.dtype)
    return out, bag, counts, None


@export(to=("nn.functional",))
def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm=None,  # noqa: A002
                  norm_type=2, scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None) -> Tensor:
    """Sums, means or maxima of bags of embeddings: ``input`` 2-D (one bag per row) or 1-D with ``offsets``.
    ``scale_grad_by_freq`` divides each weight row's gradient by how often its index occurs in ``input``."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"embedding_bag: mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    flat, offs = _bags(input, offsets, include_last_offset)
    return _embedding_bag(flat, weight, offs, max_norm, norm_type, mode, per_sample_weights, padding_idx,
                          scale_grad_by_freq)[0]


_BAG_MODES = ("sum", "mean", "max")


@export(to=("torch",))
@torch_form("embedding_bag")
def torch_embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False,
                        mode: int = 0, sparse: bool = False, per_sample_weights: Tensor | None = None,
                        include_last_offset: bool = False, padding_idx: int | None = None):
    """``torch.embedding_bag``: weight first, ``mode`` 0 (sum), 1 (mean) or 2 (max); returns ``(output,
    offset2bag, bag_size, max_indices)`` as PyTorch's CPU kernel does (the last three are bookkeeping; its
    float32 'sum' fast path leaves ``offset2bag`` empty)."""
    name = _BAG_MODES[mode]
    flat, offs = _bags(indices, offsets, include_last_offset)
    out, bag, counts, kept = _embedding_bag(flat, weight, offs, None, 2, name, per_sample_weights, padding_idx,
                                            scale_grad_by_freq and name != "max")  # (ignored for max, as there)
    if name == "sum":
        zeros = counts.new_zeros(counts.shape)
        return out, bag, zeros, zeros.clone()
    if name == "mean":
        return out, bag, counts, counts.clone()
    with no_grad():  # the first position holding each bag's maximum, as the index of its weight row
        n = flat.shape[0]
        at = arange(n, device=flat.device).unsqueeze(1).expand(kept.shape)
        first = where(kept == out.index_select(0, bag), at, n)
        first = first.new_full(out.shape, n).scatter_reduce(0, bag.unsqueeze(1).expand(kept.shape), first, "amin")
        best = flat.index_select(0, first.clamp(max=max(n - 1, 0)).reshape(-1)).reshape(out.shape) if n else first
        return out, bag, counts, where(first < n, best, 0)


# --------------------------------------------------------------------------- dropout
def _check_p(p, op):
    if p < 0 or p > 1:
        raise ValueError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(x, shape, p):
    """1 (kept) with probability ``1 - p``, in ``x``'s dtype: PyTorch's ``bernoulli_(1 - p)`` noise (a float64
    uniform below ``1 - p``), drawn by a random factory as the tracers and exporters know one."""
    return (rand(shape, dtype=dtypes.float64, device=x.device) < 1 - p).to(x.dtype)


@export(to=("nn.functional",))
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``, only when ``training``.

    >>> import ember
    >>> ember.nn.functional.dropout(ember.ones(3), 0.5, training=False).tolist()
    [1.0, 1.0, 1.0]
    """
    _check_p(p, "dropout")
    if not training or p == 0:
        return input
    if p == 1:
        return _inplace(input, lambda x: x * 0.0, inplace, "dropout")
    mask = _keep_mask(input, input.shape, p) * (1.0 / (1 - p))
    return _inplace(input, lambda x: x * mask, inplace, "dropout")


def _feature_dropout(op, x, p, training, inplace, min_dim):
    _check_p(p, op)
    if not training or p == 0:
        return x
    shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2) if x.ndim >= min_dim else (x.shape[0],) + (1,) * (x.ndim - 1)
    mask = x.new_zeros(()) if p == 1 else _keep_mask(x, shape, p) * (1.0 / (1 - p))
    return _inplace(x, lambda v: v * mask, inplace, op)


@export(to=("nn.functional",))
def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout("dropout1d", input, p, training, inplace, 3)


@export(to=("nn.functional",))
def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zero whole channels (``(N, C, H, W)``) with probability ``p``."""
    return _feature_dropout("dropout2d", input, p, training, inplace, 4)


@export(to=("nn.functional",))
def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    return _feature_dropout("dropout3d", input, p, training, inplace, 5)


@export(to=("nn.functional",))
def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:  # noqa: A002
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p, "alpha_dropout")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    scale, shift = _alpha_noise(input, input.shape, p)
    return _inplace(input, lambda x: x * scale + shift, inplace, "alpha_dropout")


def _alpha_noise(x, shape, p):
    """Alpha dropout's factor and offset: a kept element is scaled by ``a``, a dropped one set to SELU's negative
    saturation ``-alpha``, the mean and variance kept; PyTorch's operation order, so its roundings."""
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _keep_mask(x, shape, p)
    return keep * a, (keep - 1) * (alpha * a) + alpha * a * p


@export(to=("torch",))
@torch_form("dropout")
def torch_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.dropout``: :func:`dropout` with ``train`` required."""
    return dropout(input, p, train)


@export(to=("torch",))
@torch_form("alpha_dropout")
def torch_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.alpha_dropout``."""
    return alpha_dropout(input, p, train)


@export(to=("torch",))
def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """Zero whole features (dim 1 of an input of at least 2 dimensions) with probability ``p``."""
    if check_tensor(input, "feature_dropout").ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _feature_dropout("feature_dropout", input, p, train, False, 2)


inplace_torch(torch_dropout, "dropout")
inplace_torch(torch_alpha_dropout, "alpha_dropout")
inplace_torch(feature_dropout, "feature_dropout")


# --------------------------------------------------------------------------- normalisation
def _moments(x, dims):
    mean = x.mean(dims, keepdim=True)
    d = x - mean
    return mean, d, (d * d).mean(dims, keepdim=True)


def _affine(y, weight, bias, shape):
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _normalized(ctx, dims):
    """``(x, weight, xhat, 1/std)`` for the backward of a normalisation node over ``dims``: the statistics
    recomputed from ``x`` by differentiable ops when the backward is itself differentiated, else the forward's
    (``ctx.mean``, ``ctx.invstd``)."""
    x, *params = ctx.inputs
    w = params[0] if ctx.affine[0] else None
    if is_grad_enabled():
        _, d, var = _moments(x, dims)
        invstd = (var + ctx.eps).rsqrt()
        return x, w, d * invstd, invstd
    invstd = _wrap(ctx.invstd, x._dev)
    return x, w, (x - _wrap(ctx.mean, x._dev)) * invstd, invstd


def _update(running, value, momentum):
    with no_grad():
        running.mul_(1 - momentum).add_(value * momentum)


def _affine_saved(i):
    """A ``saved_args`` entry of a normalisation's node: its weight (``i`` 0) or bias (1) as the node keeps it (its
    inputs hold only the tensors given), None where none was given."""
    def read(node):
        if not node.affine[i]:
            return optional(None)
        return node._value_saved(1 + (i and node.affine[0]))
    return read


class NativeBatchNorm(Op):
    """Training-mode batch norm as one node: ``y``, and the batch mean and biased variance per channel as
    outputs without gradients (for the running statistics).

    The backward is PyTorch's closed form, ``(g - mean(g) - xhat * mean(g * xhat)) * weight / std``; when
    it is itself differentiated (``create_graph``) the statistics are recomputed from ``x`` by differentiable
    ops, so every order of derivative is exact."""

    backward_name = "NativeBatchNormBackward0"
    save_inputs = True
    save_for = ((0, 1, 2), (0, 1, 2), ())  # never the bias
    nondiff_outputs = (1, 2)
    saved_names = ("input",)
    # PyTorch's node keeps the batch mean and 1/std per channel (made tensors when read) and the running
    # statistics given (set by batch_norm)
    saved_args = {"eps": "eps", "training": lambda n: True, "weight": _affine_saved(0),
                  "result1": lambda n: _per_channel(n, n.mean), "result2": lambda n: _per_channel(n, n.invstd),
                  "running_mean": lambda n: optional(n.__dict__.get("running", (None, None))[0]),
                  "running_var": lambda n: optional(n.__dict__.get("running", (None, None))[1])}


    @staticmethod
    def forward(ctx, k, x, w, b, eps):
        y, mean, var, invstd = k["batch_norm_train"](x, w, b, eps)
        ctx.eps, ctx.mean, ctx.invstd, ctx.affine = eps, mean, invstd, (w is not None, b is not None)
        return y, mean, var

    @staticmethod
    def backward(ctx, g, _gm=None, _gv=None):
        has_w, has_b = ctx.affine
        need_x = ctx.next_functions[0][0] is not None
        if not is_grad_enabled():   # one kernel; the composed form below is for a backward that is differentiated
            x, *params = ctx.inputs
            grads = apply(NativeBatchNormGrad, g, x, params[0] if has_w else None, ctx.mean, ctx.invstd, need_x)
            gx, gw, gb = grads if need_x else (None, *grads)
            return (gx,) + ((gw,) if has_w else ()) + ((gb,) if has_b else ())
        nd = ctx.inputs[0].ndim
        dims = [0] + list(range(2, nd))
        x, w, xhat, invstd = _normalized(ctx, dims)
        shape = (1, x.shape[1]) + (1,) * (nd - 2)
        n = x.numel() // x.shape[1]
        gb = g.sum(dims, keepdim=True)
        gw = (g * xhat).sum(dims, keepdim=True)
        grads = []
        if need_x:
            scale = invstd if w is None else invstd * w.reshape(shape)
            grads.append((g - gb / n - xhat * (gw / n)) * scale)
        else:
            grads.append(None)
        if has_w:
            grads.append(gw.reshape(-1))
        if has_b:
            grads.append(gb.reshape(-1))
        return tuple(grads)


def _per_channel(node, stat):
    """A statistic array of batch norm's node as a vector of one value per channel (a tensor of its device)."""
    dev = node._out_meta[0][2]
    return _wrap(dev.kernels["reshape"](stat, (-1,)), dev)


class NativeBatchNormGrad(Op):
    """The gradients of :class:`NativeBatchNorm` by one kernel (``batch_norm_backward``), for a backward that
    records no graph: ``(gx, gw, gb)``, without ``gx`` unless ``input_grad``."""

    backward_name = "NativeBatchNormBackwardBackward0"

    @staticmethod
    def forward(ctx, k, g, x, w, mean, invstd, input_grad):
        gx, gw, gb = k["batch_norm_backward"](g, x, w, mean, invstd, input_grad)
        return (gx, gw, gb) if input_grad else (gw, gb)


@export(to=("nn.functional",))
def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise over the batch (and spatial) dimensions per channel (dim 1); update running stats in training.

    >>> import ember
    >>> y = ember.nn.functional.batch_norm(ember.tensor([[1.], [3.]]), None, None, training=True)
    >>> [round(v, 3) for v in y.flatten().tolist()]
    [-1.0, 1.0]
    """
    x = input
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"batch_norm: {name} should contain {c} elements not {t.numel()}")
    dtypes.check_kernel("batch_norm", x, dtypes.FLOATING_AND_HALF, empty_ok=False)
    dims = [0] + list(range(2, x.ndim))
    shape = (1, c) + (1,) * (x.ndim - 2)
    if training or running_mean is None:
        n = x.numel() // c
        if training and n <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(x.shape)}")
        if x.ndim < 2 or not x.dtype.is_floating_point:
            mean, d, var = _moments(x, dims)
            y = _affine(d * _bn_scale(var, weight, eps, shape), None, bias, shape)
        else:
            y, mean, var = apply(NativeBatchNorm, x, weight, bias, eps)
            if y._fn is not None:
                y._fn.running = (running_mean, running_var)
        if training and running_mean is not None:
            _update(running_mean, mean.detach().reshape(c), momentum)
            _update(running_var, var.detach().reshape(c) * (n / max(n - 1, 1)), momentum)
        return keep_format(y, x)  # (a channels-last input gives a channels-last result, as in PyTorch)
    # inference, as PyTorch's CPU kernel: y = x * alpha + beta with alpha = weight / std and
    # beta = bias - mean * alpha per channel; when no graph is recorded, one kernel (BatchNormEval), else
    # the same arithmetic as differentiable ops
    if _eval_fusable(x, running_mean, running_var, weight, bias):
        return keep_format(apply(BatchNormEval, x, running_mean, running_var, weight, bias, eps), x)
    alpha = _bn_scale(running_var.reshape(shape), weight, eps, shape)
    beta = -running_mean.reshape(shape) * alpha
    if bias is not None:
        beta = beta + bias.reshape(shape)
    y = composite_node(x * alpha + beta, "NativeBatchNormBackward0")  # PyTorch's node of its CPU kernel
    return keep_saved(y, x, weight, running_mean, running_var)


class BatchNormEval(Op):
    """Inference batch norm as one kernel (``batch_norm_eval``: both passes into one reused buffer, on threads), for
    calls that record no graph; its result equals the composed ops' bit for bit."""

    @staticmethod
    def forward(ctx, k, x, mean, var, w, b, eps):  # (no backward: batch_norm takes it only when none is wanted)
        return k["batch_norm_eval"](x, mean, var, w, b, eps)


def _one_node(x, others) -> bool:
    """Whether a normalisation may run as its one-node form: float32/float64 ``x``, the tensors among ``others``
    (None skipped) of its dtype, and no interception handler watching (tracers, exporters and ``vmap`` see the
    composed ops they know)."""
    if x.dtype not in (dtypes.float32, dtypes.float64):
        return False
    if any(t is not None and t.dtype is not x.dtype for t in others):
        return False
    return not observed() or (CompileCapture.native and len(HANDLERS) == 1)


def _eval_fusable(x, mean, var, weight, bias):
    """Whether inference batch norm may run as :class:`BatchNormEval`: ``x`` of 2+ dims with statistics, no
    gradient to record, and :func:`_one_node`."""
    if x.ndim < 2 or mean is None or var is None:
        return False
    if is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, mean, var, weight, bias)):
        return False
    return _one_node(x, (mean, var, weight, bias))


def _bn_scale(var, weight, eps, shape):
    inv = 1 / (var + eps).sqrt()
    return inv if weight is None else inv * weight.reshape(shape)


@export(to=("nn.functional",))
def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5) -> Tensor:
    """Normalise over the last ``len(normalized_shape)`` dimensions."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(ns):]) != ns or input.ndim < len(ns):
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(input.shape)}")
    for pname, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {pname} to be of same shape as normalized_shape, but got {pname} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(ns)}")
    dtypes.check_kernel("LayerNormKernelImpl", input, dtypes.FLOATING_AND_HALF)
    if input.numel() and _one_node(input, (weight, bias)):
        return apply(NativeLayerNorm, input, weight, bias, len(ns), eps)[0]
    dims = list(range(input.ndim - len(ns), input.ndim))
    _, d, var = _moments(input, dims)
    return _affine(d / (var + eps).sqrt(), weight, bias, ns)


class NativeLayerNorm(Op):
    """Layer norm as one node: ``y``, and the mean and 1/std over the normalised axes as outputs without
    gradients.  The backward is PyTorch's closed form, ``(gx - mean(gx) - xhat * mean(gx * xhat)) / std`` with
    ``gx = g * weight``; when it is itself differentiated (``create_graph``) the statistics are recomputed from
    ``x`` by differentiable ops, so every order of derivative is exact."""

    backward_name = "NativeLayerNormBackward0"
    save_inputs = True
    nondiff_outputs = (1, 2)
    saved_names = ("input",)
    # (PyTorch's node keeps the mean and 1/std too: made tensors when read)
    saved_args = {"normalized_shape": lambda n: n._shapes[0][0][len(n._shapes[0][0]) - n.nd:],
                  "weight": _affine_saved(0), "bias": _affine_saved(1),
                  "result1": lambda n: _wrap(n.mean, n._out_meta[0][2]),
                  "result2": lambda n: _wrap(n.invstd, n._out_meta[0][2])}

    @staticmethod
    def forward(ctx, k, x, w, b, nd, eps):
        y, mean, rstd = k["layer_norm"](x, w, b, nd, eps)
        ctx.nd, ctx.eps, ctx.mean, ctx.invstd, ctx.affine = nd, eps, mean, rstd, (w is not None, b is not None)
        return y, mean, rstd

    @staticmethod
    def backward(ctx, g, _gm=None, _gr=None):
        if all(t is None or t._data.dtype == g._data.dtype for t in ctx.inputs):
            arrays = on_arrays(g, *ctx.inputs)
            if arrays or _kernel_grads():
                return NativeLayerNorm._kernel_form(ctx, g, arrays)
        ndim = ctx.inputs[0].ndim
        dims = list(range(ndim - ctx.nd, ndim))
        lead = list(range(ndim - ctx.nd))
        x, w, xhat, rstd = _normalized(ctx, dims)
        has_w, has_b = ctx.affine
        grads = []
        if ctx.next_functions[0][0] is not None:
            gx = g if w is None else g * w
            grads.append((gx - gx.mean(dims, keepdim=True) - xhat * (gx * xhat).mean(dims, keepdim=True)) * rstd)
        else:
            grads.append(None)
        if has_w:
            grads.append((g * xhat).sum(lead) if lead else g * xhat)
        if has_b:
            grads.append(g.sum(lead) if lead else g)
        return tuple(grads)

    @staticmethod
    def _kernel_form(ctx, g, arrays):
        """The backward by one kernel (``layer_norm_backward``): on the arrays when no graph of it is being built
        (``arrays``), else recorded as one :class:`NativeLayerNormGrad` node (see :func:`_kernel_grads`)."""
        x, *params = ctx.inputs
        w = params[0] if ctx.affine[0] else None
        need = (ctx.next_functions[0][0] is not None, *ctx.affine)
        if arrays:
            dev = g._dev
            got = [None if a is None else _wrap(a, dev) for a in dev.kernels["layer_norm_backward"](
                g._data, x._data, None if w is None else w._data, ctx.mean, ctx.invstd, ctx.nd, need)]
        else:
            made = iter(apply(NativeLayerNormGrad, g, x, w, ctx.mean, ctx.invstd, ctx.nd, need))
            got = [next(made) if n else None for n in need]
        return (got[0], *[a for a, n in zip(got[1:], need[1:]) if n])


class NativeLayerNormGrad(Op):
    """The gradients of :class:`NativeLayerNorm` by one kernel (``layer_norm_backward``), for a backward that is
    recorded but never differentiated (see :func:`_kernel_grads`): those of ``(dx, dw, db)`` that ``need`` asks
    for."""

    backward_name = "NativeLayerNormBackwardBackward0"

    @staticmethod
    def forward(ctx, k, g, x, w, mean, invstd, nd, need):
        return tuple(a for a in k["layer_norm_backward"](g, x, w, mean, invstd, nd, need) if a is not None)


@export(to=("nn.functional",))
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,  # noqa: A002
               eps: float = 1e-5) -> Tensor:
    """Normalise over groups of channels (and all spatial positions) per sample."""
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but "
                           f"got input of shape {list(input.shape)} and num_groups={num_groups}")
    dtypes.check_kernel("GroupNormKernelImpl", input, dtypes.FLOATING_AND_HALF, empty_ok=False)
    g = input.reshape(n, num_groups, c // num_groups * math.prod(input.shape[2:]))  # (n may be 0)
    _, d, var = _moments(g, [2])
    y = (d / (var + eps).sqrt()).reshape(input.shape)
    return _affine(y, weight, bias, (1, c) + (1,) * (input.ndim - 2))


@export(to=("nn.functional",))
def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,  # noqa: A002
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample over its spatial positions."""
    n, c = input.shape[:2]
    dims = list(range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if use_input_stats:
        m = input[0, 0].numel()
        mean, d, var = _moments(input, dims)
        if running_mean is not None:
            _update(running_mean, mean.detach().reshape(n, c).mean(0), momentum)
            _update(running_var, var.detach().reshape(n, c).mean(0) * (m / max(m - 1, 1)), momentum)
    else:
        var = running_var.reshape(shape)
        d = input - running_mean.reshape(shape)
    return _affine(d / (var + eps).sqrt(), weight, bias, shape)


@export(to=("torch",))
@torch_form("batch_norm")
def torch_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,  # noqa: A002
                     cudnn_enabled) -> Tensor:
    """``torch.batch_norm``: weight and bias before the running statistics, every argument required."""
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


@export(to=("torch",))
@torch_form("instance_norm")
def torch_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps,  # noqa: A002
                        cudnn_enabled) -> Tensor:
    """``torch.instance_norm``: weight and bias before the running statistics, every argument required."""
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


@export(to=("torch",))
@torch_form("layer_norm")
def torch_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True) -> Tensor:  # noqa: A002
    """``torch.layer_norm``."""
    return layer_norm(input, normalized_shape, weight, bias, eps)


@export(to=("torch",))
@torch_form("group_norm")
def torch_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True) -> Tensor:  # noqa: A002
    """``torch.group_norm``."""
    return group_norm(input, num_groups, weight, bias, eps)


# --------------------------------------------------------------------------- distances
def pnorm(x, p, dim, keepdim=True):
    """The ``p``-norm of ``x`` along ``dim`` (``inf``: the largest magnitude)."""
    return x.norm(p, dim, keepdim)


@export(to=("nn.functional", "torch"))
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps))`` along ``dim`` (each norm clamped, as PyTorch's).

    >>> import ember
    >>> ember.nn.functional.cosine_similarity(ember.tensor([[1., 0.]]), ember.tensor([[1., 1.]])).tolist()
    [0.7071067690849304]
    """
    common = result_type(x1, x2)
    if common.category != dtypes.FLOAT:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_type_name(common)}")
    x1, x2 = (x if x.dtype.category == dtypes.FLOAT else x.to(common) for x in (x1, x2))
    if x1.shape != x2.shape:  # broadcast first: a 0-d or smaller operand's norm is taken over the common shape
        x1, x2 = broadcast_tensors(x1, x2)
    # PyTorch's composition, so that values and gradients (at zero, inf and NaN too) are its: the norms are clamped
    # in place outside the graph, so their gradient is the unclamped norm's
    n1, n2 = pnorm(x1, 2, dim).clone(), pnorm(x2, 2, dim).clone()
    with no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@export(to=("nn.functional", "torch"))
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dimension."""
    return pnorm(x1 - x2 + eps, p, -1, keepdim)


# --------------------------------------------------------------------------- pixel shuffle
@export(to=("nn.functional", "torch"))
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """``(*, C r^2, H, W)`` to ``(*, C, H r, W r)``."""
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    x = input.reshape(-1, c // (r * r), r, r, h, w).permute(0, 1, 4, 2, 5, 3)
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


@export(to=("nn.functional", "torch"))
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """``(*, C, H r, W r)`` to ``(*, C r^2, H, W)``."""
    r = downscale_factor
    *lead, c, h, w = input.shape
    x = input.reshape(-1, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


# --------------------------------------------------------------------------- padding
_PAD_MODES = ("reflect", "replicate", "circular")
_PAD_SUPPORTED = ("Supported combinations for non-constant padding:\n"
                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


class ConstantPad(Op):
    backward_name = "ConstantPadNdBackward0"
    # (PyTorch's pad list: the last dim's pair first)
    saved_args = {"pad": lambda n: tuple(v for pair in reversed(n.pairs) for v in pair)}

    @staticmethod
    def forward(ctx, k, x, pairs, value):
        ctx.pairs = pairs
        ctx.crop = (Ellipsis,) + tuple(slice(lo, lo + s) for (lo, _), s in zip(pairs, x.shape[x.ndim - len(pairs):]))
        return k["constant_pad"](x, pairs, value)

    @staticmethod
    def backward(ctx, g):
        return g[ctx.crop]


@export(to=("nn.functional",))
def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:  # noqa: A002
    """Pad the last ``len(pad) // 2`` dimensions: ``pad = (left_last, right_last, left_prev, right_prev, ...)``.

    Constant padding is one op (its gradient crops); the other modes select indices.

    >>> import ember
    >>> ember.nn.functional.pad(ember.ones(1, 2), (1, 1)).tolist()
    [[0.0, 1.0, 1.0, 0.0]]
    """
    check_tensor(input, "pad")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"pad: Padding length must be divisible by 2 and at most twice the number of dimensions "
                           f"of the input ({input.ndim}), got {len(pad)}")
    n = len(pad) // 2
    pairs = tuple((int(pad[2 * i]), int(pad[2 * i + 1])) for i in reversed(range(n)))
    if mode == "constant":
        if any(lo < 0 or hi < 0 for lo, hi in pairs):
            crop = tuple(slice(max(-lo, 0), s - max(-hi, 0)) for (lo, hi), s in zip(pairs, input.shape[-n:]))
            input = input[(Ellipsis,) + crop]
            pairs = tuple((max(lo, 0), max(hi, 0)) for lo, hi in pairs)
        return apply(ConstantPad, input, pairs, 0.0 if value is None else value)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: unsupported padding mode {mode!r}; expected one of constant, reflect, "
                                  f"replicate, circular")
    if not 1 <= n <= 3 or input.ndim not in (n + 1, n + 2):  # PyTorch's kernels pad 1-3 dims, with a batch dim or not
        raise NotImplementedError(f"Padding size {2 * n} is not supported for {input.ndim}D input tensor.\n"
                                  f"{_PAD_SUPPORTED}")
    if mode != "circular" and 0 in input.shape[input.ndim - n - 1:]:  # (the batch dim alone may be empty)
        raise RuntimeError(f"Expected {n + 1}D or {n + 2}D (batch mode) tensor with possibly 0 batch size and other "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    out = input
    for i, (lo, hi) in enumerate(pairs):
        dim = input.ndim - n + i
        size = input.shape[dim]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"pad: Padding size should be less than the corresponding input dimension, but got: "
                               f"padding ({lo}, {hi}) at dimension {dim} of input {list(input.shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError(f"pad: Padding value causes wrapping around more than once: ({lo}, {hi}) at "
                               f"dimension {dim} of input {list(input.shape)}")
        out = out.index_select(dim, _create("pad", input._dev, False, None, "pad_index", size, lo, hi, mode))
    return out if mode == "circular" else keep_saved(out, input)  # (PyTorch's reflection/replication nodes keep it)


# --------------------------------------------------------------------------- more activations, shuffles, norms
_F = ("nn.functional",)


@export(to=_F)
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: negative inputs scaled by a slope drawn from ``U(lower, upper)`` per element when
    ``training``, by ``(lower + upper) / 2`` otherwise.

    >>> import ember
    >>> ember.nn.functional.rrelu(ember.tensor([-2., 1.]), 0.25, 0.25).tolist()
    [-0.5, 1.0]
    """
    x = check_tensor(input, "rrelu")
    dtypes.check_kernel("leaky_relu_{device}", x, dtypes.FLOATING_AND_HALF)
    return _inplace(x, lambda v: _rrelu(v, lower, upper, training, RRELU[1] if inplace else RRELU[0]), inplace,
                    "rrelu")


def _rrelu(x, lower, upper, training, Op, generator=None):
    if lower > upper:
        raise RuntimeError(f"rrelu: Lower bound should be less than or equal to the upper bound, got lower={lower} "
                           f"and upper={upper}")
    if training:  # as PyTorch: a float64 U(lower, upper) slope for each input <= 0 in turn, 1 elsewhere, with
        # the bounds in the input's compute precision (float32 below float64)
        if x.dtype is not dtypes.float64:
            lower, upper = (x.new_full((), v, dtype=dtypes.float32).item() for v in (lower, upper))
        negative = x.detach() <= 0
        slopes = rand(int(negative.sum()), dtype=dtypes.float64, device=x.device, generator=generator)
        noise = x.new_ones(x.shape)
        noise[negative] = (slopes * (upper - lower) + lower).to(x.dtype)
    else:
        noise = x.new_full((), (lower + upper) / 2)
    r = apply(Op, x, noise)  # (in place under no_grad, r's node is an earlier op's: it keeps its own)
    if not isinstance(r._fn, Op):
        return r
    kept = {"noise": _training_noise(r._fn)} if training else {}
    return keep_args(r, lower=lower, upper=upper, training=bool(training), **kept)


def _training_noise(fn):
    """PyTorch's saved training noise of rrelu's node ``fn``, read when asked for: the slopes drawn, 1 where the
    input is positive (the slope that applied there).  The node is referred to weakly (no cycle through it)."""
    ref = weakref.ref(fn)
    slot = "result" if type(fn).__dict__.get("_overload_of", type(fn)) is RRELU[1] else 0  # (same signs as input)

    def read():
        n = ref()
        return where(n._value_saved(slot) > 0, 1.0, n._value_saved(1))

    return read


def _rrelu_vjp(ctx, g):
    x, noise = ctx.inputs
    return where(x > 0, g, g * noise), None


def _rrelu_result_vjp(ctx, g):
    # (the slopes are positive: the result is positive where the input is)
    return where(ctx.output > 0, g, g * ctx.inputs[1]), None


# the slopes (``noise``) are an input without gradient: a number, or drawn per element in training
RRELU = (op_class("RreluWithNoise", "nn_leaky_relu", saves="input", vjp=_rrelu_vjp, arity=2, tags=("pointwise",)),
         op_class("RreluWithNoise_", "nn_leaky_relu", saves="both", vjp=_rrelu_result_vjp, arity=2,
                  backward_name="RreluWithNoiseBackward1", tags=("pointwise",), save_for=((), None),
                  saved_names=(None, "noise")))  # (PyTorch's in-place node keeps the result and the noise)
RRELU[0].saved_names = ("self", "noise")


@export(to=("torch",))
@torch_form("rrelu")
def torch_rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,  # noqa: A002
                generator=None) -> Tensor:
    """``torch.rrelu``: :func:`rrelu` with ``generator`` in place of ``inplace``."""
    return _rrelu(_act_input(input, "rrelu"), lower, upper, training, RRELU[0], generator)


def _hardtanh_(input, min_val=-1.0, max_val=1.0):  # noqa: A002
    return hardtanh(input, min_val, max_val)


def _rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, *rest):  # noqa: A002
    # (``torch.rrelu_``'s fifth argument is a generator; ``F.rrelu_``'s is ``inplace``)
    generator = rest[0] if rest and not isinstance(rest[0], bool) else None
    return _rrelu(_act_input(input, "rrelu"), lower, upper, training, RRELU[1], generator)


# ``F.<name>_``, ``torch.<name>_``: each the out-of-place function written into its input (``inplace_form``),
# never by hand
inplace_torch(_rrelu_, "rrelu", to=_F)
inplace_torch(_rrelu_, "rrelu")
inplace_torch(_hardtanh_, "hardtanh", to=_F)
inplace_torch(_elu_, "elu", to=_F)
inplace_torch(_leaky_relu_, "leaky_relu", to=_F)
for _name in ("relu_", "celu_", "selu_", "threshold_"):
    export(NAMESPACES["torch"][_name], _name, to=_F)


@export(to=("nn.functional", "torch"))
def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """``(N, g*k, *)`` to ``(N, k*g, *)``: the channels of each group interleaved.

    >>> import ember
    >>> ember.channel_shuffle(ember.arange(4.).reshape(1, 4, 1), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    x = check_tensor(input, "channel_shuffle")
    if x.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"sizes {list(x.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = x.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(x.shape[2:])
    return composite_node(x.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(x.shape),
                       "ChannelShuffleBackward0")


export(channel_shuffle, "native_channel_shuffle", to=("nn.functional", "torch"))


_EPS = {"bfloat16": 2.0 ** -7, "float16": 2.0 ** -10, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


@export(to=("nn.functional", "torch"))
def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:  # noqa: A002
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last ``len(normalized_shape)`` dimensions; ``eps``
    defaults to the machine epsilon of the input's dtype.

    >>> import ember
    >>> ember.nn.functional.rms_norm(ember.tensor([[3., 4.]]), [2]).tolist()
    [[0.8485281467437744, 1.1313709020614624]]
    """
    x = check_tensor(input, "rms_norm")
    dtypes.check_kernel("rms_norm", x, dtypes.FLOATING_AND_HALF | dtypes.COMPLEX_TYPES, empty_ok=False)
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if x.ndim < len(ns) or tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(ns)}, expected input with shape [*, "
                           f"{', '.join(map(str, ns))}], but got input of size{list(x.shape)}")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"rms_norm: Expected weight to be of same shape as normalized_shape, but got weight of "
                           f"shape {list(weight.shape)} and normalized_shape = {list(ns)}")
    low = x.dtype.name in ("float16", "bfloat16")  # computed in float32 (eps too), rounded back, as PyTorch
    if eps is None:
        eps = 2.0 ** -23 if low else _EPS.get(x.dtype.name, 2.0 ** -23)
    dims = list(range(x.ndim - len(ns), x.ndim))
    xc = x.float() if low else x
    y = xc * ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    y = y.to(x.dtype) if low else y
    return y * weight if weight is not None else y


@export(to=("nn.functional", "torch"))
def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (dim 1): a dropped channel is set to SELU's negative saturation value."""
    x = check_tensor(input, "feature_alpha_dropout")
    _check_p(p, "feature_alpha_dropout")
    if not training or p == 0:
        return x
    if p == 1:
        return _inplace(x, lambda v: v * 0.0, inplace, "feature_alpha_dropout")
    if x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    scale, shift = _alpha_noise(x, tuple(x.shape[:2]) + (1,) * (x.ndim - 2), p)
    return _inplace(x, lambda v: v * scale + shift, inplace, "feature_alpha_dropout")


def _feature_alpha_dropout_(input, p=0.5, train=False):  # noqa: A002
    return feature_alpha_dropout(input, p, train)


inplace_torch(_feature_alpha_dropout_, "feature_alpha_dropout")


@export(to=_F)
def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """Softmax of ``(logits + g) / tau`` with Gumbel noise ``g``; ``hard`` returns one-hot samples whose gradient
    is the soft sample's (straight-through)."""
    x = check_tensor(logits, "gumbel_softmax")
    gumbels = -x.detach().new_empty(x.shape).exponential_().log()  # PyTorch's noise: -log of Exponential(1) draws
    y = torch_softmax((x + gumbels) / tau, dim)
    if not hard:
        return y
    hard_y = (y == y.amax(dim, keepdim=True)).to(y.dtype)
    first = hard_y.cumsum(dim) == 1  # one-hot even on ties
    hard_y = where(first, hard_y, hard_y.new_zeros(()))
    return hard_y - y.detach() + y


@export(to=("torch",))
def native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      eps: float):
    """``(layer_norm(...), mean, rstd)``, the statistics with the normalised dimensions kept as size 1."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    dims = list(range(input.ndim - len(ns), input.ndim))
    out = layer_norm(input, ns, weight, bias, eps)
    with no_grad():
        mean, _, var = _moments(input, dims)
    return out, mean, (var + eps).rsqrt()


@export(to=("torch",))
def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int,  # noqa: A002, N803
                      HxW: int, group: int, eps: float):  # noqa: N803
    """``(group_norm(...), mean, rstd)`` with statistics of shape ``(N, group)``."""
    out = group_norm(input, group, weight, bias, eps)
    with no_grad():
        mean, _, var = _moments(input.reshape(N, group, -1), [2])
    return out, mean.reshape(N, group), (var + eps).rsqrt().reshape(N, group)


@export(to=("torch",))
def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool, momentum: float,
                      eps: float):
    """``(batch_norm(...), save_mean, save_invstd)``: the batch statistics when training, empty otherwise."""
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty0 = input.new_zeros((0,))
        return out, empty0, empty0.clone()
    dims = [0] + list(range(2, input.ndim))
    with no_grad():
        mean, _, var = _moments(input, dims)
    return out, mean.reshape(-1), (var + eps).rsqrt().reshape(-1)


@export(to=("torch",))
def native_dropout(input: Tensor, p: float, train: bool | None):  # noqa: A002
    """``(output, mask)``: dropout and the bool mask of the kept elements (all True when not training)."""
    x = check_tensor(input, "native_dropout")
    if train is not None and not train:  # (None trains, as in PyTorch)
        return x.clone(), x.new_ones(x.shape).bool()
    keep = _keep_mask(x, x.shape, p)  # (drawn even when p is 0)
    scale = 0.0 if p == 1 else 1.0 / (1 - p)
    return x * keep * scale, keep.bool()


@export(to=("torch",))
def constant_pad_nd(input: Tensor, pad: list, value: float = 0) -> Tensor:  # noqa: A002
    """``torch.constant_pad_nd``: :func:`pad` in mode ``'constant'``."""
    return globals()["pad"](input, pad, "constant", value)


@export(to=("torch",))
def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:  # noqa: A002
    """Rescale, in place, the rows of ``input`` picked by ``indices`` whose ``norm_type``-norm exceeds
    ``max_norm`` to that norm; returns ``input``."""
    _renorm_rows(input, index_tensor(indices, "embedding_renorm_").reshape(-1).unique(), max_norm, norm_type)
    return input


@export(to=("nn.functional", "torch"))
def pdist(input: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """The ``p``-norm distances between each pair of rows of ``(N, M)`` ``input``: the upper triangle of
    ``cdist(input, input)`` in row order, ``N (N - 1) / 2`` values.

    >>> import ember
    >>> ember.pdist(ember.tensor([[0., 0.], [3., 4.], [0., 1.]])).tolist()
    [5.0, 1.0, 4.242640495300293]
    """
    x = check_tensor(input, "pdist")
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if not x.is_floating_point():
        raise RuntimeError(f"pdist only supports floating-point dtypes, got {x.dtype}")
    if x.shape[0] > 1:  # (PyTorch's kernel, and its dtype check, run only when there is a pair)
        dtypes.check_kernel("pdist", x, dtypes.FLOATING_TYPES)
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    return keep_saved(composite_node(_pdist(x, p), "PdistBackward0"), x)  # PyTorch's one node


def _pdist(x, p):
    n = x.shape[0]
    i, j = _create("pdist", x._dev, False, None, "triu_pairs", n).unbind(0)
    d = x.index_select(0, i) - x.index_select(0, j)
    if p == float("inf"):
        return d.abs().amax(-1) if d.shape[1] else d.new_zeros(d.shape[:1])
    if p == 0:
        return (d != 0).to(x.dtype).sum(-1)
    if p == 2:
        # the gradient at equal rows is zero, as PyTorch's
        sq = (d * d).sum(-1)
        pos = sq > 0
        return where(pos, where(pos, sq, sq.new_ones(())).sqrt(), sq.new_zeros(()))
    return pnorm(d, p, -1, False)
