"""``local_response_norm`` and ``F.normalize``, composed of ember ops; batch, layer, group and instance
normalisation are in :mod:`ember.ops.nn`."""
from __future__ import annotations

from ...ops.nn import batch_norm, group_norm, instance_norm, layer_norm, pad, pnorm  # noqa: F401  (re-exported)
from ...ops.nn_conv import avg_pool2d
from ...writes import out_or
from ...registry import export
from ...tensor import Tensor


@export(to=("nn.functional",))
def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,  # noqa: A002
                        k: float = 1.0) -> Tensor:
    sq = (input * input).unsqueeze(1)
    sq = pad(sq.reshape(sq.shape[0], 1, sq.shape[2], -1), (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(sq, (size, 1), stride=1).reshape(input.shape)
    return input / (div * alpha + k) ** beta


@export(to=("nn.functional",))
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:  # noqa: A002
    """``x / max(||x||_p, eps)`` along ``dim``.

    >>> import ember
    >>> ember.nn.functional.normalize(ember.tensor([[3., 4.]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    n = input.norm(p, dim, keepdim=True)
    return out_or(input / n.clamp_min(eps).expand_as(input), out)
