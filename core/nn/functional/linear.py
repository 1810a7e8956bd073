"""``one_hot``, composed of ember ops; linear maps, embeddings and dropout are ops, in :mod:`ember.ops.nn`."""
from __future__ import annotations

from ...ops.creation import arange
from ...ops.nn import (  # noqa: F401  (re-exported)
    alpha_dropout, bilinear, dropout, dropout1d, dropout2d, dropout3d, embedding, embedding_bag, index_tensor, linear,
)
from ...registry import export
from ...tensor import Tensor


@export(to=("nn.functional",))
def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Integer class indices to a ``(..., num_classes)`` int64 one-hot tensor.

    >>> import ember
    >>> ember.nn.functional.one_hot(ember.tensor([0, 2]), 3).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    idx = index_tensor(tensor, "one_hot")
    if idx.numel() and int(idx.cpu().numpy().min()) < 0:
        raise RuntimeError("one_hot: Class values must be non-negative.")
    if num_classes < 0:
        num_classes = int(idx.cpu().numpy().max()) + 1 if idx.numel() else 0
    elif idx.numel() and (int(idx.cpu().numpy().max()) >= num_classes or int(idx.cpu().numpy().min()) < 0):
        raise RuntimeError("one_hot: Class values must be smaller than num_classes.")
    return (idx.unsqueeze(-1) == arange(num_classes, device=idx.device)).long()
