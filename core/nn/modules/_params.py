"""Parameter creation and default initialisation shared by the layers."""
from __future__ import annotations

import math

from ...tensor import Tensor
from .. import init
from ..parameter import Parameter


def register_weight_bias(module, weight: Tensor | None, bias: Tensor | None) -> None:
    """Register ``weight`` and ``bias`` as Parameters; ``None`` declares an absent one (as PyTorch's layers do)."""
    for name, t in (("weight", weight), ("bias", bias)):
        module.register_parameter(name, None if t is None else Parameter(t))


def reset_fan_in_uniform(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's Linear/Conv default: kaiming_uniform_(a=sqrt(5)) weight, bias U(+-1/sqrt(fan_in))."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)
