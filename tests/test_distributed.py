"""ember.distributed under real MPI processes (2 and 4 ranks), DistributedDataParallel and DistributedSampler.

Each world size is launched once (``mpiexec -n N python tests/test_distributed.py <device>``); every rank runs
every check of the tables below against the single-process result and prints ``CHECK <name> <rank> ok``.
The pytest side runs one test per (world size, check).
"""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import ember

pytest.importorskip("mpi4py")

HERE = os.path.abspath(__file__)
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
if not os.access(MPIEXEC, os.X_OK):
    MPIEXEC = "mpiexec"


# ----------------------------------------------------------------------------- rank side
def _inputs(rank, shape=(3, 4), dtype=np.float64):
    """Rank ``rank``'s input: every rank can rebuild every other rank's."""
    rng = np.random.default_rng(100 + rank)
    return (rng.standard_normal(shape) * 4).astype(dtype)


def _all(n, **kw):
    return np.stack([_inputs(r, **kw) for r in range(n)])


def _t(a, dev):
    return ember.tensor(a, device=dev)


def check_all_reduce(dist, dev, r, n, op, ref, dtype):
    t = _t(_inputs(r, dtype=dtype), dev)
    assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
    np.testing.assert_allclose(t.cpu().numpy(), ref(_all(n, dtype=dtype)).astype(dtype), rtol=1e-6)


def _all_reduce_case(op, ref, dtype):
    return lambda dist, dev, r, n: check_all_reduce(dist, dev, r, n, op, ref, dtype)


def check_all_reduce_strided_async(dist, dev, r, n):
    base = _t(_inputs(r), dev)
    view = base.t()  # not contiguous: reduced through a copy written back
    work = dist.all_reduce(view, op=dist.ReduceOp.SUM, async_op=True)
    work.wait()
    np.testing.assert_allclose(base.cpu().numpy(), _all(n).sum(0))


def check_broadcast(dist, dev, r, n):
    t = _t(_inputs(r), dev)
    dist.broadcast(t, src=n - 1)
    np.testing.assert_array_equal(t.cpu().numpy(), _inputs(n - 1))


def check_all_gather(dist, dev, r, n):
    outs = [ember.zeros(3, 4, dtype=ember.float64, device=dev) for _ in range(n)]
    dist.all_gather(outs, _t(_inputs(r), dev))
    np.testing.assert_array_equal(np.stack([o.cpu().numpy() for o in outs]), _all(n))


def check_all_gather_into_tensor(dist, dev, r, n):
    out = ember.zeros(n * 3, 4, dtype=ember.float64, device=dev)
    dist.all_gather_into_tensor(out, _t(_inputs(r), dev))
    np.testing.assert_array_equal(out.cpu().numpy(), _all(n).reshape(n * 3, 4))


def check_reduce_scatter(dist, dev, r, n):
    chunks = [_t(_inputs(r * n + i), dev) for i in range(n)]
    out = ember.zeros(3, 4, dtype=ember.float64, device=dev)
    dist.reduce_scatter(out, chunks, op=dist.ReduceOp.AVG)
    want = np.mean([_inputs(q * n + r) for q in range(n)], axis=0)
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-12)


def check_reduce_scatter_tensor(dist, dev, r, n):
    inp = _t(np.concatenate([_inputs(r * n + i) for i in range(n)]), dev)
    out = ember.zeros(3, 4, dtype=ember.float64, device=dev)
    dist.reduce_scatter_tensor(out, inp, op=dist.ReduceOp.MAX)
    want = np.max([_inputs(q * n + r) for q in range(n)], axis=0)
    np.testing.assert_array_equal(out.cpu().numpy(), want)


def check_gather(dist, dev, r, n):
    outs = [ember.zeros(3, 4, dtype=ember.float64, device=dev) for _ in range(n)] if r == n - 1 else None
    dist.gather(_t(_inputs(r), dev), outs, dst=n - 1)
    if outs is not None:
        np.testing.assert_array_equal(np.stack([o.cpu().numpy() for o in outs]), _all(n))


