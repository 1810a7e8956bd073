"""The CPU backend's page pool (reused pages for large buffers, its allocator hook) and the layers running on it
(recurrent layers, convolutions): a buffer is handed out again only once nothing refers to it, so live outputs, saved
caches and retained graphs stay intact; the layers still match PyTorch and gradcheck (and gradgradcheck) in
float64 with every buffer pooled."""
import numpy as np
import pytest

import ember
from ember_cpu_numpy import workspace
from ember.testing import assert_close

nn = ember.nn


@pytest.fixture
def pool_everything(monkeypatch):
    """Every array the kernels ask the pool for is pooled, however small (the tests' sizes are tiny)."""
    monkeypatch.setattr(workspace, "MIN_BYTES", 0)
    workspace.clear()
    yield
    workspace.clear()


reuse = pytest.mark.skipif(not workspace.REUSE, reason="buffers are reused only on CPython before 3.14")


@reuse
def test_pool_reuses_only_unreferenced_buffers(device, pool_everything):
    a = workspace.empty((4, 8), np.float32)
    b = workspace.empty((4, 8), np.float32)
    assert not np.shares_memory(a, b)              # a is alive: b gets fresh memory
    view = a[1:].T
    del a
    c = workspace.empty((8, 4), np.float32)        # a view of a's buffer is alive: still not reused
    assert not np.shares_memory(c, view)
    where = view.base.__array_interface__["data"][0]
    del view, c
    d = workspace.empty((32,), np.float32)         # nothing refers to a's buffer any more: reused, any shape
    assert d.__array_interface__["data"][0] == where
    e = workspace.empty((16,), np.float64)         # another dtype of the same size: not a float32 buffer
    assert e.dtype == np.float64 and not np.shares_memory(e, d) and not np.shares_memory(e, b)
    assert workspace.empty((0, 3), np.float32).shape == (0, 3)


@reuse
def test_pool_keeps_at_most_its_limit_idle(device, pool_everything, monkeypatch):
    monkeypatch.setattr(workspace, "LIMIT", 1000)
    for n in range(1, 40):
        workspace.empty((n, 10), np.float32)       # each dropped at once: idle
    assert sum(o.nbytes for o in workspace._owners()) <= 1000 + 40 * 40
    live = [workspace.empty((50, 10), np.float32) for _ in range(3)]  # live buffers are never dropped for space
    assert all(any(x.base is o for o in workspace._owners()) for x in live[-1:])


@reuse
def test_pool_drops_the_least_recently_handed_out_first(device, pool_everything, monkeypatch):
    monkeypatch.setattr(workspace, "LIMIT", 250)
    where = {}
    for name, n in (("a", 25), ("b", 50), ("a", 25)):  # a, then b, then a again (reused): b is the older
        x = workspace.empty((n,), np.float32)
        where[name] = x.__array_interface__["data"][0]
        del x
    keep = workspace.empty((75,), np.float32)          # a new buffer: the idle ones (300 bytes) are trimmed
    held = {o.__array_interface__["data"][0] for o in workspace._owners()}
    assert where["a"] in held and where["b"] not in held
    assert workspace.empty((25,), np.float32).__array_interface__["data"][0] == where["a"]
    assert keep.shape == (75,)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_live_outputs_and_retained_graphs_survive_later_calls(device, torch, kind, pool_everything):
    cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
    tcls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[kind]
    tm = tcls(3, 4, num_layers=2)
    em = cls(3, 4, num_layers=2, device=device)
    em.load_state_dict({k: ember.tensor(v.detach().numpy(), device=device) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((6, 2, 3)).astype(np.float32) for _ in range(3)]
    ex = [ember.tensor(x, device=device, requires_grad=True) for x in xs]
    outs = [em(x)[0] for x in ex]                  # three graphs alive at once, each with its caches
    for o, x in zip(outs, xs):
        assert_close(o, tm(torch.tensor(x))[0], rtol=1e-5, atol=1e-6)
    grads = []
    for _ in range(2):                             # backward twice through a retained graph, with a call between
        ex[0].grad = None
        (outs[0] * outs[0]).sum().backward(retain_graph=True)
        grads.append(ex[0].grad.clone())
        em(ex[2])[0].sum().backward()
    assert_close(grads[0], grads[1], rtol=0, atol=0)
    tx = torch.tensor(xs[0], requires_grad=True)
    to = tm(tx)[0]
    (to * to).sum().backward()
    assert_close(grads[0], tx.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(proj_size=2), dict(bidirectional=True, num_layers=2, dropout=0.0)],
                         ids=["plain", "proj", "bidirectional-2-layers"])
