"""Gaps the ecosystem libraries' own test suites showed (see docs/ecosystem.md), each checked against PyTorch."""
import pytest


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_factory_takes_size_keyword(device, name):
    """einops' tests call ``torch.randn(size=(...))``: PyTorch's factories take the shape as ``size=``."""
    torch = pytest.importorskip("torch")
    import ember

    for shape in [(2, 3), [4], ()]:
        got = getattr(ember, name)(size=shape, device=device)
        assert tuple(got.shape) == tuple(getattr(torch, name)(size=shape).shape)
        assert got.dtype == ember.float32
    if name in ("zeros", "ones"):
        assert getattr(ember, name)(size=(2,), device=device).tolist() == getattr(torch, name)(size=(2,)).tolist()
    with pytest.raises(TypeError, match=name):
        getattr(torch, name)(2, size=(2,))
    with pytest.raises(TypeError, match=name):
        getattr(ember, name)(2, size=(2,), device=device)


def _store_session(dist):
    """The same store calls on ember's and PyTorch's TCPStore (skorch's DistributedHistory uses set/get/wait)."""
    import datetime
    import threading

    master = dist.TCPStore("127.0.0.1", 0, world_size=1, is_master=True)
    worker = dist.TCPStore("127.0.0.1", master.port, is_master=False, wait_for_workers=False)
    out = []
    master.set("a", "1")
    worker.set("b", b"\x00\x01")
    out += [worker.get("a"), master.get("b"), master.add("n", 2), worker.add("n", -5)]
    out += [master.compare_set("a", "1", "2"), master.compare_set("a", "9", "3"), worker.get("a")]
    out += [master.check(["a", "b"]), master.check(["a", "zz"]), worker.delete_key("b"), worker.check(["b"])]
    threading.Timer(0.2, master.set, ("late", "x")).start()
    worker.wait(["late"])
    out.append(worker.get("late"))
    with pytest.raises(RuntimeError, match="[Tt]imeout"):
        worker.wait(["never"], datetime.timedelta(milliseconds=100))
    return out


def test_tcp_store_matches_pytorch():
    torch = pytest.importorskip("torch")
    import ember.distributed

    assert _store_session(ember.distributed) == _store_session(torch.distributed)
    assert issubclass(ember.distributed.DistStoreError, RuntimeError)


def test_register_kl_accepts_any_class():
    """pyro registers KL pairs against its own abstract ``Distribution`` base (not a subclass of PyTorch's);
    PyTorch accepts any class there, and a registered pair is found for instances of subclasses of both."""
    torch = pytest.importorskip("torch")
    import ember

    for lib in (torch, ember):
        class Base:  # pyro's abstract base: no relation to lib.distributions.Distribution
            pass

        class Point(lib.distributions.Normal, Base):
            pass

        class Other(lib.distributions.Distribution, Base):
            arg_constraints = {}

        lib.distributions.kl.register_kl(Point, Base)(lambda p, q, lib=lib: lib.tensor(7.0))
        p = Point(lib.tensor(0.0), lib.tensor(1.0))
        assert lib.distributions.kl_divergence(p, Other()).item() == 7.0
        with pytest.raises(TypeError):
            lib.distributions.kl.register_kl(Point(0.0, 1.0), Base)


def test_reduce_op_members_are_red_op_type():
    """Lightning reads ``ReduceOp.RedOpType`` at import: the type of ``ReduceOp``'s members."""
    torch = pytest.importorskip("torch")
    import ember.distributed

    for dist in (torch.distributed, ember.distributed):
        assert all(isinstance(getattr(dist.ReduceOp, op), dist.ReduceOp.RedOpType) for op in ("SUM", "MAX", "AVG"))
        assert not isinstance("sum", dist.ReduceOp.RedOpType)


