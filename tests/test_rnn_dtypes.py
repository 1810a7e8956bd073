"""The fused recurrent layers in every floating dtype against PyTorch: RNN (tanh, relu), GRU and LSTM values
and gradients, and in float16/bfloat16 the Elman RNN's roundings (PyTorch's: ``x W_ih^T + b_ih`` and
``h W_hh^T + b_hh`` each rounded once, then their sum), so that a pre-activation near 0 keeps PyTorch's sign
and relu's gradient."""
import numpy as np
import pytest

import ember
from ember.testing import fuzz, has_dtype

torch = pytest.importorskip("torch")

# the largest difference from PyTorch allowed, relative to the largest magnitude of PyTorch's result
TOL = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-2, "bfloat16": 5e-2}
KINDS = {"rnn_relu": 1, "rnn_tanh": 1, "gru": 3, "lstm": 4}


def _inputs(kind, seed, T=5, B=3, I=3, H=4, dirs=2):
    g = np.random.default_rng(seed)
    gates = KINDS[kind]
    arrays = [g.standard_normal((T, B, I)), g.standard_normal((dirs, B, H))]
    if kind == "lstm":
        arrays.append(g.standard_normal((dirs, B, H)))
    for _ in range(dirs):
        arrays += [g.standard_normal(s) * 0.5 for s in ((gates * H, I), (gates * H, H), (gates * H,), (gates * H,))]
    return arrays


def _run(m, kind, arrays, dtype, device="cpu"):
    """The layer's output and every input's gradient, as float64 arrays, for a fixed weighting of the output."""
    if m is ember and not has_dtype(device, getattr(ember, dtype)):
        pytest.skip(f"{device} has no {dtype}")
    ts = [m.tensor(a, device=device).to(getattr(m, dtype)).requires_grad_() for a in arrays]
    if kind == "lstm":
        out, h, _ = m.lstm(ts[0], (ts[1], ts[2]), ts[3:], True, 1, 0.0, False, True, False)
    else:
        out, h = getattr(m, kind)(ts[0], ts[1], ts[2:], True, 1, 0.0, False, True, False)
    w = m.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape), device=device).to(out.dtype)
    ((out * w).sum() + h.sum()).backward()
    host = [out.detach()] + [t.grad for t in ts]
    return [t.to(m.float64).cpu().numpy() for t in host]


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("kind", list(KINDS))
def test_recurrent_values_and_gradients_match_torch(device, kind, dtype):
    arrays = _inputs(kind, 3)
    got, want = _run(ember, kind, arrays, dtype, device), _run(torch, kind, arrays, dtype)
    for i, (e, t) in enumerate(zip(got, want)):
        assert e.shape == t.shape
        err = np.abs(e - t).max() / max(np.abs(t).max(), 1e-6)
        assert err <= TOL[dtype], (kind, dtype, i, err)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["rnn_relu", "rnn_tanh"])
def test_half_rnn_outputs_are_torch_roundings(device, kind, dtype):
    # every output bit for bit over a few draws: a summed bias or a product rounded before its bias differed
    for seed in range(4):
        arrays = _inputs(kind, seed, T=6, B=4)
        np.testing.assert_array_equal(_run(ember, kind, arrays, dtype, device)[0], _run(torch, kind, arrays, dtype)[0])


def test_rnn_relu_row_in_bfloat16_agrees_with_torch(device):
    if not has_dtype(device, ember.bfloat16):
        pytest.skip(f"{device} has no bfloat16")
    # the op table's row: its sample has a bfloat16 pre-activation (-0.5 + 0.5) that a second rounding
    # made positive, and its gradients then differed from PyTorch's by up to 3x
    report = fuzz.sweep_dtypes(ops=["rnn_relu_fn"], device=device, dtypes=["bfloat16"])
    assert report.calls and not report.disagreements, [(d.op, d.kind, d.detail[:120]) for d in report.disagreements]
