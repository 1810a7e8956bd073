"""ember.onnx.export: every file passes onnx.checker and onnxruntime reproduces ember's outputs."""
import io

import numpy as np
import pytest
from export_models import Fn, Net
from export_models import to_np as _np
from fakegpu import registered

import ember
import ember.nn as nn
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _session(data):
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def _outputs(out):
    if isinstance(out, ember.Tensor):
        return [out]
    return [t for o in out for t in _outputs(o)]


# ---------------------------------------------------------------------------- the models
class Net2(nn.Module):
    """The seeds' Net2 (its ``super(Net, self)`` typo, which fails in PyTorch too, corrected)."""

    def __init__(self):
        super(Net2, self).__init__()  # noqa: UP008 - as the seeds write it (with the class fixed)
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))

    def forward(self, x):
        x = self.features(x)
        x = x.view(-1, 16 * 5 * 5)
        x = self.classifier(x)
        return x


class LeNet5(nn.Module):
    """LeNet-5 as published: tanh, average pooling, a padded first convolution."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.Tanh(), nn.AvgPool2d(2),
            nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2), nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(), nn.Linear(84, 10))

    def forward(self, x):
        return self.body(x).log_softmax(1)


def _resnet18():
    vision = pytest.importorskip("ember_vision")
    return vision.models.resnet18(num_classes=10)


MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 5)),
            (20,)),
    "lenet": (LeNet5, (1, 28, 28)),
    "resnet18": (_resnet18, (3, 64, 64)),
    "lstm": (lambda: nn.LSTM(8, 16, 2, batch_first=True), (7, 8)),
    "transformer": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2),
                    (6, 32)),
    "seed_net": (Net, (1, 32, 32)),
    "seed_net2": (Net2, (3, 32, 32)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_onnxruntime_matches_ember_at_two_batch_sizes(device, name, tmp_path):
    ember.manual_seed(0)
    make, shape = MODELS[name]
    model = make().to(device)
    path = tmp_path / f"{name}.onnx"
    x = ember.randn(2, *shape, device=device)
    ember.onnx.export(model, (x,), path, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    assert proto.opset_import[0].version >= 17
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    sess = _session(str(path))
    model.eval()
    for batch in (2, 5):
        y = ember.randn(batch, *shape, device=device)
        with ember.no_grad():
            want = _outputs(model(y))
        got = sess.run(None, {"x": _np(y)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, _np(w), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- layer and op coverage
def _cases():
    r = ember.randn
    return {
        "conv1d": (nn.Conv1d(3, 4, 3, stride=2, padding=1), r(2, 3, 9)),
        "conv3d": (nn.Conv3d(2, 3, 3, padding=1), r(1, 2, 5, 5, 5)),
        "conv_groups_same": (nn.Conv2d(4, 4, 3, groups=2, padding="same", dilation=1), r(2, 4, 6, 6)),
        "conv_transpose1d": (nn.ConvTranspose1d(3, 4, 3, stride=2), r(2, 3, 5)),
        "conv_transpose2d": (nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), r(2, 3, 5, 5)),
        "conv_transpose3d": (nn.ConvTranspose3d(2, 2, 3, stride=2), r(1, 2, 3, 3, 3)),
        "avg_pool_padded": (nn.AvgPool2d(3, stride=2, padding=1), r(2, 3, 7, 7)),
        "adaptive_avg_pool": (nn.AdaptiveAvgPool2d((3, 2)), r(2, 3, 7, 6)),
        "adaptive_max_pool": (nn.AdaptiveMaxPool2d((2, 2)), r(2, 3, 6, 6)),
        "max_pool1d": (nn.MaxPool1d(2), r(2, 3, 6)),
        "max_pool3d_ceil": (nn.MaxPool3d(2, ceil_mode=True), r(1, 2, 5, 5, 5)),
        "batch_norm": (nn.BatchNorm2d(3), r(2, 3, 4, 4)),
        "layer_norm": (nn.LayerNorm(6), r(2, 3, 6)),
        "group_norm": (nn.GroupNorm(2, 4), r(2, 4, 3, 3)),
        "instance_norm": (nn.InstanceNorm2d(3), r(2, 3, 4, 4)),
        "activations": (nn.Sequential(nn.Sigmoid(), nn.Tanh(), nn.ReLU(), nn.Softsign()), r(2, 3)),
        "gelu_silu_mish": (nn.Sequential(nn.GELU(), nn.SiLU(), nn.Mish(), nn.GELU("tanh")), r(2, 3)),
        "elu_selu_leaky": (nn.Sequential(nn.ELU(), nn.SELU(), nn.LeakyReLU(0.1), nn.PReLU()), r(2, 3)),
        "hard": (nn.Sequential(nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU6(), nn.Hardtanh(-0.2, 0.3)), r(2, 3)),
        "softplus_softmax": (nn.Sequential(nn.Softplus(beta=2), nn.Softmax(-1), nn.LogSoftmax(1)), r(2, 3)),
        "dropout_eval": (nn.Sequential(nn.Dropout(0.5), nn.Dropout2d(0.3)), r(2, 3, 2, 2)),
        "embedding": (nn.Embedding(10, 4), ember.tensor([[1, 2], [3, 9]])),
        "gru": (nn.GRU(3, 4, 2), r(5, 2, 3)),
        "bigru": (nn.GRU(3, 4, 1, bidirectional=True, batch_first=True), r(2, 5, 3)),
        "rnn_relu": (nn.RNN(3, 4, 2, nonlinearity="relu"), r(5, 2, 3)),
        "rnn_tanh": (nn.RNN(3, 4, 1), r(5, 2, 3)),
        "bilstm": (nn.LSTM(3, 4, 1, bidirectional=True), r(5, 2, 3)),
        "mha": (Fn(lambda m, x: m(x, x, x)[0], nn.MultiheadAttention(8, 2)), r(4, 2, 8)),
        "transformer": (Fn(lambda m, a, b: m(a, b), nn.Transformer(8, 2, 1, 1, 16)), (r(4, 2, 8), r(3, 2, 8))),
        "shapes": (Fn(lambda x: (x.permute(0, 2, 1).reshape(2, -1)[:, 1:5] * 2 - 1).sum(1, keepdim=True)),
                   r(2, 3, 4)),
        "reductions": (Fn(lambda x: ember.cat([x, x.exp()], 1).max(1)[0] + x.mean() + x.var(1).unsqueeze(1)),
                       r(2, 3)),
        "where_argmax": (Fn(lambda x: ember.where(x > 0, x, x * 0.5).softmax(-1).argmax(-1)), r(2, 3)),
        "gather": (Fn(lambda x: ember.gather(x, 1, ember.tensor([[0, 0], [1, 0]], device=x.device))
                          + x[:, ember.tensor([2, 1], device=x.device)]),
                   r(2, 3)),
        "promotion": (Fn(lambda x: (x.int() + 1).float() / 3 + (x >= 0).float() + x.clamp(-0.5, 0.5)
                         + x.abs().sqrt() + (x != 0.1) * 1.5), r(2, 3)),
        "stack_amax_norm": (Fn(lambda x: ember.stack([x, x], 0).transpose(0, 1).flatten(1).amax(1)
                               + x.norm(dim=1)), r(2, 3)),
        "matmul_split": (Fn(lambda x: ember.matmul(x, x.t()) @ x + x.chunk(3, 1)[1] + x.split([1, 2], 1)[0]
                            + x.unbind(1)[2].unsqueeze(1)), r(2, 3)),
        "expand_repeat_flip": (Fn(lambda x: x.expand(4, 3, 3).sum(0) + x.repeat(1, 2)[:, :3] + x.flip(1) + x.tril()
                                  + ember.zeros_like(x) + ember.ones(3, device=x.device)), r(3, 3)),
        "pad_cumsum": (Fn(lambda x: F.pad(x, (1, 2)).cumsum(1).min(1).values + x.logsumexp(1) + x.prod(1)
                          + x.std(1)), r(2, 3)),
        "pointwise": (Fn(lambda x: x.masked_fill(x > 0.5, 0.0) + x.sigmoid() * x.tanh() + x.pow(2) + 2 ** x
                         + (x - 0.5).rsqrt().nan_to_num()), ember.rand(2, 3)),
        "indexing": (Fn(lambda x: x[..., None, 1] + x[0] + x[-1, ::2].sum()), r(3, 4)),
        "interpolate": (Fn(lambda x: F.interpolate(x, scale_factor=2, mode="nearest")
                           + F.interpolate(x, size=(6, 6), mode="bilinear")), r(1, 2, 3, 3)),
        "normalize": (Fn(lambda x: F.normalize(x, dim=1) + F.cosine_similarity(x, x).unsqueeze(1)), r(2, 3)),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_layer_and_op_coverage(device, name):
    ember.manual_seed(1)
    model, x = _cases()[name]
    model = model.to(device).eval()
    xs = tuple(t.to(device) for t in (x if isinstance(x, tuple) else (x,)))
    names = [f"in{i}" for i in range(len(xs))]
    buf = io.BytesIO()
    ember.onnx.export(model, xs, buf, input_names=names)
    onnx.checker.check_model(onnx.load_from_string(buf.getvalue()))
    got = _session(buf.getvalue()).run(None, {n: _np(t) for n, t in zip(names, xs)})
    with ember.no_grad():
        want = _outputs(model(*xs))
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape) and g.dtype == _np(w).dtype
        np.testing.assert_allclose(g, _np(w), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- options
def test_names_opsets_and_return_value(device):
    m = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4)).to(device)
    x = ember.randn(2, 3, device=device)
    for opset in (17, 18, 20):
        prog = ember.onnx.export(m, (x,), input_names=["features"], output_names=["embedding"],
                                 opset_version=opset, dynamic_axes={"features": [0], "embedding": {0: "n"}})
        proto = prog.model_proto
        onnx.checker.check_model(proto)
        assert proto.opset_import[0].version == opset
        assert [i.name for i in proto.graph.input] == ["features"]
        assert [o.name for o in proto.graph.output] == ["embedding"]
        assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "n"
        assert {i.name for i in proto.graph.initializer} >= {"0.weight", "0.bias", "1.weight", "1.bias"}
        y = ember.randn(4, 3, device=device)
        got = _session(proto.SerializeToString()).run(None, {"features": _np(y)})[0]
        np.testing.assert_allclose(got, _np(m(y)), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="opset_version 16 is not supported"):
        ember.onnx.export(m, (x,), opset_version=16)


def test_export_params_false_makes_weights_inputs(device):
    m = nn.Linear(3, 2).to(device)
    proto = ember.onnx.export(m, (ember.randn(1, 3, device=device),), export_params=False).model_proto
    assert [i.name for i in proto.graph.input] == ["input", "weight", "bias"]
    assert len(proto.graph.initializer) == 0


def test_exports_in_eval_mode_and_restores_training(device):
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.9), nn.BatchNorm1d(3)).to(device)
    assert m.training
    seen = []
    m.register_forward_hook(lambda mod, a, out: seen.append((mod.training, ember.onnx.is_in_onnx_export())))
    proto = ember.onnx.export(m, (ember.randn(4, 3, device=device),)).model_proto
    assert m.training and seen == [(False, True)]
    assert not ember.onnx.is_in_onnx_export()
    assert "Dropout" not in {n.op_type for n in proto.graph.node}
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="random factory.*in module '1'"):
        ember.onnx.export(m, (ember.randn(4, 3, device=device),), training=ember.onnx.TrainingMode.TRAINING)


def test_dynamic_axes_on_sequence_length(device):
    m = nn.GRU(4, 6, batch_first=True).to(device)
    buf = io.BytesIO()
    ember.onnx.export(m, (ember.randn(2, 5, 4, device=device),), buf, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "time"}})
    sess = _session(buf.getvalue())
    for shape in ((3, 9, 4), (1, 2, 4)):
        y = ember.randn(*shape, device=device)
        got = sess.run(None, {"x": _np(y)})
        want = _outputs(m(y))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, _np(w), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- bad input
class Inner(nn.Module):
    def forward(self, x):
        return x.cumprod(1)


def test_unmapped_op_names_op_and_module_and_writes_nothing(device, tmp_path):
    m = nn.Sequential(nn.Linear(3, 3), nn.Sequential(nn.ReLU(), Inner())).to(device)
    path = tmp_path / "bad.onnx"
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match="op 'Cumprod'.*in module '1.1'"):
        ember.onnx.export(m, (ember.randn(2, 3, device=device),), path)
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left either
    buf = io.BytesIO()
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError):
        ember.onnx.export(m, (ember.randn(2, 3, device=device),), buf)
    assert buf.getvalue() == b""


def test_mixed_device_inputs_raise():
    class Two(nn.Module):
        def forward(self, a, b):
            return a + b.to(a.device)

    with registered(2):
        with pytest.raises(RuntimeError, match="same device.*fakegpu:0 and fakegpu:1"):
            ember.onnx.export(Two(), (ember.ones(2, device="fakegpu:0"), ember.ones(2, device="fakegpu:1")))


def test_missing_onnx_package_names_the_extra(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"ember\[onnx\]"):
        ember.onnx.export(nn.Linear(1, 1), (ember.ones(1, 1),))


# ---------------------------------------------------------------------------- plugin ops
def _mish_graph(g, x):
    return g.op("Mul", x, g.op("Tanh", g.op("Softplus", x)))


class OnnxPlugin:
    @ember.plugins.hookimpl
    def ember_onnx_symbolic(self, registry):
        return {"swish::mish": _mish_graph}


def test_plugin_op_without_mapping_names_its_namespace_and_the_hook(device):
    swish = pytest.importorskip("ember_swish")  # noqa: F841 - registers ember.ops.swish
    m = Fn(lambda x: ember.ops.swish.mish(x) * 2).to(device)
    ember.onnx.unregister_custom_op_symbolic("swish::mish")
    with pytest.raises(ember.onnx.UnsupportedOperatorError,
                       match=r"ember\.ops\.swish\.mish \(plugin namespace 'swish'\).*ember_onnx_symbolic"):
        ember.onnx.export(m, (ember.randn(2, 3, device=device),))


def test_plugin_registers_a_mapping_through_the_hook(device):
    pytest.importorskip("ember_swish")
    ember.plugins.register(OnnxPlugin(), name="onnx_mish_mapping")
    try:
        m = Fn(lambda x: ember.ops.swish.mish(x) * 2).to(device)
        x = ember.randn(2, 3, device=device)
        proto = ember.onnx.export(m, (x,)).model_proto
        got = _session(proto.SerializeToString()).run(None, {"input": _np(x)})[0]
        np.testing.assert_allclose(got, _np(m(x)), rtol=1e-5, atol=1e-6)
    finally:
        ember.plugins.unregister("onnx_mish_mapping")
        ember.onnx._PLUGIN.pop("swish::mish", None)


def test_register_custom_op_symbolic(device):
    pytest.importorskip("ember_swish")
    ember.onnx.register_custom_op_symbolic("swish::mish", _mish_graph, 17)
    try:
        m = Fn(lambda x: ember.ops.swish.mish(x)).to(device)
        x = ember.randn(3, device=device)
        proto = ember.onnx.export(m, (x,)).model_proto
        got = _session(proto.SerializeToString()).run(None, {"input": _np(x)})[0]
        np.testing.assert_allclose(got, _np(m(x)), rtol=1e-5, atol=1e-6)
    finally:
        ember.onnx.unregister_custom_op_symbolic("swish::mish")
    with pytest.raises(ValueError, match="domain::name"):
        ember.onnx.register_custom_op_symbolic("mish", _mish_graph, 17)


# ---------------------------------------------------------------------------- the example
def test_export_onnx_example(tmp_path):
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "export_onnx.py")
    spec = importlib.util.spec_from_file_location("example_export_onnx", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--epochs", "1", "--out", str(tmp_path / "digits.onnx")])
    assert os.path.exists(out["path"])
    assert out["accuracy"] == pytest.approx(out["ember_accuracy"]) and out["accuracy"] > 0.5
    assert out["max_diff"] < 1e-4 and 0 <= out["prediction"] <= 9


def test_export_a_function_with_several_outputs(device, capsys):
    w = ember.randn(3, 3, device=device)  # a captured tensor becomes a constant of the graph

    def f(x, y):
        return (x @ w).relu(), {"sum": x + y}

    x, y = ember.randn(2, 3, device=device), ember.randn(2, 3, device=device)
    prog = ember.onnx.export(f, (x, y), input_names=["x", "y"], verbose=True)
    assert "Relu" in capsys.readouterr().out
    got = _session(prog.model_proto.SerializeToString()).run(None, {"x": _np(x), "y": _np(y)})
    a, b = f(x, y)
    np.testing.assert_allclose(got[0], _np(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], _np(b["sum"]), rtol=1e-6)
    assert [o.name for o in prog.model_proto.graph.output] == ["output_0", "output_1"]
