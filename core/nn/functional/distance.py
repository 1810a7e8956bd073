"""Distances, similarities and attention."""
from __future__ import annotations

import math

from ...ops.pointwise import where
from ...tensor import Tensor
from .activation import softmax
from .linear import dropout
from .normalization import _pnorm


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / sqrt(max(|x1|^2 |x2|^2, eps^2))`` along ``dim``.

    >>> import ember
    >>> ember.nn.functional.cosine_similarity(ember.tensor([[1., 0.]]), ember.tensor([[1., 1.]])).tolist()
    [0.7071067690849304]
    """
    w12 = (x1 * x2).sum(dim)
    w = (x1 * x1).sum(dim) * (x2 * x2).sum(dim)
    return w12 / where(w > eps * eps, w, w.new_full((), eps * eps)).sqrt()


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dimension."""
    return _pnorm(x1 - x2 + eps, p, -1, keepdim)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v``; a bool mask keeps the True positions."""
    from ...ops.creation import ones
    from ...ops.shape import tril

    L, S = query.shape[-2], key.shape[-2]
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * s
    neg = scores.new_full((), float("-inf"))
    if is_causal:
        keep = tril(ones(L, S, device=query.device)) > 0
        scores = where(keep, scores, neg)
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = where(attn_mask, scores, neg)
        else:
            scores = scores + attn_mask
    attn = softmax(scores, -1)
    if dropout_p > 0:
        attn = dropout(attn, dropout_p, True)
    return attn.matmul(value)
