"""Losses that are ops or that PyTorch also shows as ``torch.*``: cross-entropy (one fused kernel for class
indices) and the negative log-likelihood, CTC (a fused kernel both ways), binary cross-entropy from logits,
KL divergence and the margin, ranking and embedding losses.  The other losses, composed of ember ops, are in
:mod:`ember.nn.functional.loss`.

``torch.<loss>`` takes ``reduction`` as an integer (0: none, 1: mean, 2: sum) and has its own argument
order; those forms are functions of their own beside the functional ones.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

from ..autograd.function import Op, SavedOf, composite_node, keep_args, keep_saved, optional, rename_node
from ..autograd.grad_mode import STATE, no_grad
from ..state import is_grad_enabled
from ..dispatch import apply, broadcast_error
from ..interception import HANDLERS, observed
from .. import dtypes
from ..registry import export
from ..tensor import Tensor, _disabled_torch_function_impl, _wrap
from .nn import log_softmax, pairwise_distance, softmax, softplus, torch_form
from .creation import arange
from .shape import cat
from .pointwise import where
from .reduction import mean_of_nothing
from .shape import broadcast_tensors

def reduce_loss(loss: Tensor, reduction: str, op: str) -> Tensor:
    """``loss`` reduced as ``reduction`` says ('mean', 'sum' or 'none')."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: {reduction} is not a valid value for reduction")


class _PointwiseLoss:
    """An elementwise error of input and target, reduced, as one node (PyTorch's fused loss nodes): ``error``
    on arrays, ``slope`` its derivative in the input with ember ops (the target's is its negative)."""

    save_inputs = True
    saved_names = ("self", "target")
    saved_args = {"reduction": lambda n: _REDUCTIONS.index(n.reduction)}

    @classmethod
    def forward(cls, ctx, k, x, t, reduction, beta):
        ctx.reduction, ctx.beta = reduction, beta
        loss = cls.error(k, k["sub"](x, t), beta)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return k["sum"](loss)
        return k["mean"](loss) if loss.size else mean_of_nothing(k, loss)

    @classmethod
    def backward(cls, ctx, g):
        x, t = ctx.inputs
        if ctx.reduction == "mean":
            g = g / x.numel()
        gx = cls.slope(x - t, ctx.beta) * g
        return gx, (-gx if ctx.next_functions[1][0] is not None else None)


class MseLoss(_PointwiseLoss, Op):
    @staticmethod
    def error(k, d, beta):
        return k["mul"](d, d)

    @staticmethod
    def slope(d, beta):
        return d * 2


class SmoothL1Loss(_PointwiseLoss, Op):
    saved_args = {**_PointwiseLoss.saved_args, "beta": "beta"}

    @staticmethod
    def error(k, d, beta):
        d = k["abs"](d)
        return k["where"](k["lt"](d, beta), k["mul"](k["mul"](d, d), 0.5 / beta), k["sub"](d, 0.5 * beta))

    @staticmethod
    def slope(d, beta):
        return (d / beta).clamp(-1.0, 1.0)  # (NaN stays NaN, as PyTorch's)


def pointwise_loss(op, x, t, reduction, beta=None):
    """``op`` (:class:`MseLoss`, :class:`SmoothL1Loss`) of ``x`` and ``t`` as one node, where nothing asks for
    the composed form (None then): same floating dtype, plain tensors, no handler seeing ops."""
    if HANDLERS or reduction not in _REDUCTIONS or x._data.dtype != t._data.dtype or \
            x.dtype not in (dtypes.float32, dtypes.float64):
        return None
    for a in (x, t):
        if type(a) is not Tensor and type(a).__torch_function__ is not _disabled_torch_function_impl:
            return None
    return apply(op, x, t, reduction, beta)


def same_shape(op, x, y):
    """PyTorch's error when a target's size differs from the input's."""
    if x.shape != y.shape:
        raise ValueError(f"{op}: Using a target size ({list(y.shape)}) that is different to the input size "
                         f"({list(x.shape)}) is not supported; please ensure they have the same size.")


def broadcast_target(op, x, y):
    """``x, y`` broadcast together; like PyTorch, warn when the target's size differs from the input's."""
    if x.shape == y.shape:
        return x, y
    warnings.warn(f"Using a target size ({y.shape}) that is different to the input size ({x.shape}). This will "
                  f"likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
                  UserWarning, stacklevel=3)
    msg = broadcast_error([x.shape, y.shape])
    if msg:
        raise RuntimeError(f"{op}: {msg}")
    return broadcast_tensors(x, y)


