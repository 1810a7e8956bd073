"""Collectives on CUDA memory through NCCL (``cupy.cuda.nccl``), where CuPy was built with it.

One communicator per process group, created on first use: rank 0 makes the NCCL id and the
group's MPI communicator broadcasts it.  Collectives run on the current CuPy stream.
"""
from __future__ import annotations

import numpy as np


class _Done:
    """The result of an asynchronous collective: completed when its stream reaches it."""

    def __init__(self, stream):
        self._event = stream.record()

    def is_completed(self) -> bool:
        return self._event.done

    def wait(self, timeout=None) -> bool:
        self._event.synchronize()
        return True


class Nccl:
    """The CUDA backend's collectives (``Backend.collective_all_reduce`` and ``collective_broadcast``)."""

    def __init__(self, cp):
        self.cp = cp
        self.comm = None
        self._available = None

    def _module(self):
        from cupy.cuda import nccl  # optional: CuPy may be built without NCCL

        return nccl

    def available(self) -> bool:
        """Whether CuPy's NCCL can be used here (checked once)."""
        if self._available is None:
            try:
                self._available = bool(getattr(self._module(), "available", True))
            except ImportError:
                self._available = False
        return self._available

    def release(self) -> None:
        """Forget the communicator (its process group is destroyed)."""
        self.comm = None

    def _communicator(self, mpi_comm):
        if self.comm is None:
            nccl = self._module()
            uid = nccl.get_unique_id() if mpi_comm.Get_rank() == 0 else None
            uid = mpi_comm.bcast(uid, root=0)
            self.comm = nccl.NcclCommunicator(mpi_comm.Get_size(), uid, mpi_comm.Get_rank())
        return self.comm

    def _types(self, what: str, arr, op: str):
        nccl = self._module()
        dtypes = {np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
                  np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int32): nccl.NCCL_INT32,
                  np.dtype(np.int64): nccl.NCCL_INT64, np.dtype(np.uint8): nccl.NCCL_UINT8,
                  np.dtype(np.int8): nccl.NCCL_INT8}
        ops = {"sum": nccl.NCCL_SUM, "avg": nccl.NCCL_SUM, "product": nccl.NCCL_PROD, "min": nccl.NCCL_MIN,
               "max": nccl.NCCL_MAX}
        if arr.dtype not in dtypes or op not in ops:
            raise RuntimeError(f"{what} on cuda: NCCL does not support dtype {arr.dtype} with op {op!r} "
                               f"(expected one of {sorted(ops)} on {sorted(str(d) for d in dtypes)})")
        return dtypes[arr.dtype], ops[op]

    def _contiguous(self, a):
        """``(a, None)`` for a contiguous ``a``, else a contiguous copy and how to write it back into ``a``."""
        if a.flags.c_contiguous:
            return a, None
        return self.cp.ascontiguousarray(a), lambda b: a.__setitem__(Ellipsis, b)

    def all_reduce(self, mpi_comm, array, op: str, async_op: bool):
        a, back = self._contiguous(array)
        dt, nop = self._types("all_reduce", a, op)
        stream = self.cp.cuda.get_current_stream()
        self._communicator(mpi_comm).allReduce(a.data.ptr, a.data.ptr, a.size, dt, nop, stream.ptr)
        if op == "avg":
            a /= mpi_comm.Get_size()
        if back is not None:
            back(a)
        return _Done(stream) if async_op else None

    def broadcast(self, mpi_comm, array, src: int, async_op: bool):
        a, back = self._contiguous(array)
        dt, _ = self._types("broadcast", a, "sum")
        stream = self.cp.cuda.get_current_stream()
        self._communicator(mpi_comm).bcast(a.data.ptr, a.size, dt, src, stream.ptr)
        if back is not None:
            back(a)
        return _Done(stream) if async_op else None
