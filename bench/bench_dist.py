"""ember.distributed benchmarks: all_reduce bandwidth against raw mpi4py, and DDP step-time scaling.

    python bench/bench_dist.py            # launches the ranks itself with mpiexec

1. all_reduce (SUM, float32, in place) of 1 MB .. 256 MB on 2 ranks: ember's
   ``dist.all_reduce(tensor)`` against mpi4py's ``comm.Allreduce(IN_PLACE, ndarray)``
   on the same buffer size (target: ember at most 1.1x).
2. DistributedDataParallel: time of one training step (forward, backward with
   bucketed all-reduce, SGD step) of an MLP, per-rank batch fixed, on 1 and 2 ranks
   (one BLAS thread per rank).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.abspath(__file__)
SIZES_MB = [1, 4, 16, 64, 256]


def _paired_best(fns, reps):
    """Best time of each function, calling them in turn (so load changes hit all alike; the best run is the
    one least disturbed by other processes on a shared machine)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [min(ts) for ts in times]


def bench_allreduce():
    from mpi4py import MPI

    import ember
    import ember.distributed as dist

    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD
    rows = []
    for mb in SIZES_MB:
        n = mb * 2 ** 20 // 4
        reps = 40 if mb <= 16 else 10
        buf = np.ones(n, np.float32)
        t = ember.ones(n)

        def raw(buf=buf):
            comm.Barrier()
            comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)

        def emb(t=t):
            comm.Barrier()
            dist.all_reduce(t)

        t_raw, t_emb = _paired_best([raw, emb], reps)
        rows.append((mb, t_raw, t_emb))
    if comm.Get_rank() == 0:
        print(f"all_reduce on {comm.Get_size()} ranks (float32, SUM, in place; best of 40 runs, 10 above 16 MB)")
        print(f"{'size':>8} {'mpi4py ms':>10} {'ember ms':>10} {'ember GB/s':>11} {'ratio':>6}")
        for mb, a, b in rows:
            print(f"{mb:>6}MB {a * 1e3:>10.2f} {b * 1e3:>10.2f} {mb / 1024 / b:>11.2f} {b / a:>6.2f}")
    dist.destroy_process_group()


def bench_ddp(steps=20, batch=64):
    import ember
    import ember.distributed as dist
    import ember.nn as nn
    import ember.nn.functional as F
    from ember.nn.parallel import DistributedDataParallel

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                                                  nn.Linear(1024, 10)), bucket_cap_mb=2)
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = ember.randn(batch, 784), ember.randint(0, 10, (batch,))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    per_step = (time.perf_counter() - t0) / steps
    if rank == 0:
        nparams = sum(p.numel() for p in model.parameters())
        print(f"DDP step: {world} rank(s), {nparams / 1e6:.2f} M parameters, batch {batch} per rank, "
              f"{len(model._buckets)} bucket(s): {per_step * 1e3:.1f} ms/step, "
              f"{world * batch / per_step:.0f} samples/s")
    dist.destroy_process_group()


def _launch(n, what):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    # one BLAS thread per rank: 1 rank uses one core, 2 ranks two, so the scaling is the data parallelism's
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    subprocess.run([mpiexec if os.access(mpiexec, os.X_OK) else "mpiexec", "-n", str(n), sys.executable, HERE,
                    what], check=True, env=env)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        {"allreduce": bench_allreduce, "ddp": bench_ddp}[sys.argv[1]]()
    else:
        _launch(2, "allreduce")
        _launch(1, "ddp")
        _launch(2, "ddp")
