"""The process group and its collectives, on MPI (mpi4py).

Host tensors are reduced in place in their own memory (zero-copy when
contiguous).  ``all_reduce`` and ``broadcast`` of a device tensor go through
its backend's collectives where it has them (``Backend.supports_collectives``:
NCCL on CUDA); everything else is staged through host memory.
"""
from __future__ import annotations

import enum
import os
import sys

import numpy as np

from ..backend import BACKENDS
from ..tensor import Tensor
from . import rendezvous

_STATE = {"comm": None, "backend": None, "pg": None, "excepthook": None, "store": None}
_OPS: dict = {}  # ReduceOp -> MPI.Op, filled when MPI is first imported


class ReduceOp(enum.Enum):
    """How ``all_reduce`` / ``reduce_scatter`` combine values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


ReduceOp.RedOpType = ReduceOp  # PyTorch's type of the members (Lightning annotates with ReduceOp.RedOpType)


def _mpi():
    from mpi4py import MPI

    if not _OPS:
        _OPS.update({ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
                     ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR})
        _STATE["in_place"] = MPI.IN_PLACE
    return MPI


def _mpi_op(op: ReduceOp):
    try:
        return _OPS[op]
    except KeyError:
        raise ValueError(f"unknown reduce op {op!r}, expected a member of ReduceOp") from None


def is_available() -> bool:
    """Whether ember.distributed can run here (mpi4py importable)."""
    try:
        _mpi()
    except ImportError:
        return False
    return True


def is_initialized() -> bool:
    """Whether :func:`init_process_group` has been called (and not destroyed)."""
    return _STATE["comm"] is not None


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchelastic (``torchrun``): its environment holds
    ``TORCHELASTIC_RUN_ID``, as PyTorch checks."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_mpi_available() -> bool:
    return is_available()


def is_nccl_available() -> bool:
    """Whether a registered backend runs collectives on device memory (NCCL on CUDA)."""
    return any(b.is_available() and b.supports_collectives() for b in BACKENDS.values())


def init_process_group(backend: str | None = None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Join the job's process group: every process started by ``mpiexec`` (or the launcher).

    ``backend`` may be ``"mpi"``, ``"gloo"`` or ``"nccl"`` (all run on MPI; device tensors use their
    backend's collectives, NCCL on CUDA, when it has them).  An exception that escapes any rank aborts
    the whole job, so no rank waits forever.  Processes that ``ember.multiprocessing.spawn`` started (each an
    MPI job of one) and that ask for a larger ``world_size`` meet through ``init_method`` (``env://``, the
    default, or ``tcp://host:port``) or ``store`` and form one group (:mod:`ember.distributed.rendezvous`).

    >>> import ember.distributed as dist
    >>> dist.init_process_group("mpi"); dist.get_world_size()  # doctest: +SKIP
    2
    """
    if is_initialized():
        raise RuntimeError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() not in ("mpi", "gloo", "nccl", "cpu:gloo,cuda:nccl"):
        raise ValueError(f"init_process_group(): unknown backend {backend!r}, expected 'mpi', 'gloo' or 'nccl'")
    try:
        MPI = _mpi()
    except ImportError as e:
        raise RuntimeError("ember.distributed needs mpi4py and an MPI: pip install 'ember[dist]' "
                           "(from a checkout: pip install -e \".[dist]\")") from e
    rank, world_size = rendezvous.requested(init_method, store, rank, world_size)
    if MPI.COMM_WORLD.Get_size() == 1 and world_size not in (-1, None) and world_size > 1:
        comm, _STATE["store"] = rendezvous.connect(MPI, init_method, store, rank, world_size, timeout)
    else:
        comm = MPI.COMM_WORLD.Dup()  # a communicator of our own: user MPI calls never match ours
    for name, want, got in (("world_size", world_size, comm.Get_size()), ("rank", rank, comm.Get_rank())):
        if want not in (-1, None) and want != got:
            comm.Free()
            raise ValueError(f"init_process_group(): {name}={want} but MPI started this process with {name}={got}")
    name = "mpi" if backend is None else str(backend).lower()
    _STATE.update(comm=comm, backend=name, pg=ProcessGroup(comm, name), excepthook=sys.excepthook)
    sys.excepthook = _abort_on_error


