"""ember.library: custom ops by schema or signature, fake kernels, autograd, per-device kernels, opcheck,
and the subsystems that see them through dispatch (trace, vmap, profiler, ONNX); plugin namespaces."""
import itertools
from typing import Optional, Sequence

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.library import Library, custom_op, infer_schema, opcheck, parse_schema
from ember.plugins import REGISTRY, PluginError
from ember.testing import OpCheckError

torch = pytest.importorskip("torch")

_COUNT = itertools.count()


def _ns():
    """A fresh namespace per definition: ops are process-wide, in ember as in PyTorch."""
    return f"embertest{next(_COUNT)}"


def tutorial_ops(lib, ns):
    """PyTorch's "Custom Python operators" tutorial, written once against ``lib`` (torch or ember)."""

    @lib.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: lib.Tensor) -> lib.Tensor:
        return lib.from_numpy(np.sin(x.cpu().numpy())).to(device=x.device)

    @numpy_sin.register_fake
    def _(x):
        return lib.empty_like(x)

    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)

    @lib.library.custom_op(f"{ns}::numpy_sin_out", mutates_args={"out"})
    def numpy_sin_out(x: lib.Tensor, out: lib.Tensor) -> None:
        np.sin(x.numpy(), out=out.numpy())

    @lib.library.custom_op(f"{ns}::scaled_pair", mutates_args=())
    def scaled_pair(x: lib.Tensor, ys: Sequence[lib.Tensor], alpha: float = 2.0) -> tuple[lib.Tensor, lib.Tensor]:
        return x * alpha, sum(ys) + x

    @scaled_pair.register_fake
    def _(x, ys, alpha=2.0):
        return lib.empty_like(x), lib.empty_like(x)

    def pair_setup(ctx, inputs, output):
        ctx.alpha = inputs[2]
        ctx.n = len(inputs[1])

    def pair_backward(ctx, g1, g2):
        return g1 * ctx.alpha + g2, [g2] * ctx.n, None

    scaled_pair.register_autograd(pair_backward, setup_context=pair_setup)
    return numpy_sin, numpy_sin_out, scaled_pair


@pytest.fixture(scope="module")
def both():
    ns = _ns()
    return tutorial_ops(torch, ns), tutorial_ops(ember, ns), ns


def _pair(data, grad=False):
    t = torch.tensor(data, dtype=torch.float64, requires_grad=grad)
    e = ember.tensor(data, dtype=ember.float64, requires_grad=grad)
    return t, e


def test_tutorial_op_matches_pytorch_values_and_gradients(both):
    (t_sin, _, _), (e_sin, _, _), ns = both
    t, e = _pair([[0.1, -1.2, 2.0], [0.5, 3.0, -0.7]], grad=True)
    ty, ey = t_sin(t), e_sin(e)
    ember.testing.assert_close(ey, ty.detach().numpy())
    ty.sum().backward()
    ey.sum().backward()
    ember.testing.assert_close(e.grad, t.grad.numpy())
    assert getattr(torch.ops, ns).numpy_sin.default(t).shape == getattr(ember.ops, ns).numpy_sin.default(e).shape


def test_opcheck_gives_pytorch_answers(both):
    (t_sin, t_out, t_pair), (e_sin, e_out, e_pair), _ = both
    t, e = _pair([0.3, -0.4, 1.5], grad=True)
    assert opcheck(e_sin, (e,)) == torch.library.opcheck(t_sin, (t,))
    t2, e2 = _pair([0.0, 0.0, 0.0])
    assert opcheck(e_out, (e.detach(), e2)) == torch.library.opcheck(t_out, (t.detach(), t2))
    ys_t, ys_e = zip(*(_pair([1.0, 2.0, 3.0], grad=True) for _ in range(2)))
    assert opcheck(e_pair, (e, list(ys_e)), {"alpha": 3.0}) == \
        torch.library.opcheck(t_pair, (t, list(ys_t)), {"alpha": 3.0})


def test_list_arguments_and_tuple_returns_match_pytorch(both):
    (_, _, t_pair), (_, _, e_pair), _ = both
    t, e = _pair([1.0, -2.0], grad=True)
    ys_t, ys_e = zip(*(_pair([0.5, 0.25], grad=True) for _ in range(3)))
    (ta, tb), (ea, eb) = t_pair(t, list(ys_t), alpha=4.0), e_pair(e, list(ys_e), alpha=4.0)
    (ta * tb).sum().backward()
    (ea * eb).sum().backward()
    for got, want in [(ea, ta), (eb, tb), (e.grad, t.grad)] + [(y.grad, w.grad) for y, w in zip(ys_e, ys_t)]:
        ember.testing.assert_close(got, want.detach().numpy())