def test_lstm_gradcheck_float64_pooled(device, pool_everything, kw):
    m = nn.LSTM(3, 3, device=device, dtype=ember.float64, **kw)
    x = ember.randn(5, 2, 3, dtype=ember.float64, device=device, requires_grad=True)
    D = 2 if m.bidirectional else 1
    h0 = ember.randn(D * m.num_layers, 2, kw.get("proj_size") or 3, dtype=ember.float64, device=device,
                     requires_grad=True)
    c0 = ember.randn(D * m.num_layers, 2, 3, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda inp, h, c: m(inp, (h, c)), (x, h0, c0))
    params = tuple(m.parameters())  # perturbed in place by gradcheck: the module computes with them
    assert ember.autograd.gradcheck(lambda *ps: m(x)[0], params)


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn"])
def test_packed_gradcheck_float64_pooled(device, pool_everything, kind):
    from ember.nn.utils import rnn as erp

    cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[kind]
    m = cls(2, 3, num_layers=2, bidirectional=True, device=device, dtype=ember.float64)
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal((5, 3, 2)), dtype=ember.float64, device=device, requires_grad=True)

    def f(x):
        out, _ = m(erp.pack_padded_sequence(x, [5, 2, 4], enforce_sorted=False))
        return erp.pad_packed_sequence(out)[0]

    assert ember.autograd.gradcheck(f, (x,))


def test_lstm_step_matches_torch_at_pooled_sizes(device, torch):
    """Sizes where the pool is used by default (buffers above ``MIN_BYTES``), two training steps in a row
    whose second reuses the first's pages."""
    tm = torch.nn.LSTM(16, 32, num_layers=2)
    em = nn.LSTM(16, 32, num_layers=2, device=device)
    em.load_state_dict({k: ember.tensor(v.detach().numpy(), device=device) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(4)
    for step in range(2):
        x = rng.standard_normal((40, 24, 16)).astype(np.float32)
        em.zero_grad()
        tm.zero_grad()
        eo = em(ember.tensor(x, device=device))[0]
        to = tm(torch.tensor(x))[0]
        assert_close(eo, to, rtol=1e-4, atol=1e-5)
        (eo * eo).mean().backward()
        (to * to).mean().backward()
        tp = dict(tm.named_parameters())
        for name, p in em.named_parameters():
            assert_close(p.grad, tp[name].grad, rtol=1e-3, atol=1e-5, msg=f"step {step}: {name}")


@pytest.mark.parametrize("width,groups", [(9, 1), (20, 2)], ids=["batch-last", "batch-major"])
def test_conv_outputs_and_gradients_survive_later_calls(device, torch, pool_everything, width, groups):
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((3, 4, 7, width)).astype(np.float32) for _ in range(2)]
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(np.float32)
    ew = ember.tensor(w, device=device, requires_grad=True)
    ex = [ember.tensor(x, device=device, requires_grad=True) for x in xs]
    outs = [ember.nn.functional.conv2d(x, ew, padding=1, groups=groups) for x in ex]  # both alive
    tw = torch.tensor(w, requires_grad=True)
    tx = [torch.tensor(x, requires_grad=True) for x in xs]
    touts = [torch.nn.functional.conv2d(x, tw, padding=1, groups=groups) for x in tx]
    for o, t in zip(outs, touts):
        assert_close(o, t, rtol=1e-4, atol=1e-4)
    (outs[0] * outs[0]).sum().backward(retain_graph=True)
    g0 = ex[0].grad.clone()
    (outs[1] * outs[1]).sum().backward()           # its buffers come and go while g0 and the graph live
    ex[0].grad = None
    (outs[0] * outs[0]).sum().backward()
    assert_close(ex[0].grad, g0, rtol=0, atol=0)
    (touts[0] * touts[0]).sum().backward()
    assert_close(g0, tx[0].grad, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("stride,groups", [(1, 1), (2, 2)])
def test_conv_gradgradcheck_float64_pooled(device, pool_everything, stride, groups):
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((2, 4, 5, 18)), dtype=ember.float64, device=device, requires_grad=True)
    w = ember.tensor(rng.standard_normal((4, 4 // groups, 3, 3)), dtype=ember.float64, device=device,
                     requires_grad=True)

    def f(x, w):
        return ember.nn.functional.conv2d(x, w, stride=stride, padding=1, groups=groups)

    assert ember.autograd.gradcheck(f, (x, w))
    assert ember.autograd.gradgradcheck(f, (x, w))
