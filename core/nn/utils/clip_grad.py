"""Gradient clipping over an iterable of parameters."""
from __future__ import annotations

import math

from ...autograd.grad_mode import no_grad
from ...kernels import fp_quiet_begin, fp_quiet_end
from ...ops.creation import tensor
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale gradients in place so their joint ``norm_type`` norm is at most ``max_norm``; returns the norm.

    >>> import ember
    >>> p = ember.nn.Parameter(ember.ones(4)); p.grad = ember.full((4,), 3.0)
    >>> ember.nn.utils.clip_grad_norm_([p], 1.0).item()
    6.0
    """
    grads = _grads(parameters)
    if not grads:
        return tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        if math.isinf(norm_type):
            total = max(float(g.abs().cpu().numpy().max()) for g in grads)
        else:
            total = sum(float((g.abs() ** norm_type).sum().item()) for g in grads) ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = max_norm / (total + 1e-6)
        if coef != coef or coef < 1:  # a NaN norm scales every gradient by NaN, as PyTorch's clamp(coef, max=1)
            quiet = fp_quiet_begin()  # an infinite norm scales by 0: inf * 0 is NaN without a NumPy warning
            try:
                for g in grads:
                    g.mul_(coef)
            finally:
                fp_quiet_end(quiet)
    return tensor(total, dtype=grads[0].dtype, device=grads[0].device)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient elementwise to ``[-clip_value, clip_value]`` in place."""
    c = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-c, c)


clip_grad_norm = clip_grad_norm_
