"""The Adam family: Adam (amsgrad), AdamW, Adamax, NAdam, RAdam."""
from __future__ import annotations

from .optimizer import Optimizer, bump_step, check_range, step_tensor, zeros_state


class _AdamBase(Optimizer):
    """Settings checks and state shared by the Adam family."""

    _state_keys = ("exp_avg", "exp_avg_sq")

    def _check_group(self, group):
        super()._check_group(group)
        check_range("epsilon value", group["eps"])
        beta1, beta2 = group["betas"]
        check_range("beta parameter at index 0", beta1, 0.0, 1.0)
        check_range("beta parameter at index 1", beta2, 0.0, 1.0)
        check_range("weight_decay value", group["weight_decay"])

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

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False, fused=None,
                 decoupled_weight_decay: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    @staticmethod
    def _update(params, grads, states, group):
        adam(params, grads, states, group)


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the Adam step)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False, foreach=None,
                 capturable: bool = False, differentiable: bool = False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


def adam(params: list, grads: list, states: list, group: dict) -> None:
    """One Adam/AdamW step over a group's parameters."""
    lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    decoupled, maximize = group.get("decoupled_weight_decay", False), group["maximize"]
    for p, g, s in zip(params, grads, states):
        step = bump_step(s)
        vmax = s.get("max_exp_avg_sq") if group["amsgrad"] else None
        p._dev.kernels["adam_update"](p._data, g._data, s["exp_avg"]._data, s["exp_avg_sq"]._data,
                                      None if vmax is None else vmax._data, step, lr, beta1, beta2, eps, wd,
                                      decoupled, maximize)


class Adamax(_AdamBase):
    """Adamax (Adam with the infinity norm), exactly as ``torch.optim.Adamax``."""

    _state_keys = ("exp_avg", "exp_inf")

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach=None, *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @staticmethod
    def _update(params, grads, states, group):
        adamax(params, grads, states, group)


def adamax(params: list, grads: list, states: list, group: dict) -> None:
    """One Adamax step over a group's parameters."""
    lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    for p, g, s in zip(params, grads, states):
        step = bump_step(s)
        p._dev.kernels["adamax_update"](p._data, g._data, s["exp_avg"]._data, s["exp_inf"]._data, step, lr, beta1,
                                        beta2, eps, wd, group["maximize"])


class NAdam(_AdamBase):
    """Adam with Nesterov momentum and momentum decay, exactly as ``torch.optim.NAdam``."""

    def __init__(self, params, lr: float = 2e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach=None, maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _check_group(self, group):
        super()._check_group(group)
        check_range("momentum_decay value", group["momentum_decay"])

    def _init_state(self, p, group):
        s = super()._init_state(p, group)
        s["mu_product"] = step_tensor()
        s["mu_product"]._data += 1
        return s

    @staticmethod
    def _update(params, grads, states, group):
        nadam(params, grads, states, group)


def nadam(params: list, grads: list, states: list, group: dict) -> None:
    """One NAdam step over a group's parameters (``mu_product`` kept in float32 as PyTorch does)."""
    lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    decay = group["momentum_decay"]
    for p, g, s in zip(params, grads, states):
        step = bump_step(s)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * decay)))
        prod = s["mu_product"]._data
        prod *= mu
        p._dev.kernels["nadam_update"](p._data, g._data, s["exp_avg"]._data, s["exp_avg_sq"]._data, step, mu,
                                       float(prod), mu_next, lr, beta1, beta2, eps, wd,
                                       group["decoupled_weight_decay"], group["maximize"])


class RAdam(_AdamBase):
    """Rectified Adam, exactly as ``torch.optim.RAdam``."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @staticmethod
    def _update(params, grads, states, group):
        radam(params, grads, states, group)


def radam(params: list, grads: list, states: list, group: dict) -> None:
    """One RAdam step over a group's parameters."""
    lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    for p, g, s in zip(params, grads, states):
        step = bump_step(s)
        p._dev.kernels["radam_update"](p._data, g._data, s["exp_avg"]._data, s["exp_avg_sq"]._data, step, lr, beta1,
                                       beta2, eps, wd, group["decoupled_weight_decay"], group["maximize"])


__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam"]
