"""ember.fx against PyTorch's fx: the same modules traced by both give the same node sequence and the
same generated code, and the traced modules compute what the originals do."""
import copy
import math
import operator
import pickle

import numpy as np
import pytest

import ember
import ember.fx as fx
from ember.fx.passes.shape_prop import ShapeProp


def _lib_torch():
    return pytest.importorskip("torch")


# the same module source for both libraries: ``lib`` is ember or torch
def make_basic(lib):
    nn = lib.nn

    class Basic(nn.Module):
        def __init__(self):
            super().__init__()
            self.param = nn.Parameter(lib.ones(3, 4) * 0.5)
            self.linear = nn.Linear(4, 5)
            self.register_buffer("buf", lib.ones(5))

        def forward(self, x, y=2):
            z = (x + self.param).relu().sum(dim=-1, keepdim=True)
            w = self.linear(x + self.param).clamp(min=0.0, max=1.0)
            a, b = w.shape
            q = w.view(-1) * y
            return {"out": w + self.buf + z, "size": w.size(0), "q": q[1:3]}

    return Basic()


def make_nested(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
            self.t = lib.ones(4)

        def forward(self, x, *args):
            y = self.seq(x) + self.t + math.sqrt(2)
            return y, y.to(lib.float64).float() * args[0], float("inf")

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

        def forward(self, x, s):
            y, z, _ = self.block(x, s)
            for b in self.blocks:
                y = b(y)
            return y - z

    return Outer()


def make_functions(lib):
    nn = lib.nn

    class Fns(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)

        def forward(self, x):
            y = lib.relu(self.conv(x))
            y = lib.nn.functional.max_pool2d(y, 2)
            y = lib.cat([y, lib.flatten(y, 1).view(y.shape)], dim=1)
            return lib.sigmoid(y).mean()

    return Fns()


def same_weights(src, dst, torch):
    dst.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in src.state_dict().items()})


def node_rows(gm):
    rows = []
    for n in gm.graph.nodes:
        t = n.target if isinstance(n.target, str) else n.target.__name__
        rows.append((n.op, n.name, t, len(n.args), tuple(n.kwargs)))
    return rows


def traced_pair(make, torch):
    em, tm = make(ember), make(torch)
    same_weights(em, tm, torch)
    return em, tm, fx.symbolic_trace(em), torch.fx.symbolic_trace(tm)


@pytest.mark.parametrize("make", [make_basic, make_nested])
def test_same_graph_and_code_as_pytorch(make):
    torch = _lib_torch()
    em, tm, egm, tgm = traced_pair(make, torch)
    assert node_rows(egm) == node_rows(tgm)
    assert egm.code == tgm.code
    assert str(egm.graph).replace("ember.", "torch.") == str(tgm.graph)


def test_functions_recorded_through_torch_function():
    torch = _lib_torch()
    em, tm, egm, tgm = traced_pair(make_functions, torch)
    # (PyTorch's Python wrappers pass their defaults on as keywords, so only the calls are compared)
    assert [r[:3] for r in node_rows(egm)] == [r[:3] for r in node_rows(tgm)]
    x = np.random.default_rng(0).standard_normal((2, 2, 6, 6)).astype(np.float32)
    np.testing.assert_allclose(egm(ember.tensor(x)).item(), tgm(torch.tensor(x)).item(), rtol=1e-5)


def test_traced_modules_compute_what_the_originals_do():
    torch = _lib_torch()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    em, tm, egm, tgm = traced_pair(make_basic, torch)
    e, t = egm(ember.tensor(x)), tgm(torch.tensor(x))
    np.testing.assert_allclose(e["out"].detach().numpy(), t["out"].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e["q"].detach().numpy(), t["q"].detach().numpy(), rtol=1e-5, atol=1e-6)
    assert e["size"] == t["size"] == 3
    em, tm, egm, tgm = traced_pair(make_nested, torch)
    x4 = x[:, :4]
    np.testing.assert_allclose(egm(ember.tensor(x4), 3.0).detach().numpy(),
                               tgm(torch.tensor(x4), 3.0).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(egm.state_dict()) == sorted(tgm.state_dict())


def test_gradients_flow_through_a_graph_module():
    m = make_basic(ember)
    gm = fx.symbolic_trace(m)
    x = ember.randn(3, 4, requires_grad=True)
    gm(x)["out"].sum().backward()
    g_traced = (x.grad.clone(), m.param.grad.clone())
    x.grad = None
    m.param.grad = None
    m(x)["out"].sum().backward()
    assert ember.equal(x.grad, g_traced[0]) and ember.equal(m.param.grad, g_traced[1])


def test_graph_editing():
    gm = fx.symbolic_trace(lambda x: (x + 1) * 2)
    g = gm.graph
    add = next(n for n in g.nodes if n.target is operator.add)
    with g.inserting_after(add):
        neg = g.call_function(operator.neg, (add,))
    add.replace_all_uses_with(neg, delete_user_cb=lambda u: u is not neg)
    g.lint()
    gm.recompile()
    assert gm(ember.tensor([1.0])).tolist() == [-4.0]
    with g.inserting_before(g.output_node()):
        g.call_function(operator.add, (neg, 5))  # dead
    assert g.eliminate_dead_code()
    assert [n.op for n in g.nodes] == ["placeholder", "call_function", "call_function", "call_function", "output"]
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(add)
    mul = next(n for n in g.nodes if n.target is operator.mul)
    mul.update_arg(1, 3)
    gm.recompile()
    assert gm(ember.tensor([1.0])).tolist() == [-6.0]
    assert "mul = neg * 3" in gm.code


def test_lint_finds_use_before_definition():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.neg, (x,))
    b = g.call_function(operator.neg, (a,))
    g.output(b)
    a.prepend(b)  # b now runs before a, which it reads
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        g.lint()


