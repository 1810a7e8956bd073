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
    assert "Conv" in ep.graph.ops() and "conv1.weight" in str(ep)
    assert ep.graph_module is ep.module()
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
    assert "s0_0" in str(ep.graph)  # the view's batch size is symbolic
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


def test_export_leaves_buffers_and_rng_as_they_were(device):
    m = nn.Sequential(nn.BatchNorm1d(3), nn.Dropout(0.5)).to(device)
    x = ember.randn(4, 3, device=device)
    ember.manual_seed(5)
    export(m, (x,), dynamic_shapes=({0: Dim("b")},))  # three traces in training mode
    after = ember.rand(3, device=device)
    ember.manual_seed(5)
    np.testing.assert_array_equal(_np(after), _np(ember.rand(3, device=device)))
    np.testing.assert_array_equal(_np(m[0].running_mean), [0, 0, 0])
    assert int(m[0].num_batches_tracked) == 0


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
