"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each works as a context manager and as a decorator.

>>> import ember
>>> x = ember.ones(2, requires_grad=True)
>>> with ember.no_grad():
...     (x * 2).requires_grad
False
"""
from __future__ import annotations

import functools


from ..state import STATE, is_inference  # noqa: F401  (the switches themselves live below the tensor)
from ..state import is_grad_enabled as _is_grad_enabled


def is_grad_enabled() -> bool:
    """Whether operations are being recorded for autograd (in this thread: grad mode is per thread)."""
    return _is_grad_enabled()


def is_inference_mode_enabled() -> bool:
    """Whether this thread is in inference mode."""
    return is_inference()


class _Mode:
    """Base of the grad-mode context managers; also usable as decorators."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()

    def __enter__(self):
        self.prev = (STATE.enabled, STATE.inference)
        self._set()
        return None

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self.prev
        return False


class no_grad(_Mode):
    """Disable gradient recording inside the block."""

    def __init__(self, orig_func=None):
        if orig_func is not None and not callable(orig_func):
            raise TypeError("no_grad() takes no arguments")

    def _set(self):
        STATE.enabled = False


class enable_grad(_Mode):
    """Enable gradient recording inside the block (inside ``no_grad``, say)."""

    def _set(self):
        STATE.enabled = True


class set_grad_enabled(_Mode):
    """Set gradient recording on or off; takes effect at once and is undone on exit of a ``with``."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self.prev = (STATE.enabled, STATE.inference)
        STATE.enabled = self.mode

    def clone(self):
        return set_grad_enabled(self.mode)

    def __call__(self, fn):
        STATE.enabled = self.prev[0]  # used as a decorator: only the call is affected
        return super().__call__(fn)

    def __enter__(self):
        return None

    def _set(self):
        STATE.enabled = self.mode


class inference_mode(_Mode):
    """Like ``no_grad``; tensors made inside are marked as inference tensors."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def clone(self):
        return inference_mode(self.mode)

    def _set(self):
        if self.mode:
            STATE.enabled = False
            STATE.inference = True
        else:
            STATE.inference = False
            STATE.enabled = True
