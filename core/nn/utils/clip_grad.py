"""Gradient clipping over an iterable of parameters."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...kernels import fp_quiet_begin, fp_quiet_end
from ...ops.creation import tensor
from ...ops.linalg import vector_norm
from ...ops.shape import stack
from ...tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type`` norm of all ``tensors`` together (the norm of their norms), on the first one's device.

    >>> import ember
    >>> ember.nn.utils.get_total_norm([ember.full((4,), 3.0), ember.zeros(2)]).item()
    6.0
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    first_device = tensors[0].device
    norms = [vector_norm(t, norm_type) for t in tensors]
    total_norm = vector_norm(stack([n.to(first_device) for n in norms]), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan().logical_or(total_norm.isinf())):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients in place by ``max_norm / (total_norm + 1e-6)`` when that is below 1.

    With :func:`get_total_norm` this is :func:`clip_grad_norm_` in two steps (the norm may be reduced
    across processes in between).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    with no_grad():
        clip_coef_clamped = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)  # NaN stays NaN (PyTorch)
        quiet = fp_quiet_begin()  # an infinite norm scales by 0: inf * 0 is NaN without a NumPy warning
        try:
            for g in grads:
                g.mul_(clip_coef_clamped.to(g.device))
        finally:
            fp_quiet_end(quiet)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale gradients in place so their joint ``norm_type`` norm is at most ``max_norm``; returns the norm.

    >>> import ember
    >>> p = ember.nn.Parameter(ember.ones(4)); p.grad = ember.full((4,), 3.0)
    >>> ember.nn.utils.clip_grad_norm_([p], 1.0).item()
    6.0
    """
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    with no_grad():
        total_norm = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
        clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient elementwise to ``[-clip_value, clip_value]`` in place."""
    c = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-c, c)


clip_grad_norm = clip_grad_norm_
