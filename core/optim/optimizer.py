"""The optimizer base: parameter groups, per-parameter state, state dicts and hooks.

A subclass validates and stores its settings, says how a parameter's state starts
(``_init_state``) and names the update function (``_update``): a plain function over one group's
parameters, gradients and states that calls the device's fused update kernel per parameter.

>>> import ember
>>> w = ember.ones(2, requires_grad=True)
>>> opt = ember.optim.SGD([w], lr=0.5)
>>> (w * w).sum().backward(); opt.step(); w
tensor([0., 0.], requires_grad=True)
"""
from __future__ import annotations

import copy
from itertools import chain
from typing import Any, Callable

from ..autograd.function import _Handle
from ..autograd.grad_mode import enable_grad, no_grad
from ..dispatch import broadcast_error
from ..ops.creation import tensor
from ..tensor import Tensor, _wrap


# per-parameter state that has the parameter's shape (checked before a step)
_PARAM_SHAPED = {"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "square_avg", "acc_delta", "sum",
                 "prev", "step_size", "ax", "grad_avg", "variance"}


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()

_global_pre_hooks: list = []
_global_post_hooks: list = []


def register_optimizer_step_pre_hook(hook: Callable) -> _Handle:
    """Run ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``."""
    _global_pre_hooks.append(hook)
    return _Handle(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> _Handle:
    """Run ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    _global_post_hooks.append(hook)
    return _Handle(_global_post_hooks, hook)


# settings that must be >= 0, with PyTorch's names for them in error messages
NON_NEGATIVE = {"lr": "learning rate", "eps": "epsilon value", "momentum": "momentum value",
                "weight_decay": "weight_decay value", "alpha": "alpha value", "lr_decay": "lr_decay value",
                "initial_accumulator_value": "initial_accumulator_value value",
                "momentum_decay": "momentum_decay value", "rho": "rho value"}


def check_range(name: str, value, low=0.0, high=None, strict_high=True) -> None:
    """Raise PyTorch's ``ValueError`` when a setting is out of range (``lr``, ``eps``, betas, ...)."""
    if isinstance(value, Tensor):
        value = value.item()
    if value < low or (high is not None and (value >= high if strict_high else value > high)):
        raise ValueError(f"Invalid {name}: {value}")


class Optimizer:
    """Base class of all optimizers (``params`` is an iterable of tensors or of group dicts)."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: dict = {}
        self.param_groups: list = []
        self._step_pre_hooks: list = []
        self._step_post_hooks: list = []
        self._sd_pre_hooks: list = []
        self._sd_post_hooks: list = []
        self._load_pre_hooks: list = []
        self._load_post_hooks: list = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {type(params).__name__}")
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict) -> None:
        """Add a group (a dict with ``params`` and optional per-group settings) to optimize."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        params = list(params)
        seen = set()
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
            if id(p) in seen:
                raise ValueError("optimizer contains a parameter group with duplicate parameters; "
                                 "in future, this will cause an error")
            seen.add(id(p))
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & seen:
            raise ValueError("some parameters appear in more than one parameter group")
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            group.setdefault(name, default)
        self._check_group(group)
        self.param_groups.append(group)

    def _check_group(self, group: dict) -> None:
        """Validate one group's settings: every known non-negative setting, then the subclass's own checks."""
        for key, name in NON_NEGATIVE.items():
            if key in group and group[key] is not required:
                check_range(name, group[key])

    # ------------------------------------------------------------------ stepping
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to None by default, else to zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if g._fn is not None:
                        g = g.detach()
                        p._grad = g
                    g._dev.kernels["fill_"](g._data, 0)
                    g._bump()

    def _init_state(self, p: Tensor, group: dict) -> dict:
        """The state of a parameter before its first step."""
        return {}

    @staticmethod
    def _update(params: list, grads: list, states: list, group: dict) -> None:
        raise NotImplementedError

    def step(self, closure: Callable | None = None):
        """Perform one update; ``closure`` re-evaluates the model and returns the loss."""
        args, kwargs = (closure,), {}
        for hook in chain(_global_pre_hooks, self._step_pre_hooks):
            out = hook(self, args, kwargs)
            if out is not None:
                args, kwargs = out
        loss = self._step(*args, **kwargs)
        self._opt_called = True  # schedulers warn when stepped before their optimizer
        for hook in chain(self._step_post_hooks, _global_post_hooks):
            hook(self, args, kwargs)
        return loss

    def _validate(self) -> None:
        """Check every gradient (and every parameter-shaped state) before any update, so that a step that
        fails leaves the parameters and the optimizer's state exactly as they were."""
        name = type(self).__name__
        for group in self.param_groups:
            for p in group["params"]:
                g = p._grad
                if g is None:
                    continue
                if not isinstance(g, Tensor):
                    raise TypeError(f"{name}.step(): the gradient of a parameter must be a Tensor, got "
                                    f"{type(g).__name__}")
                if g._data.shape != p._data.shape:
                    raise RuntimeError(f"{name}.step(): a gradient of shape {list(g.shape)} does not match its "
                                       f"parameter of shape {list(p.shape)}: "
                                       f"{broadcast_error([p.shape, g.shape]) or 'the shapes differ'}")
                if g._dev is not p._dev:
                    raise RuntimeError(f"{name}.step(): expected the gradient on the parameter's device "
                                       f"{p.device}, got {g.device}")
                for key, v in (self.state.get(p) or {}).items():
                    if key in _PARAM_SHAPED and isinstance(v, Tensor) and v._data.shape != p._data.shape:
                        raise RuntimeError(f"{name}.step(): state {key!r} of shape {list(v.shape)} does not match "
                                           f"its parameter of shape {list(p.shape)}")

    def _step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._validate()
        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p._grad is not None]
                if not params:
                    continue
                states = [self._state_of(p, group) for p in params]
                self._update(params, [p._grad for p in params], states, group)
                for p in params:
                    p._bump()
        return loss

    def _state_of(self, p, group):
        s = self.state.get(p)
        if not s:
            s = self.state[p] = self._init_state(p, group)
        return s

    # ------------------------------------------------------------------ hooks
    def register_step_pre_hook(self, hook: Callable) -> _Handle:
        """``hook(optimizer, args, kwargs)`` before ``step``; may return new ``(args, kwargs)``."""
        self._step_pre_hooks.append(hook)
        return _Handle(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> _Handle:
        """``hook(optimizer, args, kwargs)`` after ``step``."""
        self._step_post_hooks.append(hook)
        return _Handle(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _Handle:
        return _add_hook(self._sd_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _Handle:
        return _add_hook(self._sd_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> _Handle:
        return _add_hook(self._load_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> _Handle:
        return _add_hook(self._load_post_hooks, hook, prepend)

    # ------------------------------------------------------------------ state dicts
    def state_dict(self) -> dict:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}`` as in PyTorch."""
        for hook in self._sd_pre_hooks:
            hook(self)
        index: dict = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in g["params"]]
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if s and id(p) in index}
        sd = {"state": state, "param_groups": groups}
        for hook in self._sd_post_hooks:
            out = hook(self, sd)
            if out is not None:
                sd = out
        return sd

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore state saved by :meth:`state_dict`; checks the groups match before changing anything."""
        for hook in self._load_pre_hooks:
            out = hook(self, state_dict)
            if out is not None:
                state_dict = out
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict or "state" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with 'state' and 'param_groups' entries")
        saved = state_dict["param_groups"]
        groups = self.param_groups
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups "
                             f"(the optimizer has {len(groups)}, the state dict {len(saved)})")
        for i, (g, s) in enumerate(zip(groups, saved)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 f"optimizer's group (group {i}: {len(s['params'])} saved vs {len(g['params'])})")
        id_map = {old: p for g, s in zip(groups, saved) for old, p in zip(s["params"], g["params"])}
        new_state = {}
        for key, value in state_dict["state"].items():
            if key not in id_map:
                raise ValueError(f"loaded state dict has state for parameter index {key}, which no group holds")
            p = id_map[key]
            new_state[p] = {k: _cast_state(p, k, v) for k, v in value.items()}
        new_groups = []
        for g, s in zip(groups, saved):
            ng = copy.deepcopy({k: v for k, v in s.items() if k != "params"})
            ng["params"] = g["params"]
            new_groups.append(ng)
        self.state = new_state
        self.param_groups = new_groups
        for hook in self._load_post_hooks:
            hook(self)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("_step_pre_hooks", "_step_post_hooks", "_sd_pre_hooks", "_sd_post_hooks",
                     "_load_pre_hooks", "_load_post_hooks"):
            self.__dict__.setdefault(name, [])

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {g[k]}" for k in sorted(g) if k != "params")
        lines.append(")")
        return "\n".join(lines)


def _add_hook(hooks: list, hook, prepend: bool) -> _Handle:
    if prepend:
        hooks.insert(0, hook)
    else:
        hooks.append(hook)
    return _Handle(hooks, hook)


def _cast_state(p: Tensor, key: str, value: Any):
    """A private copy of one saved state value on the parameter's device (floating state in its dtype)."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    dev = value._dev if key == "step" else p._dev
    arr = dev.backend.from_numpy(value._dev.backend.to_numpy(value._data), dev.index, copy=True)
    if key != "step" and value.is_floating_point() and p.is_floating_point():
        arr = dev.kernels["astype"](arr, dev.backend.array_dtype(p.dtype))
    return _wrap(arr, dev)


def zeros_state(p: Tensor) -> Tensor:
    """A zero tensor like ``p`` (same shape, dtype, device), outside autograd."""
    return _wrap(p._dev.backend.xp.zeros_like(p._data), p._dev)


def step_tensor() -> Tensor:
    """A parameter's step counter: a float32 scalar on the CPU, as PyTorch keeps it."""
    return tensor(0.0, device="cpu")


def foreach_update(kernel: str, params: list, grads: list, states: list, state_keys: tuple, settings: tuple,
                   pass_step: bool = True) -> None:
    """Advance each parameter's step and run ``kernel(p, g, *state arrays, [step,] *settings)`` on it.

    A state key missing from a parameter's state passes None (an option that is off).
    """
    for p, g, s in zip(params, grads, states):
        step = bump_step(s)
        arrays = [None if s.get(k) is None else s[k]._data for k in state_keys]
        if pass_step:
            arrays.append(step)
        p._dev.kernels[kernel](p._data, g._data, *arrays, *settings)


def bump_step(state: dict) -> float:
    """Increment ``state['step']`` in place and return the new value as a float."""
    s = state["step"]
    s._data += 1
    return float(s._data)
