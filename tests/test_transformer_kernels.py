"""The kernels a transformer's training step spends its time in, on their fast paths, against PyTorch: gelu and
layer norm with their one-kernel gradients (the CPU backend's float32 forms, and oneDNN's primitives where
ember-onednn is installed), attention (scaled_dot_product_attention's masks, the packed self-attention
projection); values and gradients in float32 and float64, small and chunk-spanning sizes, non-finite inputs, and
second order through the composite formulas."""
import contextlib

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")

GELU_KERNELS = ("nn_gelu", "nn_gelu_backward")


def _np(t):
    return t.detach().cpu().numpy()


def _kernel_sets(device, ops=GELU_KERNELS):
    """Context managers each running kernels ``ops``: whatever the backend now has (ember-onednn's where it is
    installed) and, on the CPU, the backend's own."""
    sets = [contextlib.nullcontext]
    if device == "cpu":
        sets.append(lambda: ember.testing.builtin_kernels("cpu", *ops))
    return sets


def _gelu_both(a, g, approximate, device):
    """``(ember, torch)`` pairs of gelu's value and gradient for NumPy input ``a`` and output gradient ``g``."""
    x = ember.tensor(a, device=device, requires_grad=True)
    y = F.gelu(x, approximate=approximate)
    y.backward(ember.tensor(g, device=device))
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.nn.functional.gelu(tx, approximate=approximate)
    ty.backward(torch.tensor(g))
    return (_np(y), _np(x.grad)), (ty.detach().numpy(), tx.grad.numpy())


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (70001,), (2, 0, 4)])
def test_gelu_value_and_gradient_match_torch(device, approximate, dtype, shape):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    if dtype == np.float32 and approximate == "tanh":   # (1 + tanh cancels near -inf: PyTorch's own error ~3e-6)
        tol["atol"] = 1e-5
    if device.startswith("array_api"):   # (its series erf is good to ~6e-6)
        tol = dict(rtol=2e-5, atol=2e-5)
    for kernels in _kernel_sets(device):
        with kernels():
            (y, gx), (ty, tgx) = _gelu_both(a, g, approximate, device)
        assert y.dtype == gx.dtype == dtype and y.shape == gx.shape == shape
        np.testing.assert_allclose(y, ty, **tol)
        np.testing.assert_allclose(gx, tgx, **tol)


def test_gelu_gradient_of_strided_and_broadcast_arrays(device):
    a = np.linspace(-7, 7, 2 * 9000, dtype=np.float32).reshape(2, 9000)
    for kernels in _kernel_sets(device):
        with kernels():
            x = ember.tensor(a, device=device, requires_grad=True)
            F.gelu(x[:, ::2]).sum().backward()   # a strided input; a broadcast (zero-stride) output gradient
        tx = torch.tensor(a, requires_grad=True)
        torch.nn.functional.gelu(tx[:, ::2]).sum().backward()
        np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=2e-5, atol=2e-6)
        assert np.array_equal(_np(x), a)


def test_gelu_non_finite_inputs(device):
    a = np.linspace(-5, 5, 20000, dtype=np.float32)
    a[[3, 10000, 19990]] = [np.nan, -np.inf, np.inf]
    for kernels in _kernel_sets(device):
        with kernels():
            (y, gx), (_, tgx) = _gelu_both(a, np.ones_like(a), "none", device)
        # the formula's values (PyTorch's float64 kernel): nan stays nan, gelu(-inf) nan, gelu(inf) inf
        assert np.isnan(y[3]) and np.isnan(y[10000]) and y[19990] == np.inf
        # the gradient: NaN at nan and at both infinities, as PyTorch's
        assert np.array_equal(np.isnan(gx), np.isnan(tgx)) and np.isnan(gx[[3, 10000, 19990]]).all()
        finite = np.isfinite(a)
        np.testing.assert_allclose(gx[finite], tgx[finite], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradcheck_and_second_order(device, approximate):
    x = ember.randn(4, 3, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
    assert ember.autograd.gradgradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))