def check_scatter(dist, dev, r, n):
    out = ember.zeros(3, 4, dtype=ember.float64, device=dev)
    dist.scatter(out, [_t(_inputs(10 + q), dev) for q in range(n)] if r == 0 else None, src=0)
    np.testing.assert_array_equal(out.cpu().numpy(), _inputs(10 + r))


def check_objects(dist, dev, r, n):
    got = [None] * n
    dist.all_gather_object(got, {"rank": r, "loss": r / 2})
    assert got == [{"rank": q, "loss": q / 2} for q in range(n)]
    objs = [r, "x"] if r == 1 else [None, None]
    dist.broadcast_object_list(objs, src=1)
    assert objs == [1, "x"]


def check_reduce(dist, dev, r, n):
    t = _t(_inputs(r), dev)
    dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
    np.testing.assert_allclose(t.cpu().numpy(), _all(n).sum(0) if r == 0 else _inputs(r))


def check_send_recv(dist, dev, r, n):
    t = _t(_inputs(r), dev)
    got = ember.zeros(3, 4, dtype=ember.float64, device=dev)
    nxt, prv = (r + 1) % n, (r - 1) % n
    if r % 2 == 0:
        dist.send(t, nxt)
        src = dist.recv(got, prv)
    else:
        src = dist.recv(got, prv)
        dist.send(t, nxt)
    assert src == prv
    np.testing.assert_array_equal(got.cpu().numpy(), _inputs(prv))


def check_barrier_and_rank(dist, dev, r, n):
    assert dist.is_initialized() and dist.get_world_size() == n and 0 <= r < n
    assert dist.barrier() is None
    assert os.environ["RANK"] == str(r) and os.environ["WORLD_SIZE"] == str(n)


def _raises(exc, match, fn):
    try:
        fn()
    except exc as e:
        assert match in str(e), str(e)
    else:
        raise AssertionError(f"no {exc.__name__} ({match})")


def check_bad_input_is_refused_before_any_change(dist, dev, r, n):
    t = _t(_inputs(r), dev)
    outs = [ember.zeros(3, 4, dtype=ember.float64, device=dev) for _ in range(n + 1)]
    _raises(ValueError, f"all_gather(): tensor_list must have one tensor per rank ({n}), got {n + 1}",
            lambda: dist.all_gather(outs, t))
    wrong = [ember.zeros(3, 4, dtype=ember.float32, device=dev) for _ in range(n)]
    _raises(ValueError, "all_gather(): every output tensor must match the input (shape [3, 4], dtype ember.float64",
            lambda: dist.all_gather(wrong, t))
    ints = _t(np.arange(4), dev)
    _raises(RuntimeError, "all_reduce(): ReduceOp.AVG needs a floating point tensor, got ember.int64",
            lambda: dist.all_reduce(ints, op=dist.ReduceOp.AVG))
    _raises(ValueError, f"broadcast(): rank {n} is out of range for a group of {n} processes",
            lambda: dist.broadcast(t, src=n))
    _raises(TypeError, "all_reduce(): tensor must be a Tensor, got ndarray", lambda: dist.all_reduce(_inputs(r)))
    assert all(o.abs().sum().item() == 0 for o in outs + wrong)
    np.testing.assert_array_equal(t.cpu().numpy(), _inputs(r))
    assert ints.tolist() == [0, 1, 2, 3]


COLLECTIVES = {
    "all_reduce_sum_f64": _all_reduce_case("SUM", lambda a: a.sum(0), np.float64),
    "all_reduce_avg_f32": _all_reduce_case("AVG", lambda a: a.mean(0), np.float32),
    "all_reduce_max_f32": _all_reduce_case("MAX", lambda a: a.max(0), np.float32),
    "all_reduce_min_i64": _all_reduce_case("MIN", lambda a: a.min(0), np.int64),
    "all_reduce_sum_i64": _all_reduce_case("SUM", lambda a: a.sum(0), np.int64),
    "all_reduce_product_f64": _all_reduce_case("PRODUCT", lambda a: a.prod(0), np.float64),
    "all_reduce_strided_async": check_all_reduce_strided_async,
    "broadcast": check_broadcast,
    "all_gather": check_all_gather,
    "all_gather_into_tensor": check_all_gather_into_tensor,
    "reduce_scatter_avg": check_reduce_scatter,
    "reduce_scatter_tensor_max": check_reduce_scatter_tensor,
    "reduce_sum": check_reduce,
    "gather": check_gather,
    "scatter": check_scatter,
    "objects": check_objects,
    "send_recv_ring": check_send_recv,
    "barrier_rank_env": check_barrier_and_rank,
    "bad_input_refused": check_bad_input_is_refused_before_any_change,
}


