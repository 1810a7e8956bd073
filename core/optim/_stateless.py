"""``ember.optim.swap_in_optimizer_params_and_state``: run an optimizer on other parameters and state for a while.

>>> import ember
>>> w = ember.ones(2, requires_grad=True)
>>> opt = ember.optim.SGD([w], lr=0.5, momentum=0.9)
>>> w.grad = ember.ones(2); opt.step()
>>> other = ember.zeros(2, requires_grad=True); other.grad = ember.ones(2)
>>> with ember.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, opt.state_dict()):
...     opt.step()
>>> other.detach(), w.detach()
(tensor([-0.9500, -0.9500]), tensor([0.5000, 0.5000]))
"""
from __future__ import annotations

import contextlib
from collections import defaultdict

from ..tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _check_state(state) -> dict:
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids "
                           f"to per-param state dicts, got {type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _check_group(idx: int, group: dict, swapin) -> list:
    if not isinstance(swapin, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed "
                           "by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {idx} has a different number of params than the live "
                           "optimizer param group.")
    swapin_only = [k for k in swapin if k not in group]
    live_only = [k for k in group if k not in swapin]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live "
                           f"optimizer group keys for group {idx}. Keys only in swap-in: {swapin_only}. Keys only "
                           f"in live: {live_only}.")
    return ids


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """Inside the block, ``optimizer`` works on ``swapin_parameters`` (in ``param_groups`` order, as
    ``model.named_parameters()`` gives them) with the state and hyperparameters of ``swapin_optim_state``
    (an ``optimizer.state_dict()``); its own parameters, groups and state are restored on exit.  In-place
    edits of the swapped-in state tensors reach ``swapin_optim_state``; new entries do not."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, "
                           f"got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    flat = list(swapin_parameters.values())
    offset, seen, plan = 0, set(), []
    for idx, (group, swapin) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _check_group(idx, group, swapin)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match optimizer.param_groups "
                               "ordering.")
        plan.append((group, swapin, flat[offset:offset + len(ids)], ids))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids "
                           f"from param_groups[*]['params']; got extra keys {extra!r}.")
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        new_state = defaultdict(dict)
        for group, swapin, params, ids in plan:
            group["params"] = params
            group.update({k: v for k, v in swapin.items() if k != "params"})
            for p, i in zip(params, ids):
                new_state[p] = dict(state.get(i, {}))
        optimizer.state = new_state
        yield
    finally:
        for group, snap in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snap)
        optimizer.state = original_state