def legacy_reduction(reduction, size_average, reduce):
    """``reduction``, or what the deprecated ``size_average`` and ``reduce`` arguments say."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


_REDUCTIONS = ("none", "mean", "sum")


def reduction_name(reduction: int, op: str) -> str:
    """The functional ``reduction`` string for the integer of a ``torch.<loss>`` form (0, 1 or 2)."""
    if reduction not in (0, 1, 2) or isinstance(reduction, bool):
        raise ValueError(f"{op}: {reduction} is not a valid value for reduction (expected 0, 1 or 2)")
    return _REDUCTIONS[reduction]


def _class_target(op, input, target):
    if input.ndim == 1:
        return input.unsqueeze(0), target.unsqueeze(0)
    if target.shape != input.shape[:1] + input.shape[2:]:
        raise ValueError(f"{op}: Expected target size {list(input.shape[:1] + input.shape[2:])}, got "
                         f"{list(target.shape)} for input of size {list(input.shape)}")
    return input, target


def _check_bounds(tmin, tmax, c):
    if tmin < 0 or tmax >= c:
        raise IndexError(f"nll_loss: Target {tmax if tmax >= c else tmin} is out of bounds for {c} classes")


def _picked(logp, target, weight, ignore_index):
    """Per-element ``-w[t] * logp[t]`` and ``w[t]`` (zero where ignored)."""
    keep = target != ignore_index
    safe = where(keep, target, target.new_zeros(()))
    c = logp.shape[1]
    tmin, tmax = (int(safe.cpu().numpy().min()), int(safe.cpu().numpy().max())) if safe.numel() else (0, 0)
    _check_bounds(tmin, tmax, c)
    nll = -logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = keep.to(logp.dtype)
    if weight is not None:
        w = w * weight.index_select(0, safe.reshape(-1)).reshape(safe.shape)
    return where(keep, nll * w, nll.new_zeros(())), w  # (an ignored row's -inf logit gives no 0 * inf = NaN)


def _weighted_mean(loss, w):
    """``loss.sum() / w.sum()``; with every weight 0 it is NaN and its gradient 0, as PyTorch's."""
    total = w.sum()
    empty = total == 0
    return loss.sum() / where(empty, total.new_ones(()), total) + where(empty, total.new_full((), math.nan),
                                                                        total.new_zeros(())).detach()


