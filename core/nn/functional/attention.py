"""``multi_head_attention_forward``: the whole of ``nn.MultiheadAttention``'s computation as a function of its
weights, composed of ember ops (PyTorch's argument order, shapes and mask conventions: a True in a bool
``attn_mask`` or ``key_padding_mask`` marks a position that may NOT be attended; float masks are added)."""
from __future__ import annotations

import math

from ...ops.creation import zeros
from ...ops.nn import attention_scores, dropout, linear, pad, softmax
from ...ops.shape import cat
from ...registry import export
from ...tensor import Tensor
from .distance import scaled_dot_product_attention


def _float_mask(mask, dtype, name):
    """A float mask to add to scores: bool True (not allowed) becomes -inf."""
    if mask is None:
        return None
    if mask.dtype.name == "bool":
        return zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported, got {mask.dtype}")
    return mask.to(dtype)


def _attn_mask(mask, L, S, NH):
    if mask is None:
        return None
    if mask.dim() == 2:
        if tuple(mask.shape) != (L, S):
            raise RuntimeError(f"The shape of the 2D attn_mask is {list(mask.shape)}, but should be {[L, S]}.")
        return mask.unsqueeze(0)
    if mask.dim() == 3:
        if tuple(mask.shape) != (NH, L, S):
            raise RuntimeError(f"The shape of the 3D attn_mask is {list(mask.shape)}, but should be {[NH, L, S]}.")
        return mask
    raise RuntimeError(f"attn_mask's dimension {mask.dim()} is not supported")


@export(to=("nn.functional",))
def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
                                 bias_k: Tensor | None, bias_v: Tensor | None, add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                                 training: bool = True, key_padding_mask: Tensor | None = None,
                                 need_weights: bool = True, attn_mask: Tensor | None = None,
                                 use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
                                 k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None,
                                 static_k: Tensor | None = None, static_v: Tensor | None = None,
                                 average_attn_weights: bool = True, is_causal: bool = False):
    """Multi-head attention of ``(L, N, E)`` queries over ``(S, N, E)`` keys and values (or unbatched
    ``(L, E)``/``(S, E)``); returns ``(output, weights)``, the weights averaged over the heads when
    ``average_attn_weights`` and None unless ``need_weights``."""
    name = "multi_head_attention_forward"
    if query.dim() not in (2, 3):
        raise AssertionError(f"{name}: query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.dim()}-D query tensor")
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"{name}: query, key and value must have the same number of dimensions, got "
                             f"{query.dim()}, {key.dim()} and {value.dim()}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise AssertionError(f"{name}: was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    if tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise AssertionError(f"{name}: key shape {list(key.shape)} does not match value shape {list(value.shape)}")
    H = num_heads
    hd = E // H
    if hd * H != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {H}")
    mask = _attn_mask(_float_mask(attn_mask, query.dtype, "attn_mask"), L, S, N * H)
    kpm = _float_mask(key_padding_mask, query.dtype, "key_padding_mask")
    if kpm is not None and tuple(kpm.shape) != (N, S):
        raise AssertionError(f"{name}: expecting key_padding_mask shape of {(N, S)}, but got {tuple(kpm.shape)}")
    b = in_proj_bias
    if not use_separate_proj_weight and query is key and key is value:
        # self-attention: one product with the packed weight, as PyTorch's (one GEMM each way, no slices of the
        # weight whose gradients are scattered back)
        q, k, v = linear(query, in_proj_weight, b).chunk(3, -1)
    else:
        bq, bk, bv = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        if use_separate_proj_weight:
            wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
        else:
            wq, wk, wv = in_proj_weight[:E], in_proj_weight[E:2 * E], in_proj_weight[2 * E:]
        q, k, v = linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = cat([k, bias_k.repeat(1, N, 1)])
        v = cat([v, bias_v.repeat(1, N, 1)])
        mask = None if mask is None else pad(mask, (0, 1))
        kpm = None if kpm is None else pad(kpm, (0, 1))
    q = q.reshape(L, N * H, hd).transpose(0, 1)
    k = k.reshape(k.shape[0], N * H, hd).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], N * H, hd).transpose(0, 1) if static_v is None else static_v
    if add_zero_attn:
        k = cat([k, zeros((N * H, 1, hd), dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros((N * H, 1, hd), dtype=v.dtype, device=v.device)], 1)
        mask = None if mask is None else pad(mask, (0, 1))
        kpm = None if kpm is None else pad(kpm, (0, 1))
    S2 = k.shape[1]
    if kpm is not None:
        kpm = kpm.reshape(N, 1, 1, S2).expand(N, H, 1, S2).reshape(N * H, 1, S2)
        mask = kpm if mask is None else mask + kpm
    if need_weights:
        scores = attention_scores(q, k.transpose(-2, -1), 1.0 / math.sqrt(hd), Tensor.matmul)
        if mask is not None:
            scores = scores + mask
        attn = softmax(scores, -1)
        if dropout_p > 0.0 and training:
            attn = dropout(attn, dropout_p, True)
        y = attn @ v
    else:  # as PyTorch's, through its fused attention (one node where it serves)
        y = scaled_dot_product_attention(q, k, v, mask, dropout_p if training else 0.0)
    out = y.transpose(0, 1).reshape(L * N, E)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    weights = None
    if need_weights:
        weights = attn.reshape(N, H, L, S2)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
    if not batched:
        out = out.squeeze(1)
    return out, weights
