"""A NumPy-backed test backend with several numbered devices (``fakegpu:0`` ... ``fakegpu:2``).

It exercises the multi-device code paths (device contexts, cross-device errors, copies, streams,
events, memory statistics, pinned memory, DataParallel) without a GPU.  Every array is tagged with
its device and every kernel refuses arrays of another device, so any silent mixing of devices in
the core shows up as an error.  ``non_blocking`` host-to-device copies from pinned memory run on a
worker thread (the device's "stream") and complete on ``synchronize()``; kernels on that device
wait for them, as kernels queued after a copy on one CUDA stream do.

It implements the optional parts of the backend contract it needs (several devices,
``synchronize``, device properties, memory statistics, pinned memory) and keeps the defaults of
:class:`ember.backend.Backend` for the others: the current device and its context, streams and
events (on top of its ``synchronize``), ``empty_cache``, and no IPC handles or device collectives.
"""
from __future__ import annotations

import contextlib
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ember
from ember.backend import ArrayBackend


class Tagged(np.ndarray):
    """A NumPy array that remembers the fake device it lives on."""

    def __array_finalize__(self, obj):
        self.fake_device = getattr(obj, "fake_device", None)


def _check(name, idx, a):
    dev = getattr(a, "fake_device", None)
    if dev is not None and dev != idx:
        raise RuntimeError(f"fakegpu kernel {name!r} on fakegpu:{idx} was given an array of fakegpu:{dev}")


class FakeGPU(ArrayBackend):
    name = "fakegpu"
    array_type = Tagged

    def __init__(self, count=3):
        super().__init__(np)
        self.count = count
        self.workers = [ThreadPoolExecutor(max_workers=1) for _ in range(count)]
        self.pending = [[] for _ in range(count)]
        self.allocated = [0] * count
        self.peak = [0] * count
        self.pinned = {}
        self.tables = {}
        self.copies_deferred = 0

    # ---------------------------------------------------------------- devices
    def has_index(self):
        return True

    def device_count(self):
        return self.count

    def device_properties(self, index):
        return {"name": f"Fake GPU {index}", "total_memory": 1 << 30, "major": 1, "minor": index,
                "multi_processor_count": 1}

    def synchronize(self, index=None):
        for i in range(self.count) if index is None else (index,):
            self.wait(i)

    def wait(self, idx):
        pending, self.pending[idx] = self.pending[idx], []
        for f in pending:
            f.result()

    # ---------------------------------------------------------------- kernels
    def kernels_for(self, index):
        table = self.tables.get(index)
        if table is None:
            table = self.tables[index] = {}
            self._fill(table, index)
        return table

    def _fill(self, table, index):
        for n in set(table) - set(self.kernels):
            del table[n]
        for n in set(self.kernels) - set(table):
            table[n] = self._guard(n, index)

    def kernels_changed(self):
        # resolved devices hold these dicts: keep their names in step (the guards look kernels up by name)
        for index, table in self.tables.items():
            self._fill(table, index)

    def _guard(self, name, idx):
        kernels = self.kernels

        def kernel(*args, **kwargs):
            for a in args:
                if type(a) is list:
                    for x in a:
                        _check(name, idx, x)
                else:
                    _check(name, idx, a)
            if self.pending[idx]:
                self.wait(idx)
            return self.tag(kernels[name](*args, **kwargs), idx)

        return kernel

    def tag(self, out, idx):
        if type(out) in (tuple, list):
            return type(out)(self.tag(o, idx) for o in out)
        if not isinstance(out, np.ndarray) or getattr(out, "fake_device", None) == idx:
            return out
        owner = out.base is None
        out = out.view(Tagged)
        out.fake_device = idx
        if owner:
            self._count(out, idx)
        return out

    def _count(self, arr, idx):
        self.allocated[idx] += arr.nbytes
        self.peak[idx] = max(self.peak[idx], self.allocated[idx])
        weakref.finalize(arr, self._free, idx, arr.nbytes)

    def _free(self, idx, nbytes):
        self.allocated[idx] -= nbytes

    # ---------------------------------------------------------------- data
    def from_numpy(self, array, index, copy=False, non_blocking=False):
        idx = self.current_device() if index is None else index
        array = np.asarray(array)
        out = np.empty(array.shape, array.dtype).view(Tagged)
        out.fake_device = idx
        self._count(out, idx)
        if non_blocking:
            self.copies_deferred += 1
            self.pending[idx].append(self.workers[idx].submit(self._slow_copy, out, array))
        else:
            np.copyto(out, array)
        return out

    @staticmethod
    def _slow_copy(dst, src):
        time.sleep(0.002)  # the copy lands well after the call returned
        np.copyto(dst, src)

    def to_numpy(self, array):
        idx = getattr(array, "fake_device", None)
        if idx is not None and self.pending[idx]:
            self.wait(idx)
        return np.array(array, copy=True).view(np.ndarray)

    def as_array(self, value):
        return np.asarray(value)

    # ---------------------------------------------------------------- pinned host memory
    def pin_memory(self, array):
        out = np.array(array, copy=True, order="C")
        ptr = out.__array_interface__["data"][0]
        self.pinned[ptr] = out.nbytes
        weakref.finalize(out, self.pinned.pop, ptr, None)
        return out

    def is_pinned(self, array):
        ptr = array.__array_interface__["data"][0]
        return any(p <= ptr < p + n or (p == ptr and n == 0) for p, n in list(self.pinned.items()))

    # ---------------------------------------------------------------- memory
    def memory_stats(self, index=None):
        i = self.current_device() if index is None else index
        return {"allocated_bytes.all.current": self.allocated[i], "allocated_bytes.all.peak": self.peak[i],
                "reserved_bytes.all.current": self.allocated[i], "reserved_bytes.all.peak": self.peak[i]}

    def reset_peak_memory_stats(self, index=None):
        i = self.current_device() if index is None else index
        self.peak[i] = self.allocated[i]

    def close(self):
        for w in self.workers:
            w.shutdown(wait=True)


class _Plugin:
    def __init__(self, backend):
        self.backend = backend

    @ember.plugins.hookimpl
    def ember_backends(self, registry):
        registry.add_backend(self.backend)


@contextlib.contextmanager
def registered(count=3):
    """Register a fresh ``fakegpu`` backend with ``count`` devices for the duration of the block."""
    backend = FakeGPU(count)
    ember.plugins.register(_Plugin(backend), name="fakegpu")
    try:
        yield backend
    finally:
        ember.plugins.unregister("fakegpu")
        if ember.backend._default_device[0] is not None and ember.backend._default_device[0].type == "fakegpu":
            ember.set_default_device(None)
        for dev in list(ember.device._cache.values()):
            if dev.type == "fakegpu":  # forget the resolved devices of this backend instance
                dev.backend = dev.kernels = None
        backend.close()


KINDS = ["fakegpu", "cuda"]


def multi_device(request):
    """Fixture body (``params=KINDS``): a multi-device type to test on, the three-device test backend,
    and cuda where there are two or more GPUs."""
    if request.param == "cuda":
        if ember.cuda.device_count() < 2:
            pytest.skip("multi-device tests on cuda need two or more GPUs")
        yield "cuda"
        return
    with registered(3):
        yield "fakegpu"


def cpu_default():
    """Fixture body (autouse): new tensors default to the CPU, as these tests assume, even where
    ``EMBER_DEVICE`` names another default."""
    ember.set_default_device("cpu")
    yield
    ember.set_default_device(None)
