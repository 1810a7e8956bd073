"""``ember.nn.attention.flex_attention`` (``torch.nn.attention.flex_attention``): PyTorch's attention with score
and mask functions, importable.

The mask combinators (:func:`noop_mask`, :func:`and_masks`, :func:`or_masks`) and the request/output tuples are
complete. The attention itself and its block-sparse masks are not built yet: :func:`flex_attention`,
:func:`create_block_mask`, :func:`create_mask` and :class:`BlockMask` raise NotImplementedError when used
(``isinstance(x, BlockMask)`` is False for every object, which is the truth).

>>> import ember
>>> from ember.nn.attention.flex_attention import and_masks
>>> causal = lambda b, h, q, kv: q >= kv
>>> and_masks(causal, lambda b, h, q, kv: kv > 0)(0, 0, ember.tensor(2), ember.tensor(1))
tensor(True)
"""
from __future__ import annotations

from typing import NamedTuple

from ..dtypes import bool as _bool

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128
FlexKernelOptions = dict  # PyTorch's TypedDict of kernel settings: a dict


def _missing(what: str):
    return NotImplementedError(f"ember has no {what} yet: flex attention is importable, not built; use "
                               f"F.scaled_dot_product_attention (transformers: attn_implementation='sdpa' or "
                               f"'eager')")


class AuxRequest(NamedTuple):
    """Which extra outputs :func:`flex_attention` should give."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs :func:`flex_attention` gave (None where not requested)."""

    lse: object = None
    max_scores: object = None


class BlockMask:
    """A block-sparse attention mask (not built yet)."""

    def __init__(self, *args, **kwargs):
        raise _missing("BlockMask")

    @classmethod
    def from_kv_blocks(cls, *args, **kwargs):
        raise _missing("BlockMask.from_kv_blocks")


def noop_mask(batch, head, token_q, token_kv):
    """The mask that keeps every position: a 0-d True tensor."""
    return batch.new_ones(size=(), dtype=_bool, device=batch.device)


def and_masks(*mask_mods):
    """The mask that keeps a position where every one of ``mask_mods`` does."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=_bool) if hasattr(b, "new_ones") else True
        for m in mask_mods:
            result = result & m(b, h, q_idx, kv_idx)
        return result

    return mask


def or_masks(*mask_mods):
    """The mask that keeps a position where any one of ``mask_mods`` does."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=_bool) if hasattr(b, "new_zeros") else False
        for m in mask_mods:
            result = result | m(b, h, q_idx, kv_idx)
        return result

    return mask


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, **kwargs):
    """A :class:`BlockMask` of ``mask_mod`` (not built yet)."""
    raise _missing("create_block_mask")


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The dense mask of ``mod_fn`` over every position (not built yet)."""
    raise _missing("create_mask")


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None):
    """Attention with a score function and a block mask (not built yet)."""
    raise _missing("flex_attention")
