"""The launcher: ``python -m ember.distributed.run --nproc N script.py [args]`` runs N ranks under mpiexec.

Each rank gets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` and ``LOCAL_WORLD_SIZE`` in its environment (as
``torchrun`` sets them), and an exception escaping any rank aborts the whole job.  Across machines, pass an
MPI hostfile: ``python -m ember.distributed.run --nproc 8 --hostfile hosts train.py``.
"""
from __future__ import annotations

import argparse
import os
import time
import shutil
import subprocess
import sys


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run",
                                description="Run a training script on several processes under mpiexec.")
    p.add_argument("--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int, default=1,
                   help="number of processes (ranks) to start (default 1)")
    p.add_argument("--hostfile", "-f", default=None, help="MPI hostfile listing the machines to run on")
    p.add_argument("--timeout", type=int, default=None, help="end the job after this many seconds (MPIEXEC_TIMEOUT)")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: the one next to this Python)")
    p.add_argument("-m", dest="module", action="store_true", help="run script as a module, like python -m")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    args = p.parse_args(argv)
    if args.nproc < 1:
        p.error(f"--nproc must be at least 1, got {args.nproc}")
    return args


def which_mpiexec(explicit: str | None = None) -> str | None:
    """The mpiexec to run: ``explicit``, the one installed beside this Python (the mpich wheel), or on PATH; None
    where there is none."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    for cand in (explicit, here, shutil.which("mpiexec")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def find_mpiexec(explicit: str | None = None) -> str:
    """:func:`which_mpiexec`, or the launcher's exit saying how to install one."""
    found = which_mpiexec(explicit)
    if found is not None:
        return found
    raise SystemExit("ember.distributed.run: no mpiexec found; install one with pip install 'ember[dist]' "
                     "(from a checkout: pip install -e \".[dist]\")")


def command(args: argparse.Namespace) -> list:
    """The mpiexec command line for ``args``."""
    cmd = [find_mpiexec(args.mpiexec), "-n", str(args.nproc)]
    if args.hostfile:
        cmd += ["-f", args.hostfile]
    target = ["-m", args.script] if args.module else [args.script]
    return cmd + [sys.executable, "-m", "ember.distributed._bootstrap", *target, *args.script_args]


SHM = "/dev/shm"


def mpi_segments() -> set:
    """MPICH's node-local shared-memory segments now in /dev/shm."""
    return {n for n in os.listdir(SHM) if n.startswith("mpich_shm_")} if os.path.isdir(SHM) else set()


def remove_orphan_segments(names) -> list:
    """Unlink those of ``names`` that no running process maps (left behind by ranks that were killed)."""
    mapped = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as f:
                mapped.update(line.rsplit("/", 1)[-1].split()[0] for line in f if "/mpich_shm_" in line)
        except OSError:  # the process ended, or is not ours to read
            continue
    removed = [n for n in names if n not in mapped]
    for n in removed:
        try:
            os.unlink(os.path.join(SHM, n))
        except FileNotFoundError:
            pass
    return removed


def main(argv=None) -> int:
    args = parse_args(argv)
    env = dict(os.environ)
    if args.timeout:
        env["MPIEXEC_TIMEOUT"] = str(args.timeout)
    before = mpi_segments()
    rc = subprocess.call(command(args), env=env)
    if rc != 0:  # a rank that was killed (MPI_Abort, a signal) cannot unlink MPICH's shared memory
        _clean_after_failure(before)
    return rc


def _clean_after_failure(before, patience: float = 5.0) -> None:
    """Unlink the segments the failed job left, waiting for its last ranks to unmap them (they may still be
    exiting when mpiexec returns)."""
    deadline = time.monotonic() + patience
    left = mpi_segments() - before
    while left:
        remove_orphan_segments(left)
        left = mpi_segments() - before
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
