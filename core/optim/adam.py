"""The Adam family: Adam (amsgrad), AdamW, Adamax, NAdam, RAdam."""
from __future__ import annotations

from .optimizer import Optimizer, bump_step, check_range, foreach_update, step_tensor, zeros_state


def adam(params: list, grads: list, states: list, group: dict) -> None:
    """One Adam/AdamW step over a group's parameters."""
    beta1, beta2 = group["betas"]
    foreach_update("adam_update", params, grads, states, ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
                   (group["lr"], beta1, beta2, group["eps"], group["weight_decay"],
                    group.get("decoupled_weight_decay", False), group["maximize"]))


def adamax(params: list, grads: list, states: list, group: dict) -> None:
    """One Adamax step over a group's parameters."""
    beta1, beta2 = group["betas"]
    foreach_update("adamax_update", params, grads, states, ("exp_avg", "exp_inf"),
                   (group["lr"], beta1, beta2, group["eps"], group["weight_decay"], group["maximize"]))


def radam(params: list, grads: list, states: list, group: dict) -> None:
    """One RAdam step over a group's parameters."""
    beta1, beta2 = group["betas"]
    foreach_update("radam_update", params, grads, states, ("exp_avg", "exp_avg_sq"),
                   (group["lr"], beta1, beta2, group["eps"], group["weight_decay"], group["decoupled_weight_decay"],
                    group["maximize"]))


def nadam(params: list, grads: list, states: list, group: dict) -> None:
    """One NAdam step over a group's parameters (``mu_product`` kept in float32 as PyTorch does)."""
    beta1, beta2 = group["betas"]
    decay = group["momentum_decay"]
    for p, g, s in zip(params, grads, states):
        step = bump_step(s)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        prod = s["mu_product"]._data
        prod *= mu
        p._dev.kernels["nadam_update"](p._data, g._data, s["exp_avg"]._data, s["exp_avg_sq"]._data, step, mu,
                                       float(prod), mu_next, group["lr"], beta1, beta2, group["eps"],
                                       group["weight_decay"], group["decoupled_weight_decay"], group["maximize"])


class _AdamBase(Optimizer):
    """Settings checks and state shared by the Adam family."""

    _state_keys = ("exp_avg", "exp_avg_sq")

    def _check_group(self, group):
        super()._check_group(group)
        beta1, beta2 = group["betas"]
        check_range("beta parameter at index 0", beta1, 0.0, 1.0)
        check_range("beta parameter at index 1", beta2, 0.0, 1.0)

    def _init_state(self, p, group):
        s = {"step": step_tensor()}
        for key in self._state_keys:
            s[key] = zeros_state(p)
        if group.get("amsgrad"):
            s["max_exp_avg_sq"] = zeros_state(p)
        return s


class Adam(_AdamBase):
    """Adam (``amsgrad``, ``decoupled_weight_decay`` for AdamW), exactly as ``torch.optim.Adam``.

    >>> import ember
    >>> w = ember.ones(1, requires_grad=True)
    >>> opt = ember.optim.Adam([w], lr=0.1)
    >>> w.sum().backward(); opt.step(); w
    tensor([0.9000], requires_grad=True)
    """

    _update = staticmethod(adam)

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam step)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False, foreach=None,
                 capturable: bool = False, differentiable: bool = False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class Adamax(_AdamBase):
    """Adamax (Adam with the infinity norm), exactly as ``torch.optim.Adamax``."""

    _state_keys = ("exp_avg", "exp_inf")
    _update = staticmethod(adamax)

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)


class NAdam(_AdamBase):
    """Adam with Nesterov momentum and momentum decay, exactly as ``torch.optim.NAdam``."""

    _update = staticmethod(nadam)

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        s = super()._init_state(p, group)
        s["mu_product"] = step_tensor()
        s["mu_product"]._data += 1
        return s


class RAdam(_AdamBase):
    """Rectified Adam, exactly as ``torch.optim.RAdam``."""

    _update = staticmethod(radam)

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)
