"""ember.jit: tracing at the interception point, replay bit-identical to eager, save/load as data, facades."""
import io
import threading
import zipfile

import numpy as np
import pytest
from export_models import Net
from export_models import to_np as _np

import ember
import ember.nn as nn
from ember import jit
from ember.jit import TracerWarning


def _flat(out):
    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _flat(v)]
    return [t for v in out for t in _flat(v)]


def _same(a, b):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_array_equal(_np(x), _np(y))


def _models():
    return {
        "mlp": (lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), (3, 4)),
        "lenet": (Net, (2, 1, 32, 32)),
        "lstm": (lambda: nn.LSTM(4, 8, 2, batch_first=True), (3, 5, 4)),
        "transformer": (lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True), 2).eval(), (3, 5, 16)),
        "bn_gelu": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4).eval(), nn.GELU(),
                                          nn.AdaptiveAvgPool2d(1), nn.Flatten()), (2, 3, 6, 6)),
    }


@pytest.mark.parametrize("name", sorted(_models()))
def test_replay_is_bit_identical_to_eager(device, name):
    ember.manual_seed(0)
    make, shape = _models()[name]
    m = make().to(device)
    traced = jit.trace(m, ember.randn(*shape, device=device))
    for _ in range(2):  # fresh inputs of the traced shape
        x = ember.randn(*shape, device=device)
        _same(traced(x), m(x))


def test_replay_of_embedding_follows_its_indices(device):
    m = nn.Embedding(10, 3).to(device)
    traced = jit.trace(m, ember.tensor([[1, 2], [3, 4]], device=device))
    x = ember.tensor([[9, 0], [5, 5]], device=device)
    _same(traced(x), m(x))


def test_replay_of_index_select_follows_a_0d_index(device):
    w = ember.randn(4, 3, device=device)
    traced = jit.trace(lambda w, i: w.index_select(0, i), (w, ember.tensor(2, device=device)))
    i = ember.tensor(3, device=device)
    _same(traced(w, i), w.index_select(0, i))


def test_replay_backward_matches_eager(device):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1)).to(device)
    traced = jit.trace(m, ember.randn(4, 3, device=device))
    x = ember.randn(4, 3, device=device)
    m(x).sum().backward()
    eager = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    traced(x).sum().backward()
    for g, p in zip(eager, m.parameters()):
        np.testing.assert_array_equal(_np(g), _np(p.grad))


def test_traced_module_shares_parameters(device):
    m = nn.Linear(3, 2).to(device)
    traced = jit.trace(m, ember.randn(1, 3, device=device))
    assert traced.weight is m.weight
    assert list(traced.state_dict()) == list(m.state_dict())
    with ember.no_grad():
        m.weight.fill_(1.0)
    x = ember.randn(2, 3, device=device)
    _same(traced(x), m(x))


def test_function_with_structured_outputs(device):
    def f(x, y):
        return {"sum": x + y, "pair": (x * y, (x - y).relu())}

    x, y = ember.randn(2, 3, device=device), ember.randn(2, 3, device=device)
    traced = jit.trace(f, (x, y))
    a, b = ember.randn(2, 3, device=device), ember.randn(2, 3, device=device)
    out = traced(a, b)
    assert set(out) == {"sum", "pair"} and isinstance(out["pair"], tuple)
    _same(out, f(a, b))


def test_graph_prints_ops_parameters_and_module_paths(device):
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    g = jit.trace(m, ember.randn(3, 4, device=device)).graph
    assert g.ops() == ["Linear", "relu", "Linear"]
    assert [n.path for n in g.nodes] == ["0", "1", "2"]
    text = str(g)
    assert "0.weight" in text and "apply::Linear" in text and "return" in text


def test_random_ops_draw_again_on_replay(device):
    m = nn.Dropout(0.5).to(device)  # training mode: the trace records the draw, not its values
    x = ember.ones(64, device=device)
    traced = jit.trace(m, x)
    ember.manual_seed(3)
    a = m(x)
    ember.manual_seed(3)
    b = traced(x)
    _same(a, b)
    assert not np.array_equal(_np(traced(x)), _np(b))


def test_batchnorm_training_updates_buffers_on_replay(device):
    m = nn.BatchNorm1d(3).to(device)
    x = ember.randn(8, 3, device=device)
    twin = nn.BatchNorm1d(3).to(device)
    traced = jit.trace(twin, x)  # the trace itself runs the forward once
    m(x)
    traced(x)
    m(x)
    np.testing.assert_allclose(_np(twin.running_mean), _np(m.running_mean), rtol=1e-6)
    assert int(twin.num_batches_tracked) == 2