# ------------------------------------------------------------------ DDP, rank side
def _model(dev, extra=False):
    """A small MLP with a buffer, built from Module and Parameter (``extra``: two parameters that may go unused)."""
    from ember.nn.modules.module import Module
    from ember.nn.parameter import Parameter

    class MLP(Module):
        def __init__(self):
            super().__init__()
            self.w1 = Parameter(ember.randn(5, 8, dtype=ember.float64, device=dev) * 0.5)
            self.b1 = Parameter(ember.zeros(8, dtype=ember.float64, device=dev))
            self.w2 = Parameter(ember.randn(8, 3, dtype=ember.float64, device=dev) * 0.5)
            if extra:
                self.spare = Parameter(ember.ones(3, dtype=ember.float64, device=dev))
                self.never = Parameter(ember.ones(2, dtype=ember.float64, device=dev))
            self.register_buffer("scale", ember.rand(3, dtype=ember.float64, device=dev) + 0.5)
            self.use_spare = False

        def forward(self, x):
            out = (x @ self.w1 + self.b1).tanh() @ self.w2 * self.scale
            return out + self.spare if self.use_spare else out

    return MLP()


def _batch(rank, step, dev, rows=4):
    rng = np.random.default_rng(1000 * step + rank)
    return _t(rng.standard_normal((rows, 5)), dev), _t(rng.standard_normal((rows, 3)), dev)


def _loss(m, x, y):
    return ((m(x) - y) ** 2).mean()


def check_ddp_equals_single_process(dist, dev, r, n, steps=4):
    from ember.nn.parallel import DistributedDataParallel

    ember.manual_seed(r)  # different inits: DDP must copy rank 0's
    model = _model(dev)
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.0005)  # several buckets
    assert len(ddp._buckets) > 1
    ready_at_launch, launch = [], ddp._launch
    ddp._launch = lambda b: (ready_at_launch.append(len(ddp._ready)), launch(b))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ember.manual_seed(0)
    ref = _model(dev)
    ref_opt = ember.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps):
        opt.zero_grad()
        _loss(ddp, *_batch(r, step, dev)).backward()
        opt.step()
        parts = [_batch(q, step, dev) for q in range(n)]
        ref_opt.zero_grad()
        _loss(ref, ember.cat([p[0] for p in parts]), ember.cat([p[1] for p in parts])).backward()
        ref_opt.step()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)
    np.testing.assert_array_equal(model.scale.cpu().numpy(), ref.scale.cpu().numpy())
    n_params = len(list(model.parameters()))
    assert ready_at_launch[0] < n_params  # the first bucket is reduced while backward still runs
    assert len(ready_at_launch) == steps * len(ddp._buckets)


def check_ddp_no_sync_accumulates(dist, dev, r, n):
    from ember.nn.parallel import DistributedDataParallel

    ember.manual_seed(0)
    model = _model(dev)
    ember.manual_seed(0)
    ref = _model(dev)
    ddp = DistributedDataParallel(model)
    with ddp.no_sync():
        _loss(ddp, *_batch(r, 0, dev)).backward()
    local = model.w1.grad.clone()
    _loss(ddp, *_batch(r, 1, dev)).backward()
    for step in (0, 1):
        parts = [_batch(q, step, dev) for q in range(n)]
        _loss(ref, ember.cat([p[0] for p in parts]), ember.cat([p[1] for p in parts])).backward()
    np.testing.assert_allclose(model.w1.grad.cpu().numpy(), ref.w1.grad.cpu().numpy(), rtol=1e-10)
    if n > 1:
        assert not np.allclose(local.cpu().numpy(), ref.w1.grad.cpu().numpy())


