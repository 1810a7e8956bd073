"""Recurrent layers and packed sequences against PyTorch with identical weights."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

nn = ember.nn


def _copy_weights(e_mod, t_mod, device, dtype=ember.float32):
    state = {k: ember.tensor(v.detach().numpy(), dtype=dtype, device=device) for k, v in t_mod.state_dict().items()}
    e_mod.load_state_dict(state)


def _inputs(torch, shape, device, dtype="float32", seed=0, requires_grad=True):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (ember.tensor(a, device=device, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


CONFIGS = [
    ("lstm", dict()),
    ("lstm", dict(num_layers=2, bidirectional=True)),
    ("lstm", dict(batch_first=True, proj_size=3)),
    ("lstm", dict(num_layers=2, bias=False)),
    ("gru", dict()),
    ("gru", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("rnn", dict()),
    ("rnn", dict(nonlinearity="relu", bidirectional=True)),
]


def _modules(torch, kind, kw, device, dtype=ember.float32):
    tcls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[kind]
    ecls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
    tm = tcls(4, 5, **kw)
    em = ecls(4, 5, device=device, dtype=dtype, **kw)
    _copy_weights(em, tm, device, dtype)
    if dtype is ember.float64:
        tm = tm.double()
    return em, tm


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("kind,kw", CONFIGS, ids=[f"{k}-{'-'.join(f'{a}={b}' for a, b in kw.items())}"
                                                     for k, kw in CONFIGS])
def test_recurrent_matches_torch(device, torch, kind, kw):
    em, tm = _modules(torch, kind, kw, device)
    assert list(em.state_dict().keys()) == list(tm.state_dict().keys())
    shape = (3, 6, 4) if kw.get("batch_first") else (6, 3, 4)
    ex, tx = _inputs(torch, shape, device)
    eo, eh = em(ex)
    to, th = tm(tx)
    assert_close(eo, to, rtol=1e-4, atol=1e-5)
    if kind == "lstm":
        assert_close(eh[0], th[0], rtol=1e-4, atol=1e-5)
        assert_close(eh[1], th[1], rtol=1e-4, atol=1e-5)
        el = eo.sum() + (eh[0] * 2).sum() + eh[1].sum()
        tl = to.sum() + (th[0] * 2).sum() + th[1].sum()
    else:
        assert_close(eh, th, rtol=1e-4, atol=1e-5)
        el, tl = eo.sum() + (eh * 2).sum(), to.sum() + (th * 2).sum()
    el.backward()
    tl.backward()
    assert_close(ex.grad, tx.grad, rtol=1e-4, atol=1e-5)
    tparams = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        assert_close(p.grad, tparams[name].grad, rtol=1e-4, atol=1e-4, msg=name)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_initial_state_and_unbatched(device, torch, kind):
    em, tm = _modules(torch, kind, dict(num_layers=2), device)
    ex, tx = _inputs(torch, (5, 4), device, seed=3)
    eh0, th0 = _inputs(torch, (2, 5), device, seed=4)
    if kind == "lstm":
        ec0, tc0 = _inputs(torch, (2, 5), device, seed=5)
        eo, (eh, ec) = em(ex, (eh0, ec0))
        to, (th, tc) = tm(tx, (th0, tc0))
        assert_close(ec, tc, rtol=1e-4, atol=1e-5)
    else:
        eo, eh = em(ex, eh0)
        to, th = tm(tx, th0)
    assert_close(eo, to, rtol=1e-4, atol=1e-5)
    assert_close(eh, th, rtol=1e-4, atol=1e-5)
    eo.sum().backward()
    to.sum().backward()
    assert_close(eh0.grad, th0.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_unsorted_lengths(device, torch, kind, bidirectional):
    from ember.nn.utils import rnn as erp

    trp = torch.nn.utils.rnn
    em, tm = _modules(torch, kind, dict(bidirectional=bidirectional, batch_first=True), device)
    ex, tx = _inputs(torch, (4, 6, 4), device, seed=7)
    lengths = [3, 6, 1, 4]
    ep = erp.pack_padded_sequence(ex, lengths, batch_first=True, enforce_sorted=False)
    tp = trp.pack_padded_sequence(tx, lengths, batch_first=True, enforce_sorted=False)
    assert_close(ep.data, tp.data)
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert ep.sorted_indices.tolist() == tp.sorted_indices.tolist()
    eo, eh = em(ep)
    to, th = tm(tp)
    assert isinstance(eo, erp.PackedSequence)
    assert_close(eo.data, to.data, rtol=1e-4, atol=1e-5)
    if kind == "lstm":
        eh, th = eh[0], th[0]
    assert_close(eh, th, rtol=1e-4, atol=1e-5)
    epad, elen = erp.pad_packed_sequence(eo, batch_first=True, padding_value=-1.0, total_length=7)
    tpad, tlen = trp.pad_packed_sequence(to, batch_first=True, padding_value=-1.0, total_length=7)
    assert_close(epad, tpad, rtol=1e-4, atol=1e-5)
    assert elen.tolist() == tlen.tolist()
    (epad.sum() + eh.sum()).backward()
    (tpad.sum() + th.sum()).backward()
    assert_close(ex.grad, tx.grad, rtol=1e-4, atol=1e-5)
    tparams = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        assert_close(p.grad, tparams[name].grad, rtol=1e-4, atol=1e-4, msg=name)


def test_gradcheck_lstm_float64(device, torch):
    em = nn.LSTM(3, 2, bidirectional=True, device=device, dtype=ember.float64)
    x = ember.randn(4, 2, 3, dtype=ember.float64, device=device, requires_grad=True)
    params = [p for p in em.parameters()]
    assert ember.autograd.gradcheck(lambda inp: em(inp)[0], (x,))
    assert ember.autograd.gradcheck(lambda w: (x @ w.t()).sum() + em(x)[1][0].sum(), (params[0],))


def _flat_params(kind, layers, dirs, in_size, hidden, bias=True, proj=0, seed=0):
    gates = {"lstm": 4, "gru": 3}.get(kind, 1)
    rng = np.random.default_rng(seed)
    out_h = proj or hidden
    params = []
    for layer in range(layers):
        for _ in range(dirs):
            n_in = in_size if layer == 0 else out_h * dirs
            shapes = [(gates * hidden, n_in), (gates * hidden, out_h)]
            shapes += [(gates * hidden,), (gates * hidden,)] if bias else []
            shapes += [(proj, hidden)] if proj else []
            params += [rng.uniform(-0.6, 0.6, s) for s in shapes]
    return [ember.tensor(p, dtype=ember.float64, requires_grad=True) for p in params]


@pytest.mark.parametrize("kind,bias,proj", [("lstm", True, 0), ("lstm", False, 0), ("lstm", True, 2),
                                            ("gru", True, 0), ("gru", False, 0), ("rnn_tanh", True, 0),
                                            ("rnn_relu", False, 0)])
def test_gradcheck_every_input_float64(device, kind, bias, proj):
    """The fused layers' gradients for the input, the initial states and every weight and bias, two layers in
    both directions (float64)."""
    hidden, out_h = 3, proj or 3
    params = [p.to(device).detach().requires_grad_() for p in _flat_params(kind, 2, 2, 2, hidden, bias, proj)]
    rng = np.random.default_rng(1)
    x, h0, c0 = (ember.tensor(rng.standard_normal(s), dtype=ember.float64, device=device, requires_grad=True)
                 for s in ((4, 2, 2), (4, 2, out_h), (4, 2, hidden)))
    assert len(params) == 2 * 2 * ((4 if bias else 2) + (1 if proj else 0))

    if kind == "lstm":
        def f(x, h0, c0, *ps):
            return ember.lstm(x, (h0, c0), list(ps), bias, 2, 0.0, True, True, False)
        inputs = (x, h0, c0, *params)
    else:
        def f(x, h0, *ps):
            return getattr(ember, kind)(x, h0, list(ps), bias, 2, 0.0, True, True, False)
        inputs = (x, h0, *params)
    assert ember.autograd.gradcheck(f, inputs)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_gradcheck_packed_float64(device, kind):
    """Packed sequences (finished sequences keep their state): gradients of the input and the initial state."""
    from ember.nn.utils import rnn as erp

    cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
    m = cls(2, 3, bidirectional=True, device=device, dtype=ember.float64)
    rng = np.random.default_rng(2)
    x = ember.tensor(rng.standard_normal((5, 3, 2)), dtype=ember.float64, device=device, requires_grad=True)
    h0 = ember.tensor(rng.standard_normal((2, 3, 3)), dtype=ember.float64, device=device, requires_grad=True)
    c0 = ember.tensor(rng.standard_normal((2, 3, 3)), dtype=ember.float64, device=device, requires_grad=True)

    def f(x, h0, c0):
        packed = erp.pack_padded_sequence(x, [5, 2, 4], enforce_sorted=False)
        out, h = m(packed, (h0, c0) if kind == "lstm" else h0)
        pad = erp.pad_packed_sequence(out)[0]
        return pad, (h[0] + h[1]) if kind == "lstm" else h

    assert ember.autograd.gradcheck(f, (x, h0, c0))


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch_and_gradgradcheck(device, torch, cell):
    tm = getattr(torch.nn, cell)(4, 3)
    em = getattr(nn, cell)(4, 3, device=device)
    _copy_weights(em, tm, device)
    ex, tx = _inputs(torch, (2, 4), device)
    eo, to = em(ex), tm(tx)
    if cell == "LSTMCell":
        eo, to = eo[0] + eo[1], to[0] + to[1]
    assert_close(eo, to, rtol=1e-5, atol=1e-6)
    eo.sum().backward()
    to.sum().backward()
    assert_close(ex.grad, tx.grad, rtol=1e-5, atol=1e-6)
    e64 = getattr(nn, cell)(2, 2, device=device, dtype=ember.float64)
    x = ember.randn(1, 2, dtype=ember.float64, device=device, requires_grad=True)
    f = (lambda t: e64(t)[0]) if cell == "LSTMCell" else e64
    assert ember.autograd.gradgradcheck(f, (x,))


def test_pad_sequence_and_pack_sequence(torch):
    from ember.nn.utils import rnn as erp

    trp = torch.nn.utils.rnn
    seqs = [np.arange(n * 2, dtype=np.float32).reshape(n, 2) for n in (2, 4, 3)]
    ep = erp.pad_sequence([ember.tensor(s) for s in seqs], batch_first=True, padding_value=9)
    tp = trp.pad_sequence([torch.tensor(s) for s in seqs], batch_first=True, padding_value=9)
    assert_close(ep, tp)
    packed = erp.pack_sequence([ember.tensor(s) for s in seqs], enforce_sorted=False)
    tpacked = trp.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    assert_close(packed.data, tpacked.data)
    back = erp.unpack_sequence(packed)
    assert [b.tolist() for b in back] == [s.tolist() for s in seqs]
    un = erp.unpad_sequence(ep, ember.tensor([2, 4, 3]), batch_first=True)
    assert [u.tolist() for u in un] == [s.tolist() for s in seqs]


def test_bad_inputs_are_clear(device):
    from ember.nn.utils import rnn as erp

    lstm = nn.LSTM(4, 5, device=device)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 3"):
        lstm(ember.randn(2, 1, 3, device=device))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 3, 5\\), got \\[1, 2, 5\\]"):
        lstm(ember.randn(2, 3, 4, device=device), (ember.zeros(1, 2, 5, device=device),
                                                    ember.zeros(1, 2, 5, device=device)))
    x = ember.randn(3, 2, 4, device=device)
    with pytest.raises(RuntimeError, match="longer than the padded sequence"):
        erp.pack_padded_sequence(x, [4, 2])
    with pytest.raises(RuntimeError, match="must be positive"):
        erp.pack_padded_sequence(x, [3, 0])
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        erp.pack_padded_sequence(x, [2, 3])
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        nn.LSTM(4, 5, proj_size=5)
