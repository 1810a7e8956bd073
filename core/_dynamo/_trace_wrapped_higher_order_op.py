"""``ember._dynamo._trace_wrapped_higher_order_op``: the one name libraries import from PyTorch's module of this
name, :class:`TransformGetItemToIndex`."""
from __future__ import annotations

from .._pytree import tree_leaves
from ..dtypes import int64
from ..ops.creation import tensor as _tensor
from ..overrides import TorchFunctionMode
from ..tensor import Tensor

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex(TorchFunctionMode):
    """Within the block, ``t[i, j]`` with integer and 0-d tensor indices indexes by tensors (the integers made
    0-d int64 tensors), so a 0-d index is never read out as a Python number: ``vmap`` over a function that indexes
    with its batched scalar arguments works (transformers builds attention masks this way). The values are those
    of ordinary indexing."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is Tensor.__getitem__:
            t, index = args
            leaves = tree_leaves(index)
            if all(isinstance(x, (Tensor, int)) and not isinstance(x, bool) for x in leaves):
                return t[tuple(_tensor(x, dtype=int64, device=t.device) if isinstance(x, int) else x
                               for x in leaves)]
        return func(*args, **(kwargs or {}))