# ---------------------------------------------------------------------------- save / load
def test_save_load_round_trip(device, tmp_path):
    ember.manual_seed(0)
    m = Net().to(device)
    x = ember.randn(2, 1, 32, 32, device=device)
    traced = jit.trace(m, x)
    path = tmp_path / "lenet.pt"
    jit.save(traced, path)
    loaded = jit.load(path)
    _same(loaded(x), m(x))
    assert sorted(loaded.state_dict()) == sorted(m.state_dict())
    assert loaded.graph.ops() == traced.graph.ops()
    buf = io.BytesIO()
    traced.save(buf)
    buf.seek(0)
    _same(jit.load(buf)(x), m(x))


def test_saved_file_is_data_not_code(device, tmp_path):
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU()).to(device)
    path = tmp_path / "m.pt"
    jit.save(jit.trace(m, ember.randn(2, 3, device=device)), path)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    assert "m/data.pkl" in names  # PyTorch's checkpoint layout, holding only plain data:
    obj = ember.load(path)  # the safe reader (weights_only) reads it
    assert obj["format"] == "ember.jit" and obj["graph"]["nodes"][0][1] == "Linear"


def test_load_unknown_op_is_a_clear_error(device, tmp_path):
    path = tmp_path / "m.pt"
    jit.save(jit.trace(nn.Linear(3, 3).to(device), ember.randn(2, 3, device=device)), path)
    obj = ember.load(path)
    obj["graph"]["nodes"][0][1] = "NoSuchOp"
    ember.save(obj, path)
    with pytest.raises(RuntimeError, match="'NoSuchOp'.*not in ember's Op registry"):
        jit.load(path)


def test_save_load_traced_function_and_factories(device, tmp_path):
    def f(x):
        return x + ember.ones(x.shape[1], device=x.device) * ember.arange(3.0, device=x.device)

    x = ember.randn(2, 3, device=device)
    traced = jit.trace(f, x)
    path = tmp_path / "f.pt"
    jit.save(traced, path)
    loaded = jit.load(path)
    assert isinstance(loaded, jit.ScriptFunction)
    _same(loaded(x), f(x))


def test_save_refuses_untraced_modules(tmp_path):
    with pytest.raises(RuntimeError, match="made by ember.jit.trace"):
        jit.save(nn.Linear(2, 2), tmp_path / "x.pt")


# ---------------------------------------------------------------------------- bad input, as PyTorch
def test_converting_a_traced_tensor_warns(device):
    def f(x):
        if x.sum() > 0:  # specialised at trace time
            return x * 2
        return x * 3

    with pytest.warns(TracerWarning, match="Converting a tensor to a Python boolean might cause the trace to be "
                                           "incorrect"):
        traced = jit.trace(f, ember.ones(3, device=device))
    assert traced.graph.ops() == ["Mul"]  # the comparison only Python read is not kept
    x = -ember.ones(3, device=device)
    _same(traced(x), x * 2)  # the branch taken at trace time


def test_non_tensor_output_raises(device):
    with pytest.raises(RuntimeError, match="Only tensors, lists, tuples of tensors, or dictionary of tensors"):
        jit.trace(lambda x: (x * 2, 3), ember.ones(2, device=device))


def test_mutating_an_input_warns_and_replays_the_mutation(device):
    def f(x):
        x.add_(1)
        return x * 2

    x = ember.zeros(3, device=device)
    with pytest.warns(TracerWarning, match="modifies input 0 in place"):
        traced = jit.trace(f, x)
    y = ember.zeros(3, device=device)
    out = traced(y)
    np.testing.assert_array_equal(_np(y), [1, 1, 1])
    np.testing.assert_array_equal(_np(out), [2, 2, 2])


def test_wrong_number_of_inputs_raises(device):
    traced = jit.trace(lambda a, b: a + b, (ember.ones(2, device=device), ember.ones(2, device=device)))
    with pytest.raises(RuntimeError, match="expected 2 tensor inputs"):
        traced(ember.ones(2, device=device))


def test_nested_tracing_in_one_thread_raises(device):
    def outer(x):
        return jit.trace(lambda y: y * 2, x)(x)

    with pytest.raises(RuntimeError, match="already being recorded"):
        jit.trace(outer, ember.ones(2, device=device))