def test_mutating_op_writes_its_declared_argument_and_bumps_its_version(both):
    _, (_, e_out, _), ns = both
    x, out = ember.tensor([0.5, 1.0]), ember.zeros(2)
    v = out._version
    assert e_out(x, out) is None
    ember.testing.assert_close(out, np.sin(np.float32([0.5, 1.0])))
    assert out._version > v
    assert str(getattr(ember.ops, ns).numpy_sin_out.default._schema) == \
        str(getattr(torch.ops, ns).numpy_sin_out.default._schema)
    with pytest.raises(RuntimeError, match="written in place and requires grad"):
        e_out(x, ember.zeros(2, requires_grad=True))


def test_schema_inference_matches_pytorch():
    def f(x: Tensor, y: Optional[Tensor], z: Sequence[int], w: list[Tensor], b: bool = False, s: str = "a",
          n: Optional[int] = None, k: float = 0.5) -> tuple[Tensor, Tensor]: ...

    def g(x: torch.Tensor, y: Optional[torch.Tensor], z: Sequence[int], w: list[torch.Tensor], b: bool = False,
          s: str = "a", n: Optional[int] = None, k: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]: ...

    for mutates in ((), ("x",), "unknown"):
        assert infer_schema(f, mutates_args=mutates) == torch.library.infer_schema(g, mutates_args=mutates)


@pytest.mark.parametrize("fn, match", [
    (lambda x: x, "Parameter x must have a type annotation"),
    (lambda x=1: x, "Parameter x must have a type annotation"),
])
def test_schema_inference_refuses_what_pytorch_refuses(fn, match):
    with pytest.raises(ValueError, match=match):
        custom_op(f"{_ns()}::f", fn, mutates_args=())
    with pytest.raises(ValueError, match=match):
        torch.library.custom_op(f"{_ns()}::f", fn, mutates_args=())


def test_custom_op_needs_mutates_args_and_a_qualified_name():
    def f(x: Tensor) -> Tensor:
        return x.clone()

    with pytest.raises(TypeError, match="mutates_args"):
        custom_op(f"{_ns()}::f", f)
    with pytest.raises(ValueError, match="namespace::opname"):
        custom_op("noname", f, mutates_args=())


def test_bad_calls_raise_pytorch_errors_and_leave_inputs_alone(both):
    _, (e_sin, _, _), ns = both
    x = ember.tensor([1.0, 2.0])
    op = getattr(ember.ops, ns).numpy_sin
    for call, match in [(lambda: op(1), r"numpy_sin\(\) Expected a value of type 'Tensor' for argument 'x'"),
                        (lambda: op(x, x), "expected at most 1 argument"),
                        (lambda: op(y=x), "Unknown keyword argument 'y'"),
                        (lambda: op(), "missing value for argument 'x'")]:
        with pytest.raises(RuntimeError, match=match):
            call()
    assert x.tolist() == [1.0, 2.0]


def test_library_define_impl_and_fake(device):
    ns = _ns()
    lib = Library(ns, "DEF")
    assert lib.define("axpy(Tensor x, Tensor y, *, float alpha=2.) -> Tensor") == "axpy"
    lib.impl("axpy", lambda x, y, *, alpha=2.0: x * alpha + y, "CompositeExplicitAutograd")
    ember.library.register_fake(f"{ns}::axpy", lambda x, y, *, alpha=2.0: ember.empty_like(x))
    op = getattr(ember.ops, ns).axpy
    x, y = ember.ones(3, device=device), ember.arange(3.0, device=device)
    assert op(x, y, alpha=3.0).tolist() == [3.0, 4.0, 5.0]
    meta = op(ember.empty(4, 2, device="meta"), ember.empty(4, 2, device="meta"))
    assert meta.is_meta and meta.shape == (4, 2)
    frag = Library(ns, "FRAGMENT")
    frag.define("neg(Tensor x) -> Tensor")

    @ember.library.impl(f"{ns}::neg", "CPU")
    def _(x):
        return -x

    assert getattr(ember.ops, ns).neg(ember.ones(1)).tolist() == [-1.0]
    with pytest.raises(NotImplementedError, match="no fake impl"):
        getattr(ember.ops, ns).neg(ember.empty(1, device="meta"))
    lib._destroy()
    frag._destroy()
    assert not hasattr(ember.ops, ns)


