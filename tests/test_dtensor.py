"""ember.distributed.tensor (DTensor, DeviceMesh) on a world of one against PyTorch's own DTensor on a one-process
gloo group, and on two MPI ranks against the values one process computes.

Process groups stay out of the pytest process: each world runs as ``python tests/test_dtensor.py <what> ...`` (the
world of one once with ember, once with PyTorch, each printing its report as JSON; the two ranks under ember's
launcher), and the tests compare what they print.
"""
import importlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("mpi4py")
HERE = os.path.abspath(__file__)


# ----------------------------------------------------------------------------- a world of one, either library
def _report(lib: str, device: str, pg_file: str) -> dict:
    """What the world-of-one checks see with ``lib`` (``ember`` or ``torch``): plain values, for comparison."""
    m = importlib.import_module(lib)
    dist = importlib.import_module(f"{lib}.distributed")
    dt = importlib.import_module(f"{lib}.distributed.tensor")
    local_shape = importlib.import_module(f"{lib}.distributed.tensor._utils").compute_local_shape_and_global_offset
    if lib == "torch":
        dist.init_process_group("gloo", init_method=f"file://{pg_file}", rank=0, world_size=1)
        device = "cpu"
    else:
        dist.init_process_group("mpi")
    out = {}
    p = {"S0": dt.Shard(0), "S1": dt.Shard(1), "S-1": dt.Shard(-1), "R": dt.Replicate(), "P": dt.Partial()}

    def vals(t):
        return t.detach().cpu().tolist() if t.ndim else float(t.detach().cpu())

    # meshes
    for shape, names in [((1,), None), ((1, 1), ("dp", "tp"))]:
        mesh = dt.init_device_mesh("cpu" if lib == "torch" else ember.device(device).type, shape,
                                   mesh_dim_names=names)
        out[f"mesh{shape}"] = [mesh.ndim, list(mesh.shape), mesh.size(), mesh.get_rank(), list(mesh.get_coordinate()),
                               mesh.mesh_dim_names, mesh.mesh.tolist(), mesh.get_local_rank(mesh.ndim - 1),
                               [list(map(list, local_shape((5, 3), mesh, [p[a]] * mesh.ndim))) for a in ("S0", "R")]]
    out["submesh"] = list(mesh["tp"].mesh_dim_names)
    fc = importlib.import_module(f"{lib}.distributed._functional_collectives")  # a mesh as the group
    t = m.arange(4.0, device=device)
    out["funcol"] = [vals(fc.wait_tensor(fc.all_reduce(t, "sum", mesh["tp"]))),
                     vals(fc.wait_tensor(fc.all_gather_tensor(t, 0, (mesh, 1))))]
    mesh = dt.init_device_mesh("cpu" if lib == "torch" else ember.device(device).type, (1,))
    # distribute, redistribute, full_tensor, from_local
    data = m.arange(12.0, device=device).reshape(3, 4)
    for a in p:
        d = dt.distribute_tensor(data, mesh, [p[a]])
        out[f"dist {a}"] = [type(d).__name__, repr(d.placements), list(d.shape), list(d.to_local().shape),
                            vals(d.to_local()), vals(d.full_tensor())]
        for b in ("S0", "S1", "R"):
            r = d.redistribute(mesh, [p[b]])
            out[f"dist {a} -> {b}"] = [repr(r.placements), vals(r.to_local())]
    f = dt.DTensor.from_local(m.ones(2, 3, device=device), mesh, [p["S1"]])
    out["from_local"] = [list(f.shape), repr(f.placements)]
    errors = {"placements": lambda: dt.distribute_tensor(m.ones(2, device=device), mesh, [p["R"], p["R"]]),
              "mixed": lambda: f + m.ones(2, 3, device=device)}
    for name, bad in errors.items():
        try:
            bad()
            out[f"error {name}"] = "none"
        except (ValueError, RuntimeError) as e:
            out[f"error {name}"] = type(e).__name__
    # ops and gradients: pointwise ops keep a sharding; gradients reach a distributed leaf (a DTensor of its
    # placements), a local tensor through from_local, and autograd.grad's DTensor input
    x = m.tensor(np.random.default_rng(0).standard_normal((4, 3)), dtype=m.float64, device=device,
                 requires_grad=True)
    d = dt.distribute_tensor(x, mesh, [p["S0"]])
    y = (d * d + 1).exp()
    z = (y @ d.T).full_tensor()
    z.sum().backward()
    local = x.detach().clone().requires_grad_()
    dt.DTensor.from_local(local, mesh, [p["S1"]]).redistribute(mesh, [p["R"]]).to_local().pow(3).sum().backward()
    leaf = dt.distribute_tensor(x.detach(), mesh, [p["S1"]]).requires_grad_()
    (g,) = m.autograd.grad(leaf.sin().full_tensor().sum(), leaf)
    total = y.sum()  # a whole-tensor sum of a sharded DTensor: a partial sum
    out["sum"] = [repr(total.placements), vals(total.full_tensor())]
    out["ops"] = [repr(y.placements), vals(z), x.grad is None, type(d.grad).__name__, repr(d.grad.placements),
                  vals(d.grad.full_tensor()), vals(local.grad), type(g).__name__, repr(g.placements),
                  vals(g.full_tensor())]
    dist.destroy_process_group()
    return out