@export(to=("nn.functional",))
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,  # noqa: A002
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` ``(N, C, ...)`` at class indices ``target``."""
    reduction = legacy_reduction(reduction, size_average, reduce)
    unbatched = input.ndim == 1
    x, t = _class_target("nll_loss", input, target)
    if weight is not None and weight.numel() != x.shape[1]:
        raise RuntimeError(f"nll_loss: weight tensor should be defined either for all {x.shape[1]} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    loss, w = _picked(x, t, weight, ignore_index)
    if reduction == "none" and unbatched:
        return reduce_loss(loss.squeeze(0), reduction, "nll_loss")
    r = _weighted_mean(loss, w) if reduction == "mean" else reduce_loss(loss, reduction, "nll_loss")
    node = _NLL_NODE.get(input.ndim)  # PyTorch's node of its fused kernel (by the input's rank)
    if node is None:
        return r
    return keep_args(rename_node(r, node), ignore_index=ignore_index, reduction=_REDUCTIONS.index(reduction))


_NLL_NODE = {2: "NllLossBackward0", 4: "NllLoss2DBackward0"}


class CrossEntropyIndex(Op):
    """Cross-entropy of logits ``(N, C)`` at class indices ``(N,)``, mean or sum, in one kernel; the gradient
    ``(softmax(x) - onehot(t)) * weight`` is one kernel call when no graph is wanted, else written with ember
    ops, so every order is available.  A stack ``(..., N, C)`` at ``(..., N)`` (vmap's per-sample losses,
    ``ember.func.batching``) gives one loss per sample."""

    backward_name = "NllLossBackward0"
    save_inputs = True
    saved_names = (None, "target")
    # PyTorch's nll node keeps log_softmax's result (made when read from the logits kept) and the targets' total
    # weight (the number not ignored)
    saved_args = {"ignore_index": "ignore_index", "reduction": lambda n: 1 if n.mean else 2,
                  "self": lambda n: _log_probabilities(n._value_saved(0)), "weight": lambda n: optional(None),
                  "total_weight": lambda n: (n._value_saved(1) != n.ignore_index).sum().to(n._value_saved(0).dtype)}

    @staticmethod
    def forward(ctx, k, x, t, ignore_index, mean):
        loss, coef, target, bounds, saved = k["cross_entropy_index"](x, t, ignore_index, mean)
        _check_bounds(*bounds, x.shape[-1])
        ctx.coef, ctx.target, ctx.saved = coef, target, saved  # a stack's: one-hot targets, unit gradient
        ctx.ignore_index, ctx.mean = ignore_index, mean
        return loss

    @staticmethod
    def backward(ctx, g):
        x = ctx.inputs[0]
        dev = g._dev
        if not is_grad_enabled() and type(g._data) is dev.atype and not observed():  # (g: not vmap's logical)
            if x.ndim > 2:  # a stack's: the gradient for a unit output gradient, from the forward
                return _wrap(dev.kernels["mul"](ctx.saved, g._data[..., None, None]), dev), None
            return _wrap(dev.kernels["cross_entropy_index_backward"](ctx.saved, ctx.target, ctx.coef, g._data),
                         dev), None
        if g.ndim:  # one gradient per sample of a stack
            g = g.reshape(g.shape + (1, 1))
            return (softmax(x, -1) - _wrap(ctx.target, dev)) * (_wrap(ctx.coef, dev) * g), None
        onehot, coef = _index_weights(x, ctx.inputs[1], ctx.ignore_index, ctx.mean)
        return (softmax(x, -1) - onehot) * (coef * g), None


def _log_probabilities(x):
    """``log_softmax(x, -1)`` outside the graph (a saved value read)."""
    with no_grad():
        return log_softmax(x, -1)


def _index_weights(x, t, ignore_index, mean):
    """The one-hot targets ``(N, C)`` and row weights ``(N, 1)`` of :class:`CrossEntropyIndex`'s forward, made
    again with ops from ``t``, so that a recorded backward (a compiled one) reads only recorded values."""
    keep = t != ignore_index
    onehot = (arange(x.shape[-1], device=x.device) == where(keep, t, t.new_zeros(())).unsqueeze(-1)).to(x.dtype)
    coef = keep.to(x.dtype)
    if mean:  # (no row kept: 0 / 1, the gradient 0 as the forward's weights give)
        count = coef.sum()
        coef = coef / where(count == 0, count.new_ones(()), count)
    return onehot, coef.unsqueeze(-1)


@export(to=("nn.functional",))
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,  # noqa: A002
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)``; ``target`` holds class indices or class probabilities.

    >>> import ember
    >>> round(ember.nn.functional.cross_entropy(ember.zeros(1, 4), ember.tensor([1])).item(), 4)
    1.3863
    """
    reduction = legacy_reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if (weight is None and label_smoothing == 0 and reduction != "none" and input.ndim == 2 and target.ndim == 1
            and input.is_floating_point() and not target.is_floating_point() and target.shape[0] == input.shape[0]):
        return apply(CrossEntropyIndex, input, target, ignore_index, reduction == "mean")
    dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, dim)
    c = input.shape[dim]
    wshape = (c,) + (1,) * (input.ndim - dim - 1)
    if target.is_floating_point():
        if target.shape != input.shape:
            raise RuntimeError(f"cross_entropy: Expected floating point target of the same shape as input "
                               f"{list(input.shape)}, got {list(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        loss = -prod.sum(dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // c)
        return reduce_loss(loss, reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0:
        return nll
    x, t = _class_target("cross_entropy", logp, target)
    keep = (t != ignore_index).to(logp.dtype)
    lp = x * weight.reshape(wshape) if weight is not None else x
    smooth = -lp.sum(1) * keep
    if input.ndim == 1 and reduction == "none":
        smooth = smooth.squeeze(0)
    if reduction == "mean":
        _, w = _picked(x, t, weight, ignore_index)
        smooth = _weighted_mean(smooth, w)
    else:
        smooth = reduce_loss(smooth, reduction, "cross_entropy")
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / c)


def _log_clamped(x):
    lx = x.log()
    return where(lx > -100, lx, lx.new_full((), -100.0))


def _out_of_unit(k, a):
    """Whether array ``a`` has an element outside [0, 1] (NaN included)."""
    inside = k["logical_and"](k["ge"](a, 0), k["le"](a, 1))
    return not bool(k["all"](inside, None, False))


_BCE_EPS = 9.999999960041972e-13  # PyTorch's 1e-12, a float32


class BinaryCrossEntropy(Op):
    """``-(t log x + (1 - t) log(1 - x))`` per element, the logs clamped at -100; the gradient divides by
    ``max(x (1 - x), 1e-12)`` as PyTorch's does, so it is finite at 0 and 1."""

    save_inputs = True

    @staticmethod
    def forward(ctx, k, x, t):
        if _out_of_unit(k, t):
            raise RuntimeError("binary_cross_entropy: all elements of target should be between 0 and 1")
        if _out_of_unit(k, x):
            raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 and 1")
        lx = k["maximum"](k["log"](x), -100.0)
        l1x = k["maximum"](k["log"](k["sub"](1.0, x)), -100.0)
        return k["astype"](k["neg"](k["add"](k["mul"](t, lx), k["mul"](k["sub"](1.0, t), l1x))), x.dtype)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.inputs
        gx = g * (x - t) / ((1 - x) * x).clamp_min(_BCE_EPS)
        gt = g * (_log_clamped(1 - x) - _log_clamped(x)) if ctx.next_functions[1][0] is not None else None
        return gx, gt


@export(to=("nn.functional",))
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,  # noqa: A002
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` with logs clamped at -100, as PyTorch does."""
    same_shape("binary_cross_entropy", input, target)
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {dtypes.type_name(target.dtype)} but expected {dtypes.type_name(input.dtype)}")
    dtypes.check_kernel("binary_cross_entropy", input, dtypes.FLOATING_AND_HALF, empty_ok=False)
    bce = apply(BinaryCrossEntropy, input, target)
    loss = bce if weight is None else bce * weight
    r = reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "binary_cross_entropy")
    # PyTorch's one node, the reduction included: it keeps the input and target (as the elementwise node keeps
    # them) and the weight given, not the values of the steps ember composes it of
    r = rename_node(r, "BinaryCrossEntropyBackward0", (None, None))
    kept = {} if bce._fn is None else {"self": SavedOf(bce._fn, 0), "target": SavedOf(bce._fn, 1),
                                       "weight": optional(weight)}
    return keep_args(r, reduction=_REDUCTIONS.index(legacy_reduction(reduction, size_average, reduce)), **kept)


@export(to=("nn.functional",))
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``BCE(sigmoid(x), t)`` computed stably from logits: ``(1 - t) x + (1 + (pw - 1) t) softplus(-x)``."""
    same_shape("binary_cross_entropy_with_logits", input, target)
    sp = softplus(-input, 1.0, float("inf"))
    lw = 1 + (pos_weight - 1) * target if pos_weight is not None else None
    loss = (1 - target) * input + (sp * lw if lw is not None else sp)
    if weight is not None:
        loss = loss * weight
    r = reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "binary_cross_entropy_with_logits")
    return rename_node(r, "BinaryCrossEntropyWithLogitsBackward0")  # PyTorch's one node


