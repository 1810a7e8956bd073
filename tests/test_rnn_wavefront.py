"""Stacked LSTM layers run as one op whose time loops form a wavefront over the layers: against PyTorch,
gradcheck in float64, and bit-identical whatever the number of threads."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

nn = ember.nn


def _pair(torch, device, dtype, **kw):
    tm = torch.nn.LSTM(4, 5, **kw)
    em = nn.LSTM(4, 5, device=device, dtype=dtype, **kw)
    em.load_state_dict({k: ember.tensor(v.detach().numpy(), dtype=dtype, device=device)
                        for k, v in tm.state_dict().items()})
    if dtype is ember.float64:
        tm = tm.double()
    return em, tm


def _leaf(torch, a, device, dtype):
    return (ember.tensor(a, dtype=dtype, device=device, requires_grad=True),
            torch.tensor(a, dtype=torch.float64 if dtype is ember.float64 else torch.float32, requires_grad=True))


def _tols(dtype):
    return dict(rtol=1e-9, atol=1e-10) if dtype is ember.float64 else dict(rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kw", [dict(num_layers=2), dict(num_layers=3, bias=False),
                                dict(num_layers=2, batch_first=True)],
                         ids=["2-layers", "3-layers-no-bias", "batch-first"])
def test_stack_matches_torch(device, torch, dtype, kw):
    """Output, final states and the gradients of input, initial states and every weight (11 steps: several
    chunks, the last one short)."""
    em, tm = _pair(torch, device, dtype, **kw)
    L = kw["num_layers"]
    rng = np.random.default_rng(0)
    shape = (3, 11, 4) if kw.get("batch_first") else (11, 3, 4)
    ex, tx = _leaf(torch, rng.standard_normal(shape), device, dtype)
    eh0, th0 = _leaf(torch, rng.standard_normal((L, 3, 5)), device, dtype)
    ec0, tc0 = _leaf(torch, rng.standard_normal((L, 3, 5)), device, dtype)
    eo, (eh, ec) = em(ex, (eh0, ec0))
    to, (th, tc) = tm(tx, (th0, tc0))
    tol = _tols(dtype)
    for e, t in ((eo, to), (eh, th), (ec, tc)):
        assert_close(e, t, **tol)
    (eo.sin().sum() + (eh * 2).sum() + (ec * ec).sum()).backward()
    (to.sin().sum() + (th * 2).sum() + (tc * tc).sum()).backward()
    for e, t in [(ex, tx), (eh0, th0), (ec0, tc0)] + list(zip(em.parameters(), tm.parameters())):
        assert_close(e.grad, t.grad, **tol)


def test_stack_packed_matches_torch(device, torch):
    """Packed sequences of unequal lengths through a two-layer stack: output and gradients."""
    from ember.nn.utils import rnn as erp
    em, tm = _pair(torch, device, ember.float32, num_layers=2)
    a = np.random.default_rng(1).standard_normal((9, 3, 4))
    ex, tx = _leaf(torch, a, device, ember.float32)
    lengths = [9, 4, 6]
    eo, (eh, ec) = em(erp.pack_padded_sequence(ex, lengths, enforce_sorted=False))
    to, (th, tc) = tm(torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, enforce_sorted=False))
    ep, tp = erp.pad_packed_sequence(eo)[0], torch.nn.utils.rnn.pad_packed_sequence(to)[0]
    for e, t in ((ep, tp), (eh, th), (ec, tc)):
        assert_close(e, t, rtol=1e-4, atol=1e-5)
    (ep.cos().sum() + eh.sum() + (ec * 3).sum()).backward()
    (tp.cos().sum() + th.sum() + (tc * 3).sum()).backward()
    assert_close(ex.grad, tx.grad, rtol=1e-4, atol=1e-5)
    for e, t in zip(em.parameters(), tm.parameters()):
        assert_close(e.grad, t.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_stack_gradcheck_float64(device, bias):
    """Every input of a three-layer stack: input, initial states, weights and biases."""
    rng = np.random.default_rng(2)
    L, H, n = 3, 3, 2
    shapes = []
    for layer in range(L):
        shapes += [(4 * H, n if layer == 0 else H), (4 * H, H)] + ([(4 * H,), (4 * H,)] if bias else [])
    params = [ember.tensor(rng.uniform(-0.6, 0.6, s), dtype=ember.float64, device=device, requires_grad=True)
              for s in shapes]
    x, h0, c0 = (ember.tensor(rng.standard_normal(s), dtype=ember.float64, device=device, requires_grad=True)
                 for s in ((10, 2, n), (L, 2, H), (L, 2, H)))

    def f(x, h0, c0, *ps):
        return ember.lstm(x, (h0, c0), list(ps), bias, L, 0.0, True, False, False)

    assert ember.autograd.gradcheck(f, (x, h0, c0, *params))


def test_stack_packed_gradcheck_float64(device):
    from ember.nn.utils import rnn as erp
    m = nn.LSTM(2, 3, num_layers=2, device=device, dtype=ember.float64)
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal((6, 3, 2)), dtype=ember.float64, device=device, requires_grad=True)
    h0 = ember.tensor(rng.standard_normal((2, 3, 3)), dtype=ember.float64, device=device, requires_grad=True)
    c0 = ember.tensor(rng.standard_normal((2, 3, 3)), dtype=ember.float64, device=device, requires_grad=True)

    def f(x, h0, c0):
        out, (h, c) = m(erp.pack_padded_sequence(x, [6, 2, 4], enforce_sorted=False), (h0, c0))
        return erp.pad_packed_sequence(out)[0], h + c

    assert ember.autograd.gradcheck(f, (x, h0, c0))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["float32", "float64"])
def test_stack_threads_bit_identical(device, dtype):
    """Two threads (the layers' chunks at once) give exactly the single-thread result, forward and backward."""
    ember.manual_seed(0)
    m = nn.LSTM(16, 24, num_layers=3, device=device, dtype=dtype)
    x = ember.tensor(np.random.default_rng(4).standard_normal((30, 8, 16)), dtype=dtype, device=device)
    before = ember.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 1, 2):
            ember.set_num_threads(threads)
            xi = x.detach().requires_grad_()
            m.zero_grad(set_to_none=True)
            out, (h, c) = m(xi)
            (out.sum() + h.sum() + c.sum()).backward()
            results.append([t.detach().cpu().numpy() for t in [out, h, c, xi.grad] + [p.grad for p in m.parameters()]])
    finally:
        ember.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_stack_no_grad_matches_torch(device, torch):
    em, tm = _pair(torch, device, ember.float32, num_layers=2)
    a = np.random.default_rng(5).standard_normal((7, 2, 4)).astype("float32")
    with ember.no_grad():
        eo, (eh, ec) = em(ember.tensor(a, device=device))
    assert not eo.requires_grad
    with torch.no_grad():
        to, (th, tc) = tm(torch.tensor(a))
    for e, t in ((eo, to), (eh, th), (ec, tc)):
        assert_close(e, t, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("kw", [dict(num_layers=2, dropout=1.0), dict(num_layers=2, proj_size=3),
                                dict(num_layers=2, bidirectional=True, proj_size=2)],
                         ids=["dropout-1", "proj", "bidirectional-proj"])
def test_stacks_outside_the_wavefront_match_torch(device, torch, kw):
    """Stacks that keep the per-layer path (dropout between layers in training, projections, both
    directions): output and input gradient against PyTorch (dropout 1.0 zeroes the upper layers' input)."""
    em, tm = _pair(torch, device, ember.float32, **kw)
    em.train()
    tm.train()
    ex, tx = _leaf(torch, np.random.default_rng(6).standard_normal((5, 2, 4)), device, ember.float32)
    eo, (eh, ec) = em(ex)
    to, (th, tc) = tm(tx)
    for e, t in ((eo, to), (eh, th), (ec, tc)):
        assert_close(e, t, rtol=1e-4, atol=1e-5)
    (eo.sum() + eh.sum()).backward()
    (to.sum() + th.sum()).backward()
    assert_close(ex.grad, tx.grad, rtol=1e-4, atol=1e-5)


from ember.testing.op_table_rnn import ROWS  # noqa: E402
from ember.testing.op_table_shape import row_test  # noqa: E402

test_row = row_test(ROWS)
