"""``ember.nn.grad``: the gradients of a convolution with respect to its input and its weight, as functions
(PyTorch's ``torch.nn.grad``), computed by the same ops as the convolution's own backward (so they
differentiate again).

>>> import ember
>>> import ember.nn.functional as F
>>> x, w = ember.randn(1, 2, 5, 5, requires_grad=True), ember.randn(3, 2, 3, 3)
>>> g = ember.randn(1, 3, 3, 3)
>>> want = ember.autograd.grad(F.conv2d(x, w), x, g)[0]
>>> bool((ember.nn.grad.conv2d_input(x.shape, w, g) - want).abs().max() < 1e-5)
True
"""
from __future__ import annotations

from .. import dtypes
from ..autograd.function import keep_args
from ..dispatch import apply
from ..ops.nn_conv import ConvInputGrad, ConvWeightGrad, conv_args, ntuple
from ..tensor import Tensor

_GRAD_TYPES = dtypes.FLOATING_AND_HALF  # PyTorch's slow_conv2d/3d backward kernels


def _params(d, stride, padding, dilation, groups):
    return (ntuple(stride, d, "stride"), tuple((p, p) for p in ntuple(padding, d, "padding")),
            ntuple(dilation, d, "dilation"), groups)


def _check(name, d, grad_output, other):
    gdim = grad_output.ndim  # (a number here fails first, as PyTorch's grad_output.new_empty does)
    if not isinstance(other, Tensor):  # (PyTorch's convolution_backward schema refuses it)
        raise RuntimeError(f"{name}: expected a Tensor as weight or input, got {type(other).__name__}")
    if gdim != d + 2 or other.ndim != d + 2:
        raise RuntimeError(f"{name}: expected batched {d + 2}-D grad_output and {d + 2}-D weight or input, got "
                           f"{list(grad_output.shape)} and {list(other.shape)}")


def _check_output(name, d, grad_output, input_size, weight_size, params):
    stride, pads, dilation, _ = params
    want = [(i + 2 * p[0] - dl * (k - 1) - 1) // st + 1
            for i, p, dl, k, st in zip(input_size[2:], pads, dilation, weight_size[2:], stride)]
    if list(grad_output.shape[2:]) != want:
        raise RuntimeError(f"{name}: grad_output[2:] shape{list(grad_output.shape[2:])} must be equal to output "
                           f"size {' '.join(map(str, want))}")


def _kept(r):
    """``r``, its node keeping PyTorch's arguments: torch.nn.grad passes ``output_padding=[0]`` whatever ``d``."""
    return keep_args(r, **conv_args(r._fn, output_padding=(0,))) if r._fn is not None else r


def _check_kernel(d, which, t, params):
    """PyTorch's NotImplementedError for a dtype its backward kernel lacks: the dilated 2-D one also takes int64."""
    if d == 2 and any(v != 1 for v in params[2]):
        dtypes.check_kernel("slow_conv_dilated<>", t, _GRAD_TYPES | {dtypes.int64})
    else:
        dtypes.check_kernel(f"slow_conv{max(d, 2)}d_{{device}}_grad_{which}", t, _GRAD_TYPES)


def _input_grad(d):
    def fn(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        _check(f"conv{d}d_input", d, grad_output, weight)
        params = _params(d, stride, padding, dilation, groups)
        _check_output(f"conv{d}d_input", d, grad_output, tuple(input_size), tuple(weight.shape), params)
        _check_kernel(d, "input", grad_output, params)
        return _kept(apply(ConvInputGrad, grad_output, weight, tuple(input_size), params))

    fn.__name__ = fn.__qualname__ = f"conv{d}d_input"
    fn.__doc__ = (f"The gradient of ``conv{d}d(input, weight, ...)`` with respect to an input of size ``input_size``, "
                  f"given ``grad_output``.")
    return fn


def _weight_grad(d):
    def fn(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
        _check(f"conv{d}d_weight", d, grad_output, input)
        params = _params(d, stride, padding, dilation, groups)
        _check_output(f"conv{d}d_weight", d, grad_output, tuple(input.shape), tuple(weight_size), params)
        _check_kernel(d, "weight", input, params)
        return _kept(apply(ConvWeightGrad, input, grad_output, tuple(weight_size), params, None))

    fn.__name__ = fn.__qualname__ = f"conv{d}d_weight"
    fn.__doc__ = (f"The gradient of ``conv{d}d(input, weight, ...)`` with respect to a weight of size "
                  f"``weight_size``, given ``grad_output``.")
    return fn


conv1d_input, conv2d_input, conv3d_input = _input_grad(1), _input_grad(2), _input_grad(3)
conv1d_weight, conv2d_weight, conv3d_weight = _weight_grad(1), _weight_grad(2), _weight_grad(3)
