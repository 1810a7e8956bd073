"""The plugin host: hand-registered plugins, op plugins, kernel overrides, malformed plugins.

Hooks exercised here: ember_backends, ember_kernels, ember_ops.
"""
import numpy as np
import pytest

import ember
from ember.backend import ArrayBackend
from ember.plugins import REGISTRY, PluginError, hookimpl, register, unregister


class Plugin:
    """A plugin object whose hooks are given as functions of the registry."""

    def __init__(self, backends=None, kernels=None, ops=None):
        self._b, self._k, self._o = backends, kernels, ops

    @hookimpl
    def ember_backends(self, registry):
        if self._b:
            self._b(registry)

    @hookimpl
    def ember_kernels(self, registry):
        if self._k:
            self._k(registry)

    @hookimpl
    def ember_ops(self, registry):
        if self._o:
            self._o(registry)


@pytest.fixture
def plugins():
    """Register plugins by hand; every one is unregistered after the test."""
    names = []

    def add(name, **hooks):
        names.append(name)
        register(Plugin(**hooks), name=name)

    yield add
    for n in names:
        unregister(n)


class Throwaway(ArrayBackend):
    name = "throwaway"
    host = True
    array_type = np.ndarray

    def __init__(self):
        super().__init__(np)


class Square(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


def _cube_backward(ctx, g):
    (x,) = ctx.inputs
    return 3 * g * x * x


# --------------------------------------------------------------------------- backends
def test_throwaway_backend_registered_by_hand(plugins):
    plugins("throwaway-plugin", backends=lambda r: r.add_backend(Throwaway()))
    x = ember.tensor([1.0, 2.0], device="throwaway", requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.device.type == "throwaway"
    np.testing.assert_allclose(x.grad.cpu().numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError, match="throwaway and cpu|cpu and throwaway"):
        x + ember.ones(2, device="cpu")
    unregister("throwaway-plugin")
    assert "throwaway" not in REGISTRY.backends


def test_api_version_mismatch_refused():
    class Old(Throwaway):
        name = "oldapi"
        api_version = ember.plugins.API_VERSION - 1

    with pytest.raises(PluginError, match=r"'old-plugin'.*API version 0.*provides version 1"):
        register(Plugin(backends=lambda r: r.add_backend(Old())), name="old-plugin")
    assert "oldapi" not in REGISTRY.backends and "old-plugin" not in REGISTRY.plugins


def test_device_type_clash_refused(plugins):
    class Cpu2(Throwaway):
        name = "cpu"

    with pytest.raises(PluginError, match="device type 'cpu' is already provided by plugin 'cpu'"):
        plugins("cpu-again", backends=lambda r: r.add_backend(Cpu2()))
    assert REGISTRY.backends["cpu"].plugin == "cpu"


# --------------------------------------------------------------------------- ops
def test_function_op_method_and_namespace(plugins):
    plugins("sq-plugin", ops=lambda r: r.add_op("sqns", "square", Square, method="squared"))
    x = ember.tensor([1.0, -2.0], dtype=ember.float64, requires_grad=True)
    assert ember.ops.sqns.square(x).tolist() == [1.0, 4.0]
    assert x.squared().tolist() == [1.0, 4.0]
    ember.testing.check_op(ember.ops.sqns.square, [(x,)], reference=lambda t: t * t)
    unregister("sq-plugin")
    assert not hasattr(ember.ops, "sqns") and not hasattr(ember.Tensor, "squared")


def test_kernel_op_uses_backend_kernel_with_fallback(plugins):
    calls = []

    def generic(x):
        calls.append("generic")
        return x * x * x

    def cpu_only(x):
        calls.append("cpu")
        return np.power(x, 3)

    plugins("throwaway-plugin", backends=lambda r: r.add_backend(Throwaway()))
    plugins("cube-plugin", ops=lambda r: r.add_op("cubens", "cube", forward=generic, backward=_cube_backward,
                                                  kernels={"cpu": cpu_only}))
    for dev in ("cpu", "throwaway"):
        x = ember.tensor([1.0, 2.0], dtype=ember.float64, device=dev, requires_grad=True)
        ember.autograd.gradcheck(ember.ops.cubens.cube, (x,))
    assert "cpu" in calls and "generic" in calls
    assert calls.index("cpu") < calls.index("generic")


def test_op_clash_refused_naming_both(plugins):
    plugins("first", ops=lambda r: r.add_op("clashns", "f", lambda x: x))
    with pytest.raises(PluginError, match=r"ember.ops.clashns.f is provided by plugin 'first' and plugin 'second'"):
        plugins("second", ops=lambda r: (r.add_op("clashns", "g", lambda x: x), r.add_op("clashns", "f", lambda x: x)))
    assert set(REGISTRY.ops["clashns"]) == {"f"}  # the refused plugin's other op is gone too
    assert "second" not in REGISTRY.plugins


def test_method_cannot_replace_a_builtin(plugins):
    with pytest.raises(PluginError, match=r"'bad-method'.*Tensor.exp: ember already defines it"):
        plugins("bad-method", ops=lambda r: r.add_op("mns", "e", lambda x: x, method="exp"))
    assert ember.Tensor.exp is not None and ember.tensor([0.0]).exp().item() == 1.0


def test_module_exposed(plugins):
    class Twice(ember.nn.Module):
        def forward(self, x):
            return x * 2

    plugins("mod-plugin", ops=lambda r: r.add_op("modns", "twice", lambda x: x * 2, module=Twice))
    assert ember.ops.modns.Twice is Twice and ember.nn.Twice is Twice
    assert Twice()(ember.ones(2)).tolist() == [2.0, 2.0]
    unregister("mod-plugin")
    assert not hasattr(ember.nn, "Twice")


# --------------------------------------------------------------------------- malformed ops
class NoBackward(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2


class TwoGrads(Square):
    @staticmethod
    def backward(ctx, g):
        return g, g


@pytest.mark.parametrize("options, match", [
    ({"fn": NoBackward}, r"plugin 'malformed': op ember.ops.badns.op claims to be differentiable but Function "
                         r"NoBackward has no backward"),
    ({"forward": np.exp}, r"plugin 'malformed': op ember.ops.badns.op claims to be differentiable but has no backward"),
    ({"fn": 3}, r"plugin 'malformed': op ember.ops.badns.op is not callable"),
    ({"fn": np.exp, "forward": np.exp}, "needs exactly one of"),
], ids=["function", "kernel", "not-callable", "ambiguous"])
def test_malformed_op_refused_at_registration(options, match):
    with pytest.raises(PluginError, match=match):
        register(Plugin(ops=lambda r: r.add_op("badns", "op", **options)), name="malformed")
    assert not hasattr(ember.ops, "badns")


@pytest.mark.parametrize("options, match", [
    ({"fn": TwoGrads}, r"function TwoGradsBackward \(op ember.ops.gradns.op from plugin 'wrong'\) returned an "
                       r"incorrect number of gradients \(expected 1, got 2\)"),
    ({"forward": lambda x: x * 2, "backward": lambda ctx, g: g[0]},
     r"Function OpBackward0 \(op ember.ops.gradns.op from plugin 'wrong'\) returned an invalid gradient at index 0 "
     r"- got \[\] but expected shape compatible with \[3\]"),
], ids=["count", "shape"])
def test_wrong_gradients_named_at_first_backward(plugins, device, options, match):
    plugins("wrong", ops=lambda r: r.add_op("gradns", "op", **options))
    x = ember.ones(3, device=device, requires_grad=True)
    y = ember.ops.gradns.op(x)
    with pytest.raises(RuntimeError, match=match):
        y.backward(ember.ones_like(y))
    assert x.grad is None


def test_not_differentiable_op_says_so(plugins):
    plugins("nd", ops=lambda r: r.add_op("ndns", "op", forward=np.floor, differentiable=False))
    y = ember.ops.ndns.op(ember.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match=r"ember.ops.ndns.op \(op ember.ops.ndns.op from plugin 'nd'\) is not "
                                           r"differentiable"):
        y.sum().backward()


# --------------------------------------------------------------------------- kernel overrides
def test_kernel_override_needs_priority(plugins):
    installed = REGISTRY.overridden()   # what the installed plugins serve

    def exp_plus(x):
        return np.exp(x) + 1

    with pytest.raises(PluginError, match=r"kernel clash: plugin 'exp0' and plugin 'cpu'.*'exp' for 'cpu' at "
                                          r"priority 0.*priority=1"):
        plugins("exp0", kernels=lambda r: r.add_kernel("cpu", "exp", exp_plus))
    assert ember.tensor([0.0], device="cpu").exp().item() == 1.0
    plugins("exp1", kernels=lambda r: r.add_kernel("cpu", "exp", exp_plus, priority=1))
    assert ember.tensor([0.0], device="cpu").exp().item() == 2.0
    assert ("cpu", "exp", "exp1", 1, "cpu") in REGISTRY.overridden()
    from ember.info import report

    assert "cpu:exp served by plugin 'exp1' at priority 1 (replacing 'cpu'" in report()
    unregister("exp1")
    assert ember.tensor([0.0]).exp().item() == 1.0
    assert REGISTRY.overridden() == installed


def test_kernel_for_a_backend_registered_later(plugins):
    plugins("early-kernel", kernels=lambda r: r.add_kernel("throwaway", "mystery", np.negative))
    plugins("throwaway-plugin", backends=lambda r: r.add_backend(Throwaway()))
    assert REGISTRY.backends["throwaway"].kernels["mystery"] is np.negative


def test_module_cannot_replace_an_nn_builtin(plugins):
    class Linear(ember.nn.Module):
        pass

    with pytest.raises(PluginError, match=r"'nn-clash'.*cannot expose module ember.nn.Linear: ember.nn already has it"):
        plugins("nn-clash", ops=lambda r: r.add_op("nnclash", "lin", lambda x: x, module=Linear))
    assert ember.nn.Linear is not Linear and not hasattr(ember.ops, "nnclash")


def test_info_report_columns_and_unavailable_backends(plugins):
    plugins("info-ops", ops=lambda r: (r.add_op("info_a", "a_rather_long_op_name", lambda x: x),
                                       r.add_op("info_b", "b", lambda x: x)))
    from ember.info import report

    text = report()
    rows = [line for line in text.splitlines() if line.startswith("  ember.ops.info_")]
    assert len(rows) == 2 and len({line.index(" plugin ") for line in rows}) == 1  # one aligned column
    for line in text.splitlines():
        if "unavailable:" in line:
            assert "version" not in line.split("unavailable:")[0]


def test_info_cpu_section_names_narrow_blas_kernels():
    from ember.info import _cpu, report

    assert "\ncpu:\n  threads " in report()
    openblas = {"user_api": "blas", "internal_api": "openblas", "version": "0.3.31", "num_threads": 2,
                "filepath": "/x/libopenblas.so", "architecture": "Haswell"}
    lines = _cpu([openblas, dict(openblas, filepath="/y/libopenblas.so")], ["AVX2", "AVX512F"],
                 {"OPENBLAS_CORETYPE": "Haswell"})
    notes = [line for line in lines if "note:" in line]
    assert len(notes) == 1 and "OPENBLAS_CORETYPE=Haswell" in notes[0] and "Haswell kernels" in notes[0]
    assert sum("BLAS openblas 0.3.31 (Haswell)" in line for line in lines) == 2
    # the same kernels on a CPU without AVX-512, or AVX-512 kernels on one with it: nothing to say
    assert not any("note:" in line for line in _cpu([openblas], ["AVX2"], {}))
    assert not any("note:" in line for line in _cpu([dict(openblas, architecture="SkylakeX")], ["AVX512F"], {}))
    assert any("threadpoolctl" in line for line in _cpu([], ["AVX2"], {}))