def test_gelu_gradient_with_graph_matches_the_fast_path(device):
    a = np.random.default_rng(2).standard_normal(9000).astype(np.float32)
    x = ember.tensor(a, device=device, requires_grad=True)
    (fast,) = ember.autograd.grad(F.gelu(x).sum(), x)
    (composite,) = ember.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    assert composite.requires_grad and not fast.requires_grad
    np.testing.assert_allclose(_np(fast), _np(composite), rtol=2e-6, atol=2e-6)


def _leaves(lib, arrays):
    return [lib.tensor(a, requires_grad=True) if lib is torch else ember.tensor(a, requires_grad=True)
            for a in arrays]


@pytest.mark.parametrize("L,S,D", [(6, 6, 4), (5, 7, 16), (7, 3, 2)])   # head size below and above the keys
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sdpa_causal_and_masks_match_torch(device, L, S, D, dtype):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((2, 3, L, D), (2, 3, S, D), (2, 3, S, 5))]
    g = rng.standard_normal((2, 3, L, 5)).astype(dtype)
    bool_mask = rng.random((L, S)) > 0.3
    bool_mask[:, 0] = True
    float_mask = rng.standard_normal((L, S)).astype(dtype)
    cases = [dict(is_causal=True), dict(is_causal=True, scale=0.3), dict(attn_mask=bool_mask),
             dict(attn_mask=float_mask)]
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for kw in cases:
        out = {}
        for lib in (ember, torch):
            q, k, v = [t.to(device) if lib is ember else t for t in _leaves(lib, arrays)]
            mask = kw.get("attn_mask")
            args = dict(kw, attn_mask=None if mask is None else
                        (ember.tensor(mask, device=device) if lib is ember else torch.tensor(mask)))
            y = lib.nn.functional.scaled_dot_product_attention(q, k, v, **args)
            gq, gk, gv = lib.autograd.grad(y, (q, k, v), lib.tensor(g) if lib is torch else
                                           ember.tensor(g, device=device))
            out[lib] = [t.detach().cpu().numpy() for t in (y, gq, gk, gv)]
        for a, b in zip(out[ember], out[torch]):
            np.testing.assert_allclose(a, b, **tol)


def test_sdpa_gradcheck(device):
    q, k, v = (ember.randn(1, 2, 4, 3, dtype=ember.float64, device=device, requires_grad=True) for _ in range(3))
    assert ember.autograd.gradcheck(
        lambda q, k, v: ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True), (q, k, v))


@pytest.mark.parametrize("batch_first", [True, False])
def test_self_attention_packed_projection_matches_torch(device, batch_first):
    ember.manual_seed(0)
    m = ember.nn.MultiheadAttention(16, 4, batch_first=batch_first).to(device)
    t = torch.nn.MultiheadAttention(16, 4, batch_first=batch_first)
    with torch.no_grad():
        for p, q in zip(t.parameters(), m.parameters()):
            p.copy_(torch.from_numpy(_np(q)))
    a = np.random.default_rng(4).standard_normal((3, 5, 16)).astype(np.float32)
    mask = np.triu(np.full((5 if batch_first else 3,) * 2, -np.inf, np.float32), 1)
    x, tx = ember.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, w = m(x, x, x, attn_mask=ember.tensor(mask, device=device))
    ty, tw = t(tx, tx, tx, attn_mask=torch.tensor(mask))
    (y.sum() + w.sum()).backward()
    (ty.sum() + tw.sum()).backward()
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, q in zip(m.parameters(), t.parameters()):
        np.testing.assert_allclose(_np(p.grad), q.grad.numpy(), rtol=1e-4, atol=1e-5)
    # cross-attention (distinct key and value) keeps the three projections
    kv = ember.tensor(a[::-1].copy(), device=device)
    np.testing.assert_allclose(_np(m(x, kv, kv)[0]), t(tx, torch.tensor(a[::-1].copy()),
                                                      torch.tensor(a[::-1].copy()))[0].detach().numpy(),
                               rtol=1e-5, atol=1e-5)


