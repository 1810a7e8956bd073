"""Device tensors between processes through CUDA IPC memory handles (CuPy).

The sender exports the whole device allocation under the tensor and sends the
handle with the tensor's offset inside it; the receiver opens the handle and
views the same device memory.  As in PyTorch, the sender must keep the tensor
alive while receivers use it.
"""
from __future__ import annotations

import ctypes

from ..backend import resolve


def _allocation(ptr: int):
    """``(base, size)`` of the device allocation containing ``ptr`` (cuMemGetAddressRange)."""
    lib = ctypes.CDLL("libcuda.so.1")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    err = lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if err:
        raise RuntimeError(f"CUDA IPC: cuMemGetAddressRange failed with error {err} for pointer {ptr:#x}")
    return base.value, size.value


def reduce_device(t):
    """``(rebuild, args)`` sharing ``t``'s device memory through an IPC handle."""
    import cupy

    a = t._data
    if not isinstance(a, cupy.ndarray):
        raise RuntimeError(f"sharing a tensor on {t.device} between processes is not supported by its backend "
                           f"({type(a).__module__}.{type(a).__name__} arrays have no IPC handles)")
    base, size = _allocation(a.data.ptr)
    with cupy.cuda.Device(a.device.id):
        handle = cupy.cuda.runtime.ipcGetMemHandle(base)
    return (rebuild_device, (bytes(handle), size, a.data.ptr - base, a.shape, a.strides, a.dtype, str(t._dev),
                             a.device.id, t._rg, t._grad, type(t)))


class _Opened:
    """An opened IPC allocation; closed when the last array over it goes."""

    def __init__(self, handle: bytes, device_id: int):
        import cupy

        self.device_id = device_id
        with cupy.cuda.Device(device_id):
            self.ptr = cupy.cuda.runtime.ipcOpenMemHandle(handle)

    def __del__(self):
        import cupy

        with cupy.cuda.Device(self.device_id):
            cupy.cuda.runtime.ipcCloseMemHandle(self.ptr)


_OPEN: dict = {}  # handle bytes -> weakref to _Opened (a process may open a handle only once)


def rebuild_device(handle, size, offset, shape, strides, dtype, device, device_id, requires_grad, grad, cls):
    """The receiving side of :func:`reduce_device`."""
    import weakref

    import cupy

    from ..tensor import _wrap
    from .reductions import finish

    ref = _OPEN.get(handle)
    opened = None if ref is None else ref()
    if opened is None:
        opened = _Opened(handle, device_id)
        _OPEN[handle] = weakref.ref(opened)
    mem = cupy.cuda.UnownedMemory(opened.ptr, size, opened, device_id)
    arr = cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(mem, offset), strides)
    return finish(_wrap(arr, resolve(device)), requires_grad, grad, cls)
