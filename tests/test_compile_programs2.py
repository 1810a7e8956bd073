"""ember.compile on whole small-op programs: a BiLSTM-CRF's training loop (its loss compiled with the backward,
one variant per gold path) and its Viterbi decode (a graph break at each ``tolist``), and calls whose Python
reads tensor values with ``item``; results, gradients and optimizer steps against eager mode and PyTorch,
graph breaks, guards and recompilation."""
import copy

import numpy as np
import pytest

import ember
from ember._dynamo.exc import Unsupported
from nn_helpers import sgd_steps
from test_compile_backward_kernels import compiled_gold_score


def _np(t):
    return t.detach().cpu().numpy()


def _variants(fn):
    return list(fn._compiled.cache.values())


def bilstm_crf(lib, vocab=10, tags=4, emb=6, hidden=6):
    """The BiLSTM-CRF of ``bench/bench_programs.py``, small, written against ``lib`` (ember or PyTorch)."""
    nn = lib.nn

    class BiLSTMCRF(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, emb)
            self.lstm = nn.LSTM(emb, hidden // 2, bidirectional=True)
            self.to_tags = nn.Linear(hidden, tags)
            self.transitions = nn.Parameter(lib.randn(tags, tags))

        def features(self, words):
            out, _ = self.lstm(self.embed(words).view(len(words), 1, -1))
            return self.to_tags(out.view(len(words), -1))

        def nll(self, words, y):
            feats = self.features(words)
            alpha = feats[0]
            for feat in feats[1:]:
                alpha = lib.logsumexp(alpha.unsqueeze(0) + self.transitions, dim=1) + feat
            gold = feats[0, y[0]]
            for i in range(1, len(y)):
                gold = gold + self.transitions[y[i], y[i - 1]] + feats[i, y[i]]
            return lib.logsumexp(alpha, dim=0) - gold

        def viterbi(self, words):
            feats = self.features(words)
            score, back = feats[0], []
            for feat in feats[1:]:
                best, arg = (score.unsqueeze(0) + self.transitions).max(dim=1)
                back.append(arg.tolist())
                score = best + feat
            path = [int(score.argmax())]
            for ptr in reversed(back):
                path.append(ptr[path[-1]])
            return path[::-1]

    return BiLSTMCRF()


def _sentences(lengths, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, 10, n), rng.integers(0, 4, n).tolist()) for n in lengths]


def _torch_twin(torch, model):
    twin = bilstm_crf(torch)
    twin.load_state_dict({k: torch.tensor(_np(v)) for k, v in model.state_dict().items()})
    return twin


def test_bilstm_crf_training_steps_equal_eager_and_pytorch(device):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    model = bilstm_crf(ember).to(device)
    twin, ref = copy.deepcopy(model), _torch_twin(torch, model)
    data = _sentences([5, 4])
    batch = [(ember.tensor(w, device=device), y) for w, y in data]
    compiled = ember.compile(model.nll)
    got, got_params = sgd_steps(model, compiled, batch, ember)
    want, want_params = sgd_steps(twin, twin.nll, batch, ember)
    torch_record, torch_params = sgd_steps(ref, ref.nll, [(torch.tensor(w), y) for w, y in data], torch)
    for (gl, gg), (wl, wg), (tl, tg) in zip(got, want, torch_record):
        assert gl == pytest.approx(wl, rel=1e-6) and gl == pytest.approx(tl, rel=1e-4)
        for a, b, c in zip(gg, wg, tg):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(a, c, rtol=1e-3, atol=1e-4)
    for a, b, c in zip(got_params, want_params, torch_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a, c, rtol=1e-3, atol=1e-4)
    variants = _variants(compiled)  # one per sentence: the gold path (a list of ints) is guarded by value
    assert len(variants) == 2 and all(v.aot is not None and not v.breaks for v in variants)


