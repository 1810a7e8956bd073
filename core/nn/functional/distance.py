"""Attention, composed of ember ops; the distances and similarities are in :mod:`ember.ops.nn`."""
from __future__ import annotations

import math

from ...ops.nn import attention, attention_scores, causal_mask, dropout, softmax
from ...ops.nn import cosine_similarity, pairwise_distance  # noqa: F401  (re-exported)
from ...ops.pointwise import where
from ...ops.shape import repeat_interleave
from ...registry import export
from ...tensor import Tensor


@export(to=("nn.functional",))
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v``; a bool mask keeps the True positions. ``enable_gqa``: key and value
    may have fewer heads (dim -3) than the query, each shared by a group of query heads.

    >>> import ember
    >>> q, kv = ember.randn(1, 4, 3, 8), ember.randn(1, 2, 3, 8)
    >>> ember.nn.functional.scaled_dot_product_attention(q, kv, kv, enable_gqa=True).shape
    ember.Size([1, 4, 3, 8])
    """
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if kv_heads == 0 or heads % kv_heads or value.shape[-3] != kv_heads:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        key = repeat_interleave(key, heads // kv_heads, dim=-3)
        value = repeat_interleave(value, heads // kv_heads, dim=-3)
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if dropout_p == 0:
        out = attention(query, key, value, attn_mask, s, is_causal)  # one node, where it serves
        if out is not None:
            return out
    scores = attention_scores(query, key.transpose(-2, -1), s, Tensor.matmul)
    if is_causal:
        scores = scores + causal_mask(scores, *scores.shape[-2:])
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = where(attn_mask, scores, scores.new_full((), float("-inf")))
        else:
            scores = scores + attn_mask
    attn = softmax(scores, -1)
    if dropout_p > 0:
        attn = dropout(attn, dropout_p, True)
    return attn.matmul(value)
