"""Graph capture internals: module paths and parameter paths as ``named_modules`` gives them, modules left as
they were, recording a second trace the same as the first, value metadata, the conversion guard."""
import inspect
import threading
import warnings

import numpy as np
import pytest
from export_models import to_np as _np

import ember
import ember.nn as nn
from ember import jit
from ember.jit import TracerWarning
from ember.jit._graph import capture


def _reference_paths(module):
    """``{id(tensor): path}`` as ``named_modules`` walks the tree (the first path of a shared tensor)."""
    paths = {}
    for prefix, m in module.named_modules():
        for store in (m._parameters, m._buffers):
            for k, t in store.items():
                if t is not None:
                    paths.setdefault(id(t), f"{prefix}.{k}" if prefix else k)
    return paths


def _tree(device):
    shared = nn.Linear(3, 3)
    inner = nn.Sequential(nn.Linear(3, 3), shared)
    root = nn.Sequential(inner, shared, nn.BatchNorm1d(3).eval(), nn.ReLU())
    inner[0].add_module("unused", None)
    return root.to(device)


def _state(module):
    return [(id(m), dict(m.__dict__), dict(m._forward_pre_hooks), dict(m._forward_hooks)) for m in module.modules()]


def test_parameter_paths_follow_named_modules_order(device):
    m = _tree(device)
    tied = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3)).to(device)
    tied[1].weight = tied[0].weight
    for model in (m, tied):
        g, _ = capture(model, (ember.randn(2, 3, device=device),), module=model)
        want = _reference_paths(model)
        tensors = {id(t): t for t in list(model.parameters()) + list(model.buffers())}
        assert g.params and all(want[id(tensors[id(t)])] == p for t, p in
                                ((_value(g, model, i), p) for i, p in g.params.items()))


def _value(g, model, i):
    by_path = dict(model.named_parameters(remove_duplicate=False))
    by_path.update(dict(model.named_buffers(remove_duplicate=False)))
    return by_path[g.params[i]]


def test_module_paths_of_shared_and_nested_modules(device):
    m = _tree(device)
    g, _ = capture(m, (ember.randn(2, 3, device=device),), module=m)
    # a path is the names of the modules running, each by its name at its first path: the shared Linear
    # ("0.1" first) is "0.1" inside "0", and "1" when the top level calls it
    assert [n.path for n in g.nodes if n.op == "Linear"] == ["0.0", "0.1", "1"]
    assert g.nodes[-1].path == "3"


def test_modules_are_left_as_they_were(device):
    m = _tree(device)
    before = _state(m)
    capture(m, (ember.randn(2, 3, device=device),), module=m)
    assert _state(m) == before
    with pytest.raises(RuntimeError, match="boom"):
        def fail(x):
            m(x)
            raise RuntimeError("boom")
        capture(fail, (ember.randn(2, 3, device=device),), module=m)
    assert _state(m) == before and not jit.is_tracing()


class _Kw(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, tracer=None, forward=None, leaf=1.0):
        return self.lin(x) * leaf


