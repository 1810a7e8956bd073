"""CUDA IPC: device arrays shared between processes through memory handles.

The sender exports the whole device allocation under an array and sends the handle with the
array's offset inside it and its geometry; the receiver opens the handle (once per process) and
views the same device memory.  As in PyTorch, the sender must keep the array alive while
receivers use it.
"""
from __future__ import annotations

import ctypes
import weakref


def _allocation(ptr: int):
    """``(base, size)`` of the device allocation containing ``ptr`` (cuMemGetAddressRange)."""
    lib = ctypes.CDLL("libcuda.so.1")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    err = lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr))
    if err:
        raise RuntimeError(f"CUDA IPC: cuMemGetAddressRange failed with error {err} for pointer {ptr:#x}")
    return base.value, size.value


def export(cp, array) -> tuple:
    """A picklable handle to ``array``'s memory: the IPC handle of its allocation, the allocation's size,
    the array's offset in it, shape, strides and dtype."""
    base, size = _allocation(array.data.ptr)
    with cp.cuda.Device(array.device.id):
        handle = cp.cuda.runtime.ipcGetMemHandle(base)
    return (bytes(handle), size, array.data.ptr - base, array.shape, array.strides, array.dtype)


class _Opened:
    """An opened IPC allocation; closed when the last array over it goes."""

    def __init__(self, cp, handle: bytes, device_id: int):
        self.cp, self.device_id, self.ptr = cp, device_id, None
        with cp.cuda.Device(device_id):
            # a process that has not used CUDA yet has no context on the device (entering Device(0) when 0 is
            # already current does not make one), and opening a handle needs one: cudaFree(0) creates it
            cp.cuda.runtime.free(0)
            self.ptr = cp.cuda.runtime.ipcOpenMemHandle(handle)

    def __del__(self):
        if self.ptr is None:  # the open failed
            return
        with self.cp.cuda.Device(self.device_id):
            self.cp.cuda.runtime.ipcCloseMemHandle(self.ptr)


_OPEN: dict = {}  # handle bytes -> weakref to _Opened (a process may open a handle only once)


def open_handle(cp, handle: tuple, index: int):
    """The array on device ``index`` over the memory :func:`export` described."""
    raw, size, offset, shape, strides, dtype = handle
    ref = _OPEN.get(raw)
    opened = None if ref is None else ref()
    if opened is None:
        opened = _Opened(cp, raw, index)
        _OPEN[raw] = weakref.ref(opened)
    mem = cp.cuda.UnownedMemory(opened.ptr, size, opened, index)
    return cp.ndarray(shape, dtype, cp.cuda.MemoryPointer(mem, offset), strides)