def test_fx_wrap_as_decorator(tmp_path, monkeypatch):
    """timm marks functions with ``@torch.fx.wrap`` at module level; the traced graph calls them as one node."""
    torch = pytest.importorskip("torch")
    import importlib

    import ember
    import ember.fx  # noqa: F401

    for lib, modname in ((torch, "wrapped_torch"), (ember, "wrapped_ember")):
        (tmp_path / f"{modname}.py").write_text(
            f"import {lib.__name__}.fx\nimport {lib.__name__} as lib\n\n\n"
            "@lib.fx.wrap\ndef grid(x):\n    return x * int(x.shape[0])\n\n\n"
            "def f(x):\n    return grid(x) + 1\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        mod = importlib.import_module(modname)
        gm = lib.fx.symbolic_trace(mod.f)
        calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        assert calls[0] is mod.grid, calls
        assert gm(lib.ones(3)).tolist() == [4.0, 4.0, 4.0]


_GROUP_SCRIPT = """
import socket, sys
import {lib}.distributed as dist
from {lib}.distributed.constants import default_pg_timeout
out = [dist.group.WORLD, dist.GroupMember.WORLD, dist.GroupMember.NON_GROUP_MEMBER, default_pg_timeout.seconds]
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{{port}}", rank=0, world_size=1)
pg = dist.group.WORLD
out += [isinstance(pg, dist.ProcessGroup), pg is dist.GroupMember.WORLD, pg.rank(), pg.size(), pg.name()]
dist.destroy_process_group()
out.append(dist.group.WORLD)
print(out)
"""


def test_process_group_world_matches_pytorch():
    """Lightning imports ``ProcessGroup``, ``group`` and ``constants.default_pg_timeout``: ``group.WORLD`` is None
    until a process group starts, then the default group, with its rank, size and backend name."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    runs = {lib: subprocess.run([sys.executable, "-c", _GROUP_SCRIPT.format(lib=lib)], capture_output=True,
                                text=True, timeout=120) for lib in ("torch", "ember")}
    for lib, proc in runs.items():
        assert proc.returncode == 0, f"{lib}: {proc.stderr[-2000:]}"
    assert runs["ember"].stdout == runs["torch"].stdout
    assert runs["ember"].stdout.startswith("[None, None, -100, 1800, True, True, 0, 1, 'gloo', None]")


def test_is_torchelastic_launched(monkeypatch):
    torch = pytest.importorskip("torch")
    import ember.distributed

    for value in (None, "run-1"):
        if value is None:
            monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
        else:
            monkeypatch.setenv("TORCHELASTIC_RUN_ID", value)
        assert ember.distributed.is_torchelastic_launched() is torch.distributed.is_torchelastic_launched()


def test_file_reader_reads_archive_records(tmp_path):
    """``torch.PyTorchFileReader`` (Lightning's lazy checkpoint loading) lists and reads an archive's records."""
    torch = pytest.importorskip("torch")
    import ember

    for lib in (torch, ember):
        path = tmp_path / f"{lib.__name__}.pt"
        lib.save({"w": lib.ones(2)}, str(path))
        with open(path, "rb") as fh:
            for reader in (lib.PyTorchFileReader(str(path)), lib.PyTorchFileReader(fh)):
                records = reader.get_all_records()
                assert "data.pkl" in records or "data.json" in records
                first = records[0]
                assert reader.has_record(first) and not reader.has_record("nope")
                assert isinstance(reader.get_record(first), bytes)
                assert reader.get_record_size(first) == len(reader.get_record(first))
                with pytest.raises(RuntimeError, match="nope"):
                    reader.get_record("nope")
        with pytest.raises(RuntimeError):
            lib.PyTorchFileReader(str(tmp_path / "missing.pt"))


def test_pytree_get_node_type():
    """Lightning's pytree helpers ask ``_get_node_type(x) in SUPPORTED_NODES``."""
    torch = pytest.importorskip("torch")
    import collections

    import ember.utils._pytree as ours

    theirs = torch.utils._pytree
    point = collections.namedtuple("Point", "x y")
    for tree in [(1, 2), [1], {"a": 1}, point(1, 2), 3, "s", None, 2.5]:
        got = ours._get_node_type(tree)
        assert (got in ours.SUPPORTED_NODES) == (theirs._get_node_type(tree) in theirs.SUPPORTED_NODES)
        assert got is (collections.namedtuple if isinstance(tree, point) else type(tree))


def _flops(lib, conv):
    from importlib import import_module

    FlopCounterMode = import_module(f"{lib.__name__}.utils.flop_counter").FlopCounterMode
    lib.manual_seed(0)
    if conv:
        net = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1, groups=1), lib.nn.ReLU(),
                                lib.nn.Conv2d(4, 8, 3, stride=2, groups=2), lib.nn.Flatten(), lib.nn.Linear(8 * 9, 2))
        x = lib.randn(2, 3, 8, 8)
    else:
        net = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.ReLU(), lib.nn.Sequential(lib.nn.Linear(5, 2)))
        x = lib.randn(4, 3)
    counter = FlopCounterMode(display=False, depth=3)
    with counter:
        out = net(x)
        fwd = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
        out.sum().backward()
        batched = lib.randn(2, 4, 3) @ lib.randn(3, 6)  # a batched product folds into one GEMM
    both = {k: sum(v.values()) for k, v in counter.get_flop_counts().items()}
    return counter.get_total_flops(), fwd, both, batched.shape


@pytest.mark.parametrize("conv", [False, True], ids=["linear", "conv"])
def test_flop_counter_matches_pytorch(conv):
    """Lightning's model summary counts flops with ``FlopCounterMode``: totals and per-module counts, forward and
    backward, as PyTorch counts them."""
    torch = pytest.importorskip("torch")
    import ember

    ours, theirs = _flops(ember, conv), _flops(torch, conv)
    assert ours[0] == theirs[0] and ours[0] > 0
    assert ours[1:] == theirs[1:]


