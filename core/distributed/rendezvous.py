"""Forming one process group from processes that separate MPI jobs started (``mp.spawn``'s children).

``ember.multiprocessing.spawn`` runs each child under ``mpiexec -n 1``, so each is an MPI job of one process with a
namespace of its own. When such processes ask :func:`~ember.distributed.init_process_group` for a world larger
than their own, they meet through a store (``env://``: ``MASTER_ADDR``/``MASTER_PORT``, ``tcp://host:port``, or
``store=``): rank 0 opens an MPI port and publishes its name there, the others connect to it one at a time with
MPI's dynamic-process calls (``MPI_Comm_accept``/``MPI_Comm_connect``), each new intercommunicator is merged into
the group, and the merged group is reordered by the ranks the processes asked for.

Processes that no ``mpiexec`` started (a bare ``multiprocessing.Process``, a ``fork`` child) are MPICH
singletons; MPICH gives every singleton the same world name, so two of them cannot connect ("Local and remote
groups ... must not contain the same processes"), and :func:`connect` then says how to start them instead.
"""
from __future__ import annotations

import datetime
import os
from urllib.parse import urlparse

from .store import TCPStore

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # a process group's (distributed.constants.default_pg_timeout)

_PORT_KEY = "ember/mpi_port"
_JOINED_KEY = "ember/mpi_joined"
_TICKET_KEY = "ember/mpi_ticket"
_TURN_KEY = "ember/mpi_turn"


def requested(init_method, store, rank: int, world_size: int):
    """The ``(rank, world_size)`` asked for by the arguments, else by ``RANK``/``WORLD_SIZE`` (as PyTorch's
    ``env://`` reads them), -1 where neither says."""
    if store is not None or (init_method is not None and str(init_method).startswith("tcp://")):
        return rank, world_size
    env = os.environ
    return (rank if rank not in (-1, None) else int(env.get("RANK", -1)),
            world_size if world_size not in (-1, None) else int(env.get("WORLD_SIZE", -1)))


def make_store(init_method, rank: int, world_size: int, timeout) -> TCPStore:
    """The TCP store the processes meet at: ``tcp://host:port``, or ``MASTER_ADDR``/``MASTER_PORT`` for ``env://``
    (rank 0 serves it)."""
    method = "env://" if init_method is None else str(init_method)
    if method.startswith("tcp://"):
        url = urlparse(method)
        host, port = url.hostname, url.port
        if host is None or port is None:
            raise ValueError(f"init_process_group(): init_method {method!r} must name a host and a port")
    elif method.startswith("env://"):
        missing = [k for k in ("MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
        if missing:
            raise ValueError(f"init_process_group(): init_method 'env://' needs the environment variable "
                             f"{missing[0]}, which is not set")
        host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    else:
        raise ValueError(f"init_process_group(): init_method {method!r} is not supported; expected 'env://' or "
                         f"'tcp://host:port' (or pass store=)")
    timeout = timeout if timeout is not None else DEFAULT_TIMEOUT
    return TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout)


def connect(MPI, init_method, store, rank: int, world_size: int, timeout):
    """An intracommunicator of ``world_size`` processes, this one at ``rank``, met through ``store`` (None: the
    store ``init_method`` names), and the store."""
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group(): rank must be in [0, {world_size}), got {rank}")
    store = store if store is not None else make_store(init_method, rank, world_size, timeout)
    try:
        if rank == 0:
            port = MPI.Open_port()
            store.set(_PORT_KEY, port)
            comm = MPI.COMM_SELF.Dup()
        else:
            port = store.get(_PORT_KEY).decode()
            turn = store.add(_TICKET_KEY, 1)
            store.get(f"{_TURN_KEY}/{turn}")  # one connection pending at a time
            comm = _merge(MPI.COMM_SELF.Connect(port), high=True)
        while comm.Get_size() < world_size:  # every member takes part in admitting each newcomer
            if comm.Get_rank() == 0:
                store.set(f"{_TURN_KEY}/{comm.Get_size()}", b"1")
            comm = _merge(comm.Accept(port), high=False, old=comm)
    except MPI.Exception as e:
        raise RuntimeError(
            f"init_process_group(): rank {rank} could not connect to the other {world_size - 1} processes through "
            f"MPI ({e.Get_error_string().splitlines()[0]}). Start them with ember.multiprocessing.spawn or "
            f"start_processes (each under its own mpiexec), or as one job with python -m ember.distributed.run; "
            f"processes started by plain multiprocessing are MPI singletons, which MPICH cannot connect") from e
    ranks = comm.allgather(rank)
    if sorted(ranks) != list(range(world_size)):
        comm.Disconnect()
        raise ValueError(f"init_process_group(): the processes asked for ranks {sorted(ranks)}, expected each of "
                         f"0..{world_size - 1} once")
    ordered = comm.Split(0, rank)
    comm.Free()
    if rank == 0:
        MPI.Close_port(port)
    if store.add(_JOINED_KEY, 1) == world_size:  # the last to join clears the keys, so the store can be reused
        for key in (_PORT_KEY, _JOINED_KEY, _TICKET_KEY, *(f"{_TURN_KEY}/{k}" for k in range(1, world_size))):
            store.delete_key(key)
    return ordered, store


def _merge(inter, high: bool, old=None):
    """The intracommunicator of both sides of ``inter`` (this side last when ``high``); frees ``inter`` and
    ``old``."""
    comm = inter.Merge(high)
    inter.Free()
    if old is not None:
        old.Free()
    return comm