@export(to=("torch",))
@torch_form("binary_cross_entropy_with_logits")
def torch_binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):  # noqa: A002
    """``torch.binary_cross_entropy_with_logits``: ``pos_weight`` before ``reduction`` (an integer)."""
    r = reduction_name(reduction, "binary_cross_entropy_with_logits")
    return binary_cross_entropy_with_logits(input, target, weight, reduction=r, pos_weight=pos_weight)


@export(to=("nn.functional",))
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
           log_target: bool = False) -> Tensor:
    """``target * (log(target) - input)`` (``input`` holds log-probabilities); ``'batchmean'`` divides by N."""
    if log_target:
        loss = target.exp() * (target - input)
    else:
        pos = target > 0
        safe = where(pos, target, target.new_ones(()))
        loss = where(pos, target * (safe.log() - input), target.new_zeros(()) * input)
    reduction = legacy_reduction(reduction, size_average, reduce)
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return reduce_loss(loss, reduction, "kl_div")


@export(to=("torch",))
@torch_form("kl_div")
def torch_kl_div(input, target, reduction=1, *, log_target=False):  # noqa: A002
    """``torch.kl_div``: ``reduction`` an integer (its mean is over every element)."""
    return kl_div(input, target, reduction=reduction_name(reduction, "kl_div"), log_target=log_target)


@export(to=("nn.functional",))
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean") -> Tensor:
    loss = (-target * (input1 - input2) + margin).relu()
    return reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "margin_ranking_loss")


@export(to=("torch",))
@torch_form("margin_ranking_loss")
def torch_margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """``torch.margin_ranking_loss``."""
    return margin_ranking_loss(input1, input2, target, margin,
                               reduction=reduction_name(reduction, "margin_ranking_loss"))


@export(to=("nn.functional",))
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,  # noqa: A002
                         reduction="mean") -> Tensor:
    zero = input.new_zeros(())
    loss = where(target != 1, (margin - input).relu(), zero) + where(target != -1, input, zero)
    return reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "hinge_embedding_loss")


@export(to=("torch",))
@torch_form("hinge_embedding_loss")
def torch_hinge_embedding_loss(input, target, margin=1.0, reduction=1):  # noqa: A002
    """``torch.hinge_embedding_loss``."""
    return hinge_embedding_loss(input, target, margin, reduction=reduction_name(reduction, "hinge_embedding_loss"))


@export(to=("nn.functional",))
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean") -> Tensor:
    eps = 1e-12
    dim = input1.ndim - 1
    prod = (input1 * input2).sum(dim)
    m1 = (input1 * input1).sum(dim) + eps
    m2 = (input2 * input2).sum(dim) + eps
    cos = prod / (m1 * m2).sqrt()
    zero = cos.new_zeros(())
    loss = where(target == 1, 1 - cos, zero) + where(target == -1, (cos - margin).relu(), zero)
    return reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "cosine_embedding_loss")


@export(to=("torch",))
@torch_form("cosine_embedding_loss")
def torch_cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """``torch.cosine_embedding_loss``."""
    return cosine_embedding_loss(input1, input2, target, margin,
                                 reduction=reduction_name(reduction, "cosine_embedding_loss"))


@export(to=("nn.functional",))
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean") -> Tensor:
    d_ap = pairwise_distance(anchor, positive, p, eps)
    d_an = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_pn = pairwise_distance(positive, negative, p, eps)
        d_an = where(d_pn < d_an, d_pn, d_an)
    loss = (d_ap - d_an + margin).relu()
    return reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "triplet_margin_loss")


@export(to=("torch",))
@torch_form("triplet_margin_loss")
def torch_triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=1):
    """``torch.triplet_margin_loss``."""
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=reduction_name(reduction, "triplet_margin_loss"))


@export(to=("nn.functional",))
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,  # noqa: A002
                     reduce=None, reduction="mean") -> Tensor:
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        big = target > 1
        safe = where(big, target, target.new_ones(()))
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + where(big, stirling, target.new_zeros(()))
    return reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "poisson_nll_loss")


@export(to=("torch",))
@torch_form("poisson_nll_loss")
def torch_poisson_nll_loss(input, target, log_input, full, eps, reduction):  # noqa: A002
    """``torch.poisson_nll_loss``: every argument required, ``eps`` before ``reduction``."""
    return poisson_nll_loss(input, target, log_input, full, eps=eps,
                            reduction=reduction_name(reduction, "poisson_nll_loss"))


