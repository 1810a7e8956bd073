"""ember.export: ExportedProgram basics, dynamic dimensions, and bad input."""
import numpy as np
import pytest
from export_models import Net
from export_models import to_np as _np
from fakegpu import registered

import ember
import ember.nn as nn
from ember.export import Dim, ExportedProgram, ShapesCollection, export


def test_exported_program_basics(device):
    ember.manual_seed(0)
    m = Net().to(device)
    x = ember.randn(2, 1, 32, 32, device=device)
    ep = export(m, (x,))
    assert isinstance(ep, ExportedProgram)
    assert set(ep.state_dict) == set(m.state_dict())
    assert ep.state_dict["conv1.weight"] is m.conv1.weight
    assert "Conv" in [n.target.op for n in ep.graph.nodes if n.op == "call_function"]
    assert "conv1.weight" in str(ep)
    assert isinstance(ep.graph_module, ember.fx.GraphModule) and isinstance(ep.module(), ember.fx.GraphModule)
    y = ember.randn(2, 1, 32, 32, device=device)
    np.testing.assert_array_equal(_np(ep.module()(y)), _np(m(y)))
    assert ep.run_decompositions() is ep
    assert len(list(ep.parameters())) == len(list(m.parameters()))


def test_calling_the_program_directly_raises(device):
    ep = export(nn.Linear(2, 2).to(device), (ember.ones(1, 2, device=device),))
    with pytest.raises(RuntimeError, match=r"exported_program.module\(\)"):
        ep(ember.ones(1, 2, device=device))


@pytest.mark.parametrize("form", ["tuple", "dict", "collection"])
def test_dynamic_batch(device, form):
    ember.manual_seed(0)
    m = Net().to(device)
    x = ember.randn(2, 1, 32, 32, device=device)
    if form == "tuple":
        dyn = ({0: Dim("batch")},)
    elif form == "dict":
        dyn = {"x": {0: Dim("batch", min=1, max=64)}}
    else:
        dyn = ShapesCollection()
        dyn[x] = {0: Dim("batch")}
    ep = export(m, (x,), dynamic_shapes=dyn)
    assert "sym_size_int(x, 0)" in ep.graph_module.code  # the view's batch size is symbolic
    for n in (1, 5):
        y = ember.randn(n, 1, 32, 32, device=device)
        np.testing.assert_array_equal(_np(ep.module()(y)), _np(m(y)))


def test_dynamic_batch_of_recurrent_and_attention_models(device):
    ember.manual_seed(0)
    lstm = nn.LSTM(4, 8, 2, batch_first=True).to(device)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2).eval()
    enc = enc.to(device)
    for m, shape in ((lstm, (3, 5, 4)), (enc, (3, 5, 16))):
        ep = export(m, (ember.randn(*shape, device=device),), dynamic_shapes=({0: Dim("b")},))
        y = ember.randn(6, *shape[1:], device=device)
        a, b = m(y), ep.module()(y)
        a = a[0] if isinstance(a, tuple) else a
        b = b[0] if isinstance(b, tuple) else b
        np.testing.assert_array_equal(_np(a), _np(b))


def test_dynamic_dim_the_model_specialises_on_raises(device):
    class Branchy(nn.Module):
        def forward(self, x):
            if x.shape[0] > 2:
                return x * 2
            return x.exp()

    with pytest.raises(RuntimeError, match="dimension 0 of input 0 cannot be dynamic"):
        export(Branchy(), (ember.ones(2, 3, device=device),), dynamic_shapes=({0: Dim("b")},))