def test_viterbi_breaks_at_tolist_and_decodes_as_eager_and_pytorch(device):
    if device == "array_api":
        pytest.skip("the decode's tolist reads go through NumPy, which the array-API device refuses")
    torch = pytest.importorskip("torch")
    ember.manual_seed(1)
    model = bilstm_crf(ember).to(device)
    ref = _torch_twin(torch, model)
    decode = ember.compile(model.viterbi)
    data = _sentences([6, 6, 3, 6], seed=2)
    with ember.no_grad(), torch.no_grad():
        for w, _ in data + data:  # (the second round meets the variants the first captured)
            x = ember.tensor(w, device=device)
            path = decode(x)
            assert path == model.viterbi(x) == ref.viterbi(torch.tensor(w))
    variants = _variants(decode)  # one per sentence length; each a break that runs eagerly
    assert len(variants) == 2
    assert all(v.graph is None and any("Python list" in b for b in v.breaks) for v in variants)
    x = ember.tensor(data[0][0], device=device)
    out = ember._dynamo.explain(model.viterbi)(x)
    assert out.graph_count == 0 and out.graph_break_count == 6  # (a tolist per word after the first, the int)
    with pytest.raises(Unsupported, match="data-dependent"):
        ember.compile(model.viterbi, fullgraph=True)(x)


def test_item_read_in_the_python_follows_each_calls_values(device):
    if device == "array_api":
        pytest.skip("item() goes through NumPy, which the array-API device refuses")

    def f(x, w):
        y = (x * w).tanh()
        scale = y.abs().max().item()
        if y.sum().item() > 0:  # data-dependent control flow: which branch depends on the values
            return y * scale + 1, scale
        return (y - scale).relu(), -scale

    g = ember.compile(f)
    rng = np.random.default_rng(3)
    w = ember.tensor(rng.standard_normal(5).astype(np.float32), device=device)
    for sign in (1, -1, 1, -1):
        x = ember.tensor(sign * np.abs(rng.standard_normal(5)).astype(np.float32) * np.sign(_np(w)), device=device)
        (got, gs), (want, ws) = g(x, w), f(x, w)
        assert gs == ws and np.array_equal(_np(got), _np(want))
    (v,) = _variants(g)
    assert v.graph is None and "Python number" in v.breaks[0]


def test_guards_recompile_on_grad_mode_shape_and_dtype_of_a_program(device):
    ember.manual_seed(2)
    model = bilstm_crf(ember).to(device)
    twin = copy.deepcopy(model)
    compiled = ember.compile(model.nll)
    words, y = ember.tensor([1, 4, 2, 9, 0], device=device), [0, 3, 1, 1, 2]

    def both(fn, mod, w, tags):
        mod.zero_grad()
        loss = fn(w, tags)
        if ember.is_grad_enabled():
            loss.backward()
            return _np(loss), [_np(p.grad) for p in mod.parameters()]
        return _np(loss), []

    for grad in (True, False, True):  # grad mode is a guard: a training variant and an inference one
        with ember.set_grad_enabled(grad):
            (gl, gg), (wl, wg) = both(compiled, model, words, y), both(twin.nll, twin, words, y)
        np.testing.assert_allclose(gl, wl, rtol=1e-6)
        for a, b in zip(gg, wg):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(_variants(compiled)) == 2
    short = ember.tensor([3, 3, 7], device=device)  # a new length: a new variant, still eager's results
    np.testing.assert_allclose(_np(compiled(short, [1, 0, 2])), _np(twin.nll(short, [1, 0, 2])), rtol=1e-6)
    assert len(_variants(compiled)) == 3
    model.double()
    twin.double()
    got, want = compiled(words, y), twin.nll(words, y)  # float64 parameters: the dtype guard of the state
    assert got.dtype == ember.float64
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


def test_gold_score_gradients_add_in_one_call_bit_identical_with_repeats(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    ta, fa = rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((7, 4)).astype(np.float32)
    y = [2, 2, 2, 0, 2, 2, 1]  # (the pair (2, 2) four times: its gradient accumulates, in order)
    compiled = compiled_gold_score(torch, device, ta, [fa, fa], y, 0.3, exact=False)
    source = _variants(compiled)[0].aot.source
    assert source.count("PUT(") == 2, source  # (one call per gradient: feats' 6 elements, t's 6)
