"""Flatten parameters into one vector and back."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.shape import cat
from ...tensor import Tensor


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated (differentiable).

    >>> import ember
    >>> ember.nn.utils.parameters_to_vector(ember.nn.Linear(2, 3).parameters()).shape
    ember.Size([9])
    """
    params = list(parameters)
    dev = params[0].device if params else None
    for p in params:
        if p.device != dev:
            raise TypeError(f"parameters_to_vector: Found two parameters on different devices, this is currently "
                            f"not supported ({dev} and {p.device})")
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of ``vec`` into each parameter."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: vector of {vec.numel()} elements does not match the {total} "
                           f"elements of the parameters")
    i = 0
    with no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[i:i + n].reshape(p.shape))
            i += n
