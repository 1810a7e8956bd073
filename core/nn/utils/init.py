"""``nn.utils.skip_init``: build a module without running its parameter initialisation."""
from __future__ import annotations

import inspect

from ..modules.module import Module


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` on ``device`` (default ``"cpu"``), its parameters left to be filled.

    PyTorch builds the module on the meta device and allocates it empty. ember has no meta device,
    so the module's own initialisation runs; the contract is the same (the values are unspecified,
    to be overwritten), and like PyTorch it requires a module that takes a ``device`` argument.

    >>> import ember
    >>> ember.nn.utils.skip_init(ember.nn.Linear, 5, 1).weight.shape
    ember.Size([1, 5])
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs)
