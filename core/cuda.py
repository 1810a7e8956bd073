"""``ember.cuda``: CUDA device queries (the backend itself is the ``ember_cuda_cupy`` plugin)."""
from __future__ import annotations

from .plugins import REGISTRY


def _backend():
    return REGISTRY.backends.get("cuda")


def is_available() -> bool:
    """Whether a CUDA backend is registered and sees at least one GPU."""
    b = _backend()
    return b is not None and b.is_available()


def device_count() -> int:
    b = _backend()
    return b.device_count() if b is not None and b.is_available() else 0


def _require():
    b = _backend()
    if b is None or not b.is_available():
        reason = b.unavailable_reason() if b is not None else "no CUDA backend is registered"
        raise RuntimeError(f"CUDA is not available: {reason}")
    return b


def current_device() -> int:
    return _require().current_device()


def set_device(device) -> None:
    from .backend import device as _d

    idx = device if isinstance(device, int) else _d(device).index or 0
    _require().set_device(idx)


def synchronize(device=None) -> None:
    _require().synchronize(device)


def manual_seed(seed: int) -> None:
    from .random import default_generator

    if is_available():
        default_generator(f"cuda:{current_device()}").manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    from .random import default_generator

    for i in range(device_count()):
        default_generator(f"cuda:{i}").manual_seed(seed)


def is_initialized() -> bool:
    return is_available()