def _abort_on_error(kind, value, tb):
    """An uncaught exception on one rank ends every rank (instead of leaving them in a collective)."""
    import time

    _STATE["excepthook"](kind, value, tb)
    sys.stderr.flush()
    time.sleep(0.2)  # let mpiexec forward this rank's output before it tears the job down
    _mpi().COMM_WORLD.Abort(1)


def destroy_process_group(group=None) -> None:
    """Leave the process group; collectives raise until :func:`init_process_group` is called again."""
    comm = _comm("destroy_process_group")
    for b in BACKENDS.values():
        b.release_collectives(comm)
    comm.Free()
    sys.excepthook = _STATE["excepthook"]
    _STATE.update(comm=None, backend=None, pg=None, excepthook=None, store=None)


def _comm(op: str):
    comm = _STATE["comm"]
    if comm is None:
        raise RuntimeError(f"{op}(): Default process group has not been initialized, please make sure to call "
                           f"init_process_group.")
    return comm


def get_rank(group=None) -> int:
    """This process's rank in the group (0 .. world_size-1)."""
    return _comm("get_rank").Get_rank()


def get_world_size(group=None) -> int:
    """The number of processes in the group."""
    return _comm("get_world_size").Get_size()


def get_backend(group=None) -> str:
    """The name of the backend the process group was started with (``"mpi"``, ``"gloo"``, ``"nccl"``)."""
    _comm("get_backend")
    return _STATE["backend"]


class ProcessGroup:
    """A group of processes that run collectives together; ``group.WORLD`` is the one that
    :func:`init_process_group` starts (ember has no sub-groups yet: every group is the whole job).

    >>> import ember.distributed as dist
    >>> dist.init_process_group("mpi")                              # doctest: +SKIP
    >>> dist.group.WORLD.rank(), dist.group.WORLD.size()           # doctest: +SKIP
    (0, 1)
    """

    def __init__(self, comm, backend: str):
        self._comm, self._backend = comm, backend

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._comm.Get_rank()

    def size(self) -> int:
        """The number of processes in the group."""
        return self._comm.Get_size()

    def name(self) -> str:
        """The backend's name, as :func:`get_backend` gives it."""
        return self._backend

    @property
    def group_name(self) -> str:
        return "0"

    def __repr__(self):
        return f"<ProcessGroup {self._backend} rank={self.rank()} size={self.size()}>"


class _WorldMeta(type):
    """``WORLD`` read on the class: the default process group, None before :func:`init_process_group`."""

    @property
    def WORLD(cls):
        return _STATE["pg"]


class group(metaclass=_WorldMeta):
    """The process groups by name, as in PyTorch: ``group.WORLD`` is the default group (None until one starts)."""


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD`` is ``group.WORLD``; ``NON_GROUP_MEMBER`` is the rank of a process outside a group."""

    NON_GROUP_MEMBER = -100


class Work:
    """A collective in flight (``async_op=True``): ``wait()`` completes it and writes the result."""

    __slots__ = ("_req", "_done")

    def __init__(self, req, done=None):
        self._req, self._done = req, done

    def is_completed(self) -> bool:
        return self._req is None or bool(self._req.Test())

    def wait(self, timeout=None) -> bool:
        if self._req is not None:
            self._req.Wait()
            self._req = None
            if self._done is not None:
                self._done()
        return True


def _finish(async_op: bool):
    """What a collective that completed synchronously returns."""
    return Work(None) if async_op else None


def _in_place():
    """The write-back of a buffer that is the tensor's own memory: nothing to do."""


def _host(t: Tensor):
    """A contiguous host array holding ``t``'s values, and how to write it back into ``t``."""
    a = t._data
    if t._dev.backend.host:
        if a.flags.c_contiguous:
            return a, _in_place
        buf = np.ascontiguousarray(a)
        return buf, lambda: np.copyto(a, buf)
    buf = np.array(t._dev.backend.to_numpy(a), copy=True, order="C")
    return buf, lambda: t._dev.kernels["copy_"](t._data, t._dev.backend.from_numpy(buf, t._dev.index))


