"""``ember.cpu``: the CPU device's module, as ``torch.cpu`` (the host is always there, one device, no streams).

>>> import ember
>>> ember.cpu.is_available(), ember.cpu.device_count()
(True, 1)
"""
from __future__ import annotations

import contextlib
import sys

from .amp.legacy import cpu_amp as amp

sys.modules[__name__ + ".amp"] = amp  # ``from ember.cpu.amp import autocast`` as in PyTorch


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU work completes before each call returns."""


def set_device(device) -> None:
    """Accepted for PyTorch's API; the CPU has one device."""


@contextlib.contextmanager
def device(device=None):
    yield
