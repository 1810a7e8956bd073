"""Folding an eval-mode BatchNorm into the convolution or linear layer before it: an explicit inference
optimisation, as ``torch.nn.utils.fusion``.

Nothing is folded behind the user's back: a model keeps its BatchNorm layers (which compute
``x * alpha + beta`` per channel in eval mode) unless it is rebuilt with these functions.  The folded layer
computes ``conv(x) * alpha + beta`` with ``alpha = bn.weight / sqrt(bn.running_var + bn.eps)`` and
``beta = bn.bias - bn.running_mean * alpha`` folded into its weight and bias, which saves the
BatchNorm's two full-size passes per layer; results agree with the unfused pair to rounding.  Only for
inference: the folded layer has lost the batch statistics training needs.

>>> import ember
>>> from ember.nn.utils.fusion import fuse_conv_bn_eval
>>> conv, bn = ember.nn.Conv2d(3, 4, 3).eval(), ember.nn.BatchNorm2d(4).eval()
>>> fused = fuse_conv_bn_eval(conv, bn)
>>> x = ember.randn(1, 3, 5, 5)
>>> bool(ember.allclose(fused(x), bn(conv(x)), atol=1e-6))
True
"""
from __future__ import annotations

import copy

from ...ops.creation import ones_like, zeros_like
from ..parameter import Parameter


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A new convolution computing ``bn(conv(x))`` of an eval-mode ``conv`` and ``bn`` (``transpose`` for a
    transposed convolution, whose output channels are the weight's dimension 1)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def _alpha_beta(bias, rm, rv, eps, w, b):
    bias = zeros_like(rm) if bias is None else bias
    w = ones_like(rm) if w is None else w
    b = zeros_like(rm) if b is None else b
    alpha = w * (rv + eps).rsqrt()
    return alpha, (bias - rm) * alpha + b, bias


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """``(weight, bias)`` Parameters of the convolution that folds in the BatchNorm's affine map."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    alpha, beta, conv_b = _alpha_beta(conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    return (Parameter((conv_w * alpha.reshape(shape)).to(dtype=w_dtype), conv_w.requires_grad),
            Parameter(beta.to(dtype=b_dtype), conv_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A new linear layer computing ``bn(linear(x))`` of an eval-mode ``linear`` and ``bn`` (BatchNorm over
    the linear layer's output features, or a single feature)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """``(weight, bias)`` Parameters of the linear layer that folds in the BatchNorm's affine map."""
    alpha, beta, linear_b = _alpha_beta(linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    return (Parameter(linear_w * alpha.unsqueeze(-1), linear_w.requires_grad),
            Parameter(beta, linear_b.requires_grad))