def check_ddp_find_unused_parameters(dist, dev, r, n):
    from ember.nn.parallel import DistributedDataParallel

    ember.manual_seed(0)
    model = _model(dev, extra=True)
    ddp = DistributedDataParallel(model, find_unused_parameters=True)
    model.use_spare = r == 0  # `spare` is used on rank 0 only, `never` nowhere
    _loss(ddp, *_batch(r, 0, dev)).backward()
    assert model.never.grad is None
    x, y = _batch(0, 0, dev)
    with ember.no_grad():
        g0 = (2 * (model(x) - y) / y.numel()).sum(0) if r == 0 else None
    g0 = ember.zeros(3, dtype=ember.float64, device=dev) if g0 is None else g0
    dist.broadcast(g0, 0)
    np.testing.assert_allclose(model.spare.grad.cpu().numpy(), g0.cpu().numpy() / n, rtol=1e-10)


def check_ddp_unused_without_detection_raises(dist, dev, r, n):
    from ember.nn.parallel import DistributedDataParallel

    ember.manual_seed(0)
    ddp = DistributedDataParallel(_model(dev, extra=True), bucket_cap_mb=0.0001)
    _loss(ddp, *_batch(r, 0, dev)).backward()  # `spare` and `never` get no gradient: their buckets wait
    try:
        ddp(_batch(r, 1, dev)[0])
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e)
    else:
        raise AssertionError("no error for parameters without gradient")


def check_sampler_from_process_group(dist, dev, r, n):
    from ember.utils.data.distributed import DistributedSampler

    s = DistributedSampler(range(11), shuffle=True, seed=3)
    s.set_epoch(2)
    mine = list(s)
    explicit = DistributedSampler(range(11), num_replicas=n, rank=r, seed=3)
    explicit.set_epoch(2)
    assert mine == list(explicit) and len(mine) == len(s) == -(-11 // n)


DDP = {
    "ddp_equals_single_process": check_ddp_equals_single_process,
    "ddp_no_sync_accumulates": check_ddp_no_sync_accumulates,
    "ddp_find_unused_parameters": check_ddp_find_unused_parameters,
    "ddp_unused_without_detection_raises": check_ddp_unused_without_detection_raises,
    "sampler_from_process_group": check_sampler_from_process_group,
}
CHECKS = {**COLLECTIVES, **DDP}


def run_rank(dev):
    """Run every check on this rank and print one line per check."""
    import traceback

    from mpi4py import MPI

    import ember.distributed as dist

    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    lines = []
    for name, check in CHECKS.items():
        try:
            check(dist, dev, r, n)
            lines.append(f"CHECK {name} {r} ok")
        except Exception:
            lines.append(f"CHECK {name} {r} FAIL {traceback.format_exc()!r}")
        dist.barrier()
    every = MPI.COMM_WORLD.gather(lines, root=0)
    if r == 0:
        print("\n".join(ln for rank_lines in every for ln in rank_lines), flush=True)
    dist.destroy_process_group()


def raise_on_rank(rank_to_fail):
    import ember.distributed as dist

    dist.init_process_group("gloo")
    t = ember.ones(4)
    if dist.get_rank() == int(rank_to_fail):
        raise ValueError("this rank fails on purpose")
    dist.all_reduce(t)  # the other ranks wait here for the failed one
    print("FINISHED", flush=True)


# ----------------------------------------------------------------------------- pytest side
LAUNCHES = {  # how to start N ranks: our launcher, or a bare mpiexec (then init_process_group guards the job)
    "launcher": lambda n: [sys.executable, "-m", "ember.distributed.run", "--nproc", str(n), "--timeout", "60"],
    "mpiexec": lambda n: [MPIEXEC, "-n", str(n), sys.executable],
}


def _launch(nproc, *args, timeout=120, how="launcher"):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    cmd = [*LAUNCHES[how](nproc), HERE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


_RUNS = {}


def _results(nproc, dev):
    if (nproc, dev) not in _RUNS:
        _RUNS[nproc, dev] = _launch(nproc, "run", dev)
    return _RUNS[nproc, dev]


@pytest.mark.parametrize("name", list(CHECKS))
@pytest.mark.parametrize("nproc", [2, 4])
def test_under_mpiexec(device, nproc, name):
    if not ember.device(device).backend.host and ember.device(device).type != "cuda":
        pytest.skip(f"collectives on {device} tensors are staged through the host; covered on cpu")
    r = _results(nproc, device)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(f"CHECK {name} ")]
    assert len(lines) == nproc, f"rc={r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    failed = [ln for ln in lines if not ln.endswith(" ok")]
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("nproc,failing,how", [(2, 1, "mpiexec"), (4, 0, "launcher")])
def test_a_rank_that_raises_ends_every_rank(nproc, failing, how):
    from ember.distributed import run

    before = run.mpi_segments()
    start = time.monotonic()
    r = _launch(nproc, "raise", str(failing), timeout=90, how=how)
    assert time.monotonic() - start < 60
    assert r.returncode != 0
    assert "this rank fails on purpose" in r.stderr
    assert "FINISHED" not in r.stdout
    left = run.mpi_segments() - before  # MPICH's shared memory of the killed ranks
    if how == "launcher":
        assert not left, "the launcher left MPICH segments behind"
    run.remove_orphan_segments(left)


def test_collectives_need_a_process_group(device):
    import ember.distributed as dist

    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match=r"all_reduce\(\): Default process group has not been initialized"):
        dist.all_reduce(ember.ones(2, device=device))
    with pytest.raises(RuntimeError, match="get_rank"):
        dist.get_rank()