@pytest.mark.parametrize("make, exc, match", [
    (lambda ns: (Library(ns, "DEF"), Library(ns, "DEF")), RuntimeError, "Only a single TORCH_LIBRARY"),
    (lambda ns: Library(ns, "XYZ"), ValueError, "Unsupported kind: XYZ"),
    (lambda ns: Library(ns, "FRAGMENT").define("f(Tensor x -> Tensor"), RuntimeError, "expected"),
    (lambda ns: Library(ns, "FRAGMENT").define("f(Blob x) -> Tensor"), RuntimeError, "unknown type specifier"),
    (lambda ns: [Library(ns, "FRAGMENT").define("f(Tensor x) -> Tensor") for _ in range(2)], RuntimeError,
     "same name and overload name multiple times"),
    (lambda ns: Library(ns, "FRAGMENT").impl("nope", lambda x: x, "CPU"), RuntimeError, "does not exist"),
    (lambda ns: ember.library.register_fake(f"{ns}::nope", lambda x: x), RuntimeError, "does not exist"),
])
def test_library_refuses_bad_definitions_as_pytorch(make, exc, match):
    with pytest.raises(exc, match=match):
        make(_ns())


def test_schema_round_trips():
    for text in ["ns::f(Tensor(a!) x, Tensor? y=None, int[2] k=[1, 1], *, float alpha=1., str m=\"sum\") -> ()",
                 "ns::g.out(Tensor[] xs, Scalar s, ScalarType? dtype=None) -> (Tensor, Tensor)"]:
        assert str(parse_schema(text)) == text


