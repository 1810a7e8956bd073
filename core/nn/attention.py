"""``ember.nn.attention``: choosing the kernels of ``F.scaled_dot_product_attention``.

ember computes attention with one path, PyTorch's math formulation, on every backend; ``sdpa_kernel``
records the choice in the switches ``ember.backends.cuda.*_sdp_enabled`` read back, exactly as PyTorch's
does, and restores them on exit.  No fused flash or memory-efficient kernel exists here, so the
``can_use_*`` checks answer False.

>>> import ember
>>> from ember.nn.attention import SDPBackend, sdpa_kernel
>>> with sdpa_kernel(SDPBackend.MATH):
...     ember.backends.cuda.flash_sdp_enabled(), ember.backends.cuda.math_sdp_enabled()
(False, True)
"""
from __future__ import annotations

import contextlib
import enum
import warnings

from ..backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "can_use_flash_attention",
           "can_use_efficient_attention"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The kernels PyTorch can run scaled dot-product attention with (same names and values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


# switch name in ember.backends.cuda -> the backend it enables
_SWITCHES = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
             "mem_efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}


def _current() -> list:
    return [b for k, b in _SWITCHES.items() if _cuda._SDP[k]]


def _set(backends) -> None:
    for k, b in _SWITCHES.items():
        _cuda._SDP[k] = b in backends


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Enable only ``backends`` (one :class:`SDPBackend` or a list) inside the block; restore on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    backends = [backends] if isinstance(backends, SDPBackend) else list(dict.fromkeys(backends))
    previous = _current()
    try:
        _set(backends)
        yield {}
    finally:
        _set(previous)


def _no_fused_kernel(what: str, debug: bool) -> bool:
    if debug:
        warnings.warn(f"{what} is not available in ember: attention runs the math path", UserWarning, stacklevel=3)
    return False


def can_use_flash_attention(params=None, debug: bool = False) -> bool:
    """Whether a fused flash-attention kernel could run: never in ember (the math path always does)."""
    return _no_fused_kernel("Flash attention", debug)


def can_use_efficient_attention(params=None, debug: bool = False) -> bool:
    """Whether the memory-efficient attention kernel could run: never in ember (the math path always does)."""
    return _no_fused_kernel("Memory-efficient attention", debug)


from ..registry import show_module  # noqa: E402
from . import _flex_attention  # noqa: E402

show_module(f"{__name__}.flex_attention", _flex_attention)  # PyTorch's torch.nn.attention.flex_attention