def test_launcher_builds_mpiexec_command():
    from ember.distributed import run

    args = run.parse_args(["--nproc", "3", "--hostfile", "hosts", "train.py", "--lr", "0.1"])
    cmd = run.command(args)
    assert cmd[1:5] == ["-n", "3", "-f", "hosts"]
    assert cmd[-4:] == ["ember.distributed._bootstrap", "train.py", "--lr", "0.1"]
    with pytest.raises(SystemExit):
        run.parse_args(["--nproc", "0", "train.py"])


SAMPLER_CASES = [  # (dataset size, replicas, shuffle, drop_last)
    (10, 2, False, False), (11, 2, True, False), (11, 3, True, True), (3, 4, False, False), (12, 4, True, False),
]


@pytest.mark.parametrize("size,replicas,shuffle,drop_last", SAMPLER_CASES)
def test_sampler_partitions_each_epoch(size, replicas, shuffle, drop_last):
    from ember.utils.data.distributed import DistributedSampler

    orders = []
    for epoch in (0, 1):
        parts = []
        for rank in range(replicas):
            s = DistributedSampler(range(size), num_replicas=replicas, rank=rank, shuffle=shuffle, seed=7,
                                   drop_last=drop_last)
            s.set_epoch(epoch)
            parts.append(list(s))
            assert len(parts[-1]) == len(s)
        flat = [i for p in parts for i in p]
        assert len({len(p) for p in parts}) == 1
        if drop_last:
            assert len(set(flat)) == len(flat) == size - size % replicas
        else:
            assert set(flat) == set(range(size)) and len(flat) == -(-size // replicas) * replicas
            assert len(flat) - len(set(flat)) == (-size) % replicas  # padding only
        orders.append(flat)
    if shuffle and size > 3:
        assert orders[0] != orders[1]


def test_sampler_rejects_bad_rank():
    from ember.utils.data.distributed import DistributedSampler

    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


if __name__ == "__main__":
    {"run": run_rank, "raise": raise_on_rank}[sys.argv[1]](*sys.argv[2:])


def test_ddp_example_matches_single_process_training():
    pytest.importorskip("sklearn")
    script = os.path.join(os.path.dirname(HERE), "..", "examples", "ddp_train.py")
    r = subprocess.run([*LAUNCHES["launcher"](2), script, "--epochs", "2", "--check"], capture_output=True,
                       text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    acc = float(r.stdout.split("test accuracy ")[-1].split()[0])
    diff = float(r.stdout.split("concatenated batches: ")[1].split()[0])
    assert acc > 0.8 and diff < 1e-12, r.stdout
