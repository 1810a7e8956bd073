"""Sigmoid focal loss (Lin et al. 2017, RetinaNet)."""
import ember
from ember import Tensor
from ember.nn import functional as F

from ._utils import _reduce


def sigmoid_focal_loss(inputs: Tensor, targets: Tensor, alpha: float = 0.25, gamma: float = 2,
                       reduction: str = "none") -> Tensor:
    """Binary cross-entropy on logits ``inputs`` down-weighted by ``(1 - p_t) ** gamma`` and balanced by
    ``alpha`` (``-1`` to skip), reduced by ``reduction``."""
    if not (0 <= alpha <= 1) and alpha != -1:
        raise ValueError(f"Invalid alpha value: {alpha}. alpha must be in the range [0,1] or -1 for ignore.")
    p = ember.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    return loss.mean() if reduction == "mean" else _reduce(loss, reduction)
