"""Legacy ``nn.utils.weight_norm``: ``weight = g * v / ||v||`` recomputed by a forward pre-hook.

Prefer :func:`ember.nn.utils.parametrizations.weight_norm`; this form is kept because older
checkpoints hold its ``weight_g``/``weight_v`` parameters.

>>> import warnings, ember
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     m = ember.nn.utils.weight_norm(ember.nn.Linear(20, 40), name="weight")
>>> m.weight_g.size(), m.weight_v.size()
(ember.Size([40, 1]), ember.Size([40, 20]))
"""
from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ..modules.module import Module
from ..parameter import Parameter
from .parametrizations import _weight_norm, norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]

T_module = TypeVar("T_module", bound=Module)

_DEPRECATED = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
               "`torch.nn.utils.parametrizations.weight_norm`.")


def _pre_hooks(module):
    """``(key, hook)`` of the module's forward pre-hooks."""
    return list(module._forward_pre_hooks.items())


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Any:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name: str, dim: int) -> "WeightNorm":
        warnings.warn(_DEPRECATED, FutureWarning, stacklevel=3)
        for _, hook in _pre_hooks(module):
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: int | None = 0) -> T_module:
    """Replace parameter ``name`` by ``name_g`` (magnitude) and ``name_v`` (direction); warns
    ``FutureWarning`` as PyTorch does. ``dim=None`` takes one norm over the whole tensor."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Fold ``name_g``/``name_v`` back into one parameter ``name`` and drop the hook."""
    for k, hook in _pre_hooks(module):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
