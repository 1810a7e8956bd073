"""More of a transformer's training-step kernels on their fast paths, against PyTorch: cross-entropy of class
indices (log-softmax and NLL in one kernel, the gradient from the saved log-probabilities; the CPU backend's
float32 rows shifted by the matrix's maximum, with rows far below it and non-finite logits shifted by their
own), with ignore_index, label smoothing, class weights, every target ignored, and second order."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


def _ce_both(a, t, device, **kw):
    """``(ember, torch)`` pairs of cross-entropy's value and gradient for logits ``a`` and targets ``t``."""
    x = ember.tensor(a, device=device, requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor(t, device=device), **{k: _to(v, device) for k, v in kw.items()})
    loss.backward()
    tx = torch.tensor(a, requires_grad=True)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(t), **{k: _to(v, None) for k, v in kw.items()})
    tl.backward()
    return (_np(loss), _np(x.grad)), (tl.detach().numpy(), tx.grad.numpy())


def _to(v, device):
    if not isinstance(v, np.ndarray):
        return v
    return torch.tensor(v) if device is None else ember.tensor(v, device=device)


def _close(ours, theirs, dtype):
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 7), (1024, 65)])
@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"ignore_index": 3}, {"label_smoothing": 0.1},
                                "weight"])
def test_cross_entropy_value_and_gradient_match_torch(device, dtype, shape, kw):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 3).astype(dtype)
    t = rng.integers(0, shape[1], shape[0])
    if kw == "weight":
        kw = {"weight": rng.random(shape[1]).astype(dtype)}
    _close(*_ce_both(a, t, device, **kw), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_of_transposed_logits_matches_torch(device, dtype):
    """Logits that are a transposed view (column-major): the gradient lowers each row's target in a contiguous
    copy of the probabilities, not in a discarded one."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((7, 5)) * 3).astype(dtype)
    t = rng.integers(0, 7, 5)
    x = ember.tensor(a, device=device, requires_grad=True)
    F.cross_entropy(x.t(), ember.tensor(t, device=device)).backward()
    tx = torch.tensor(a, requires_grad=True)
    torch.nn.functional.cross_entropy(tx.t(), torch.tensor(t)).backward()
    _close((_np(x.grad),), (tx.grad.numpy(),), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", ["some rows far below", "one row far above", "wide logits"])
def test_cross_entropy_rows_far_apart_and_non_finite(device, dtype, spread):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((512, 16)).astype(dtype)
    if spread == "some rows far below":   # (the CPU's float32 form: these rows shifted by their own maximum)
        a[::7] -= 60
    elif spread == "one row far above":   # (every row by its own)
        a[3] += 200
    else:                                 # (a tied-embedding head's logits: rows up to ~30 apart)
        a *= 8
    a[5, 2:] = -np.inf  # masked logits, not at the target
    t = rng.integers(0, 2, 512)
    _close(*_ce_both(a, t, device), dtype)
    b = a.copy()
    b[9, 4] = np.inf   # an infinite logit: its row NaN, the others as before
    b[11, 1] = np.nan
    (loss, gx), (tl, tgx) = _ce_both(b, t, device, reduction="sum")
    assert np.isnan(loss) and np.isnan(tl)
    np.testing.assert_array_equal(np.isnan(gx), np.isnan(tgx))
    fine = ~np.isnan(tgx).any(1)
    np.testing.assert_allclose(gx[fine], tgx[fine], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_every_target_ignored(device, reduction):
    a = np.random.default_rng(2).standard_normal((300, 20)).astype(np.float32)
    t = np.full(300, -100)
    (loss, gx), (tl, tgx) = _ce_both(a, t, device, reduction=reduction)
    np.testing.assert_array_equal(loss, tl)  # NaN for the mean, 0 for the sum
    np.testing.assert_array_equal(gx, tgx)   # zeros


def test_cross_entropy_bad_target_leaves_input_untouched(device):
    a = np.random.default_rng(3).standard_normal((256, 20)).astype(np.float32)
    x = ember.tensor(a, device=device, requires_grad=True)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(x, ember.tensor(np.full(256, 20), device=device))
    np.testing.assert_array_equal(_np(x), a)
    assert x.grad is None


def test_cross_entropy_second_order_matches_torch(device):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((256, 20))
    t = rng.integers(0, 20, 256)
    t[::5] = -100
    x = ember.tensor(a, device=device, requires_grad=True)
    (gx,) = ember.autograd.grad(F.cross_entropy(x, ember.tensor(t, device=device)), x, create_graph=True)
    (gg,) = ember.autograd.grad((gx * gx).sum(), x)
    tx = torch.tensor(a, requires_grad=True)
    (tgx,) = torch.autograd.grad(torch.nn.functional.cross_entropy(tx, torch.tensor(t)), tx, create_graph=True)
    (tgg,) = torch.autograd.grad((tgx * tgx).sum(), tx)
    np.testing.assert_allclose(_np(gx), tgx.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(gg), tgg.numpy(), rtol=1e-10, atol=1e-14)


def _clip_both(grads, device, max_norm, **kw):
    """``(ember, torch)`` pairs of clip_grad_norm_'s total norm and clipped gradients for NumPy ``grads``."""
    out = []
    for lib, make in ((ember, lambda a: ember.tensor(a, device=device)), (torch, torch.tensor)):
        ps = [lib.nn.Parameter(make(g) * 0) for g in grads]
        for p, g in zip(ps, grads):
            p.grad = make(g.copy())
        total = lib.nn.utils.clip_grad_norm_(ps, max_norm, **kw)
        out.append([total.cpu().numpy()] + [p.grad.cpu().numpy() for p in ps])
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(device, dtype, max_norm):
    rng = np.random.default_rng(5)
    grads = [rng.standard_normal(s).astype(dtype) for s in [(64,), (192, 64), (0,), (65, 64), ()]]
    ours, theirs = _clip_both(grads, device, max_norm)
    tol = dict(rtol=2e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)


def test_clip_grad_norm_non_finite_and_version(device):
    grads = [np.array([1.0, np.inf], np.float32), np.ones(3, np.float32)]
    ours, theirs = _clip_both(grads, device, 1.0)   # an infinite norm scales by 0: inf * 0 is NaN
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)
    ps = [ember.nn.Parameter(ember.ones(g.shape, device=device)) for g in grads]
    for p, g in zip(ps, grads):
        p.grad = ember.tensor(g, device=device)
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(ps[1].grad.cpu().numpy(), grads[1])   # untouched
    before = ps[1].grad._version
    ember.nn.utils.clip_grad_norm_(ps[1:], 1.0)
    assert ps[1].grad._version == before + 1   # scaled in place, as mul_
    with ember.profiler.profile() as prof:   # seen by an interception handler: the ops, one by one
        ember.nn.utils.clip_grad_norm_(ps[1:], 1.0)
    assert {"aten::stack", "aten::mul"} <= {e.key for e in prof.key_averages()}


def test_masked_softmax_rows_match_torch(device):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((8, 4, 32, 32)).astype(np.float32) * 4
    a[0, 0] -= 40          # rows far below the maximum: each shifted by its own
    a[1, 1, 3] *= 3        # rows up to ~28 apart, shifted by the matrix's maximum
    mask = np.triu(np.ones((32, 32), bool), 1)
    g = rng.standard_normal(a.shape).astype(np.float32)
    for b in (a, np.where(np.arange(32) == 5, np.nan, a)):   # a NaN column: those rows NaN
        x = ember.tensor(b, device=device, requires_grad=True)
        y = F.softmax(x.masked_fill(ember.tensor(mask, device=device), float("-inf")), dim=-1)
        y.backward(ember.tensor(g, device=device))
        tx = torch.tensor(b, requires_grad=True)
        ty = torch.softmax(tx.masked_fill(torch.tensor(mask), float("-inf")), dim=-1)
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=2e-5, atol=1e-6)
