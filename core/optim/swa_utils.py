"""Stochastic weight averaging and EMA: ``AveragedModel``, ``SWALR``, ``update_bn`` and the averaging functions,
as ``torch.optim.swa_utils`` defines them."""
from __future__ import annotations

import copy
import itertools
import math

from ..autograd.grad_mode import no_grad
from ..nn.modules.normalization import _BatchNorm
from ..nn.modules.module import Module
from ..ops.creation import tensor
from .lr_scheduler import LRScheduler


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In place over lists: ``ema = decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for e, c in zip(ema_param_list, current_param_list):
            if e.is_floating_point() or e.is_complex():
                e.lerp_(c, 1 - decay)
            else:
                e.copy_(e * decay + c * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """In place over lists: the running mean ``avg += (current - avg) / (n + 1)``."""
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        n = float(num_averaged)
        for a, c in zip(averaged_param_list, current_param_list):
            if a.is_floating_point() or a.is_complex():
                a.lerp_(c, 1 / (n + 1))
            else:
                a.add_((c - a) / (n + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``(ema, current, n) -> decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``(avg, current, n) -> avg + (current - avg) / (n + 1)``."""
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers with ``use_buffers``) are averaged by
    :meth:`update_parameters`: the running mean by default (SWA), or ``avg_fn``/``multi_avg_fn`` (e.g. EMA)."""

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers: bool = False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @no_grad()
    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average (the first call copies them)."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        pairs = [(a.detach(), b.detach().to(a.device)) for a, b in zip(mine, theirs)]
        n = int(self.n_averaged.item())
        if n == 0:
            for a, b in pairs:
                a.copy_(b)
        elif self.avg_fn is not None:
            for a, b in pairs:
                a.copy_(self.avg_fn(a, b, self.n_averaged.to(a.device)))
        else:
            (self.multi_avg_fn or get_swa_multi_avg_fn())([a for a, _ in pairs], [b for _, b in pairs],
                                                          self.n_averaged)
        if not self.use_buffers:
            for a, b in zip(self.module.buffers(), model.buffers()):
                a.detach().copy_(b.detach().to(a.device))
        self.n_averaged += 1


@no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute every BatchNorm's running statistics with one pass over ``loader`` (cumulative averages)."""
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` (cosine or linear), then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1):
        lrs = list(swa_lr) if isinstance(swa_lr, (list, tuple)) else [swa_lr] * len(optimizer.param_groups)
        if len(lrs) != len(optimizer.param_groups):
            raise ValueError(f"swa_lr must have the same length as optimizer.param_groups: swa_lr has {len(lrs)}, "
                             f"optimizer.param_groups has {len(optimizer.param_groups)}")
        for lr, group in zip(lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self._anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self._anneal_strategy == "cos" else t

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev)]
