"""Rprop, ASGD, SparseAdam, Adafactor and Muon, as ``torch.optim`` defines them.

Their updates are written with ember's tensor ops (run under ``no_grad`` by ``Optimizer.step``), so they run on
every backend without kernels of their own.
"""
from __future__ import annotations

import math

from ..dtypes import finfo
from ..ops.creation import full_like, tensor, zeros
from ..ops.pointwise import where
from .optimizer import Optimizer, bump_step, check_range, step_tensor, zeros_state


def _scalar(value):
    """A float32 CPU scalar, as PyTorch keeps per-parameter scalars such as ASGD's ``eta`` and ``mu``."""
    return tensor(float(value), device="cpu")


# ---------------------------------------------------------------------------------------------------- Rprop
def rprop(params: list, grads: list, states: list, group: dict) -> None:
    """One Rprop step: per-coordinate step sizes grow on a steady sign and shrink (and skip) on a flip."""
    etaminus, etaplus = group["etas"]
    lo, hi = group["step_sizes"]
    for p, g, s in zip(params, grads, states):
        bump_step(s)
        g = -g if group["maximize"] else g
        prev, step_size = s["prev"], s["step_size"]
        sign = (g * prev).sign()
        factor = sign.gt(0) * etaplus + sign.lt(0) * etaminus + sign.eq(0) * 1.0
        step_size.mul_(factor.to(step_size.dtype)).clamp_(lo, hi)
        g = g.masked_fill(sign.lt(0), 0)
        p.addcmul_(g.sign(), step_size, value=-1)
        prev.copy_(g)


