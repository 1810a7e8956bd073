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