class CtcLoss(Op):
    """Connectionist temporal classification loss per sample, ``-log p(target | log_probs)``, by the alpha
    recursion in ``ember.kernels.ctc``; the backward runs the beta recursion and applies PyTorch's formula.
    There is no double backward (PyTorch's CTC has none either)."""

    save_inputs = True

    @staticmethod
    def forward(ctx, k, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
        nll, ctx.saved, (lo, hi) = k["ctc_loss"](log_probs, targets, input_lengths, target_lengths, blank)
        c = log_probs.shape[2]
        if lo < 0 or hi >= c:
            raise IndexError(f"ctc_loss: target label {lo if lo < 0 else hi} is out of bounds for log_probs of "
                             f"shape {list(log_probs.shape)} ({c} classes)")
        ctx.nll, ctx.lengths, ctx.zero_infinity = nll, (input_lengths, target_lengths), zero_infinity
        return nll

    @staticmethod
    def backward(ctx, g):
        if STATE.enabled:
            raise RuntimeError("ctc_loss: double backward is not supported (the CTC gradient is computed by a "
                               "fused kernel); call backward without create_graph=True")
        log_probs = ctx.inputs[0]
        dev = g._dev
        grad = dev.kernels["ctc_loss_backward"](g._data, log_probs._data, ctx.nll, ctx.saved, *ctx.lengths,
                                                ctx.zero_infinity)
        return _wrap(grad, dev), None


def _lengths(name, lengths, n):
    """``lengths`` (a Tensor of integers, or a tuple/list of ints) as a tuple of ``n`` Python ints."""
    if isinstance(lengths, Tensor):
        if lengths.is_floating_point() or lengths.is_complex():
            raise RuntimeError(f"ctc_loss: {name} must be integral, got a tensor of dtype {lengths.dtype}")
        values = tuple(int(v) for v in lengths.reshape(-1).tolist())
    elif isinstance(lengths, (list, tuple)):
        values = tuple(int(v) for v in lengths)
    else:
        raise TypeError(f"ctc_loss: {name} must be a Tensor or a tuple/list of ints, got {type(lengths).__name__}")
    if len(values) != n:
        raise RuntimeError(f"ctc_loss: {name} must be of size batch_size ({n}), got {len(values)} values")
    return values


def _check_ctc(log_probs, targets, il, tl, blank):
    t, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {c}), got blank={blank} for log_probs of "
                           f"shape {list(log_probs.shape)}")
    for name, values, most in (("input_lengths", il, t), ("target_lengths", tl, None)):
        if min(values) < 0:
            raise RuntimeError(f"ctc_loss: Expected {name} to have value at least 0, but got value {min(values)}")
        if most is not None and max(values) > most:
            raise RuntimeError(f"ctc_loss: Expected {name} to have value at most {most}, but got value "
                               f"{max(values)} (log_probs of shape {list(log_probs.shape)})")
    if targets.ndim not in (1, 2):
        raise RuntimeError(f"ctc_loss: Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional tensor for "
                           f"argument #2 'targets' (shape {list(targets.shape)})")
    want = sum(tl) if targets.ndim == 1 else n
    if targets.shape[0] != want:
        raise RuntimeError(f"ctc_loss: Expected tensor to have size {want} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets' (shape {list(targets.shape)})")
    if targets.ndim == 2 and targets.shape[1] < max(tl):
        raise RuntimeError(f"ctc_loss: Expected tensor to have size at least {max(tl)} at dimension 1, but got "
                           f"size {targets.shape[1]} for argument #2 'targets' (shape {list(targets.shape)})")


@export(to=("nn.functional",))
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs`` ``(T, N, C)`` (or unbatched ``(T, C)``),
    normally ``log_softmax`` outputs, against ``targets``: padded ``(N, S)`` or all targets concatenated (1-D).
    ``input_lengths`` and ``target_lengths`` are Tensors or tuples of ``N`` ints.  ``'mean'`` divides each
    loss by its target length (at least 1) and then averages over the batch; ``zero_infinity`` replaces the
    infinite losses of impossible alignments (and their gradients) by zero.  As in PyTorch, the gradient is
    ``exp(log_probs) - occupancy``, which is the gradient of the logits through ``log_softmax``.

    >>> import ember
    >>> import ember.nn.functional as F
    >>> log_probs = F.log_softmax(ember.zeros(3, 1, 2), 2)
    >>> round(F.ctc_loss(log_probs, ember.tensor([[1]]), [3], [1], reduction="sum").item(), 4)
    0.2877
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"ctc_loss: {reduction} is not a valid value for reduction")
    if isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor):
        raise TypeError(f"ctc_loss: input_lengths and target_lengths must both be Tensors or both tuples/lists of "
                        f"ints, got {type(input_lengths).__name__} and {type(target_lengths).__name__}")
    unbatched = log_probs.ndim == 2
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: Expected 3-dimensional log_probs (T, N, C) or 2-dimensional unbatched "
                           f"(T, C), but got {log_probs.ndim}-dimensional tensor of shape {list(log_probs.shape)}")
    dtypes.check_kernel("ctc_loss_{device}", log_probs, dtypes.FLOATING_TYPES)
    if log_probs.numel() == 0:
        raise RuntimeError(f"ctc_loss: log_probs tensor must not be empty (shape {list(log_probs.shape)})")
    x = log_probs.unsqueeze(1) if unbatched else log_probs
    n = x.shape[1]
    il = _lengths("input_lengths", input_lengths, n)
    tl = _lengths("target_lengths", target_lengths, n)
    _check_ctc(x, targets, il, tl, blank)
    if targets.device != x.device:
        targets = targets.to(x.device)
    loss = apply(CtcLoss, x, targets, il, tl, blank, zero_infinity)
    if zero_infinity:
        loss = where(loss.isinf(), loss.new_zeros(()), loss)
    if reduction == "mean":
        return (loss / loss.new_tensor([max(v, 1) for v in tl])).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


@export(to=("torch",))
@torch_form("ctc_loss")
def torch_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """``torch.ctc_loss``: ``reduction`` an integer."""
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction_name(reduction, "ctc_loss"),
                    zero_infinity)


