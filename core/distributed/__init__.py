"""ember.distributed: collectives between processes on MPI (mpi4py), or the device's own (NCCL on CUDA).

Start the processes with ``python -m ember.distributed.run --nproc N script.py``
(or ``mpiexec -n N python script.py``); each calls :func:`init_process_group`.

>>> import ember, ember.distributed as dist
>>> dist.init_process_group("mpi")                 # doctest: +SKIP
>>> t = ember.tensor([float(dist.get_rank())])     # doctest: +SKIP
>>> dist.all_reduce(t, op=dist.ReduceOp.SUM)       # doctest: +SKIP
"""
from . import constants
from .backend_name import Backend
from .collectives import (
    GroupMember, ProcessGroup, ReduceOp, Work, all_gather, all_gather_into_tensor, all_gather_object, all_reduce,
    all_to_all_single, barrier, broadcast, broadcast_object_list, destroy_process_group, gather, get_backend,
    get_process_group_ranks, get_rank, get_world_size,
    group, init_process_group, irecv, is_available, is_initialized, is_mpi_available, is_nccl_available,
    is_torchelastic_launched, isend, recv, reduce, reduce_scatter, reduce_scatter_tensor, scatter, send,
)
from .store import DistStoreError, Store, TCPStore

__all__ = ["Backend", "DistStoreError", "GroupMember", "ProcessGroup", "ReduceOp", "Store", "TCPStore", "Work",
           "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all_single", "barrier",
           "broadcast", "broadcast_object_list", "constants", "destroy_process_group", "gather",
           "get_backend", "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
           "irecv",
           "is_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "isend", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
           "scatter", "send"]
from . import algorithms  # noqa: E402,F401  (an attribute once ember.distributed is, as PyTorch's)


def __getattr__(name):
    """``device_mesh`` loads on first use: it brings DTensor, whose ``__torch_function__`` would put every
    Tensor method behind the subclass check from ``import ember`` on."""
    if name == "device_mesh":
        import importlib

        return importlib.import_module(f"{__name__}.device_mesh")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