def test_interpreter_and_transformer():
    gm = fx.symbolic_trace(lambda a, b: (a * b + 1).neg())
    a, b = ember.tensor([2.0]), ember.tensor([3.0])
    assert fx.Interpreter(gm).run(a, b).tolist() == [-7.0]

    class NegToAbs(fx.Transformer):
        def call_method(self, target, args, kwargs):
            return super().call_method("abs" if target == "neg" else target, args, kwargs)

    new = NegToAbs(gm).transform()
    assert new(a, b).tolist() == [7.0] and "abs()" in new.code

    class Count(fx.Interpreter):
        seen = []

        def run_node(self, n):
            self.seen.append(n.op)
            return super().run_node(n)

    Count(gm).run(a, b)
    assert Count.seen == ["placeholder", "placeholder", "call_function", "call_function", "call_method", "output"]


def test_replace_pattern_matches_pytorch():
    torch = _lib_torch()

    def run(lib, fxm):
        def f(a, b, c):
            return (a * b).neg() + (b * c).neg() + (a * b)

        def pattern(x, y):
            return (x * y).neg()

        def replacement(x, y):
            return x.mul(y).abs()

        gm = fxm.symbolic_trace(f)
        matches = fxm.replace_pattern(gm, pattern, replacement)
        return gm, len(matches)

    egm, en = run(ember, fx)
    tgm, tn = run(torch, torch.fx)
    assert en == tn == 2  # each (a * b) is a node of its own: the third is read outside any match
    assert node_rows(egm) == node_rows(tgm)
    vals = [np.array([v], np.float32) for v in (1.0, -2.0, 3.0)]
    assert egm(*map(ember.tensor, vals)).tolist() == tgm(*map(torch.tensor, vals)).tolist()


def test_shape_prop():
    gm = fx.symbolic_trace(make_basic(ember))
    ShapeProp(gm).propagate(ember.ones(3, 4))
    meta = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert tuple(meta["linear"].shape) == (3, 5) and meta["linear"].dtype is ember.float32
    assert tuple(meta["sum_1"].shape) == (3, 1)
    assert meta["size"] is None and gm.graph.nodes.__iter__  # an int carries no tensor metadata


def test_control_flow_on_a_proxy_is_refused():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(fx.TraceError, match="cannot be used as inputs to control flow"):
        fx.symbolic_trace(f)
    with pytest.raises(RuntimeError, match="'len' is not supported"):
        fx.symbolic_trace(lambda x: len(x))
    with pytest.raises(fx.TraceError, match="cannot be iterated"):
        fx.symbolic_trace(lambda x: [y for y in x])


def test_concrete_args_and_leaf_modules():
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Tanh())

        def forward(self, x, double):
            y = self.inner(x)
            return y * 2 if double else y

    m = M()
    gm = fx.symbolic_trace(m, concrete_args={"double": True})
    x = ember.randn(3, 2)
    assert ember.allclose(gm(x), m(x, True))
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["inner.0", "inner.1"]

    class Leafy(fx.Tracer):
        def is_leaf_module(self, mod, name):
            return name == "inner" or super().is_leaf_module(mod, name)

    g = Leafy().trace(m, {"double": False})
    assert [n.target for n in g.nodes if n.op == "call_module"] == ["inner"]


def helper_fn(x, n):
    return x * n if n > 1 else x


fx.wrap("helper_fn")


def test_wrap_records_a_function_as_one_node():
    gm = fx.symbolic_trace(lambda x: helper_fn(x, 3) + 1)
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.add]
    assert [c.target.__name__ for c in calls] == ["helper_fn"]
    assert gm(ember.tensor([2.0])).tolist() == [7.0]
    assert helper_fn(ember.tensor([2.0]), 3).tolist() == [6.0]  # unpatched after the trace
    assert gm.code.startswith('\ntorch.fx._symbolic_trace.wrap("test_fx_helper_fn")\n\ndef forward(self, x):')
    loaded = pickle.loads(pickle.dumps(gm))  # the code is traced again, the function still one node
    assert [n.target for n in loaded.graph.nodes if n.op == "call_function"] == [helper_fn, operator.add]


def test_pickle_copy_and_print_readable(capsys):
    m = make_nested(ember)
    gm = fx.symbolic_trace(m)
    x = ember.randn(2, 4)
    loaded = pickle.loads(pickle.dumps(gm))
    assert loaded.code == gm.code
    assert ember.equal(loaded(x, 2.0), gm(x, 2.0))
    deep = copy.deepcopy(gm)
    assert ember.equal(deep(x, 2.0), gm(x, 2.0))
    assert deep.block.seq is not gm.block.seq
    text = gm.print_readable(print_output=False)
    assert text.startswith("class Outer(torch.nn.Module):\n    def forward(self, x, s):")
    gm.print_readable()
    assert "def forward(self, x, s):" in capsys.readouterr().out


def test_graph_module_from_a_dict_root_and_errors():
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("w")
    g.output(g.call_function(operator.mul, (x, w)))
    gm = fx.GraphModule({"w": ember.tensor([3.0])}, g)
    assert gm(ember.tensor([2.0])).tolist() == [6.0]
    with pytest.raises(RuntimeError, match="referenced target missing but that target was not provided"):
        g2 = fx.Graph()
        g2.output(g2.get_attr("missing"))
        fx.GraphModule({}, g2)
    with pytest.raises(ValueError, match="unknown op"):
        fx.Node(g, "n", "call_everything", operator.add, (), {})
