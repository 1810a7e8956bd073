"""Per-coordinate adaptive optimizers: RMSprop (centered, momentum), Adagrad, Adadelta."""
from __future__ import annotations

from .optimizer import Optimizer, check_range, foreach_update, step_tensor, zeros_state


def rmsprop(params: list, grads: list, states: list, group: dict) -> None:
    """One RMSprop step over a group's parameters."""
    foreach_update("rmsprop_update", params, grads, states, ("square_avg", "grad_avg", "momentum_buffer"),
                   (group["lr"], group["alpha"], group["eps"], group["weight_decay"], group["momentum"],
                    group["maximize"]), pass_step=False)


def adagrad(params: list, grads: list, states: list, group: dict) -> None:
    """One Adagrad step over a group's parameters."""
    foreach_update("adagrad_update", params, grads, states, ("sum",),
                   (group["lr"], group["lr_decay"], group["eps"], group["weight_decay"], group["maximize"]))


def adadelta(params: list, grads: list, states: list, group: dict) -> None:
    """One Adadelta step over a group's parameters."""
    foreach_update("adadelta_update", params, grads, states, ("square_avg", "acc_delta"),
                   (group["lr"], group["rho"], group["eps"], group["weight_decay"], group["maximize"]),
                   pass_step=False)


class RMSprop(Optimizer):
    """RMSprop, exactly as ``torch.optim.RMSprop``.

    >>> import ember
    >>> w = ember.ones(1, requires_grad=True)
    >>> opt = ember.optim.RMSprop([w], lr=0.01)
    >>> w.sum().backward(); opt.step(); round(w.item(), 4)
    0.9
    """

    _update = staticmethod(rmsprop)

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False):
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        s = {"step": step_tensor(), "square_avg": zeros_state(p)}
        if group["momentum"] > 0:
            s["momentum_buffer"] = zeros_state(p)
        if group["centered"]:
            s["grad_avg"] = zeros_state(p)
        return s




class Adagrad(Optimizer):
    """Adagrad, exactly as ``torch.optim.Adagrad`` (state created eagerly, as there)."""

    _update = staticmethod(adagrad)

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None):
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._state_of(p, group)

    def _init_state(self, p, group):
        total = zeros_state(p)
        total._data += group["initial_accumulator_value"]
        return {"step": step_tensor(), "sum": total}




class Adadelta(Optimizer):
    """Adadelta, exactly as ``torch.optim.Adadelta``."""

    _update = staticmethod(adadelta)

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False, differentiable: bool = False):
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        check_range("rho value", group["rho"], 0.0, 1.0, strict_high=False)

    def _init_state(self, p, group):
        return {"step": step_tensor(), "square_avg": zeros_state(p), "acc_delta": zeros_state(p)}


