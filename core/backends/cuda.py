"""``ember.backends.cuda``: ``matmul.allow_tf32`` and PyTorch's other CUDA switches (see :mod:`ember.backends`)."""
from __future__ import annotations

import contextlib

from ..backend import BACKENDS
from ..runtime import MATMUL_FLAGS


class _Matmul:
    """``ember.backends.cuda.matmul``: reads and writes the flags the CUDA backend's matmul consults."""

    def __getattr__(self, name):
        if name in MATMUL_FLAGS:
            return MATMUL_FLAGS[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name not in MATMUL_FLAGS:
            raise AttributeError(f"Unknown attribute {name}")
        MATMUL_FLAGS[name] = value


matmul = _Matmul()
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether ember has a CUDA backend registered (CuPy installed or not)."""
    return "cuda" in BACKENDS


def _switch(kind):
    def enabled() -> bool:
        return _SDP[kind]

    def enable(on: bool) -> None:
        _SDP[kind] = bool(on)

    enabled.__doc__ = f"Whether the {kind} attention path may be used (ember has one attention path)."
    enable.__doc__ = f"Allow or forbid the {kind} attention path (recorded; ember has one attention path)."
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _switch("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _switch("mem_efficient")
math_sdp_enabled, enable_math_sdp = _switch("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _switch("cudnn")


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """Set the attention switches inside the block (PyTorch's deprecated context manager)."""
    saved = dict(_SDP)
    _SDP.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _SDP.update(saved)


def preferred_linalg_library(backend=None) -> str:
    """The CUDA linear-algebra library: CuPy's (cuSOLVER) in ember."""
    return "cusolver"


def preferred_blas_library(backend=None) -> str:
    """The CUDA BLAS: cuBLAS through CuPy in ember."""
    return "cublas"
