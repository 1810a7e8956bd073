"""Stochastic gradient descent (with momentum, dampening, Nesterov, weight decay, maximize)."""
from __future__ import annotations

from ..tensor import _wrap
from .optimizer import Optimizer


def sgd(params: list, grads: list, states: list, group: dict) -> None:
    """One SGD step over a group's parameters (state: ``momentum_buffer`` once momentum is on)."""
    lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
    dampening, nesterov, maximize = group["dampening"], group["nesterov"], group["maximize"]
    for p, g, s in zip(params, grads, states):
        buf = s.get("momentum_buffer")
        out = p._dev.kernels["sgd_update"](p._data, g._data, None if buf is None else buf._data, lr, wd, momentum,
                                          dampening, nesterov, maximize)
        if momentum != 0 and buf is None:
            s["momentum_buffer"] = _wrap(out, p._dev)


class SGD(Optimizer):
    """``p -= lr * g`` with optional momentum, exactly as ``torch.optim.SGD``.

    >>> import ember
    >>> w = ember.ones(1, requires_grad=True)
    >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> (2 * w).sum().backward(); opt.step(); w
    tensor([0.8000], requires_grad=True)
    """

    _update = staticmethod(sgd)

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False, foreach=None,
                 differentiable: bool = False, fused=None):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