class Tally(nn.Module):
    """Sums its inputs into a buffer, in place (a running statistic that does not depend on the batch size)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", ember.zeros(3))

    def forward(self, x):
        self.total.add_(x.detach().sum(0))
        return x


def test_export_leaves_buffers_and_rng_as_they_were(device):
    m = nn.Sequential(Tally(), nn.Dropout(0.5)).to(device)
    x = ember.randn(4, 3, device=device)
    ember.manual_seed(5)
    export(m, (x,), dynamic_shapes=({0: Dim("b")},))  # two traces in training mode
    after = ember.rand(3, device=device)
    ember.manual_seed(5)
    np.testing.assert_array_equal(_np(after), _np(ember.rand(3, device=device)))
    np.testing.assert_array_equal(_np(m[0].total), [0, 0, 0])


def test_a_number_computed_from_a_dynamic_size_refuses_it(device):
    m = nn.BatchNorm1d(3).to(device)  # training: the running variance is scaled by n / (n - 1)
    with pytest.raises(RuntimeError, match="dimension 0 of input 0 cannot be dynamic.*number computed from the size"):
        export(m, (ember.randn(4, 3, device=device),), dynamic_shapes=({0: Dim("b")},))


def test_export_needs_a_module_and_tuple_args(device):
    with pytest.raises(ValueError, match="nn.Module"):
        export(lambda x: x, (ember.ones(1, device=device),))
    with pytest.raises(ValueError, match="tuple"):
        export(nn.Linear(1, 1).to(device), ember.ones(1, 1, device=device))


def test_mixed_device_inputs_raise():
    class Two(nn.Module):
        def forward(self, a, b):
            return a + b.to(a.device)

    with registered(2):
        a = ember.ones(2, device="fakegpu:0")
        b = ember.ones(2, device="fakegpu:1")
        with pytest.raises(RuntimeError, match="same device.*fakegpu:0 and fakegpu:1"):
            export(Two(), (a, b))
        with pytest.raises(RuntimeError, match="same device"):
            export(Two(), (a, ember.ones(2)))


def test_save_and_load(device, tmp_path):
    m = Net().to(device)
    x = ember.randn(2, 1, 32, 32, device=device)
    ep = export(m, (x,), dynamic_shapes=({0: Dim("b")},))
    ember.export.save(ep, tmp_path / "net.pt2")
    ep2 = ember.export.load(tmp_path / "net.pt2")
    y = ember.randn(3, 1, 32, 32, device=device)
    np.testing.assert_array_equal(_np(ep2.module()(y)), _np(m(y)))


# --------------------------------------------------------------------------- one graph: fx, as torch.export's
def _models(nn_):
    """The same small models written on ``nn_`` (ember's or PyTorch's nn) and ``(name, factory, args)``."""
    class MLP(nn_.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn_.Linear(3, 4), nn_.Linear(4, 2)

        def forward(self, x):
            return self.fc2(self.fc1(x).relu()).tanh()

    class Two(nn_.Module):
        def __init__(self, lib):
            super().__init__()
            self.register_buffer("scale", lib.ones(3))
            self.w = nn_.Parameter(lib.ones(3) * 0.5)

        def forward(self, x, y):
            return x * self.w + y, (x * self.scale).sum(1)

    class Nested(nn_.Module):
        def forward(self, xs, z):
            return xs[0] + xs[1] * z

    return {"mlp": (MLP, ((2, 3),)), "two": (Two, ((2, 3), (3,))), "nested": (Nested, ([(3,), (3,)], (3,)))}


def _inputs(lib, shapes, device=None):
    if isinstance(shapes, list):
        return [_inputs(lib, s, device) for s in shapes]
    if isinstance(shapes, tuple) and shapes and isinstance(shapes[0], (tuple, list)):
        return tuple(_inputs(lib, s, device) for s in shapes)
    kw = {} if device is None else {"device": device}
    return lib.arange(int(np.prod(shapes)), dtype=lib.float32, **kw).reshape(shapes) / 7 - 0.3


@pytest.mark.parametrize("name", ["mlp", "two", "nested"])
def test_graph_and_signature_match_torch_export(device, name):
    torch = pytest.importorskip("torch")
    cls, shapes = _models(nn)[name]
    tcls, _ = _models(torch.nn)[name]
    m = cls(ember) if name == "two" else cls()
    tm = tcls(torch) if name == "two" else tcls()
    tm.load_state_dict({k: torch.from_numpy(_np(v)) for k, v in m.state_dict().items()})
    m = m.to(device)
    ep = export(m, _inputs(ember, shapes, device))
    tep = torch.export.export(tm, _inputs(torch, shapes))
    nodes = [(n.op, n.name) for n in ep.graph.nodes]
    assert nodes == [(n.op, n.name) for n in tep.graph.nodes]
    assert [n.target.__name__ for n in ep.graph.nodes if n.op == "call_function"] == \
        [n.target.__name__.split(".")[0] for n in tep.graph.nodes if n.op == "call_function"]
    sig = [(s.kind.name, s.arg.name, s.target, s.persistent) for s in ep.graph_signature.input_specs]
    assert sig == [(s.kind.name, s.arg.name, s.target, s.persistent) for s in tep.graph_signature.input_specs]
    assert [(s.kind.name, s.arg.name) for s in ep.graph_signature.output_specs] == \
        [(s.kind.name, s.arg.name) for s in tep.graph_signature.output_specs]
    assert ep.graph_signature.user_inputs == tep.graph_signature.user_inputs
    assert ep.graph_signature.inputs_to_parameters == tep.graph_signature.inputs_to_parameters
    args = _inputs(ember, shapes, device)
    ours, theirs = ep.module()(*args), tep.module()(*_inputs(torch, shapes))
    for a, b in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,)):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    eager = m(*args)
    for a, b in zip(ours if isinstance(ours, tuple) else (ours,), eager if isinstance(eager, tuple) else (eager,)):
        np.testing.assert_array_equal(_np(a), _np(b))


def test_graph_module_runs_the_lifted_graph_and_round_trips(device):
    from ember.export.graph import from_fx, to_fx
    ember.manual_seed(0)
    m = Net().to(device)
    x = ember.randn(2, 1, 32, 32, device=device)
    ep = export(m, (x,), dynamic_shapes=({0: Dim("b")},))
    ep.graph_module.graph.lint()
    lifted = [ep.state_dict[s.target] for s in ep.graph_signature.input_specs if s.kind.name != "USER_INPUT"]
    y = ember.randn(3, 1, 32, 32, device=device)
    out, = ep.graph_module(*lifted, y)
    np.testing.assert_array_equal(_np(out), _np(m(y)))
    g = ep.op_graph()  # fx -> op level -> fx: the same program, the same code
    gm, sig, consts = to_fx(g, ep.state_dict, ep.graph_signature.user_inputs)
    assert gm.code == ep.graph_module.code and sig == ep.graph_signature
    assert [repr(n) for n in from_fx(gm, sig, consts).nodes] == [repr(n) for n in g.nodes]


def test_an_fx_edit_reaches_module_and_save(device, tmp_path):
    from ember.export.graph import ops
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    ep = export(m, (ember.randn(5, 3, device=device),))
    relu = [n for n in ep.graph.nodes if n.target is ops.relu.unary]
    assert len(relu) == 1
    relu[0].target = ops.tanh.unary  # one rewrite, seen by every reader of the program
    ep.graph_module.recompile()
    x = ember.randn(6, 3, device=device)
    want = _np(m[2](m[0](x).tanh()))
    np.testing.assert_array_equal(_np(ep.module()(x)), want)
    assert "unary::tanh" in str(ep.op_graph())
    ember.export.save(ep, tmp_path / "p.pt2")
    np.testing.assert_array_equal(_np(ember.export.load(tmp_path / "p.pt2").module()(x)), want)


def test_an_fx_edit_reaches_onnx(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    from ember.export.graph import ops
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).eval()
    ep = export(m, (ember.randn(5, 3),), dynamic_shapes=({0: Dim("b")},))
    for n in ep.graph.nodes:
        if n.target is ops.relu.unary:
            n.target = ops.sigmoid.unary
    ep.graph_module.recompile()
    ember.onnx.export(ep, f=tmp_path / "p.onnx")
    sess = ort.InferenceSession(str(tmp_path / "p.onnx"))
    x = ember.randn(7, 3)
    got = sess.run(None, {"input": x.numpy()})[0]
    np.testing.assert_allclose(got, _np(m[2](m[0](x).sigmoid())), rtol=1e-5, atol=1e-6)


def test_dead_code_elimination_keeps_state_updates(device):
    m = nn.BatchNorm1d(3).to(device)  # training mode: the running statistics are updated in place
    ep = export(m, (ember.randn(4, 3, device=device),))
    before = [n.name for n in ep.graph.nodes]
    ep.graph.eliminate_dead_code()
    assert [n.name for n in ep.graph.nodes] == before
    assert any(n.target.kind == "inplace" for n in ep.graph.nodes if n.op == "call_function")


def test_a_foreign_call_cannot_be_lowered(device):
    import operator
    ep = export(nn.Linear(2, 2).to(device), (ember.ones(1, 2, device=device),))
    out = ep.graph.output_node()
    with ep.graph.inserting_before(out):
        extra = ep.graph.call_function(operator.neg, (out.args[0][0],))
    out.args = ((extra,),)
    ep.graph_module.recompile()
    with pytest.raises(RuntimeError, match="not one of ember's graph ops"):
        ep.op_graph()


def test_exported_graph_module_pickles(device):
    import pickle
    ember.manual_seed(0)
    m = Net().to(device)
    ep = export(m, (ember.randn(2, 1, 32, 32, device=device),), dynamic_shapes=({0: Dim("b")},))
    gm = ep.module()
    loaded = pickle.loads(pickle.dumps(gm))  # its code is traced again: each op call is one node again
    assert loaded.code == gm.code and "sym_size_int" in loaded.code
    y = ember.randn(3, 1, 32, 32, device=device)
    np.testing.assert_array_equal(_np(loaded(y)[0]), _np(m(y)))