def _start(*args, launcher=False):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    start = [sys.executable, "-m", "ember.distributed.run", "--nproc", "2", "--timeout", "60"] if launcher else \
        [sys.executable]
    return subprocess.Popen([*start, HERE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_world_of_one_matches_pytorch(device, tmp_path):
    pytest.importorskip("torch")
    runs = {lib: _start("world1", lib, device, str(tmp_path / f"pg-{lib}")) for lib in ("ember", "torch")}
    reports = {}
    for lib, proc in runs.items():  # (the two run side by side)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, f"{lib}: {err[-3000:]}"
        reports[lib] = json.loads(out.strip().splitlines()[-1])
    ours, theirs = reports["ember"], reports["torch"]
    assert ours.keys() == theirs.keys()
    for key in ours:
        a, b = ours[key], theirs[key]
        if key in ("ops", "sum"):  # float64 values: compared closely, the rest exactly
            for u, v in zip(a, b):
                if isinstance(u, (list, float)):
                    np.testing.assert_allclose(u, v, rtol=1e-12, err_msg=key)
                else:
                    assert u == v, (key, a, b)
        else:
            assert a == b, (key, a, b)


# ----------------------------------------------------------------------------- two ranks
def run_two_ranks():
    """Each rank's checks against the values one process computes, printed as ``CHECK <rank> ok`` or the error."""
    import traceback

    import ember.distributed as dist
    from ember.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor, init_device_mesh
    from ember.distributed.tensor._utils import compute_local_shape_and_global_offset

    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    try:
        mesh = init_device_mesh("cpu", (n,))
        full = np.arange(15.0).reshape(5, 3)  # 5 rows over 2 ranks: torch.chunk's 3 and 2
        x = ember.tensor(full if r == 0 else np.zeros_like(full), dtype=ember.float64, requires_grad=True)
        d = distribute_tensor(x, mesh, [Shard(0)])  # rank 0's data is what is distributed
        chunk = np.array_split(full, [3])[r]
        np.testing.assert_array_equal(d.to_local().detach().numpy(), chunk)
        assert compute_local_shape_and_global_offset((5, 3), mesh, [Shard(0)]) == (chunk.shape, (3 * r, 0))
        np.testing.assert_array_equal(d.full_tensor().detach().numpy(), full)
        np.testing.assert_array_equal(d.redistribute(mesh, [Shard(1)]).to_local().detach().numpy(),
                                      full[:, [0, 1] if r == 0 else [2]])
        y = (d * 2).exp()
        assert y.placements == (Shard(0),)
        np.testing.assert_allclose((y @ d.T).full_tensor().detach().numpy(), np.exp(full * 2) @ full.T)
        d.full_tensor().pow(2).sum().backward()  # every rank's loss is the whole one: the gradient of its rows
        np.testing.assert_allclose(d.grad.to_local().numpy(), 2 * chunk)
        total = (d * 1).sum()
        assert total.placements == (Partial(),) and float(total.full_tensor()) == full.sum()
        part = DTensor.from_local(ember.full((2,), float(r + 1)), mesh, [Partial()])
        np.testing.assert_array_equal(part.redistribute(mesh, [Replicate()]).to_local().numpy(), [3.0, 3.0])
        np.testing.assert_array_equal(part.redistribute(mesh, [Shard(0)]).to_local().numpy(), [3.0])
        rep = distribute_tensor(ember.ones(2), mesh, [Replicate()]).redistribute(mesh, [Partial()])
        np.testing.assert_array_equal(rep.full_tensor().numpy(), [1.0, 1.0])
        line = f"CHECK {r} ok"
    except Exception:
        line = f"CHECK {r} FAIL {traceback.format_exc()!r}"
    lines = [None] * n
    dist.all_gather_object(lines, line)
    if r == 0:
        print("\n".join(lines), flush=True)
    dist.destroy_process_group()


def test_two_ranks():
    proc = _start("two", launcher=True)
    out, err = proc.communicate(timeout=120)
    lines = [ln for ln in out.splitlines() if ln.startswith("CHECK ")]
    assert len(lines) == 2, f"rc={proc.returncode}\n{out[-3000:]}\n{err[-3000:]}"
    failed = [ln for ln in lines if not ln.endswith(" ok")]
    assert not failed, "\n".join(failed)


if __name__ == "__main__":
    if sys.argv[1] == "world1":
        print(json.dumps(_report(*sys.argv[2:])))
    else:
        run_two_ranks()
