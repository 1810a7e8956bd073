"""The functions of PyTorch's extension module (``torch._C``) that libraries call directly, shown by
``ember._C``: API-usage logging, the tracing state, and ``_nn._parse_to`` (the argument parser of ``.to()``).

>>> import ember
>>> from ember._c_functions import _nn
>>> _nn._parse_to("cpu", ember.float64, non_blocking=True)
(device(type='cpu'), ember.float64, True, None)
"""
from __future__ import annotations

import sys
import types

from .backend import device as _device
from .ops.conversion import _parse_to as _parse_device_dtype

__all__ = ["_log_api_usage_once", "_get_tracing_state", "_jit_clear_class_registry", "_nn"]


def _log_api_usage_once(event: str) -> None:
    """Record that an API was used (PyTorch's usage telemetry, keyed by ``event``): ember records nothing."""
    if not isinstance(event, str):
        raise TypeError(f"_log_api_usage_once(): argument 'event' must be str, not {type(event).__name__}")


def _jit_clear_class_registry() -> None:
    """Forget the TorchScript classes compiled so far: ember compiles none, so there is nothing to forget."""


class _TracingState:
    """What :func:`_get_tracing_state` returns while ``ember.jit.trace`` records a forward pass."""

    def __repr__(self):
        return "<ember jit tracing state>"


_TRACING = _TracingState()


IS_TRACING: list = [lambda: False]  # ember.jit enters its is_tracing here when it loads (no trace before that)


def _get_tracing_state():
    """The tracing state while ``ember.jit.trace`` records (true as a condition), else None."""
    return _TRACING if IS_TRACING[0]() else None


def _parse_to(*args, **kwargs):
    """``(device, dtype, non_blocking, memory_format)`` from ``.to()``'s arguments, as PyTorch parses them."""
    non_blocking = bool(kwargs.pop("non_blocking", False))
    memory_format = kwargs.pop("memory_format", None)
    kwargs.pop("copy", None)
    dev, dt = _parse_device_dtype(args, dict(kwargs))
    return (None if dev is None else _device(dev), dt, non_blocking, memory_format)


_nn = types.ModuleType("ember._C._nn", "PyTorch's torch._C._nn: functions nn code reaches directly.")
_nn._parse_to = _parse_to
sys.modules[_nn.__name__] = _nn  # ``import torch._C._nn`` finds it