# --------------------------------------------------------------------------- margin losses over classes
def _class_rows(op, input, target, target_shape):
    """``input`` as ``(N, C)`` and ``target`` as ``target_shape(N, C)``; PyTorch's errors otherwise."""
    if input.ndim not in (1, 2) or 0 in input.shape[-1:]:
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    t = target.reshape(target_shape(x.shape[0], x.shape[1])) if target.numel() == _numel(target_shape(
        x.shape[0], x.shape[1])) else None
    if t is None or (input.ndim == 2 and tuple(target.shape) != target_shape(*x.shape)):
        raise RuntimeError(f"{op}: inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    if t.is_floating_point():
        raise RuntimeError(f"{op}: expected target of an integer dtype (class indices), got {t.dtype}")
    return x, t


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _check_classes(op, t, c, lo=0):
    if t.numel():
        tl = t.cpu().numpy()
        if tl.min() < lo or tl.max() >= c:
            raise RuntimeError(f"{op}: target out of range: values must be in [{lo}, {c}), got "
                               f"[{int(tl.min())}, {int(tl.max())}]")


@export(to=("nn.functional",))
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,  # noqa: A002
                      weight: Tensor | None = None, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss: ``sum_{i != y} w[y] max(0, margin - x[y] + x[i])^p / C`` per sample.

    >>> import ember
    >>> ember.nn.functional.multi_margin_loss(ember.tensor([[0.1, 0.2, 0.4, 0.8]]), ember.tensor([3])).item()
    0.32499998807907104
    """
    reduction = legacy_reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x, t = _class_rows("multi_margin_loss", input, target, lambda n, c: (n,))
    dtypes.check_kernel("multi_margin_loss_{device}_kernel", x, dtypes.FLOATING_TYPES)
    c = x.shape[1]
    _check_classes("multi_margin_loss", t, c)
    if weight is not None and (weight.ndim != 1 or weight.numel() != c):
        raise ValueError(f"multi_margin_loss: weight must be one-dimensional with {c} elements, got "
                         f"{list(weight.shape)}")
    if weight is not None and weight.dtype is not x.dtype:  # (PyTorch's kernel reads the weight in the input's)
        raise RuntimeError(f"expected scalar type {dtypes.type_name(x.dtype)} but found "
                           f"{dtypes.type_name(weight.dtype)}")
    xy = x.gather(1, t.unsqueeze(1))
    z = x - xy + margin
    # PyTorch's kernel adds (and differentiates) only the terms of the other classes with z > 0: a NaN term, and an
    # infinite weight beside a term it skips, add nothing
    keep = (z > 0).logical_and(t.unsqueeze(1) != arange(c, device=x.device))
    zero = z.new_zeros(())
    h = where(keep, z, zero)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * where(keep, weight.index_select(0, t).unsqueeze(1), zero)
    loss = h.sum(1) / c
    if input.ndim == 1:
        loss = loss.squeeze(0)
    return keep_saved(composite_node(reduce_loss(loss, reduction, "multi_margin_loss"), "MultiMarginLossBackward0"),
                      input, target, weight)


@export(to=("nn.functional",))
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
                           reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: ``target`` lists each sample's classes, ended by the first -1;
    ``sum_{j in y, i not in y} max(0, 1 - (x[j] - x[i])) / C`` per sample."""
    reduction = legacy_reduction(reduction, size_average, reduce)
    x, t = _class_rows("multilabel_margin_loss", input, target, lambda n, c: (n, c))
    dtypes.check_kernel("multilabel_margin_loss_forward_out_frame", x, dtypes.FLOATING_TYPES)
    c = x.shape[1]
    _check_classes("multilabel_margin_loss", t, c, lo=-1)
    valid = (t != -1).long().cumprod(1) > 0                       # (N, C): the slots before the first -1
    safe = where(valid, t, t.new_zeros(()))
    is_target = x.new_zeros(x.shape).scatter_add(1, safe, valid.to(x.dtype)) > 0  # (N, C): class in the list
    xt = x.gather(1, safe)                                         # (N, C): the listed classes' scores
    z = 1 - xt.unsqueeze(2) + x.unsqueeze(1)                       # (N, slot, class)
    h = where(z > 0, z, z.new_zeros(()))  # (PyTorch's kernel adds only z > 0: a NaN term adds nothing)
    keep = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = where(keep, h, h.new_zeros(())).sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.squeeze(0)
    r = composite_node(reduce_loss(loss, reduction, "multilabel_margin_loss"), "MultilabelMarginLossBackward0")
    return keep_saved(r, input, target)


@export(to=("nn.functional",))
def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                                size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """Per-class logistic loss averaged over the classes: ``-(y log s(x) + (1 - y) log s(-x))``."""
    reduction = legacy_reduction(reduction, size_average, reduce)
    loss = softplus(-input) * target + softplus(input) * (1 - target)
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return reduce_loss(loss, reduction, "multilabel_soft_margin_loss")


@export(to=("nn.functional",))
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
                     reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-y x))`` for targets ``y`` of +-1."""
    same_shape("soft_margin_loss", input, target)
    loss = softplus(-target * input)
    r = reduce_loss(loss, legacy_reduction(reduction, size_average, reduce), "soft_margin_loss")
    return keep_saved(composite_node(r, "SoftMarginLossBackward0"), input, target)


@export(to=("nn.functional",))
def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` for any distance ``d`` (default :func:`pairwise_distance`)."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         f"instead")
    if not (anchor.ndim == positive.ndim == negative.ndim):
        raise RuntimeError(f"triplet_margin_with_distance_loss: expected anchor, positive and negative to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, "
                           f"and negative {negative.ndim}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_ap = dist(anchor, positive)
    d_an = dist(anchor, negative)
    if swap:
        d_pn = dist(positive, negative)
        d_an = where(d_pn < d_an, d_pn, d_an)
    loss = (d_ap - d_an + margin).clamp_min(0)  # (PyTorch's clamp_min: gradient 1 at 0)
    return reduce_loss(loss, reduction, "triplet_margin_with_distance_loss")


# --------------------------------------------------------------------------- linear_cross_entropy
_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """How :func:`linear_cross_entropy` chunks the batch (``options=None`` there: the reference path).

    The chunked path processes ``batch_chunk_size`` rows at a time and computes the gradients in forward, so
    the full ``(N, C)`` logits are never held: worth it when ``C`` is much larger than ``in_features``.

    * ``batch_chunk_size``: rows per chunk (None: one chunk, unless ``chunking_method`` sizes it);
    * ``chunking_method``: ``"auto"`` (here ``"aspect_ratio:2"``), ``"aspect_ratio"`` (a chunk's logits as
      large as the input: ``next_pow2(ceil(N / ceil(C / in_features)))``), ``"aspect_ratio:K"`` (that over K),
      or None (use ``batch_chunk_size``); both given and disagreeing raises ValueError;
    * ``allow_retain_graph``: the scalar reductions' backward uses the precomputed gradients once; with True
      they are kept for further backward calls;
    * ``acc_policy``, ``acc_dtype``: the precision trade-offs of PyTorch's CUDA kernels, accepted and checked;
      ember accumulates in the input dtype, or in ``acc_dtype`` when it is wider.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = str(self.chunking_method).partition(":")
            if not (name == "aspect_ratio" and (not sep or (factor.isdigit() and int(factor) > 0))):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int)
                                                  and not isinstance(self.batch_chunk_size, bool)
                                                  and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and getattr(self.acc_dtype, "name", None) not in (
                "float16", "bfloat16", "float32", "float64"):
            raise ValueError(f"acc_dtype must be one of {{None, float16, bfloat16, float32, float64}}, got "
                             f"{self.acc_dtype!r}. Pass acc_dtype=None to let the op pick automatically.")

    def chunk_size(self, num_batches: int, in_features: int, num_classes: int) -> int:
        """The rows per chunk for a batch of ``num_batches`` (PyTorch's rule)."""
        method = self.chunking_method
        if method == "auto":
            method = None if self.batch_chunk_size is not None else "aspect_ratio:2"
        size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if method is not None:
            factor = int(method.split(":", 1)[1]) if ":" in method else 1
            target = -(-num_batches // -(-num_classes // max(in_features, 1)))
            computed = min((1 << (max(target, 1) - 1).bit_length()) // factor, num_batches)
            if self.batch_chunk_size is not None and self.batch_chunk_size != computed:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ('{method}') "
                                 f"give different chunk sizes ({self.batch_chunk_size} vs {computed}); pass only "
                                 "one.")
            size = computed
        return max(size, 1)


def _lce_chunk(x, w, b, t, cw, ignore_index):
    """Per-row losses of one chunk, the gradient of each row's loss in its logits, and the chunk's share of
    the mean's denominator (the weight of its counted targets)."""
    logits = x @ w.mT
    if b is not None:
        logits = logits + b
    logp = log_softmax(logits, 1)
    valid = t != ignore_index
    ts = where(valid, t, 0)
    onehot = (arange(logits.shape[1], device=x.device) == ts.unsqueeze(1)).to(logp.dtype)
    wy = valid.to(logp.dtype) if cw is None else cw[ts] * valid.to(logp.dtype)
    q = onehot * wy.unsqueeze(1)
    loss = -(q * logp).sum(1)
    grad = wy.unsqueeze(1) * logp.exp() - q
    return loss, grad, wy.sum()


class LinearCrossEntropyChunked(Op):
    """``cross_entropy(linear(x, w, b), t)`` a chunk of rows at a time, its gradients made in forward (for the
    scalar reductions) or remade chunk by chunk in backward (``"none"``): the ``(N, C)`` logits never exist."""

    @staticmethod
    def forward(ctx, k, x, w, t, b, cw, dev, has_b, has_cw, ignore_index, reduction, chunk, need, keep):
        X, W, T = _wrap(x, dev), _wrap(w, dev), _wrap(t, dev)
        B = _wrap(b, dev) if has_b else None
        CW = _wrap(cw, dev) if has_cw else None
        ctx.args = (X, W, T, B, CW, ignore_index, chunk)
        ctx.reduction, ctx.keep, ctx.has_b, ctx.has_cw = reduction, keep, has_b, has_cw
        losses, denom = [], 0.0
        gx, gw, gb = [], W.new_zeros(W.shape), W.new_zeros(W.shape[:1])
        with no_grad():
            for s in range(0, X.shape[0], chunk):
                loss, g, d = _lce_chunk(X[s:s + chunk], W, B, T[s:s + chunk], CW, ignore_index)
                losses.append(loss)
                denom = denom + d
                if need and reduction != "none":
                    gx.append(g @ W)
                    gw += g.mT @ X[s:s + chunk]
                    gb += g.sum(0)
            loss = cat(losses) if len(losses) > 1 else losses[0]
            if reduction == "none":
                return loss._data
            total = loss.sum()
            if reduction == "mean":
                total = total / denom
                scale = 1.0 / denom
            else:
                scale = 1.0
            if need:
                ctx.grads = (cat(gx) * scale, gw * scale, gb * scale)
        return total._data

    @staticmethod
    def backward(ctx, g):
        X, W, T, B, CW, ignore_index, chunk = ctx.args
        if ctx.reduction == "none":
            gx, gw, gb = [], W.new_zeros(W.shape), W.new_zeros(W.shape[:1])
            with no_grad():
                for s in range(0, X.shape[0], chunk):
                    _, gr, _ = _lce_chunk(X[s:s + chunk], W, B, T[s:s + chunk], CW, ignore_index)
                    gr = gr * g[s:s + chunk].unsqueeze(1)
                    gx.append(gr @ W)
                    gw += gr.mT @ X[s:s + chunk]
                    gb += gr.sum(0)
            grads = (cat(gx), gw, gb)
        else:
            if ctx.grads is None:
                raise RuntimeError("linear_cross_entropy: the chunked backward has already used its precomputed "
                                   "gradients; pass LinearCrossEntropyOptions(allow_retain_graph=True) to call "
                                   "backward more than once")
            grads = tuple(gr * g for gr in ctx.grads)
            if not ctx.keep:
                ctx.grads = None
        return (grads[0], grads[1], None) + ((grads[2],) if ctx.has_b else ()) + ((None,) if ctx.has_cw else ())


@export(to=("nn.functional",))
def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,  # noqa: A002
                         linear_bias: Tensor | None = None, weight: Tensor | None = None, reduction: str = "mean",
                         ignore_index: int | None = None, label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    With ``options`` (a :class:`LinearCrossEntropyOptions`) the batch is processed in chunks whose gradients
    are computed in forward, so the ``(N, C)`` logits are never held; the numbers are the reference path's.
    ``ignore_index`` None means -100.  Linear weights ``(C, d_1, ..., d_K, in_features)`` give the
    K-dimensional loss (reference path).

    >>> import ember
    >>> F = ember.nn.functional
    >>> x, w, t = ember.ones(4, 3), ember.ones(5, 3), ember.tensor([0, 1, 2, 3])
    >>> round(F.linear_cross_entropy(x, w, t).item(), 4)
    1.6094
    """
    for name, v in (("input", input), ("linear_weight", linear_weight), ("target", target)):
        if not isinstance(v, Tensor):
            raise TypeError(f"linear_cross_entropy(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"linear_cross_entropy: {reduction} is not a valid value for reduction")
    if input.ndim not in (1, 2):
        raise ValueError(f"linear_cross_entropy: expected input of shape (in_features,) or (N, in_features), got "
                         f"{list(input.shape)}")
    if linear_weight.ndim < 2 or linear_weight.shape[-1] != input.shape[-1]:
        raise RuntimeError(f"linear_cross_entropy: linear_weight of shape {list(linear_weight.shape)} does not "
                           f"match input of shape {list(input.shape)} (expected (C, ..., {input.shape[-1]}))")
    ii = -100 if ignore_index is None else ignore_index
    kdim = linear_weight.ndim > 2
    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"linear_cross_entropy(): options must be LinearCrossEntropyOptions or None, not "
                        f"{type(options).__name__}")
    if options is not None and (kdim or input.ndim != 2 or label_smoothing != 0 or target.dtype.name != "int64"
                                or (linear_bias is not None and linear_bias.ndim != 1)):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in "
                      "{'mean','sum','none'}, label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                      f"out_features={tuple(linear_weight.shape[1:-1])}", UserWarning, stacklevel=2)
        options = None
    if options is None:
        c = linear_weight.shape[0]
        out_features = tuple(linear_weight.shape[1:-1])
        logits = input @ linear_weight.reshape(-1, input.shape[-1]).mT
        if linear_bias is not None:
            logits = logits + linear_bias.reshape(-1)
        if kdim:
            if input.ndim != 2:
                raise ValueError("linear_cross_entropy: multi-dimensional linear weights require batched input "
                                 "(N, in_features)")
            logits = logits.reshape((input.shape[0], c) + out_features)
        return cross_entropy(logits, target, weight, ignore_index=ii, reduction=reduction,
                             label_smoothing=label_smoothing)
    n, c = input.shape[0], linear_weight.shape[0]
    if target.shape[0] != n:
        raise ValueError(f"linear_cross_entropy: expected target batch size {n}, got {target.shape[0]}")
    chunk = options.chunk_size(n, input.shape[1], c)
    need = STATE.enabled and any(v is not None and v.requires_grad for v in (input, linear_weight, linear_bias))
    if target.numel():
        lo, hi = int(target.min()), int(target.max())
        bad = [v for v in (lo, hi) if v != ii and not 0 <= v < c]
        if bad:
            raise IndexError(f"linear_cross_entropy: target {bad[0]} is out of bounds for {c} classes")
    r = apply(LinearCrossEntropyChunked, input, linear_weight, target, linear_bias, weight, input._dev,
              linear_bias is not None, weight is not None,
              ii, reduction, chunk, need, options.allow_retain_graph)
    # ("none" remakes the gradients from the inputs in backward: kept, as PyTorch's node does)
    return keep_saved(r, input, linear_weight, target, linear_bias, weight) if reduction == "none" else r
