"""A squeeze-and-excitation block (Hu et al., 2018) as an ember layer plugin.

Built from ember ops only, so its gradients (and second derivatives) come from
autograd.  Installing the distribution registers, through the ``ember`` entry point:

* ``ember.ops.se.squeeze_excite(x, w1, b1, w2, b2)``: channel gates
  ``sigmoid(W2 relu(W1 mean_hw(x) + b1) + b2)`` applied to ``x`` of shape ``(N, C, *spatial)``;
* the Module ``SqueezeExcitation(channels, reduction=4)`` (``ember.nn.SqueezeExcitation``).

>>> import ember
>>> block = ember.nn.SqueezeExcitation(8, reduction=4)
>>> block(ember.ones(2, 8, 5, 5)).shape
ember.Size([2, 8, 5, 5])
"""
import ember
from ember import nn
from ember.plugins import hookimpl


def squeeze_excite(x, w1, b1, w2, b2):
    """Scale each channel of ``x`` by a gate computed from its spatial mean."""
    if x.dim() < 3:
        raise ValueError(f"squeeze_excite: expected input of shape (N, C, *spatial), got {list(x.shape)}")
    if w1.shape[1] != x.shape[1] or w2.shape[0] != x.shape[1]:
        raise ValueError(f"squeeze_excite: weights of shapes {list(w1.shape)} and {list(w2.shape)} do not fit "
                         f"{x.shape[1]} channels")
    squeezed = x.mean(tuple(range(2, x.dim())))
    hidden = (squeezed @ w1.t() + b1).relu()
    gate = ember.sigmoid(hidden @ w2.t() + b2)
    return x * gate.reshape(*gate.shape, *([1] * (x.dim() - 2)))


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation over ``channels`` with a bottleneck of ``channels // reduction``."""

    def __init__(self, channels: int, reduction: int = 4):
        super().__init__()
        hidden = max(1, channels // reduction)
        self.reduce = nn.Linear(channels, hidden)
        self.expand = nn.Linear(hidden, channels)

    def forward(self, x):
        return squeeze_excite(x, self.reduce.weight, self.reduce.bias, self.expand.weight, self.expand.bias)


@hookimpl
def ember_ops(registry):
    registry.add_op("se", "squeeze_excite", squeeze_excite, module=SqueezeExcitation)