class Rprop(Optimizer):
    """The resilient backpropagation algorithm, exactly as ``torch.optim.Rprop``."""

    _update = staticmethod(rprop)

    def __init__(self, params, lr: float = 1e-2, etas: tuple = (0.5, 1.2), step_sizes: tuple = (1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False, differentiable: bool = False):
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        return {"step": step_tensor(), "prev": zeros_state(p), "step_size": full_like(p.detach(), group["lr"])}


# ----------------------------------------------------------------------------------------------------- ASGD
def asgd(params: list, grads: list, states: list, group: dict) -> None:
    """One averaged-SGD step; ``ax`` holds the running average of the parameters."""
    lr, lambd, alpha, t0, wd = group["lr"], group["lambd"], group["alpha"], group["t0"], group["weight_decay"]
    for p, g, s in zip(params, grads, states):
        g = -g if group["maximize"] else g
        step = bump_step(s)
        if wd != 0:
            g = g.add(p, alpha=wd)
        eta = s["eta"].item()
        p.mul_(1 - lambd * eta)
        p.add_(g, alpha=-eta)
        if s["mu"].item() != 1:
            s["ax"].add_(p.sub(s["ax"]).mul_(s["mu"].item()))
        else:
            s["ax"].copy_(p)
        s["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
        s["mu"].fill_(1 / max(1, step - t0))


class ASGD(Optimizer):
    """Averaged stochastic gradient descent, exactly as ``torch.optim.ASGD``."""

    _update = staticmethod(asgd)

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach=None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        return {"step": step_tensor(), "eta": _scalar(group["lr"]), "mu": _scalar(1.0), "ax": zeros_state(p)}


# ----------------------------------------------------------------------------------------------- SparseAdam
def sparse_adam(params: list, grads: list, states: list, group: dict) -> None:
    """Adam on the rows a gradient touches (the lazy update of ``torch.optim.SparseAdam``).

    ember's gradients are dense: the touched rows (along dim 0) are those with a nonzero gradient entry, which are
    the rows a sparse ``nn.Embedding`` gradient lists in PyTorch.
    """
    beta1, beta2 = group["betas"]
    for p, g, s in zip(params, grads, states):
        g = -g if group["maximize"] else g
        rows = g.ne(0).reshape(g.shape[0], -1).any(1) if g.dim() else g.ne(0)
        if not bool(rows.any()):
            continue
        s["step"] += 1
        mask = rows.reshape((-1,) + (1,) * (g.dim() - 1)) if g.dim() else rows
        m, v = s["exp_avg"], s["exp_avg_sq"]
        m.copy_(where(mask, m + (g - m) * (1 - beta1), m))
        v.copy_(where(mask, v + (g * g - v) * (1 - beta2), v))
        step = s["step"]
        step_size = group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        p.sub_(mask * (m / (v.sqrt() + group["eps"])) * step_size)


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: Adam that updates only the rows a gradient touches (embedding tables)."""

    _update = staticmethod(sparse_adam)

    def __init__(self, params, lr: float = 1e-3, betas: tuple = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False):
        check_range("learning rate", lr, 0.0)
        check_range("epsilon value", eps, 0.0)
        check_range("beta parameter at index 0", betas[0], 0.0, 1.0)
        check_range("beta parameter at index 1", betas[1], 0.0, 1.0)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))

    def _init_state(self, p, group):
        return {"step": 0, "exp_avg": zeros_state(p), "exp_avg_sq": zeros_state(p)}


# ------------------------------------------------------------------------------------------------ Adafactor
def adafactor(params: list, grads: list, states: list, group: dict) -> None:
    """One Adafactor step: row and column second-moment factors for matrices, a full one for vectors."""
    lr, d, wd = group["lr"], group["d"], group["weight_decay"]
    eps1, eps2 = group["eps"]
    for p, g, s in zip(params, grads, states):
        g = -g if group["maximize"] else g
        step = bump_step(s)
        e1 = eps1 if eps1 is not None else _finfo_eps(p)
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
        if wd != 0:
            p.mul_(1 - lr * wd)
        if g.dim() > 1:
            s["row_var"].lerp_(g.norm(dim=-1, keepdim=True).square().div(g.shape[-1]), one_minus_beta2)
            s["col_var"].lerp_(g.norm(dim=-2, keepdim=True).square().div(g.shape[-2]), one_minus_beta2)
            var = s["row_var"] @ s["col_var"]
            var = var / s["row_var"].mean(dim=-2, keepdim=True).clamp(min=e1)
        else:
            s["variance"].lerp_(g * g, one_minus_beta2)
            var = s["variance"].clone()
        update = var.clamp(min=e1 * e1).rsqrt() * g
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))
        p.add_(update, alpha=-alpha / denom)


def _finfo_eps(p) -> float:
    return finfo(p.dtype).eps


class Adafactor(Optimizer):
    """Adafactor (factored second moments, relative step sizes), exactly as ``torch.optim.Adafactor``."""

    _update = staticmethod(adafactor)

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach=None, maximize: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _check_group(self, group):
        pass  # checked in __init__ with Adafactor's own messages

    def _init_state(self, p, group):
        s = {"step": step_tensor()}
        if p.dim() > 1:
            s["row_var"] = zeros(*p.shape[:-1], 1, dtype=p.dtype, device=p.device)
            s["col_var"] = zeros(*p.shape[:-2], 1, p.shape[-1], dtype=p.dtype, device=p.device)
        else:
            s["variance"] = zeros_state(p)
        return s


# ----------------------------------------------------------------------------------------------------- Muon
def _newton_schulz(g, coefficients, steps: int, eps: float):
    """The quintic Newton-Schulz iteration towards the orthogonal factor of ``g`` (PyTorch's Muon)."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if g.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * (gram @ gram)) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def muon(params: list, grads: list, states: list, group: dict) -> None:
    """One Muon step: momentum, orthogonalised by Newton-Schulz, with decoupled weight decay."""
    lr, wd, mom = group["lr"], group["weight_decay"], group["momentum"]
    for p, g, s in zip(params, grads, states):
        buf = s.get("momentum_buffer")
        if buf is None:
            buf = s["momentum_buffer"] = zeros_state(p)
        buf.lerp_(g, 1 - mom)
        update = g.lerp(buf, mom) if group["nesterov"] else buf
        ortho = _newton_schulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        a, b = p.shape[:2]
        fn = group["adjust_lr_fn"]
        ratio = math.sqrt(max(1, a / b)) if fn in (None, "original") else 0.2 * math.sqrt(max(a, b))
        p.mul_(1 - lr * wd)
        p.add_(ortho.to(p.dtype), alpha=-lr * ratio)


class Muon(Optimizer):
    """Muon (momentum orthogonalised by Newton-Schulz) for 2-D parameters, as ``torch.optim.Muon``.

    PyTorch runs the Newton-Schulz iteration in bfloat16; ember runs it in the parameter's dtype, so its updates
    are the same iteration at higher precision."""

    _update = staticmethod(muon)

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple = (3.4445, -4.7750, 2.0315), eps: float = 1e-7,
                 ns_steps: int = 5, adjust_lr_fn: str | None = None):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _check_group(self, group):
        pass  # checked in __init__ with Muon's own messages

    def _init_state(self, p, group):
        return {}
