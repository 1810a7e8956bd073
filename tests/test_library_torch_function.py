"""Custom operators (``ops.<ns>.<op>``) under ``__torch_function__``: a subclass, a mode and fx's Proxy see the
call first, as in PyTorch; and ``ops.profiler``'s range operators, which PyTorch's fx examples put in graphs."""
import itertools

import pytest

import ember

torch = pytest.importorskip("torch")

_COUNT = itertools.count()


def _twice_op(lib):
    ns = f"embertftest{next(_COUNT)}"
    library = lib.library.Library(ns, "DEF")
    library.define("twice(Tensor x, float alpha=2.) -> Tensor")
    library.impl("twice", lambda x, alpha=2.0: x * alpha, "CompositeExplicitAutograd")
    return library, getattr(lib.ops, ns).twice


def _seen_by_subclass(lib, device):
    library, op = _twice_op(lib)
    seen = []

    class Logged(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append((getattr(func, "__name__", repr(func)), len(args), sorted(kwargs or {})))
            return super().__torch_function__(func, types, args, kwargs or {})

    x = lib.ones(3, device=device).as_subclass(Logged)
    y = op(x, alpha=3.0)
    return seen[:1], type(y) is Logged, y.tolist(), library


def test_a_subclass_sees_a_custom_op_call_as_in_pytorch(device):
    got = _seen_by_subclass(ember, "cpu" if device == "cpu" else device)
    ref = _seen_by_subclass(torch, "cpu")
    assert got[:3] == ref[:3] == ([("twice", 1, ["alpha"])], True, [3.0, 3.0, 3.0])


def test_a_mode_sees_a_custom_op_call(device):
    library, op = _twice_op(ember)
    seen = []

    class Mode(ember.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = ember.ones(2, device=device)
    with Mode():
        out = op(x)
    assert seen == [op] and out.tolist() == [2.0, 2.0]


def test_fx_records_a_custom_op_and_its_code_runs(device):
    library, op = _twice_op(ember)

    class M(ember.nn.Module):
        def forward(self, x):
            return op(x, 5.0) + 1

    gm = ember.fx.symbolic_trace(M())
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[0] is op
    x = ember.arange(3.0, device=device)
    assert gm(x).tolist() == [1.0, 6.0, 11.0]


def _profiled_names(lib, traced):
    class Foo(lib.nn.Module):
        def forward(self, x):
            with lib.profiler.record_function("foo"):
                return lib.relu(x)

    rf = lib.autograd.profiler.record_function
    enter, exit_ = rf.__enter__, rf.__exit__

    class RangeTracer(lib.fx.Tracer):
        def trace(self, root, concrete_args=None):
            def fake_enter(this):
                this._fx_range = self.create_proxy("call_function", lib.ops.profiler._record_function_enter,
                                                   (this.name, None), {})
                return this

            def fake_exit(this, *exc):
                lib.ops.profiler._record_function_exit(this._fx_range)

            rf.__enter__, rf.__exit__ = fake_enter, fake_exit
            try:
                return super().trace(root, concrete_args)
            finally:
                rf.__enter__, rf.__exit__ = enter, exit_

    root = Foo()
    fn = lib.fx.GraphModule(root, RangeTracer().trace(root)) if traced else root
    with lib.autograd.profiler.profile() as prof:
        fn(lib.randn(5, 3))
    targets = [(n.op, n.name) for n in fn.graph.nodes] if traced else []
    return [e.name for e in prof.function_events if e.name in ("foo", "aten::relu")], targets


def test_profiler_range_ops_in_an_fx_graph_as_in_pytorch():
    for traced in (False, True):
        got, got_targets = _profiled_names(ember, traced)
        ref, ref_targets = _profiled_names(torch, traced)
        assert got == ref == ["foo", "aten::relu"]
        assert got_targets == ref_targets
    handle = ember.ops.profiler._record_function_enter("bar")
    assert handle.dtype == ember.uint8 and handle.dim() == 1
    ember.ops.profiler._record_function_exit(handle)
    with pytest.raises(RuntimeError, match="_record_function_exit"):
        ember.ops.profiler._record_function_exit(ember.zeros(0, dtype=ember.uint8))
