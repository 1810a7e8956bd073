"""The CUDA backend class: devices, host<->device copies, pinned memory, streams, events, memory
statistics, random generators, IPC handles and NCCL collectives on CuPy, each a part of the
contract of :class:`ember.backend.Backend`.  Kernels are the shared library adopted with ``cupy``
plus the overrides of :mod:`ember_cuda_cupy.fused` and :mod:`ember_cuda_cupy.cudnn`."""
from __future__ import annotations

import numpy as np

from ember.backend import ArrayBackend

from . import compat, cudnn, fused, ipc
from .generator import CupyGenerator
from .memory import PeakTracker
from .nccl import Nccl

# cudaPointerAttributes.type for page-locked host memory
_MEMORY_TYPE_HOST = 1


class CupyBackend(ArrayBackend):
    """ember on CuPy: one backend for every visible GPU (``cuda:0``, ``cuda:1``, ...)."""

    name = "cuda"
    # kernels built on atomic adds (cupy's ufunc.at, weighted bincount): sums in a varying order
    nondeterministic_kernels = frozenset({"index_put_acc", "index_add", "scatter_reduce", "flat_scatter_add",
                                          "bincount", "histc"})

    def __init__(self, cp):
        self.cp = cp
        self.runtime = cp.cuda.runtime
        super().__init__(cp)
        self._tables = {}
        self.pool = cp.get_default_memory_pool()
        self.tracker = PeakTracker(cp, self.pool)
        cp.cuda.set_allocator(self.tracker.malloc)
        self.nccl = Nccl(cp)

    def overrides(self):
        table = compat.kernels(self.cp, self.kernels)
        table.update(fused.kernels(self.cp, self.kernels))
        table.update(cudnn.kernels(self.cp, self.kernels))
        return table

    def version(self):
        return (f"cupy {self.cp.__version__}, CUDA runtime {self.runtime.runtimeGetVersion()}; "
                f"{cudnn.describe(self.cp)}")

    # ---------------------------------------------------------------- devices
    def has_index(self):
        return True

    def device_count(self):
        return self.runtime.getDeviceCount()

    def current_device(self):
        return self.runtime.getDevice()

    def set_device(self, index):
        self.runtime.setDevice(index)

    def device_context(self, index):
        return self.cp.cuda.Device(index)

    def device_properties(self, index):
        p = self.runtime.getDeviceProperties(index)
        name = p["name"]
        return {"name": name.decode() if isinstance(name, bytes) else str(name),
                "total_memory": int(p["totalGlobalMem"]), "major": int(p["major"]), "minor": int(p["minor"]),
                "multi_processor_count": int(p["multiProcessorCount"])}

    def kernels_for(self, index):
        # with several GPUs, a kernel runs with its tensors' device current (CuPy launches on the current one)
        if self.device_count() == 1:
            return self.kernels
        table = self._tables.get(index)
        if table is None:
            table = self._tables[index] = self._device_table(index)
        return table

    def _device_table(self, index):
        return {n: _on_device(self.cp, self.runtime, fn, index) for n, fn in self.kernels.items()}

    def kernels_changed(self):
        super().kernels_changed()
        # devices already resolved hold these dicts: refill them in place
        for index, table in self._tables.items():
            table.clear()
            table.update(self._device_table(index))

    def synchronize(self, index=None):
        if index is None:
            self.runtime.deviceSynchronize()
        else:
            with self.cp.cuda.Device(index):
                self.runtime.deviceSynchronize()

    # ---------------------------------------------------------------- data
    def from_numpy(self, array, index, copy=False, non_blocking=False):
        cp = self.cp
        array = np.asarray(array, order="C")  # C order, keeping a 0-d array 0-d (ascontiguousarray makes it 1-d)
        with cp.cuda.Device(self.current_device() if index is None else index):
            out = cp.empty(array.shape, array.dtype)
            if array.size:
                # queued on the device's current stream: it overlaps compute when the source is pinned;
                # a blocking copy waits for it (set() itself is asynchronous in recent CuPy), so the source may change
                stream = cp.cuda.get_current_stream()
                out.set(array, stream=stream)
                if not non_blocking:
                    stream.synchronize()
        return out

    def to_numpy(self, array):
        if not isinstance(array, self.array_type):
            return np.asarray(array)
        # asnumpy copies on the current stream of the current device: make that the array's own
        with self.cp.cuda.Device(array.device.id):
            return self.cp.asnumpy(array)

    def as_array(self, value):
        return self.cp.asarray(value)

    def pin_memory(self, array):
        """A copy of host ``array`` in page-locked memory (fast, asynchronous host-to-device copies)."""
        import cupyx  # optional: ships with CuPy, needed only once memory is pinned

        out = cupyx.empty_pinned(array.shape, array.dtype)
        out[...] = array
        return out

    def is_pinned(self, array):
        if not isinstance(array, np.ndarray) or array.size == 0:
            return False
        try:
            attrs = self.runtime.pointerGetAttributes(array.ctypes.data)
        except self.runtime.CUDARuntimeError:
            return False
        return attrs.type == _MEMORY_TYPE_HOST

    # ---------------------------------------------------------------- streams and events
    def new_stream(self, index, priority=0):
        with self.cp.cuda.Device(index):
            if priority:
                try:
                    return self.cp.cuda.Stream(non_blocking=False, priority=priority)
                except TypeError:  # a CuPy whose Stream has no priority: priorities are only a scheduling hint
                    pass
            return self.cp.cuda.Stream(non_blocking=False)

    def default_stream(self, index):
        return self.cp.cuda.Stream.null

    def current_stream(self, index):
        with self.cp.cuda.Device(index):
            return self.cp.cuda.get_current_stream()

    def set_stream(self, native):
        # Stream.use() requires the stream's device to be current (-1: a singleton of every device)
        if native.device_id < 0:
            native.use()
        else:
            with self.cp.cuda.Device(native.device_id):
                native.use()

    def stream_synchronize(self, native):
        native.synchronize()

    def stream_query(self, native):
        return native.done

    def stream_wait_event(self, native, event):
        native.wait_event(event)

    def new_event(self, enable_timing, blocking):
        return self.cp.cuda.Event(block=blocking, disable_timing=not enable_timing)

    def event_record(self, event, stream):
        event.record(stream)

    def event_query(self, event):
        return event.done

    def event_synchronize(self, event):
        event.synchronize()

    def event_elapsed_ms(self, start, end):
        return self.cp.cuda.get_elapsed_time(start, end)

    # ---------------------------------------------------------------- memory
    def memory_stats(self, index=None):
        with self.cp.cuda.Device(self.current_device() if index is None else index) as dev:
            return self.tracker.stats(dev.id)

    def empty_cache(self):
        # MemoryPool.free_all_blocks releases the current device's blocks only
        for index in range(self.device_count()):
            with self.cp.cuda.Device(index):
                self.pool.free_all_blocks()
        self.cp.get_default_pinned_memory_pool().free_all_blocks()

    def reset_peak_memory_stats(self, index=None):
        with self.cp.cuda.Device(self.current_device() if index is None else index) as dev:
            self.tracker.reset_peak(dev.id)

    # ---------------------------------------------------------------- IPC (ember.multiprocessing)
    def supports_ipc(self):
        return True

    def ipc_handle(self, array):
        return ipc.export(self.cp, array)

    def ipc_open(self, handle, index):
        return ipc.open_handle(self.cp, handle, index)

    # ---------------------------------------------------------------- collectives (ember.distributed)
    def supports_collectives(self):
        return self.nccl.available()

    def collective_all_reduce(self, comm, array, op, async_op):
        return self.nccl.all_reduce(comm, array, op, async_op)

    def collective_broadcast(self, comm, array, src, async_op):
        return self.nccl.broadcast(comm, array, src, async_op)

    def release_collectives(self, comm):
        self.nccl.release()

    # ---------------------------------------------------------------- random
    def new_generator(self, index, seed):
        return CupyGenerator(self.cp, index or 0, seed)

    def generator_state(self, gen):
        return gen.get_state()

    def set_generator_state(self, gen, state):
        gen.set_state(state)


def _on_device(cp, runtime, fn, index):
    """``fn`` run with device ``index`` current: no context switch when it already is."""
    get = runtime.getDevice
    device = cp.cuda.Device

    def kernel(*args, **kwargs):
        if get() == index:
            return fn(*args, **kwargs)
        # a fresh Device each time: a Device keeps one stack of previous devices, not one per thread
        with device(index):
            return fn(*args, **kwargs)

    return kernel
