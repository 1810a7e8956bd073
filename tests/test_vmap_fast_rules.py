"""The fast batching rules of per-sample gradients against torch.func: cross-entropy at class indices as one op
over the stacked samples (reductions, ignored rows, samples of several rows, gradients of every order), the
generic paths it leaves to the other forms (weights, label smoothing, probability targets, reduction='none'),
and the per-sample Linear's kernel backward, with the handlers that must still see every op."""
import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember import dispatch
from ember.func import batching
from ember.testing import assert_close

C = 5


def _logits_targets(b=4, n=3, seed=0, ignore=None):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, n, C))
    t = rng.integers(0, C, (b, n))
    if ignore is not None:
        t[ignore] = 2
    return x, t


def _both(fn_e, fn_t, torch, device, x, t):
    e = fn_e(ember.tensor(x, device=device), ember.tensor(t, device=device))
    r = fn_t(torch.tensor(x), torch.tensor(t))
    return e, r


def _close(e, r, **kw):
    if isinstance(e, tuple):
        for a, b in zip(e, r):
            _close(a, b, **kw)
        return
    assert tuple(e.shape) == tuple(r.shape)
    assert_close(e, r.detach().numpy(), **kw)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("rows", [1, 3])
def test_cross_entropy_values_and_gradients(device, torch, reduction, rows):
    x, t = _logits_targets(n=rows)

    def f(F):
        return lambda x, t: F.cross_entropy(x, t, reduction=reduction).sum()

    for grad in (False, True):
        def wrap(func, m, grad=grad):
            return m.func.vmap(m.func.grad(func) if grad else func)

        _close(*_both(wrap(f(EF), ember), wrap(f(torch.nn.functional), torch), torch, device, x, t))


def test_cross_entropy_is_one_op_over_the_samples(device):
    # the per-sample losses come from the fused op over the stacked samples: one backward node, no loop
    x, t = _logits_targets()
    seen = []

    def spy(kind, Op, args, run):
        seen.append(Op if isinstance(Op, str) else Op.__name__)
        return run(*args)

    batching.LOOPED.clear()
    with dispatch.intercept(spy):
        ember.func.vmap(ember.func.grad(lambda x, t: EF.cross_entropy(x, t)))(
            ember.tensor(x, device=device), ember.tensor(t, device=device))
    assert not batching.LOOPED
    assert seen.count("NllLossBackward0") == 1 and "LogSoftmaxBackward0" not in seen


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_ignored_rows(device, torch, reduction):
    # sample 1 keeps some rows, sample 2 none (its mean is 0/0: NaN, its gradient 0, as PyTorch's)
    x, t = _logits_targets(seed=1)
    t[1, 0] = 2
    t[2, :] = 2

    def f(F):
        return lambda x, t: F.cross_entropy(x, t, reduction=reduction, ignore_index=2)

    e = ember.func.vmap(ember.func.grad_and_value(f(EF)))(ember.tensor(x, device=device),
                                                          ember.tensor(t, device=device))
    r = torch.func.vmap(torch.func.grad_and_value(f(torch.nn.functional)))(torch.tensor(x), torch.tensor(t))
    _close(e, r)
    assert np.isnan(e[1][2].item()) == (reduction == "mean")
    assert float(e[0][2].abs().sum()) == 0.0


def test_cross_entropy_unbatched_targets_and_nested_vmap(device, torch):
    x, t = _logits_targets(b=3, n=2, seed=2)
    def ce(F):
        return lambda x, t: F.cross_entropy(x, t)

    f = {"e": ce(EF), "t": ce(torch.nn.functional)}
    # targets shared by every sample
    e = ember.func.vmap(ember.func.grad(f["e"]), in_dims=(0, None))(ember.tensor(x, device=device),
                                                                   ember.tensor(t[0], device=device))
    r = torch.func.vmap(torch.func.grad(f["t"]), in_dims=(0, None))(torch.tensor(x), torch.tensor(t[0]))
    _close(e, r)
    # two levels: logits batched at both, targets at the inner one only
    x2 = np.random.default_rng(3).standard_normal((2, 3, 2, C))
    e = ember.func.vmap(ember.func.vmap(ember.func.grad(f["e"])), in_dims=(0, None))(
        ember.tensor(x2, device=device), ember.tensor(t, device=device))
    r = torch.func.vmap(torch.func.vmap(torch.func.grad(f["t"])), in_dims=(0, None))(
        torch.tensor(x2), torch.tensor(t))
    _close(e, r)