def _on_device(t: Tensor):
    """``t``'s backend where it runs collectives on device memory, else None (host copies and MPI)."""
    b = t._dev.backend
    return b if not b.host and b.supports_collectives() else None


def _check_tensor(op: str, t, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): {name} must be a Tensor, got {type(t).__name__}")


def _check_per_rank(op: str, ref: Tensor, tensors, comm, name: str, what: str):
    """``tensors`` must hold one tensor per rank, each of ``ref``'s shape, dtype and device."""
    if tensors is None or len(tensors) != comm.Get_size():
        got = None if tensors is None else len(tensors)
        raise ValueError(f"{op}(): {name} must have one tensor per rank ({comm.Get_size()}), got {got}")
    _check_same(op, ref, tensors, what)


def _check_same(op: str, ref: Tensor, others, what: str):
    for o in others:
        _check_tensor(op, o, what)
        if o.shape != ref.shape or o.dtype is not ref.dtype or o._dev is not ref._dev:
            raise ValueError(f"{op}(): every {what} must match the input (shape {list(ref.shape)}, dtype {ref.dtype}, "
                             f"device {ref.device}); got shape {list(o.shape)}, dtype {o.dtype}, device {o.device}")


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine ``tensor`` across all ranks with ``op``, in place on every rank.

    >>> import ember, ember.distributed as dist
    >>> t = ember.ones(2) * (dist.get_rank() + 1)   # doctest: +SKIP
    >>> dist.all_reduce(t); t                        # on 2 ranks  # doctest: +SKIP
    tensor([3., 3.])
    """
    comm = _comm("all_reduce")
    _check_tensor("all_reduce", tensor)
    if op is ReduceOp.AVG and not (tensor.is_floating_point() or tensor.is_complex()):
        raise RuntimeError(f"all_reduce(): ReduceOp.AVG needs a floating point tensor, got {tensor.dtype}")
    mpi_op = _mpi_op(op)
    device = _on_device(tensor)
    if device is not None:
        return device.collective_all_reduce(comm, tensor._data, op.value, async_op)
    buf, back = _host(tensor)
    if async_op:
        return Work(comm.Iallreduce(_STATE["in_place"], buf, mpi_op), lambda: _after(buf, back, op, comm))
    comm.Allreduce(_STATE["in_place"], buf, mpi_op)
    if op is ReduceOp.AVG or back is not _in_place:
        _after(buf, back, op, comm)
    return None


def _after(buf, back, op, comm):
    """Finish a reduction: divide for AVG, write back into a tensor that was not reduced in place."""
    if op is ReduceOp.AVG:
        buf[...] /= comm.Get_size()
    back()


def reduce(tensor: Tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine ``tensor`` across ranks into rank ``dst``'s tensor (others keep theirs)."""
    comm = _comm("reduce")
    _check_tensor("reduce", tensor)
    buf, back = _host(tensor)
    MPI = _mpi()
    mine = comm.Get_rank() == dst
    comm.Reduce(MPI.IN_PLACE if mine else buf, buf if mine else None, _mpi_op(op), root=dst)
    if mine:
        if op is ReduceOp.AVG:
            buf[...] /= comm.Get_size()
        back()
    return _finish(async_op)


def broadcast(tensor: Tensor, src: int, group=None, async_op: bool = False):
    """Overwrite ``tensor`` on every rank with rank ``src``'s."""
    comm = _comm("broadcast")
    _check_tensor("broadcast", tensor)
    _check_rank("broadcast", src, comm)
    device = _on_device(tensor)
    if device is not None:
        return device.collective_broadcast(comm, tensor._data, src, async_op)
    buf, back = _host(tensor)
    if async_op:
        return Work(comm.Ibcast(buf, root=src), back)
    comm.Bcast(buf, root=src)
    back()
    return None


