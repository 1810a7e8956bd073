"""ember.compile records a training step's backward with the one-kernel gradient ops (gelu, layer norm,
softmax) that eager mode runs, not their composite formulas; results equal eager mode and PyTorch."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F


def _model(torch_mod, approximate):
    """A gelu / layer-norm / softmax block built in ``torch_mod`` (ember or PyTorch) from fixed weights."""
    rng = np.random.default_rng(0)
    w1 = torch_mod.tensor(rng.standard_normal((12, 16)).astype(np.float32), requires_grad=True)
    w2 = torch_mod.tensor(rng.standard_normal((16, 5)).astype(np.float32), requires_grad=True)
    lw = torch_mod.tensor(rng.standard_normal(16).astype(np.float32), requires_grad=True)
    lb = torch_mod.tensor(rng.standard_normal(16).astype(np.float32), requires_grad=True)
    fn = torch_mod.nn.functional

    def f(x):
        h = fn.layer_norm(fn.gelu(x @ w1, approximate=approximate), (16,), lw, lb)
        return (fn.softmax(h @ w2, -1) * fn.log_softmax(h @ w2, -1)).sum()
    return f, (w1, w2, lw, lb)


def _grads(f, params, x):
    for p in params:
        p.grad = None
    f(x).backward()
    return [p.grad.cpu().numpy().copy() for p in params]


@pytest.mark.parametrize("approximate,fusion", [("none", "auto"), ("tanh", "numpy")])
def test_compiled_backward_records_one_kernel_gradients(device, approximate, fusion):
    torch = pytest.importorskip("torch")
    f, params = _model(ember, approximate)
    params = [p.to(device).detach().requires_grad_() for p in params]
    w1, w2, lw, lb = params

    def g(x):
        h = F.layer_norm(F.gelu(x @ w1, approximate=approximate), (16,), lw, lb)
        return (F.softmax(h @ w2, -1) * F.log_softmax(h @ w2, -1)).sum()
    cg = ember.compile(g, options={"fusion": fusion})
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((7, 12)).astype(np.float32) for _ in range(3)]
    tf, tparams = _model(torch, approximate)
    for xa in xs:  # (the first call captures; the later ones replay with new values)
        x = ember.tensor(xa, device=device)
        got = _grads(cg, params, x)
        eager = _grads(g, params, x)
        ref = _grads(tf, tparams, torch.tensor(xa))
        for a, b, r in zip(got, eager, ref):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-4)
    variant = next(iter(cg._compiled.cache.values()))
    ops = variant.aot.backward_ops
    assert "GeluGrad" in ops and "NativeLayerNormGrad" in ops and "SoftmaxGrad" in ops, ops
    assert "erf" not in ops and "tanh" not in ops  # (gelu's composite formula is not recorded)


def test_double_backward_through_compiled_call_refuses(device):
    w = ember.randn(4, 4, device=device, requires_grad=True)
    cf = ember.compile(lambda x: F.layer_norm(F.gelu(x @ w), (4,)).pow(2).sum())
    x = ember.randn(3, 4, device=device)
    cf(x)  # (the capture)
    (gw,) = ember.autograd.grad(cf(x), [w], create_graph=False)
    assert gw.shape == (4, 4)
    with pytest.raises(RuntimeError, match="cannot be differentiated again"):
        ember.autograd.grad(cf(x), [w], create_graph=True)


def test_capture_flags_reset_after_compile(device):
    from ember.ops.nn import CompileCapture
    cf = ember.compile(lambda x: F.gelu(x).sum())
    cf(ember.randn(3, device=device, requires_grad=True)).backward()
    assert not CompileCapture.native and not CompileCapture.first_order


def _crf_forward(torch_mod, transitions):
    """The CRF forward algorithm over a (words, tags) score matrix in ``torch_mod`` (ember or PyTorch)."""
    def f(feats):
        alpha = feats[0]
        for feat in feats[1:]:
            alpha = torch_mod.logsumexp(alpha.unsqueeze(0) + transitions, dim=1) + feat
        return torch_mod.logsumexp(alpha, dim=0, keepdim=True).sum()
    return f


def test_compiled_backward_records_logsumexp_gradient_as_one_node(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    ta = rng.standard_normal((5, 5)).astype(np.float32)
    t = ember.tensor(ta, device=device, requires_grad=True)
    tt = torch.tensor(ta, requires_grad=True)
    f = _crf_forward(ember, t)
    cf = ember.compile(f, options={"fusion": "numpy"})
    for _ in range(2):  # (the capture, then a replay with new values)
        xa = rng.standard_normal((4, 5)).astype(np.float32)
        grads = []
        for fn in (cf, f):
            x = ember.tensor(xa, device=device, requires_grad=True)
            t.grad = None
            fn(x).backward()
            grads.append((x.grad.cpu().numpy(), t.grad.cpu().numpy().copy()))
        x_ref = torch.tensor(xa, requires_grad=True)
        tt.grad = None
        _crf_forward(torch, tt)(x_ref).backward()
        for got, eager, ref in zip(grads[0], grads[1], (x_ref.grad.numpy(), tt.grad.numpy())):
            np.testing.assert_array_equal(got, eager)  # (the same kernel as eager mode's array path)
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
    ops = next(iter(cf._compiled.cache.values())).aot.backward_ops
    assert ops.count("LogSumExpGrad") == 4, ops  # (one node per logsumexp, its composite formula not recorded)
    assert "exp" not in ops and "Sub" not in ops, ops


def compiled_gold_score(torch, device, ta, fas, y, scale, exact):
    """A CRF's gold score (a sum of scalar indexings of ``feats`` and the transitions ``t``, times ``scale``)
    compiled, its gradients for each ``feats`` in ``fas`` checked equal to eager's and to PyTorch's (bit for bit
    where ``exact``, else to float32 rounding); the compiled function."""
    def gold(t, feats):
        s = feats[0, y[0]]
        for i in range(1, len(y)):
            s = s + t[y[i], y[i - 1]] + feats[i, y[i]]
        return s * scale
    t = ember.tensor(ta, device=device, requires_grad=True)
    cf = ember.compile(lambda feats: gold(t, feats))
    for fa in fas:
        grads = []
        for fn in (cf, lambda feats: gold(t, feats)):
            feats = ember.tensor(fa, device=device, requires_grad=True)
            t.grad = None
            fn(feats).backward()
            grads.append((feats.grad.cpu().numpy(), t.grad.cpu().numpy().copy()))
        tt, tf = torch.tensor(ta, requires_grad=True), torch.tensor(fa, requires_grad=True)
        gold(tt, tf).backward()
        for got, eager, ref in zip(grads[0], grads[1], (tf.grad.numpy(), tt.grad.numpy())):
            np.testing.assert_array_equal(got, eager)
            if exact:
                np.testing.assert_array_equal(got, ref)
            else:
                np.testing.assert_allclose(got, ref, rtol=1e-6)
    return cf


def test_compiled_backward_accumulates_indexing_gradients_in_place(device):
    torch = pytest.importorskip("torch")
    import re
    rng = np.random.default_rng(3)
    ta = rng.standard_normal((5, 5)).astype(np.float32)
    fas = [rng.standard_normal((6, 5)).astype(np.float32) for _ in range(2)]
    cf = compiled_gold_score(torch, device, ta, fas, [0, 3, 3, 1, 4, 0], 2, exact=True)
    aot = next(iter(cf._compiled.cache.values())).aot
    source = aot.source
    # (of the 11 indexings' zeros-with-a-put, the first of each tensor's gradient is built, the rest add in place:
    # one call per gradient, over the index arrays of its 5 and 4 elements)
    puts = re.findall(r"^\s+PUT\(a\d+, (I\d+_0), ", source, re.M)
    assert len(puts) == 2, source
    ns = aot.backward.__globals__
    assert sorted(ns[name][0].shape[0] for name in puts) == [4, 5]
