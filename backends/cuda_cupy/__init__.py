"""The CUDA backend: ember on CuPy.  Registered through the ``ember`` entry point; it reports itself
unavailable (with the reason) where CuPy or a GPU is missing."""
from __future__ import annotations

import numpy as np

import ember
from ember.backend import ArrayBackend, Backend

try:  # pragma: no cover - needs a GPU
    import cupy as _cp

    _n = _cp.cuda.runtime.getDeviceCount()
    _REASON = "" if _n > 0 else "no CUDA device is visible"
except Exception as exc:  # noqa: BLE001 - any import/driver failure means "unavailable"
    _cp = None
    _REASON = f"cupy is not usable here ({type(exc).__name__}: {exc})"


class CupyBackend(ArrayBackend):  # pragma: no cover - needs a GPU
    name = "cuda"

    def __init__(self):
        super().__init__(_cp)
        self._tables = {}

    def has_index(self):
        return True

    def device_count(self):
        return _cp.cuda.runtime.getDeviceCount()

    def current_device(self):
        return _cp.cuda.runtime.getDevice()

    def set_device(self, index):
        _cp.cuda.runtime.setDevice(index)

    def device_context(self, index):
        return _cp.cuda.Device(index)

    def from_numpy(self, array, index, copy=False, non_blocking=False):
        with _cp.cuda.Device(index or 0):
            return _cp.array(array, copy=True) if copy else _cp.asarray(array)

    def to_numpy(self, array):
        return _cp.asnumpy(array)

    def synchronize(self, index=None):
        _cp.cuda.Device(index or 0).synchronize() if index is not None else _cp.cuda.runtime.deviceSynchronize()

    def new_generator(self, index, seed):
        with _cp.cuda.Device(index or 0):
            return _cp.random.Generator(_cp.random.XORWOW(seed)) if hasattr(_cp.random, "XORWOW") \
                else _cp.random.default_rng(seed)

    def generator_state(self, gen):
        return np.zeros(8, dtype=np.uint8)

    def set_generator_state(self, gen, state):
        pass

    def memory_stats(self, index=None):
        pool = _cp.get_default_memory_pool()
        return {"allocated_bytes.all.current": pool.used_bytes(), "reserved_bytes.all.current": pool.total_bytes()}


class UnavailableCuda(Backend):
    """Stands in for CUDA where CuPy or a GPU is missing, and says why."""

    name = "cuda"

    def is_available(self):
        return False

    def unavailable_reason(self):
        return _REASON

    def has_index(self):
        return True

    def device_count(self):
        return 0


@ember.plugins.hookimpl
def ember_backends(registry):
    registry.add_backend(CupyBackend() if _cp is not None and not _REASON else UnavailableCuda())
