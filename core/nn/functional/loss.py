"""Losses composed of ember ops (``reduction='mean'|'sum'|'none'``): squared, absolute, smooth-L1 and Huber
errors, binary cross-entropy and the Gaussian negative log-likelihood.  The losses that are ops or that PyTorch
also shows as ``torch.*`` (cross-entropy, NLL, CTC, KL divergence, the margin and embedding losses...) are in
:mod:`ember.ops.nn_loss`.
"""
from __future__ import annotations

import math
import operator

from ...autograd.function import rename_node
from ...dtypes import promote_types, type_name
from ...autograd.grad_mode import no_grad
from ...ops.nn_loss import (  # noqa: F401  (re-exported)
    binary_cross_entropy, binary_cross_entropy_with_logits, broadcast_target, cosine_embedding_loss, cross_entropy,
    ctc_loss, hinge_embedding_loss, kl_div,
    legacy_reduction, margin_ranking_loss, MseLoss, nll_loss, pointwise_loss, poisson_nll_loss, reduce_loss,
    same_shape, SmoothL1Loss, triplet_margin_loss,
)
from ...ops.pointwise import where
from ...registry import export
from ...tensor import Tensor


def _weighted(op, loss, weight, shape, reduction, by_weight):
    """``loss * weight`` reduced as PyTorch's weighted losses reduce it: 'mean' is the sum over the weights' sum
    (``by_weight``: squared and absolute errors) or the plain mean (Huber)."""
    if tuple(weight.shape) != tuple(shape):
        raise ValueError("Weights and input must have the same size.")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    loss = loss * weight
    if reduction == "mean" and by_weight:
        return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction, op)


@export(to=("nn.functional",))
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
             weight=None) -> Tensor:
    """Mean squared error; ``weight`` (of the input's shape) scales each element's error.

    >>> import ember
    >>> ember.nn.functional.mse_loss(ember.tensor([1., 2.]), ember.tensor([1., 4.])).item()
    2.0
    """
    shape = input.shape
    reduction = legacy_reduction(reduction, size_average, reduce)
    input, target = broadcast_target("mse_loss", input, target)
    input, target = _floating("mse", input, target)
    fused = pointwise_loss(MseLoss, input, target, reduction) if weight is None else None
    if fused is not None:
        return fused
    d = input - target
    if weight is not None:
        return _weighted("mse_loss", d * d, weight, shape, reduction, True)
    return rename_node(reduce_loss(d * d, reduction, "mse_loss"), "MseLossBackward0")


@export(to=("nn.functional",))
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None) -> Tensor:  # noqa: A002
    shape = input.shape
    reduction = legacy_reduction(reduction, size_average, reduce)
    input, target = broadcast_target("l1_loss", input, target)
    if weight is not None:
        return _weighted("l1_loss", (input - target).abs(), weight, shape, reduction, True)
    return reduce_loss((input - target).abs(), reduction, "l1_loss")


@export(to=("nn.functional",))
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0) -> Tensor:  # noqa: A002
    reduction = legacy_reduction(reduction, size_average, reduce)
    input, target = broadcast_target("smooth_l1_loss", input, target)
    if beta == 0:  # PyTorch's smooth_l1_loss is then l1_loss (its nodes too)
        return l1_loss(input, target, reduction=reduction)
    input, target = _floating("smooth_l1", input, target)
    fused = pointwise_loss(SmoothL1Loss, input, target, reduction, beta)
    if fused is not None:
        return fused
    loss = SmoothL1Loss.error(_TENSOR_OPS, input - target, beta)  # (the node's formula, in recorded ops)
    return rename_node(reduce_loss(loss, reduction, "smooth_l1_loss"), "SmoothL1LossBackward0")


def _floating(kernel, input, target):
    """``(input, target)`` of a pointwise loss, an integer or bool one cast to the floating dtype they promote to
    (as PyTorch's kernels compute); PyTorch's refusal where that is no real floating dtype (its kernels have none
    for integers, bool or complex)."""
    d = promote_types(input.dtype, target.dtype)
    if not d.is_floating_point:
        raise NotImplementedError(f'"{kernel}_{input.device.type}" not implemented for \'{type_name(d)}\'')
    return tuple(t if t.dtype.is_floating_point else t.to(d) for t in (input, target))


# the kernel table a loss node's ``error`` formula reads, as Tensor operations (its composed fallback)
_TENSOR_OPS = {"sub": operator.sub, "mul": operator.mul, "abs": abs, "lt": operator.lt, "where": where}


@export(to=("nn.functional",))
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None) -> Tensor:  # noqa: A002
    shape = input.shape
    input, target = broadcast_target("huber_loss", input, target)
    input, target = _floating("huber", input, target)
    d = (input - target).abs()
    loss = where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        return _weighted("huber_loss", loss, weight, shape, reduction, False)
    return rename_node(reduce_loss(loss, reduction, "huber_loss"), "HuberLossBackward0")


@export(to=("nn.functional",))
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean") -> Tensor:  # noqa: A002
    if var.ndim == input.ndim - 1 and var.shape == input.shape[:-1]:
        var = var.unsqueeze(-1)
    with no_grad():
        small = var < eps
    var = where(small, var.detach() * 0 + eps, var)
    d = input - target
    loss = ((var.log()) + d * d / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction, "gaussian_nll_loss")