def test_small_platform_names():
    """``torch.ScriptModule``, ``torch.utils.hooks.RemovableHandle`` and ``torch.profiler.kineto_available``:
    names Lightning reads at import."""
    torch = pytest.importorskip("torch")
    import ember
    import ember.utils.hooks

    assert issubclass(ember.jit.ScriptModule, ember.ScriptModule)
    handle = ember.nn.Linear(1, 1).register_forward_hook(lambda *a: None)
    assert isinstance(handle, ember.utils.hooks.RemovableHandle)
    assert ember.profiler.kineto_available() is torch.profiler.kineto_available() is True


@pytest.mark.parametrize("name", ["BOX", "HAMMING", "LANCZOS"])
def test_vision_interpolation_modes_of_pil(name):
    """timm maps ``InterpolationMode.BOX``/``HAMMING``/``LANCZOS`` at import; torchvision resizes a PIL image with
    PIL's own filter of that name, and refuses them for a tensor."""
    pytest.importorskip("ember_vision")
    import numpy as np
    from PIL import Image

    import ember
    from ember_vision.transforms import functional as F

    mode = getattr(F.InterpolationMode, name)
    assert mode.value == name.lower()
    img = Image.fromarray((np.arange(48 * 64 * 3) % 251).astype(np.uint8).reshape(48, 64, 3))
    got = F.resize(img, [20, 30], mode)
    assert np.array_equal(np.asarray(got), np.asarray(img.resize((30, 20), getattr(Image, name))))
    with pytest.raises(ValueError, match=name.lower()):
        F.resize(ember.zeros(3, 8, 8), [4, 4], mode)


@pytest.mark.parametrize("name", ["gelu", "elu", "selu", "celu", "leaky_relu", "hardswish", "hardsigmoid", "mish",
                                  "softplus", "silu"])
def test_activations_keep_bfloat16(name):
    """timm runs each model again after ``model.to(torch.bfloat16)`` and checks the output's dtype: an activation
    of a bfloat16 tensor is bfloat16, with PyTorch's values to bfloat16's precision."""
    torch = pytest.importorskip("torch")
    import numpy as np

    import ember

    data = np.linspace(-4, 4, 33, dtype=np.float32)
    got = getattr(ember.nn.functional, name)(ember.tensor(data).to(ember.bfloat16))
    want = getattr(torch.nn.functional, name)(torch.tensor(data).to(torch.bfloat16))
    assert got.dtype == ember.bfloat16
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=2e-2, atol=2e-2)


def test_max_pool_bfloat16():
    torch = pytest.importorskip("torch")
    import numpy as np

    import ember

    data = np.random.default_rng(0).standard_normal((2, 3, 7, 7)).astype(np.float32)
    got, gi = ember.nn.functional.max_pool2d(ember.tensor(data).to(ember.bfloat16), 3, 2, 1, return_indices=True)
    want, wi = torch.nn.functional.max_pool2d(torch.tensor(data).to(torch.bfloat16), 3, 2, 1, return_indices=True)
    assert got.dtype == ember.bfloat16
    assert np.array_equal(got.float().numpy(), want.float().numpy())
    assert np.array_equal(gi.numpy(), wi.numpy())


def test_assert_is_recorded_by_symbolic_trace():
    """timm's patch embedding checks the input size with ``torch._assert``; fx records the check as a call (a
    Proxy condition reaches ``__torch_function__``) instead of failing on control flow, and the traced module
    still raises on a wrong size."""
    torch = pytest.importorskip("torch")
    import ember
    import ember.fx

    def graph_of(lib):
        class Checked(lib.nn.Module):
            def forward(self, x):
                lib._assert(x.shape[0] == 2, "two rows")
                return x * 2

        gm = lib.fx.symbolic_trace(Checked())
        assert gm(lib.ones(2)).tolist() == [2.0, 2.0]
        with pytest.raises(AssertionError, match="two rows"):
            gm(lib.ones(3))
        return [(n.op, getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes]

    assert graph_of(ember) == graph_of(torch)
    with pytest.raises(AssertionError, match="plain"):
        ember._assert(False, "plain")


def test_distributed_tensor_helper_modules():
    """transformers imports ``torch.distributed.tensor._utils`` and ``placement_types`` when distributed is
    available: the same placement classes (the mesh helper is tested in tests/test_dtensor.py)."""
    theirs = pytest.importorskip("torch.distributed.tensor.placement_types")
    import ember.distributed.tensor as dt
    from ember.distributed.tensor import _utils, placement_types

    assert placement_types.Shard is dt.Shard and placement_types.Replicate is dt.Replicate
    assert str(placement_types.Shard(1)) == str(theirs.Shard(1))
    assert callable(_utils.compute_local_shape_and_global_offset)
