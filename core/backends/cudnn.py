"""``ember.backends.cudnn``: PyTorch's cuDNN switches (see :mod:`ember.backends`)."""
from __future__ import annotations

import contextlib

from ..backend import BACKENDS

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def _frontend():
    try:
        import cudnn  # NVIDIA's cuDNN frontend (nvidia-cudnn-frontend)
    except ImportError:
        return None
    return cudnn


def is_available() -> bool:
    """Whether the CUDA backend is usable and NVIDIA's cuDNN frontend is importable."""
    cuda = BACKENDS.get("cuda")
    return bool(cuda is not None and cuda.is_available() and _frontend() is not None)


def version():
    """cuDNN's version as an int (e.g. 90300), or None when cuDNN is not available."""
    if not is_available():
        return None
    fe = _frontend()
    v = fe.backend_version() if hasattr(fe, "backend_version") else None
    return int(v) if v is not None else None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN could run an op on ``tensor`` (a float CUDA tensor with cuDNN enabled and available)."""
    return bool(enabled and is_available() and tensor.device.type == "cuda" and tensor.is_floating_point())


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10, deterministic: bool = False,
          allow_tf32: bool = True):
    """Set the switches inside the block and restore them after (PyTorch's defaults for ``flags()``)."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {n: g[n] for n in names}
    g.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit, deterministic=deterministic,
             allow_tf32=allow_tf32)
    try:
        yield
    finally:
        g.update(saved)
