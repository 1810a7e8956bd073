"""The paths a BiLSTM-CRF's training step and Viterbi decode take, against PyTorch (eager ops) and against eager
mode (compiled calls): ``logsumexp`` over a few elements (one ``logaddexp`` reduce) and its gradient; a compiled
training call whose LSTM layers' backward is one op of the compiled backward, and a GRU's prefix replayed
through dispatch."""
import copy

import numpy as np
import pytest

import ember
from ember.kernels.reduction import TINY_LSE, TINY_LSE_AXIS
from ember.testing import assert_close
from nn_helpers import sgd_steps

pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tiny_logsumexp_against_pytorch(device, torch, dtype):
    """Shapes on both sides of the tiny path's limits, each dim, keepdim, with a gradient."""
    rng = np.random.default_rng(0)
    shapes = [((7, 7), 1), ((7, 7), 0), ((7,), 0), ((2, 3, 4), 1), ((4, TINY_LSE_AXIS), 1),
              ((4, TINY_LSE_AXIS + 1), 1), ((TINY_LSE // 8, 8), 1), ((TINY_LSE // 8 + 1, 8), 1)]
    for shape, dim in shapes:
        for keepdim in (False, True):
            a = (rng.standard_normal(shape) * 3).astype(dtype)
            x = ember.tensor(a, device=device, requires_grad=True)
            t = torch.tensor(a, requires_grad=True)
            y, ty = ember.logsumexp(x, dim, keepdim), torch.logsumexp(t, dim, keepdim)
            assert_close(y, ty, msg=f"{shape} {dim} {keepdim}")
            w = rng.standard_normal(ty.shape).astype(dtype)
            y.backward(ember.tensor(w, device=device))
            ty.backward(torch.tensor(w))
            assert_close(x.grad, t.grad, msg=f"grad {shape} {dim} {keepdim}")


def test_tiny_logsumexp_infinities_and_nan(device, torch):
    rows = [[-INF, -INF, -INF], [INF, 1.0, 2.0], [NAN, 1.0, -INF], [INF, -INF, 0.0], [-INF, 2.0, -INF],
            [3e38, 3e38, 3e38], [-3e38, 1.0, 2.0]]
    for dtype in ("float32", "float64"):
        x = ember.tensor(rows, dtype=getattr(ember, dtype), device=device, requires_grad=True)
        t = torch.tensor(rows, dtype=getattr(torch, dtype), requires_grad=True)
        y, ty = x.logsumexp(1), t.logsumexp(1)
        np.testing.assert_array_equal(y.detach().cpu().numpy(), ty.detach().numpy(), err_msg=dtype)
        y.sum().backward()
        ty.sum().backward()
        assert_close(x.grad, t.grad, msg=dtype)  # (NaN where PyTorch's formula gives it)


def test_compiled_bilstm_crf_equals_eager(device):
    """The loss compiled with its backward ahead of time, the LSTM layers' backward one ``LSTMLayerGrad`` op each in
    it (no prefix replayed through dispatch): without a graph bit for bit as eager mode, and losses, gradients and
    parameters after SGD steps as eager mode's (the compiled backward sums a parameter's gradients in its own
    order)."""
    from test_compile_programs2 import bilstm_crf

    ember.manual_seed(0)
    model = bilstm_crf(ember).to(device)
    twin = copy.deepcopy(model)
    rng = np.random.default_rng(0)
    batch = [(ember.tensor(rng.integers(0, 10, n), device=device), rng.integers(0, 4, n).tolist()) for n in (6, 5)]
    compiled = ember.compile(model.nll)
    with ember.no_grad():
        for _ in range(2):
            for w, y in batch:
                np.testing.assert_array_equal(compiled(w, y).cpu().numpy(), twin.nll(w, y).cpu().numpy())
    (got, got_params), (want, want_params) = sgd_steps(model, compiled, batch, ember, 3), \
        sgd_steps(twin, twin.nll, batch, ember, 3)
    for a, b in zip([x for gl, gg in got for x in (gl, *gg)] + got_params,
                    [x for wl, wg in want for x in (wl, *wg)] + want_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    variants = [v for v in compiled._compiled.cache.values() if v.aot is not None]
    assert len(variants) == 2
    assert all(v.aot.prefix is None and v.aot.backward_ops.count("LSTMLayerGrad") == 2 for v in variants)
    # (the LSTM gradients, from zero gradients of the unused final states kept as constants, are not copied out;
    # the embedding's, an index_add into kept zeros, is)
    assert all(v.aot.source.count("COPY(") == 1 for v in variants)
    head = variants[0].aot.source.split("def replay")[-1].splitlines()[1]  # (the backward's arguments)
    names = head.split("=")[0].replace(",", " ").split()
    assert any(n.startswith("a") for n in names) and names[-1].startswith("t"), head  # (saved values as arrays)


class Recurrent(ember.nn.Module):
    """A recurrent layer whose outputs and final states all reach the loss."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x, hx=None):
        out, state = self.layer(x, hx)
        states = state if isinstance(state, tuple) else (state,)
        return out.square().mean() + sum((s * s.detach().sign()).sum() for s in states)


@pytest.mark.parametrize("proj", [0, 3])
def test_compiled_lstm_gradients_equal_eager(device, proj):
    """Every gradient an LSTM layer gives (input, initial state, weights, projection), two layers, both directions,
    batch first, from its compiled backward's ``LSTMLayerGrad`` ops: as eager mode's, bit for bit."""
    ember.manual_seed(1)
    model = Recurrent(ember.nn.LSTM(4, 5, num_layers=2, bidirectional=True, batch_first=True, proj_size=proj))
    model = model.to(device)
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    x, h0, c0 = (ember.randn(*s, device=device) for s in ((2, 6, 4), (4, 2, proj or 5), (4, 2, 5)))
    for _ in range(2):
        grads = []
        for m in (compiled, twin):
            m.zero_grad()
            given = [t.clone().requires_grad_() for t in (x, h0, c0)]
            loss = m(given[0], tuple(given[1:]))
            loss.backward()
            grads.append([loss] + [t.grad for t in given] + [p.grad for p in m.parameters()])
        for a, b in zip(*grads):
            np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    (v,) = [v for v in compiled._compiled.cache.values() if v.aot is not None]
    assert v.aot.prefix is None and v.aot.backward_ops.count("LSTMLayerGrad") == 4


def test_compiled_gru_prefix_equals_eager(device):
    """A GRU layer (its backward a kernel the capture cannot record) replays through dispatch as a prefix, each op
    with its arguments written in line: gradients as eager mode's, bit for bit."""
    ember.manual_seed(2)
    model = Recurrent(ember.nn.GRU(4, 5, bidirectional=True)).to(device)
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    x = ember.randn(6, 2, 4, device=device)
    for _ in range(2):
        grads = []
        for m in (compiled, twin):
            m.zero_grad()
            loss = m(x)
            loss.backward()
            grads.append([loss] + [p.grad for p in m.parameters()])
        for a, b in zip(*grads):
            np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    (v,) = [v for v in compiled._compiled.cache.values() if v.aot is not None]
    prefix = v.aot.source.split("def replay", 2)[1]
    assert v.aot.prefix is not None and prefix.count(" = KIND") >= 2 and prefix.count(" = S") <= 1, prefix


def test_guards_of_a_tensor_and_a_list_of_ints(device):
    """A call of a tensor and a gold path (the inline guard path): each list of ints its own variant by value, a
    tuple apart from a list, a bool apart from an int, a list holding anything else by the general guards."""
    def score(x, path):
        return sum(x[i] for i in path)

    g = ember.compile(score)
    x = ember.arange(5.0, device=device)
    for path, variants in (([1, 2], 1), ([1, 2], 1), ([2, 1], 2), ((1, 2), 3), ([True, 2], 4), ([1, 2], 4),
                           ([1, -1], 5), ([1, [2]], 6), ([1, [2]], 6)):
        want = score(x, path)
        got = g(x, path)
        np.testing.assert_array_equal(got.cpu().numpy(), want.cpu().numpy())
        assert len(g._compiled.cache) == variants, path


def test_compiled_lstm_backward_reads_the_cache_its_forward_kept(device, monkeypatch):
    """The compiled backward's ``LSTMLayerGrad`` reads the cache its call's forward kept under its token (no
    forward kernel again), and the cache goes with the call's graph."""
    from ember.ops import nn_recurrent

    ember.manual_seed(3)
    model = Recurrent(ember.nn.LSTM(3, 4, bidirectional=True)).to(device)
    compiled = ember.compile(model)
    x = ember.randn(5, 2, 3, device=device)
    compiled(x).backward()  # (the capture)
    kernels = x._dev.kernels
    runs = []
    forward = kernels["lstm_forward"]
    monkeypatch.setitem(kernels, "lstm_forward", lambda *a: runs.append(1) or forward(*a))
    before = len(nn_recurrent._KEPT)
    loss = compiled(x)
    assert len(runs) == 2
    loss.backward()
    assert len(runs) == 2  # (both directions' gradients from the kept caches)
    if len(nn_recurrent._KEPT) > before:  # (array types with weak references keep them, until the graph goes)
        del loss
        assert len(nn_recurrent._KEPT) == before


def test_tiny_logsumexp_float32_within_an_ulp(device):
    """float32 rows on the tiny path stay within one ulp of the correctly rounded value (a float32 reduce
    rounding at each step drifted up to 3 ulp along 32 elements, further than PyTorch's shifted sum)."""
    a = (np.random.default_rng(5).standard_normal((TINY_LSE // TINY_LSE_AXIS, TINY_LSE_AXIS)) * 0.1 + 1.0)
    a = a.astype(np.float32)
    y = ember.tensor(a, device=device).logsumexp(1).cpu().numpy()
    exact = np.log(np.exp(a.astype(np.float64)).sum(1))
    assert np.all(np.abs(y - exact) <= np.spacing(np.abs(exact).astype(np.float32))), y - exact


def _matmul_tanh(x, w):
    return (x @ w).tanh().sum()


@pytest.mark.parametrize("lstm", [False, True])
def test_compiled_backward_twice(device, torch, lstm):
    """A compiled call's backward frees what it saved: a second backward raises PyTorch's RuntimeError (its
    compiled functions' as its eager graphs'), and leaves the gradients as they were; with ``retain_graph`` the
    second backward adds the same gradients again, as eager mode's."""
    ember.manual_seed(4)
    if lstm:
        model = Recurrent(ember.nn.LSTM(3, 4, bidirectional=True)).to(device)
        fn, args = ember.compile(model), (ember.randn(5, 2, 3, device=device),)
        leaves = list(model.parameters())
    else:
        fn = ember.compile(_matmul_tanh)
        args = leaves = [ember.randn(3, 3, device=device, requires_grad=True) for _ in range(2)]
    t = torch.randn(3, requires_grad=True)
    y = t.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError) as want:
        y.backward()
    fn(*args).backward()  # (the capture)
    for t in leaves:
        t.grad = None
    fn(*args).backward()
    once = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    y = fn(*args)
    assert type(y.grad_fn).__name__ == "_JointBackward"  # (the compiled backward, one node)
    y.backward(retain_graph=True)
    y.backward()
    for t, g in zip(leaves, once):
        assert_close(t.grad, 2 * g)
    with pytest.raises(RuntimeError) as got:
        y.backward()
    assert str(got.value) == str(want.value)
    for t, g in zip(leaves, once):
        assert_close(t.grad, 2 * g)
    from ember.ops import nn_recurrent
    assert not nn_recurrent._KEPT  # (the LSTM caches went with what the backward freed)
    if lstm:  # (eager mode's LSTM node, as the capture and a dispatch replay record it)
        y = model(*args)
        y.backward()
        with pytest.raises(RuntimeError) as got:
            y.backward()
        assert str(got.value) == str(want.value)


def test_compiled_inference_lstm_keeps_no_cache(device, monkeypatch):
    """An LSTM captured without grad (an inference call) is the plain layer: no token, no cache kept."""
    from ember.ops import nn_recurrent

    class Recording(dict):
        def __setitem__(self, key, value):
            writes.append(key)
            super().__setitem__(key, value)

    writes = []
    monkeypatch.setattr(nn_recurrent, "_KEPT", Recording())
    ember.manual_seed(5)
    model = Recurrent(ember.nn.LSTM(3, 4)).to(device)
    compiled = ember.compile(model)
    x = ember.randn(5, 2, 3, device=device)
    with ember.no_grad():
        for _ in range(3):
            np.testing.assert_array_equal(compiled(x).cpu().numpy(), model(x).cpu().numpy())
    assert writes == [] and not nn_recurrent._KEPT
    compiled(x).backward()  # (a training call keeps its caches, where the array type allows weak references)
    compiled(x).backward()
    assert not nn_recurrent._KEPT
