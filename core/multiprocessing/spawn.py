"""``spawn``: start ``nprocs`` processes running ``fn(i, *args)`` and fail loudly if one fails.

With the ``spawn`` start method and an MPI installed (mpi4py and its ``mpiexec``), each child runs under an
``mpiexec -n 1`` of its own: an MPI job of one process with its own namespace, so that children asking
``init_process_group`` for a larger world can connect to each other (:mod:`ember.distributed.rendezvous`; MPICH
cannot connect the singletons that bare ``multiprocessing`` children are). ``EMBER_SPAWN_MPIEXEC=0`` turns this off.
Under ``mpiexec`` a small reaper process runs the child and waits for it: a child ended by a signal is reported by
the signal's name, as PyTorch reports it, and ``mpiexec`` (which saw the reaper end normally) prints no "BAD
TERMINATION" banner.
"""
from __future__ import annotations

import atexit
import contextlib
import importlib.util
import multiprocessing
import multiprocessing.connection
import multiprocessing.resource_tracker
import multiprocessing.spawn
import os
import shlex
import shutil
import signal
import sys
import tempfile
import traceback

from ..distributed.run import which_mpiexec


class ProcessException(Exception):
    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.error_index, self.pid = error_index, pid

    def __reduce__(self):
        return type(self), (str(self), self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised an exception (its traceback is in the message)."""


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (str(self), self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        raise SystemExit(1) from None


class ProcessContext:
    """The processes started by :func:`start_processes`; ``join()`` them."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        """Wait for one process to end; True when all ended well, raise when one failed (the others are ended)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for s in ready:
            i = self.sentinels.pop(s)
            self.processes[i].join()
            if self.processes[i].exitcode != 0:
                failed = i
                break
        if failed is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        p = self.processes[failed]
        signals = [_signal_under_mpiexec(q.pid) for q in self.processes]  # (read once: the ended siblings' too)
        if not self.error_queues[failed].empty():
            raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n"
                                         + self.error_queues[failed].get(), failed, p.pid)
        code = -signals[failed] if signals[failed] else p.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, p.pid, code, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {code}", failed, p.pid, code)


_LAUNCHER: dict = {}  # the wrapper script and the folder it lives in, made once per process

# What mpiexec runs: the child's interpreter as a subprocess in the reaper's process group. mpiexec passes SIGINT,
# SIGQUIT, SIGTERM, SIGUSR1 and SIGALRM on to that whole group, so the child receives each once, as PyTorch's plain
# child would, and the reaper ignores them (dying of one, it would make mpiexec kill the child). One that comes
# before the child exists is kept and sent on once it does (one that comes while it starts may reach it twice): the
# handlers that keep them are set before the child starts, as an ignored signal would stay ignored in it (Python's
# KeyboardInterrupt needs SIGINT's default). A child ended by a signal leaves the signal's number in the status file
# (named by mpiexec's pid, the pid multiprocessing knows) and the reaper exits as a shell would (128 + the signal):
# mpiexec then sees no process killed and prints no banner.
# The reaper runs without ``site`` (``-S``, it needs only the standard library): it starts in about half the time,
# which narrows the gap before its handlers are set, where a signal still ends it (and mpiexec reports that).
_REAPER = """\
import signal, subprocess, sys
forwarded = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGALRM)
early = []
for number in forwarded:
    signal.signal(number, lambda sig, frame: early.append(sig))
status, child = sys.argv[1], subprocess.Popen([sys.executable, *sys.argv[2:]], close_fds=False)
for number in forwarded:
    signal.signal(number, signal.SIG_IGN)
for number in early:
    child.send_signal(number)
code = child.wait()
if code < 0:
    with open(status, "w") as f:
        f.write(str(-code))
    code = 128 - code
sys.exit(code)
"""


def _mpi_launcher():
    """A script that runs Python under ``mpiexec -n 1`` (None without mpi4py or an mpiexec): multiprocessing execs
    it as the interpreter, passing the interpreter's arguments and inherited descriptors through."""
    if os.environ.get("EMBER_SPAWN_MPIEXEC", "1") == "0":
        return None
    if "path" in _LAUNCHER:
        return _LAUNCHER["path"]
    path = None
    if importlib.util.find_spec("mpi4py") is not None:
        mpiexec = which_mpiexec()
        if mpiexec is not None:
            folder = _LAUNCHER["folder"] = tempfile.mkdtemp(prefix="ember-spawn-")
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            path = os.path.join(folder, "python.sh")
            python = shlex.quote(sys.executable)
            with open(path, "w") as f:  # a child of an MPI job must not take its parent's PMI connection
                f.write(f"#!/bin/sh\nunset PMI_FD PMI_PORT PMI_RANK PMI_SIZE PMI_ID PMI_SPAWNED\n"
                        f"exec {shlex.quote(mpiexec)} -n 1 {python} -S -c {shlex.quote(_REAPER)} "
                        f"{shlex.quote(folder)}/$$.signal \"$@\" </dev/null\n")
            os.chmod(path, 0o700)
    _LAUNCHER["path"] = path
    return path


def _signal_under_mpiexec(pid: int):
    """The signal that ended the child run under the ``mpiexec`` of this pid (None if none did), read once."""
    folder = _LAUNCHER.get("folder")
    if folder is None or pid is None:
        return None
    path = os.path.join(folder, f"{pid}.signal")
    try:
        with open(path) as f:
            number = int(f.read())
    except (OSError, ValueError):
        return None
    os.unlink(path)
    return number


@contextlib.contextmanager
def _interpreter(start_method: str):
    """Children of ``spawn`` started inside the block run under their own ``mpiexec`` where there is one."""
    launcher = _mpi_launcher() if start_method == "spawn" else None
    if launcher is None:
        yield
        return
    multiprocessing.resource_tracker.ensure_running()  # started with the plain interpreter: it outlives these children
    before = multiprocessing.spawn.get_executable()
    multiprocessing.spawn.set_executable(launcher)
    try:
        yield
    finally:
        multiprocessing.spawn.set_executable(before)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Start ``nprocs`` processes with ``start_method`` running ``fn(i, *args)``."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    with _interpreter(start_method):
        for i in range(nprocs):
            q = ctx.SimpleQueue()
            p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
            p.start()
            processes.append(p)
            queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False, start_method: str = "spawn"):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process; raise if any fails.

    >>> import ember.multiprocessing as mp
    >>> mp.spawn(print, args=("hello",), nprocs=1)  # doctest: +SKIP
    0 hello
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
