"""ember.distributed.tensor (DTensor, DeviceMesh) on a world of one against PyTorch's own DTensor on a one-process
gloo group, and on two MPI ranks (``mpiexec -n 2 python tests/test_dtensor.py``) against the single-process values."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("mpi4py")
HERE = os.path.abspath(__file__)


def _placements(m):
    from_m = __import__(f"{m.__name__}.distributed.tensor", fromlist=["Shard"])
    return {"S0": from_m.Shard(0), "S1": from_m.Shard(1), "S-1": from_m.Shard(-1), "R": from_m.Replicate(),
            "P": from_m.Partial()}


@pytest.fixture
def worlds(tmp_path):
    """ember's process group (MPI, one process) and PyTorch's (gloo, one process), each torn down after."""
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    import ember.distributed as dist

    dist.init_process_group("mpi")
    tdist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
    try:
        yield torch
    finally:
        tdist.destroy_process_group()
        dist.destroy_process_group()


def _np(t):
    return t.detach().cpu().numpy() if isinstance(t, ember.Tensor) else t.detach().numpy()


def test_mesh_and_placements_match_pytorch(worlds, device):
    torch = worlds
    from torch.distributed.tensor import init_device_mesh as t_mesh
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset as t_local

    from ember.distributed.tensor import DeviceMesh, init_device_mesh
    from ember.distributed.tensor._utils import compute_local_shape_and_global_offset

    dev = ember.device(device).type
    for shape, names in [((1,), None), ((1, 1), ("dp", "tp"))]:
        e, t = init_device_mesh(dev, shape, mesh_dim_names=names), t_mesh("cpu", shape, mesh_dim_names=names)
        assert (e.ndim, e.shape, e.size(), e.get_rank(), e.get_coordinate(), e.mesh_dim_names, e.mesh.tolist()) == (
            t.ndim, t.shape, t.size(), t.get_rank(), t.get_coordinate(), t.mesh_dim_names, t.mesh.tolist())
        assert e.get_local_rank(e.ndim - 1) == t.get_local_rank(t.ndim - 1)
        for ps in (["S0"] * e.ndim, ["R"] * e.ndim):
            assert compute_local_shape_and_global_offset((5, 3), e, [_placements(ember)[p] for p in ps]) == \
                tuple(map(tuple, t_local((5, 3), t, [_placements(torch)[p] for p in ps])))
    assert init_device_mesh(dev, (1, 1), mesh_dim_names=("dp", "tp"))["tp"].mesh_dim_names == ("tp",)
    assert DeviceMesh(dev, [0]) == init_device_mesh(dev, (1,))
    with pytest.raises(RuntimeError, match="holds 2 ranks"):
        init_device_mesh(dev, (2,))
    with pytest.raises(NotImplementedError, match="sub-groups"):
        DeviceMesh(dev, [0, 0])


def test_distribute_redistribute_and_full_tensor_match_pytorch(worlds, device):
    torch = worlds
    import torch.distributed.tensor as tdt

    import ember.distributed.tensor as edt

    dev = ember.device(device).type
    e_mesh, t_mesh = edt.init_device_mesh(dev, (1,)), tdt.init_device_mesh("cpu", (1,))
    data = np.arange(12.0).reshape(3, 4)
    pe, pt = _placements(ember), _placements(torch)
    for a in pe:
        de = edt.distribute_tensor(ember.tensor(data, device=device), e_mesh, [pe[a]])
        dt = tdt.distribute_tensor(torch.tensor(data), t_mesh, [pt[a]])
        assert isinstance(de, edt.DTensor) and repr(de.placements) == repr(dt.placements)
        assert (de.shape, de.to_local().shape) == (dt.shape, dt.to_local().shape)
        np.testing.assert_allclose(_np(de.to_local()), _np(dt.to_local()))
        np.testing.assert_allclose(_np(de.full_tensor()), _np(dt.full_tensor()))
        for b in ("S0", "S1", "R"):
            re, rt = de.redistribute(e_mesh, [pe[b]]), dt.redistribute(t_mesh, [pt[b]])
            assert repr(re.placements) == repr(rt.placements)
            np.testing.assert_allclose(_np(re.to_local()), _np(rt.to_local()))
    local = ember.ones(2, 3, device=device)
    fe = edt.DTensor.from_local(local, e_mesh, [pe["S1"]])
    assert fe.shape == tdt.DTensor.from_local(torch.ones(2, 3), t_mesh, [pt["S1"]]).shape and fe.to_local() is local
    with pytest.raises(ValueError, match="same length"):
        edt.distribute_tensor(ember.ones(2), e_mesh, [pe["R"], pe["R"]])
    with pytest.raises(RuntimeError, match="mixed torch.Tensor and DTensor"):
        fe + ember.ones(2, 3, device=device)


def test_ops_and_gradients_match_pytorch(worlds, device):
    """Pointwise ops keep a sharding, others give the whole result; gradients reach a distributed leaf (as a
    DTensor of its placements), a local tensor through from_local, and autograd.grad's DTensor inputs."""
    torch = worlds
    import torch.distributed.tensor as tdt

    import ember.distributed.tensor as edt

    e_mesh, t_mesh = edt.init_device_mesh(ember.device(device).type, (1,)), tdt.init_device_mesh("cpu", (1,))
    data = np.random.default_rng(0).standard_normal((4, 3))
    (pe, pt), results = (_placements(ember), _placements(torch)), []
    for m, dt_mod, mesh, p in ((ember, edt, e_mesh, pe), (torch, tdt, t_mesh, pt)):
        x = m.tensor(data, dtype=m.float64, device=device if m is ember else "cpu", requires_grad=True)
        d = dt_mod.distribute_tensor(x, mesh, [p["S0"]])
        y = (d * d + 1).exp()
        assert repr(y.placements) == repr(d.placements)  # pointwise: still sharded
        z = (y @ d.T).full_tensor()
        z.sum().backward()
        local = m.tensor(data, dtype=m.float64, device=device if m is ember else "cpu", requires_grad=True)
        w = dt_mod.DTensor.from_local(local, mesh, [p["S1"]]).redistribute(mesh, [p["R"]]).to_local()
        w.pow(3).sum().backward()
        leaf = dt_mod.distribute_tensor(x.detach(), mesh, [p["S1"]]).requires_grad_()
        (g,) = m.autograd.grad(leaf.sin().full_tensor().sum(), leaf)
        assert x.grad is None and d.grad is not None and repr(d.grad.placements) == repr(d.placements)
        assert type(g).__name__ == "DTensor" and repr(g.placements) == repr(leaf.placements)
        results.append([_np(z), _np(d.grad.full_tensor()), _np(local.grad), _np(g.full_tensor())])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# ----------------------------------------------------------------------------- two ranks
def run_rank():
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
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc", "2", "--timeout", "60", HERE, "run"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("CHECK ")]
    assert len(lines) == 2, f"rc={r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    failed = [ln for ln in lines if not ln.endswith(" ok")]
    assert not failed, "\n".join(failed)


if __name__ == "__main__":
    {"run": run_rank}[sys.argv[1]]()
