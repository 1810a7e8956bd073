"""NCCL for CUDA tensors (through ``cupy.cuda.nccl``), used when CuPy has it.

One communicator per process, created on first use: rank 0 makes the NCCL id
and MPI broadcasts it.  Collectives run on the current CuPy stream.
"""
from __future__ import annotations

_STATE = {"comm": None}


def available() -> bool:
    """Whether CuPy with NCCL is importable here (checked once)."""
    if "available" not in _STATE:
        try:
            from cupy.cuda import nccl

            _STATE["available"] = bool(getattr(nccl, "available", True))
        except ImportError:
            _STATE["available"] = False
    return _STATE["available"]


def reset() -> None:
    """Forget the communicator (after ``destroy_process_group``)."""
    _STATE["comm"] = None


def _communicator(mpi_comm):
    if _STATE["comm"] is None:
        from cupy.cuda import nccl

        uid = nccl.get_unique_id() if mpi_comm.Get_rank() == 0 else None
        uid = mpi_comm.bcast(uid, root=0)
        _STATE["comm"] = nccl.NcclCommunicator(mpi_comm.Get_size(), uid, mpi_comm.Get_rank())
    return _STATE["comm"]


def _types(arr, op):
    import numpy as np
    from cupy.cuda import nccl

    from .collectives import ReduceOp

    dtype = {np.dtype(np.float16): nccl.NCCL_FLOAT16, np.dtype(np.float32): nccl.NCCL_FLOAT32,
             np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int32): nccl.NCCL_INT32,
             np.dtype(np.int64): nccl.NCCL_INT64, np.dtype(np.uint8): nccl.NCCL_UINT8,
             np.dtype(np.int8): nccl.NCCL_INT8}
    ops = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.AVG: nccl.NCCL_SUM, ReduceOp.PRODUCT: nccl.NCCL_PROD,
           ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX}
    if arr.dtype not in dtype or op not in ops:
        raise RuntimeError(f"NCCL: dtype {arr.dtype} with {op} is not supported")
    return dtype[arr.dtype], ops[op]


class _Done:
    """The Work of a NCCL collective: completed when its stream is."""

    def __init__(self, stream):
        self._event = stream.record()

    def is_completed(self) -> bool:
        return self._event.done

    def wait(self, timeout=None) -> bool:
        self._event.synchronize()
        return True


def _contiguous(tensor):
    import cupy

    a = tensor._data
    return (a, None) if a.flags.c_contiguous else (cupy.ascontiguousarray(a), lambda b: a.__setitem__(Ellipsis, b))


def all_reduce(mpi_comm, tensor, op, async_op: bool):
    import cupy

    from .collectives import ReduceOp

    a, back = _contiguous(tensor)
    dt, nop = _types(a, op)
    stream = cupy.cuda.get_current_stream()
    _communicator(mpi_comm).allReduce(a.data.ptr, a.data.ptr, a.size, dt, nop, stream.ptr)
    if op is ReduceOp.AVG:
        a /= mpi_comm.Get_size()
    if back is not None:
        back(a)
    return _Done(stream) if async_op else None


def broadcast(mpi_comm, tensor, src: int, async_op: bool):
    import cupy

    from .collectives import ReduceOp

    a, back = _contiguous(tensor)
    dt, _ = _types(a, ReduceOp.SUM)
    stream = cupy.cuda.get_current_stream()
    _communicator(mpi_comm).bcast(a.data.ptr, a.size, dt, src, stream.ptr)
    if back is not None:
        back(a)
    return _Done(stream) if async_op else None