def test_cross_entropy_grad_of_grad(device, torch):
    # a per-sample Hessian-vector product through the loss: the backward keeps its graph
    x, t = _logits_targets(seed=4)
    v = np.random.default_rng(5).standard_normal((x.shape[1], C))

    def hvp(m, F, v):
        def g(x, t):
            return (m.func.grad(lambda x: F.cross_entropy(x, t))(x) * v).sum()
        return m.func.vmap(m.func.grad(g))

    e = hvp(ember, EF, ember.tensor(v, device=device))(ember.tensor(x, device=device), ember.tensor(t, device=device))
    r = hvp(torch, torch.nn.functional, torch.tensor(v))(torch.tensor(x), torch.tensor(t))
    _close(e, r)


@pytest.mark.parametrize("kw", [{"weight": True}, {"label_smoothing": 0.2}, {"probs": True},
                                {"label_smoothing": 0.1, "ignore_index": 1}])
def test_cross_entropy_generic_forms(device, torch, kw):
    x, t = _logits_targets(seed=6)
    rng = np.random.default_rng(7)
    w = rng.random(C) + 0.5
    p = rng.random((x.shape[0], x.shape[1], C))
    p /= p.sum(-1, keepdims=True)
    target = p if kw.get("probs") else t

    def f(m, F):
        extra = {k: v for k, v in kw.items() if k in ("label_smoothing", "ignore_index")}
        if kw.get("weight"):
            extra["weight"] = m.tensor(w, device=device) if m is ember else torch.tensor(w)
        return lambda x, t: F.cross_entropy(x, t, **extra)

    e = ember.func.vmap(ember.func.grad_and_value(f(ember, EF)))(ember.tensor(x, device=device),
                                                                 ember.tensor(target, device=device))
    r = torch.func.vmap(torch.func.grad_and_value(f(torch, torch.nn.functional)))(torch.tensor(x),
                                                                                  torch.tensor(target))
    _close(e, r)


def test_cross_entropy_eager_matches_torch_both_orders(device, torch):
    # the ordinary op: its kernel backward (no graph) and its differentiable one (create_graph) agree
    x, t = _logits_targets(b=1, n=6, seed=8)
    x, t = x[0], t[0]
    ex = ember.tensor(x, device=device, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    (g1,) = ember.autograd.grad(EF.cross_entropy(ex, ember.tensor(t, device=device)), ex)
    (g2,) = ember.autograd.grad(EF.cross_entropy(ex, ember.tensor(t, device=device)), ex, create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.cross_entropy(tx, torch.tensor(t)), tx, create_graph=True)
    assert_close(g1, tg.detach().numpy())
    assert_close(g2.detach(), tg.detach().numpy())
    (gg,) = ember.autograd.grad((g2 * g2).sum(), ex)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    assert_close(gg, tgg.numpy())


def test_per_sample_linear_kernel_backward(device, torch):
    # LinearStack's backward as kernel calls (no graph): input, weight and bias gradients per sample
    rng = np.random.default_rng(9)
    w, b, xs = rng.standard_normal((4, 3)), rng.standard_normal(4), rng.standard_normal((5, 2, 3))

    def f(F):
        return lambda w, b, x: F.linear(x, w, b).tanh().sum()

    e = ember.func.vmap(ember.func.grad(f(EF), argnums=(0, 1, 2)), in_dims=(None, None, 0))(
        ember.tensor(w, device=device), ember.tensor(b, device=device), ember.tensor(xs, device=device))
    r = torch.func.vmap(torch.func.grad(f(torch.nn.functional), argnums=(0, 1, 2)), in_dims=(None, None, 0))(
        torch.tensor(w), torch.tensor(b), torch.tensor(xs))
    _close(e, r)


def test_observed_follows_the_handlers(device):
    # a backward formula may skip dispatch only when no handler would see its ops
    assert not dispatch.observed()
    seen = []
    with dispatch.intercept(lambda kind, Op, args, run: seen.append(1) or run(*args)):
        assert dispatch.observed()
    with batching.Level(2, "error") as level:
        assert dispatch.observed()
        with dispatch.set_aside([level.handler]):
            assert not dispatch.observed()
    assert not dispatch.observed()


def test_traced_integer_input_still_raises(device):
    with pytest.raises(RuntimeError, match="floating point"):
        ember.func.vmap(ember.func.grad(lambda p, x: (x * p).sum()), in_dims=(None, 0))(
            ember.tensor([1, 2], device=device), ember.ones(3, 2, device=device))