def test_opcheck_finds_an_undeclared_mutation_and_leaves_the_input_alone():
    @custom_op(f"{_ns()}::sneaky", mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.add_(1)
        return x + 0

    x = ember.zeros(2)
    with pytest.raises(OpCheckError, match="test_schema failed with Argument x is not defined as mutable but was "
                                           "mutated"):
        opcheck(sneaky, (x,))
    assert x.tolist() == [0.0, 0.0]


def test_opcheck_finds_a_fake_kernel_of_the_wrong_shape():
    @custom_op(f"{_ns()}::badfake", mutates_args=())
    def badfake(x: Tensor) -> Tensor:
        return x.clone()

    badfake.register_fake(lambda x: x.new_empty(x.shape[0] + 1))
    with pytest.raises(OpCheckError, match=r"test_faketensor failed .*Shapes \(3,\) and \(4,\) are not equal"):
        opcheck(badfake, (ember.zeros(3),))
    report = opcheck(badfake, (ember.zeros(3),), raise_exception=False)
    assert report["test_schema"] == "SUCCESS" and isinstance(report["test_faketensor"], RuntimeError)


def test_opcheck_finds_a_missing_autograd_formula_and_a_wrong_gradient():
    ns = _ns()

    @custom_op(f"{ns}::noauto", mutates_args=())
    def noauto(x: Tensor) -> Tensor:
        return x * 2

    noauto.register_fake(lambda x: ember.empty_like(x))
    x = ember.ones(2, dtype=ember.float64, requires_grad=True)
    with pytest.raises(OpCheckError, match="test_aot_dispatch_dynamic failed with Trying to backward through "
                                           f"{ns}.noauto.default but no autograd formula was registered"):
        opcheck(noauto, (x,))
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        noauto(x).sum().backward()
    noauto.register_autograd(lambda ctx, g: g * 3)  # wrong: should be 2
    with pytest.raises(OpCheckError, match="test_aot_dispatch_dynamic failed .*gradcheck"):
        opcheck(noauto, (x,))


def test_backward_returning_the_wrong_number_of_gradients_names_the_op():
    @custom_op(f"{_ns()}::twoargs", mutates_args=())
    def twoargs(x: Tensor, k: float) -> Tensor:
        return x * k

    twoargs.register_autograd(lambda ctx, g: g)
    with pytest.raises(RuntimeError, match="twoargs: the backward registered with register_autograd returned 1 "
                                           "gradient"):
        twoargs(ember.ones(1, requires_grad=True), 2.0).sum().backward()


def test_kernel_returning_an_input_or_the_wrong_type_is_refused():
    ns = _ns()

    @custom_op(f"{ns}::ident", mutates_args=())
    def ident(x: Tensor) -> Tensor:
        return x

    @custom_op(f"{ns}::wrong", mutates_args=())
    def wrong(x: Tensor) -> Tensor:
        return 3

    with pytest.raises(RuntimeError, match="must not also be an input"):
        ident(ember.ones(1))
    with pytest.raises(RuntimeError, match="expected the kernel to return Tensor, got int"):
        wrong(ember.ones(1))


def test_a_kernel_refusing_a_dtype_raises_its_own_error():
    @custom_op(f"{_ns()}::floats_only", mutates_args=())
    def floats_only(x: Tensor) -> Tensor:
        if not x.is_floating_point():
            raise TypeError(f"floats_only: expected a floating tensor, got {x.dtype}")
        return x * 2

    x = ember.arange(3)
    with pytest.raises(TypeError, match="^floats_only: expected a floating tensor, got ember.int64$"):
        floats_only(x)
    assert x.tolist() == [0, 1, 2]


def test_per_device_kernels(device):
    ns = _ns()
    calls = []

    @custom_op(f"{ns}::tagged", mutates_args=(), device_types="cpu")
    def tagged(x: Tensor) -> Tensor:
        calls.append("cpu")
        return x + 1

    if device != "cpu":
        with pytest.raises(NotImplementedError, match=f"Could not run '{ns}::tagged'"):
            tagged(ember.ones(1, device=device))

        @tagged.register_kernel(device)
        def _(x):
            calls.append(device)
            return x + 1

    assert tagged(ember.ones(1, device=device)).tolist() == [2.0]
    assert calls[-1] == device


@pytest.fixture(scope="module")
def mysin():
    @custom_op(f"{_ns()}::mysin", mutates_args=())
    def mysin(x: Tensor) -> Tensor:
        return ember.sin(x)

    mysin.register_fake(lambda x: ember.empty_like(x))
    mysin.register_autograd(lambda ctx, g: g * ctx.saved_tensors[0].cos(),
                            setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    return mysin


def test_traced_and_replayed_as_one_op(device, mysin, tmp_path):
    def f(x):
        return mysin(x) * 2

    x = ember.randn(4, device=device)
    traced = ember.jit.trace(f, x)
    assert f"ember.ops.{mysin._name.replace('::', '.')}" in traced.graph.ops()
    assert "Sin" not in traced.graph.ops()  # the kernel's own ops are not recorded
    y = ember.randn(4, device=device)
    ember.testing.assert_close(traced(y), f(y))
    ember.jit.save(traced, tmp_path / "f.pt")
    ember.testing.assert_close(ember.jit.load(tmp_path / "f.pt")(y), f(y))

    class M(ember.nn.Module):
        def forward(self, x):
            return f(x)

    exported = ember.export.export(M(), (x,))
    assert f"ember.ops.{mysin._name.replace('::', '.')}" in str(exported)
    ember.testing.assert_close(exported.module()(y), f(y))


def test_second_order_gradient_through_the_saved_input(mysin):
    x = ember.tensor([0.3, 1.1], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(mysin, (x,))


def test_vmap_with_a_rule_and_per_sample(device, mysin):
    from ember.func.batching import LOOPED

    ns = _ns()

    @custom_op(f"{ns}::rowsum", mutates_args=())
    def rowsum(x: Tensor) -> Tensor:
        return x.sum(-1)

    x = ember.randn(3, 4, 5, device=device)
    before = sum(LOOPED.values())
    ember.testing.assert_close(ember.vmap(rowsum)(x), x.sum(-1))
    assert sum(LOOPED.values()) > before  # no rule: once per sample
    seen = []

    @rowsum.register_vmap
    def _(info, in_dims, x):
        seen.append((info.batch_size, in_dims))
        return x.sum(-1), 0

    before = sum(LOOPED.values())
    ember.testing.assert_close(ember.vmap(rowsum, in_dims=1)(x), x.transpose(0, 1).sum(-1))
    assert seen == [(4, (0,))] and sum(LOOPED.values()) == before


def test_profiler_and_interception_see_the_op(mysin):
    seen = []

    def handler(kind, Op, args, run):
        if kind is ember.dispatch.apply:
            seen.append(Op.op_name)
        return run(*args)

    x = ember.ones(2)
    with ember.dispatch.intercept(handler):
        mysin(x)
    assert seen == [mysin._name]  # one op: the kernel's own ember.sin is not seen again
    with ember.profiler.profile() as prof:
        mysin(x)
    assert any(mysin._name in e.name for e in prof.events())


def test_autocast_casts_inputs_as_registered():
    seen = []

    @custom_op(f"{_ns()}::recorded", mutates_args=())
    def recorded(x: Tensor) -> Tensor:
        seen.append(x.dtype)
        return x * 2

    with ember.autocast("cpu", dtype=ember.bfloat16):
        recorded(ember.ones(2))
    ember.library.register_autocast(recorded._name, "cpu", ember.bfloat16)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert recorded(ember.ones(2)).dtype == ember.bfloat16
    assert recorded(ember.ones(2)).dtype == ember.float32
    assert seen == [ember.float32, ember.bfloat16, ember.float32]


def test_check_op_runs_opchecks_checks_on_a_library_op(device, mysin):
    ns = _ns()

    @custom_op(f"{ns}::badfake", mutates_args=())
    def badfake(x: Tensor) -> Tensor:
        return x * 1

    badfake.register_fake(lambda x: ember.empty(1, dtype=ember.float64, device=x.device))
    ember.testing.check_op(mysin, [(ember.randn(3, device=device, requires_grad=True),)], devices=[device],
                           reference=ember.sin)
    with pytest.raises(OpCheckError, match="test_faketensor failed .*Shapes"):
        ember.testing.check_op(badfake, [(ember.zeros(2, device=device),)], devices=[device])


def test_onnx_export_with_a_custom_symbolic(mysin):
    pytest.importorskip("onnx")

    class M(ember.nn.Module):
        def forward(self, x):
            return mysin(x) + 1

    name = mysin._name
    ember.onnx.register_custom_op_symbolic(name, lambda g, x: g.op("Sin", x), 17)
    try:
        proto = ember.onnx.export(M(), (ember.ones(3),), dynamo=False).model_proto
    finally:
        ember.onnx.unregister_custom_op_symbolic(name, 17)
    assert [n.op_type for n in proto.graph.node][:1] == ["Sin"]


# ---------------------------------------------------------------- plugin ops and library ops: one mechanism
def _double(x):
    return x * 2


def test_plugin_ops_are_library_ops():
    with REGISTRY.registering("libplug"):
        REGISTRY.add_op("libplugns", "double", _double)
    try:
        op = ember.ops.libplugns.double
        assert op.default(ember.ones(1)).tolist() == [2.0]
        assert op.name() == "libplugns::double"
        with pytest.raises(RuntimeError, match="libplugns::double.* multiple times"):
            custom_op("libplugns::double", lambda x: x, mutates_args=(), schema="(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError, match="register_fake: libplugns::double is a plugin op .* no schema"):
            ember.library.register_fake("libplugns::double", lambda x: x)
        assert opcheck(op, (ember.ones(2, dtype=ember.float64, requires_grad=True),))["test_schema"] == "SUCCESS"
    finally:
        REGISTRY.forget("libplug")
    assert not hasattr(ember.ops, "libplugns")


def test_a_library_op_clashes_with_a_plugin_op():
    ns = _ns()
    custom_op(f"{ns}::f", _double, mutates_args=(), schema="(Tensor x) -> Tensor")
    with REGISTRY.registering("clasher"):
        with pytest.raises(PluginError, match=f"op clash: ember.ops.{ns}.f is provided by ember.library"):
            REGISTRY.add_op(ns, "f", _double)


@pytest.mark.parametrize("namespace", ["shape", "pointwise", "registry", "aten"])
def test_built_in_names_cannot_become_namespaces(namespace):
    with REGISTRY.registering("squatter"):
        with pytest.raises(PluginError, match=f"namespace '{namespace}' is reserved"):
            REGISTRY.add_op(namespace, "double", _double)
    with pytest.raises(ValueError, match=f"namespace '{namespace}' is reserved"):
        custom_op(f"{namespace}::double", _double, mutates_args=(), schema="(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="is reserved"):
        Library(namespace, "FRAGMENT")
    assert not hasattr(getattr(ember.ops, namespace, None), "double")