LN_SHAPES = [((3, 5), (5,)), ((12, 64, 128), (128,)), ((4, 30, 40), (30, 40)), ((300, 16), (16,))]


@pytest.mark.parametrize("shape,ns", LN_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_value_and_gradients_match_torch(device, shape, ns, dtype, affine):
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    params = [rng.standard_normal(ns).astype(dtype) for _ in range(2)]
    kept = {"both": params, "weight": params[:1] + [None], "none": [None, None]}[affine]
    def run(lib):
        x = lib.tensor(a, requires_grad=True)
        w, b = (None if p is None else lib.tensor(p, requires_grad=True) for p in kept)
        if lib is ember:
            x, w, b = (None if t is None else t.to(device).detach().requires_grad_() for t in (x, w, b))
        y = lib.nn.functional.layer_norm(x, ns, w, b)
        y.backward(ember.tensor(g, device=device) if lib is ember else torch.tensor(g))
        return [y.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (x, w, b) if t is not None]

    want = run(torch)
    tol = dict(rtol=2e-5, atol=5e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    for kernels in _kernel_sets(device, ("layer_norm", "layer_norm_backward")):
        with kernels():
            got = run(ember)
        assert len(got) == len(want)
        for e, t in zip(got, want):
            np.testing.assert_allclose(e, t, **tol)


def test_layer_norm_strided_input_and_second_order(device):
    a = np.random.default_rng(6).standard_normal((64, 2, 96)).astype(np.float32)
    x = ember.tensor(a, device=device, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    ember.nn.functional.layer_norm(x[:, 1, ::2], (48,)).pow(2).sum().backward()
    torch.nn.functional.layer_norm(tx[:, 1, ::2], (48,)).pow(2).sum().backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    w = ember.randn(4, dtype=ember.float64, device=device, requires_grad=True)
    b = ember.randn(4, dtype=ember.float64, device=device, requires_grad=True)
    x = ember.randn(3, 4, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda x, w, b: ember.nn.functional.layer_norm(x, (4,), w, b), (x, w, b))


def _block(lib, x, w, b):
    """layer norm, then gelu: the two one-kernel gradients in a row."""
    return lib.nn.functional.gelu(lib.nn.functional.layer_norm(x, (x.shape[-1],), w, b))


def test_fast_gradients_under_hooks_anomaly_retain_graph_and_interception(device):
    rng = np.random.default_rng(7)
    a, w, b = rng.standard_normal((96, 64)).astype(np.float32), rng.standard_normal(64).astype(np.float32), \
        rng.standard_normal(64).astype(np.float32)
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (a, w, b))
    ty = _block(torch, tx, tw, tb)
    want = [t.numpy() for t in torch.autograd.grad(ty.pow(2).sum(), (tx, tw, tb))]
    seen = []

    def run(**kw):
        x, w_, b_ = (ember.tensor(v, device=device, requires_grad=True) for v in (a, w, b))
        y = _block(ember, x, w_, b_)
        y.register_hook(lambda g: seen.append(g.shape) or g)   # a hook on the output's gradient
        loss = y.pow(2).sum()
        got = ember.autograd.grad(loss, (x, w_, b_), retain_graph=True, **kw)
        again = ember.autograd.grad(loss, (x, w_, b_), **kw)   # the retained graph, a second time
        for u, v, t in zip(got, again, want):
            np.testing.assert_allclose(_np(u), t, rtol=1e-4, atol=1e-4)
            np.testing.assert_array_equal(_np(u), _np(v))
        return got

    run()
    with ember.autograd.detect_anomaly():
        run()
    with ember.profiler.profile():   # an interception handler: the composite formulas run instead
        run()
    assert run(create_graph=True)[0].requires_grad
    assert len(seen) == 8
