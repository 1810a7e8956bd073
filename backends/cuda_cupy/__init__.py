"""The CUDA backend: ember on CuPy.  Registered through the ``ember`` entry point; where CuPy or a
GPU is missing it registers a stand-in that reports the backend unavailable, with the reason.

The backend itself is :class:`ember_cuda_cupy.backend.CupyBackend`: the shared kernel library
adopted with ``cupy`` (its ``matmul`` is cuBLAS), fused elementwise kernels
(:mod:`~ember_cuda_cupy.fused`), cuDNN convolutions (:mod:`~ember_cuda_cupy.cudnn`), CuPy's memory
pool with peak statistics, streams, events, pinned host memory, per-device generators, IPC handles
(:mod:`~ember_cuda_cupy.ipc`, for ``ember.multiprocessing``) and NCCL collectives
(:mod:`~ember_cuda_cupy.nccl`, for ``ember.distributed``).
"""
from __future__ import annotations

import ember
from ember.backend import Backend


def _probe():
    """``(cupy module, "")`` where CuPy works and sees a GPU, else ``(None, reason)``."""
    try:
        import cupy

        n = cupy.cuda.runtime.getDeviceCount()
    except ModuleNotFoundError as exc:
        if exc.name != "cupy":
            return None, f"cupy is not usable here ({type(exc).__name__}: {exc})"
        return None, ("cupy is not installed: install the cuda extra that matches the NVIDIA driver, "
                      "ember[cuda] (cupy-cuda13x, drivers 580+) or ember[cuda12] (cupy-cuda12x, drivers 525+)")
    except Exception as exc:  # noqa: BLE001 - any import or driver failure means "unavailable"
        return None, f"cupy is not usable here ({type(exc).__name__}: {exc})"
    if n == 0:
        return None, "no CUDA device is visible"
    return cupy, ""


class UnavailableCuda(Backend):
    """Stands in for CUDA where CuPy or a GPU is missing, and says why."""

    name = "cuda"

    def __init__(self, reason: str):
        super().__init__()
        self.reason = reason

    def is_available(self):
        return False

    def unavailable_reason(self):
        return self.reason

    def has_index(self):
        return True

    def device_count(self):
        return 0


def make_backend() -> Backend:
    """The CUDA backend where it can run, else the stand-in with the reason."""
    cp, reason = _probe()
    if cp is None:
        return UnavailableCuda(reason)
    from .backend import CupyBackend

    try:
        return CupyBackend(cp)
    except Exception as exc:  # noqa: BLE001 - a broken CUDA set-up must not break ``import ember``
        return UnavailableCuda(f"the CUDA backend failed to start ({type(exc).__name__}: {exc})")


@ember.plugins.hookimpl
def ember_backends(registry):
    registry.add_backend(make_backend())
