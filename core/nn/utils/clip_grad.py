"""Gradient clipping over an iterable of parameters."""
from __future__ import annotations

from ... import dtypes
from ...autograd.grad_mode import no_grad
from ...interception import observed
from ...kernels import fp_quiet_begin, fp_quiet_end
from ...ops.creation import tensor
from ...ops.linalg import vector_norm
from ...ops.shape import stack
from ...tensor import Tensor, _wrap


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _arrays(tensors):
    """The arrays of ``tensors`` where their norms and scaling may run on the arrays with the backend's kernels, a
    pass each, as PyTorch's foreach forms (plain float32 or float64 tensors of one device, outside autograd, no
    interception handler watching); else None (the ops, one by one)."""
    if not tensors or observed():
        return None
    dev, dtype = tensors[0]._dev, tensors[0].dtype
    if dtype not in (dtypes.float32, dtypes.float64):
        return None
    for t in tensors:
        if type(t) is not Tensor or t._dev is not dev or t.dtype is not dtype or t._rg or t._fn is not None or \
                type(t._data) is not dev.atype:
            return None
    return [t._data for t in tensors]


def _norm2(tensors, arrays):
    """The 2-norm of ``tensors`` together, from their ``arrays``: the norm of their norms, as PyTorch's."""
    dev = tensors[0]._dev
    k, xp = dev.kernels, dev.backend.xp
    quiet = fp_quiet_begin()  # (squares overflow to inf without a NumPy warning, as the ops)
    try:
        flat = [k["reshape"](a, (-1,)) for a in arrays]
        norms = xp.sqrt(xp.stack([k["matmul"](v, v) for v in flat]))  # (each sum of squares one dot: no temporary)
        return _wrap(xp.sqrt(k["sum"](norms * norms)), dev)
    finally:
        fp_quiet_end(quiet)


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
    arrays = _arrays(tensors) if norm_type == 2.0 else None
    if arrays is not None:
        return _checked(_norm2(tensors, arrays), norm_type, error_if_nonfinite)
    first_device = tensors[0].device
    norms = [vector_norm(t, norm_type) for t in tensors]
    total_norm = vector_norm(stack([n.to(first_device) for n in norms]), norm_type)
    return _checked(total_norm, norm_type, error_if_nonfinite)


def _checked(total_norm, norm_type, error_if_nonfinite):
    """``total_norm``, or PyTorch's error where it is not finite and ``error_if_nonfinite`` asks for one."""
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
            arrays = _arrays(grads)
            if arrays is not None and type(clip_coef_clamped) is Tensor and clip_coef_clamped.ndim == 0 and \
                    clip_coef_clamped._dev is grads[0]._dev and clip_coef_clamped.dtype is grads[0].dtype:
                c = clip_coef_clamped._data
                for g, a in zip(grads, arrays):  # (mul_'s work on the arrays)
                    a *= c
                    g._bump()
                return
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
