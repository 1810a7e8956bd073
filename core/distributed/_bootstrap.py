"""Run one rank's script: set torchrun's environment variables, and abort the job if the script raises."""
from __future__ import annotations

import os
import runpy
import sys
import traceback

# MPICH (hydra) and Open MPI name the rank variables differently
_VARS = {"RANK": ("PMI_RANK", "OMPI_COMM_WORLD_RANK"), "WORLD_SIZE": ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"),
         "LOCAL_RANK": ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"),
         "LOCAL_WORLD_SIZE": ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")}


def set_environment() -> None:
    for name, sources in _VARS.items():
        value = next((os.environ[s] for s in sources if s in os.environ), None)
        os.environ.setdefault(name, value if value is not None else ("1" if "SIZE" in name else "0"))
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29500")


def main() -> None:
    set_environment()
    module = sys.argv[1] == "-m"
    target = sys.argv[2] if module else sys.argv[1]
    sys.argv = sys.argv[2:] if module else sys.argv[1:]
    if not module:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            _abort(f"rank {os.environ['RANK']} exited with {e.code}")
        raise
    except BaseException:
        _abort(f"{traceback.format_exc()}rank {os.environ['RANK']} raised; ending every rank")


def _abort(message: str) -> None:
    import time

    from mpi4py import MPI

    sys.stderr.write(f"ember.distributed.run: {message}\n")
    sys.stderr.flush()
    time.sleep(0.2)  # let mpiexec forward this rank's output before it tears the job down
    MPI.COMM_WORLD.Abort(1)


if __name__ == "__main__":
    main()