def _check_rank(op, r, comm):
    if not 0 <= r < comm.Get_size():
        raise ValueError(f"{op}(): rank {r} is out of range for a group of {comm.Get_size()} processes")


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` on every rank with rank ``i``'s ``tensor``."""
    comm = _comm("all_gather")
    _check_tensor("all_gather", tensor)
    _check_per_rank("all_gather", tensor, tensor_list, comm, "tensor_list", "output tensor")
    src, _ = _host(tensor)
    out = np.empty((comm.Get_size(), *src.shape), src.dtype)
    comm.Allgather(src, out)
    _write_parts(tensor_list, out)
    return _finish(async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False):
    """Concatenate every rank's ``input_tensor`` along dim 0 into ``output_tensor``."""
    comm = _comm("all_gather_into_tensor")
    n = comm.Get_size()
    if output_tensor.numel() != n * input_tensor.numel() or output_tensor.dtype is not input_tensor.dtype:
        raise ValueError(f"all_gather_into_tensor(): output of shape {list(output_tensor.shape)} and dtype "
                         f"{output_tensor.dtype} cannot hold {n} inputs of shape {list(input_tensor.shape)} and "
                         f"dtype {input_tensor.dtype}")
    src, _ = _host(input_tensor)
    out, back = _host(output_tensor)
    comm.Allgather(src, out)
    back()
    return _finish(async_op)


def reduce_scatter(output: Tensor, input_list: list, op: ReduceOp = ReduceOp.SUM, group=None,
                   async_op: bool = False):
    """Reduce ``input_list[i]`` across ranks with ``op`` and put the result in rank ``i``'s ``output``."""
    comm = _comm("reduce_scatter")
    _check_tensor("reduce_scatter", output, "output")
    _check_per_rank("reduce_scatter", output, input_list, comm, "input_list", "input tensor")
    send = np.stack([_host(t)[0] for t in input_list])
    _reduce_scatter(comm, send, output, op)
    return _finish(async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM, group=None,
                          async_op: bool = False):
    """Reduce ``input`` (world_size chunks along dim 0) across ranks; rank ``i`` gets chunk ``i``."""
    comm = _comm("reduce_scatter_tensor")
    if input.numel() != comm.Get_size() * output.numel() or input.dtype is not output.dtype:
        raise ValueError(f"reduce_scatter_tensor(): input of shape {list(input.shape)} and dtype {input.dtype} "
                         f"is not {comm.Get_size()} chunks of output shape {list(output.shape)}, dtype {output.dtype}")
    _reduce_scatter(comm, _host(input)[0], output, op)
    return _finish(async_op)


def _reduce_scatter(comm, send: np.ndarray, output: Tensor, op: ReduceOp):
    recv, back = _host(output)
    comm.Reduce_scatter_block(send, recv, _mpi_op(op))
    if op is ReduceOp.AVG:
        recv[...] /= comm.Get_size()
    back()


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op: bool = False):
    """Split ``input`` along dim 0 into one part per rank (``input_split_sizes`` rows each, equal parts when None),
    send part ``i`` to rank ``i``, and write the parts received, in rank order, into ``output`` (split by
    ``output_split_sizes``)."""
    comm = _comm("all_to_all_single")
    for name, t in (("output", output), ("input", input)):
        _check_tensor("all_to_all_single", t, name)
    if output.dtype is not input.dtype:
        raise ValueError(f"all_to_all_single(): output dtype {output.dtype} differs from input dtype {input.dtype}")
    n = comm.Get_size()
    counts = [_split_counts(t, sizes, n, name) for t, sizes, name in
              ((input, input_split_sizes, "input"), (output, output_split_sizes, "output"))]
    send, _ = _host(input)
    recv, back = _host(output)
    comm.Alltoallv([send.reshape(-1), (counts[0], _offsets(counts[0]))], [recv.reshape(-1), (counts[1],
                                                                                          _offsets(counts[1]))])
    back()
    return _finish(async_op)


def _split_counts(t: Tensor, sizes, n: int, name: str) -> list:
    """Element counts of ``t``'s parts: ``sizes`` rows each along dim 0 (``n`` equal parts when None)."""
    rows = t.shape[0] if t.dim() else 1
    per_row = t.numel() // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise RuntimeError(f"all_to_all_single(): {name} dim 0 ({rows}) does not split into {n} equal parts")
        sizes = [rows // n] * n
    if len(sizes) != n or sum(sizes) != rows or min(sizes) < 0:
        raise RuntimeError(f"all_to_all_single(): {name}_split_sizes {list(sizes)} must be {n} non-negative sizes "
                         f"summing to {name} dim 0 ({rows})")
    return [int(s) * per_row for s in sizes]


def _offsets(counts: list) -> list:
    return [sum(counts[:i]) for i in range(len(counts))]


def get_process_group_ranks(group) -> list:
    """The global ranks of ``group``'s processes (every group is the whole job in ember)."""
    return list(range(_comm("get_process_group_ranks").Get_size()))


def _rooted(op: str, tensor: Tensor, root: int, tensors, name: str, what: str):
    """Check a rooted collective's arguments (the list only on the root); the communicator and whether we are root."""
    comm = _comm(op)
    _check_tensor(op, tensor)
    _check_rank(op, root, comm)
    mine = comm.Get_rank() == root
    if mine:
        _check_per_rank(op, tensor, tensors, comm, name, what)
    return comm, mine


def gather(tensor: Tensor, gather_list: list | None = None, dst: int = 0, group=None, async_op: bool = False):
    """Rank ``dst`` receives every rank's ``tensor`` into ``gather_list`` (None on the other ranks)."""
    comm, mine = _rooted("gather", tensor, dst, gather_list, "gather_list", "output tensor")
    src, _ = _host(tensor)
    out = np.empty((comm.Get_size(), *src.shape), src.dtype) if mine else None
    comm.Gather(src, out, root=dst)
    if mine:
        _write_parts(gather_list, out)
    return _finish(async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int = 0, group=None, async_op: bool = False):
    """Rank ``i`` receives ``scatter_list[i]`` of rank ``src`` into ``tensor``."""
    comm, mine = _rooted("scatter", tensor, src, scatter_list, "scatter_list", "input tensor")
    send = np.stack([_host(t)[0] for t in scatter_list]) if mine else None
    recv, back = _host(tensor)
    comm.Scatter(send, recv, root=src)
    back()
    return _finish(async_op)


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Fill ``object_list[i]`` with rank ``i``'s picklable ``obj``."""
    comm = _comm("all_gather_object")
    if len(object_list) != comm.Get_size():
        raise ValueError(f"all_gather_object(): object_list must have one slot per rank ({comm.Get_size()}), "
                         f"got {len(object_list)}")
    object_list[:] = comm.allgather(obj)


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None) -> None:
    """Replace the items of ``object_list`` on every rank with rank ``src``'s (picklable objects)."""
    comm = _comm("broadcast_object_list")
    _check_rank("broadcast_object_list", src, comm)
    object_list[:] = comm.bcast(list(object_list) if comm.Get_rank() == src else None, root=src)


def _write_parts(tensors: list, parts: np.ndarray) -> None:
    """Copy ``parts[i]`` into ``tensors[i]``."""
    for t, part in zip(tensors, parts):
        buf, back = _host(t)
        buf[...] = part
        back()


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank reaches this call."""
    comm = _comm("barrier")
    if async_op:
        return Work(comm.Ibarrier())
    comm.Barrier()
    return None


def send(tensor: Tensor, dst: int, group=None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` (blocks until it may be reused)."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank."""
    comm = _comm("recv")
    _check_tensor("recv", tensor)
    MPI = _mpi()
    buf, back = _host(tensor)
    status = MPI.Status()
    comm.Recv(buf, MPI.ANY_SOURCE if src is None else src, tag, status)
    back()
    return status.Get_source()


def isend(tensor: Tensor, dst: int, group=None, tag: int = 0) -> Work:
    """Start sending ``tensor`` to rank ``dst``; ``wait()`` on the result before changing it."""
    comm = _comm("isend")
    _check_tensor("isend", tensor)
    _check_rank("isend", dst, comm)
    buf, _ = _host(tensor)
    return Work(comm.Isend(buf, dst, tag), None)


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0) -> Work:
    """Start receiving into ``tensor`` from rank ``src``."""
    comm = _comm("irecv")
    _check_tensor("irecv", tensor)
    buf, back = _host(tensor)
    return Work(comm.Irecv(buf, _mpi().ANY_SOURCE if src is None else src, tag), back)