def test_trace_records_only_its_own_thread(device):
    started, done = threading.Event(), threading.Event()

    def other():
        started.wait(5)
        for _ in range(20):
            ember.ones(3, device=device).exp().sum()
        done.set()

    def f(x):
        y = x * 2
        started.set()
        done.wait(5)
        return y + 1

    t = threading.Thread(target=other)
    t.start()
    traced = jit.trace(f, ember.ones(2, device=device))
    t.join()
    assert done.is_set()
    assert traced.graph.ops() == ["Mul", "Add"]


# ---------------------------------------------------------------------------- the scripting facades
def test_script_and_markers_run_eagerly(device):
    class M(nn.Module):
        @jit.export
        def double(self, x):
            return x * 2

        @jit.ignore
        def helper(self, x):
            return x + 1

        @jit.unused
        def unused(self, x):
            return x

        def forward(self, x):
            return self.helper(self.double(x))

    m = M()
    scripted = jit.script(m)
    assert isinstance(scripted, jit.ScriptModule) and jit.script(scripted) is scripted
    x = ember.randn(3, device=device)
    _same(scripted(x), x * 2 + 1)
    _same(scripted.double(x), x * 2)
    f = jit.script(lambda t: t.relu())
    _same(f(x), x.relu())
    assert jit.ignore(drop=True)(m.helper) == m.helper
    assert jit.is_scripting() is False
    assert jit.annotate(int, 3) == 3


def test_is_tracing(device):
    seen = []

    def f(x):
        seen.append(jit.is_tracing())
        return x + 1

    jit.trace(f, ember.ones(1, device=device))
    f(ember.ones(1, device=device))
    assert seen == [True, False]


def test_freeze_needs_eval_mode(device):
    m = nn.Linear(2, 2).to(device)
    traced = jit.trace(m, ember.ones(1, 2, device=device))
    with pytest.raises(RuntimeError, match="eval mode"):
        jit.freeze(traced)
    traced.eval()
    assert jit.freeze(traced) is traced
    assert jit.optimize_for_inference(traced) is traced


def test_trace_module_forward(device):
    m = nn.Linear(2, 2).to(device)
    traced = jit.trace_module(m, {"forward": ember.ones(1, 2, device=device)})
    x = ember.randn(3, 2, device=device)
    _same(traced(x), m(x))


def test_plugin_ops_are_recorded_by_qualified_name(device, tmp_path):
    pytest.importorskip("ember_swish")

    def f(x):
        return ember.ops.swish.mish(x) + ember.ops.swish.swish(x)

    x = ember.randn(5, device=device)
    traced = jit.trace(f, x)
    assert "ember.ops.swish.mish" in traced.graph.ops()  # a kernel op; swish (a Function) records its ops
    y = ember.randn(5, device=device)
    _same(traced(y), f(y))
    jit.save(traced, tmp_path / "f.pt")
    _same(jit.load(tmp_path / "f.pt")(y), f(y))


def _slice_and_index(x, i, v):
    y = x.clone()
    y[1:, i] = 0.0  # a partial slice and an index tensor
    y[:, 2] = v  # a slice and an integer
    y[::2, 0] = -1.0
    return y


def _diagonal_writes(x, v):
    y = x * 1
    y.diagonal().fill_(0)
    z = x + 0
    z.diagonal().copy_(v)
    w = x.unsqueeze(0) * 1
    ember.diagonal(w, dim1=1, dim2=2).mul_(2)
    return y, z, w


WRITES = {
    "adaptive_max_pool": (lambda x: nn.AdaptiveMaxPool2d((3, 2), return_indices=True)(x.view(1, 1, 4, 4)),
                          lambda d: (ember.randn(4, 4, device=d),)),
    "slice_and_index": (_slice_and_index,
                        lambda d: (ember.randn(4, 4, device=d), ember.tensor([0, 3], device=d),
                                   ember.randn(4, device=d))),
    "diagonal_writes": (_diagonal_writes, lambda d: (ember.randn(4, 4, device=d), ember.randn(4, device=d))),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_replay_of_index_and_diagonal_writes_is_bit_identical(device, name):
    fn, make = WRITES[name]
    traced = jit.trace(fn, make(device))
    for _ in range(2):  # fresh inputs: the writes follow them
        inputs = make(device)
        before = [_np(t).copy() for t in inputs]
        _same(traced(*inputs), fn(*inputs))
        for t, b in zip(inputs, before):  # inputs are left as they were
            np.testing.assert_array_equal(_np(t), b)