class _Own(nn.Module):
    """A module with a ``forward`` of its own in its instance dict, and one whose class makes it a property."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = _Prop()
        self.a.forward = lambda x: nn.functional.linear(x, self.a.weight) + 1

    def forward(self, x):
        return self.b(self.a(x))


class _Prop(nn.Module):
    @property
    def forward(self):
        return lambda x: x * 2


def test_keyword_arguments_and_unusual_forwards_keep_their_paths(device):
    m = nn.Sequential()
    m.add_module("kw", _Kw())
    m.add_module("own", _Own())
    m = m.to(device)

    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m.own(self.m.kw(x, tracer=2, forward=3, leaf=0.5))

    top = Top()
    before = _state(top)
    x = ember.randn(2, 3, device=device)
    traced = jit.trace(top, x)
    assert _state(top) == before
    # (m itself is never called: its submodules' paths start with their own names)
    assert [(n.op, n.path) for n in traced.graph.nodes] == [
        ("Linear", "kw.lin"), ("Mul", "kw"), ("Linear", "own.a"), ("Add", "own.a"), ("Mul", "own.b")]
    np.testing.assert_array_equal(_np(traced(x)), _np(top(x)))


def test_ops_of_other_threads_are_not_recorded(device):
    lin = nn.Linear(3, 3).to(device)
    m = nn.Sequential(lin)
    x = ember.randn(2, 3, device=device)
    seen = []

    def forward(x):
        t = threading.Thread(target=lambda: seen.append(m(x)))  # the module runs in another thread meanwhile
        t.start()
        t.join()
        return m(x) + 1

    g, _ = capture(forward, (x,), module=m)
    assert g.ops() == ["Linear", "Add"] and [n.path for n in g.nodes] == ["0", ""]
    np.testing.assert_array_equal(_np(seen[0]), _np(lin(x)))


def test_a_second_trace_records_the_same_graph(device):
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 1).eval()
    m = m.to(device)
    x = ember.randn(2, 3, 8, device=device)
    g1, out1 = capture(m, (x,), module=m)
    g2, out2 = capture(m, (x,), module=m)
    assert str(g1) == str(g2) and g1.meta == g2.meta and g1.params == g2.params
    np.testing.assert_array_equal(_np(out1), _np(out2))


def test_meta_gives_each_value_shape_and_dtype(device):
    def f(x):
        y = x * 2
        y.add_(1)  # the in-place result is a value of its own
        return y.reshape(1, 2, 3), x.to(ember.float64)

    x = ember.randn(2, 3, device=device)
    g, _ = capture(f, (x,))
    assert [g.meta[n.outs[0]] for n in g.nodes] == [((2, 3), ember.float32), ((2, 3), ember.float32),
                                                     ((1, 2, 3), ember.float32), ((2, 3), ember.float64)]
    assert g.meta[g.inputs[0]] == ((2, 3), ember.float32) and g.n_values == len(g.meta) == 5


def test_unused_results_are_pruned_and_used_ones_kept(device):
    def f(x, y):
        _ = x > 0  # read by nothing
        a, b = ember.split(x, 1, dim=0)  # one of two results used
        return a * y

    x, y = ember.randn(2, 3, device=device), ember.randn(1, 3, device=device)
    g, _ = capture(f, (x, y))
    assert g.ops() == ["Split", "Mul"]  # the comparison went; the split stays for the result that is used
    assert g.n_values == 6 and g.nodes[0].outs == (3, 4)


def test_conversion_guard_keeps_signatures_and_warns_only_while_tracing(device):
    capture(lambda x: x + 1, (ember.ones(1, device=device),))  # installs the guard
    assert inspect.signature(ember.Tensor.numpy).parameters.keys() >= {"self", "force"}
    assert ember.Tensor.item.__doc__ and ember.Tensor.item.__name__ == "item"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(ember.ones(1, device=device) * 3) == 3.0  # not tracing: no warning
    with pytest.warns(TracerWarning, match="Python number"):
        capture(lambda x: x * float(x.sum()), (ember.ones(2, device=device),))


@pytest.mark.parametrize("op", ["unsqueeze_", "transpose_", "t_", "squeeze_", "as_strided_"])
def test_in_place_view_ops_are_replayed(device, op):
    calls = {"unsqueeze_": lambda t: t.unsqueeze_(0), "transpose_": lambda t: t.transpose_(0, 1),
             "t_": lambda t: t.t_(), "squeeze_": lambda t: t.unsqueeze(1).squeeze_(1),
             "as_strided_": lambda t: t.as_strided_((3, 2), (1, 3))}

    def f(x):
        y = x * 2
        calls[op](y)
        return y + 1  # reads y after the in-place view op changed its shape

    traced = jit.trace(f, (ember.randn(2, 3, device=device),))
    for _ in range(2):
        x = ember.randn(2, 3, device=device)
        want, got = f(x), traced(x)
        assert got.shape == want.shape
        np.testing.assert_array_equal(_np(got), _np(want))
