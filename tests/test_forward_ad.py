"""ember.autograd.forward_ad against torch.autograd.forward_ad: tangents through ops, levels, errors."""
import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
from ember.testing import assert_close


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _tangents(m, fn, arrays, device=None, rg=False):
    """``fn``'s outputs and their tangents, with a random tangent on every input."""
    fw = m.autograd.forward_ad
    kw = {"device": device} if m is ember else {}
    tang = _arrays(*[a.shape for a in arrays], seed=1)
    with fw.dual_level():
        duals = [fw.make_dual(m.tensor(a, requires_grad=rg, **kw), m.tensor(t, **kw)) for a, t in zip(arrays, tang)]
        out = fn(m, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        return [fw.unpack_dual(o) for o in outs]


F = lambda m: m.nn.functional  # noqa: E731

CASES = [
    ("sin_mul", lambda m, x, y: x.sin() * y, [(3, 4), (3, 4)]),
    ("broadcast_div", lambda m, x, y: x / (y.exp() + 1), [(3, 4), (4,)]),
    ("pow_sum", lambda m, x: (x ** 3).sum(1), [(3, 4)]),
    ("matmul", lambda m, x, y: x @ y, [(3, 4), (4, 5)]),
    ("softmax", lambda m, x: F(m).softmax(x, -1), [(3, 5)]),
    ("log_softmax", lambda m, x: m.log_softmax(x, 0), [(3, 5)]),
    ("views", lambda m, x: x.t().reshape(2, 6)[1:, ::2].unsqueeze(0), [(3, 4)]),
    ("cat_stack", lambda m, x, y: m.stack([m.cat([x, y]), m.cat([y, x])]), [(2, 3), (2, 3)]),
    ("index", lambda m, x: x[m.tensor([0, 2, 2])] * 2, [(3, 4)]),
    ("where_max", lambda m, x, y: m.where(x > 0, x, y).max(1).values, [(3, 4), (3, 4)]),
    ("tuple_out", lambda m, x: x.max(0), [(3, 4)]),
    ("layer_norm", lambda m, x, w: F(m).layer_norm(x, (4,), w), [(3, 4), (4,)]),
    ("linear_tanh", lambda m, x, w, b: F(m).linear(x, w, b).tanh(), [(2, 3), (5, 3), (5,)]),
    ("mse", lambda m, x, y: F(m).mse_loss(x, y), [(3, 4), (3, 4)]),
    ("conv2d", lambda m, x, w: F(m).conv2d(x, w, padding=1), [(1, 2, 5, 5), (3, 2, 3, 3)]),
    ("norm_sqrt", lambda m, x: x.norm() + x.abs().sqrt().mean(), [(3, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_tangents_match_torch(device, torch, name, fn, shapes):
    arrays = _arrays(*shapes)
    got = _tangents(ember, fn, arrays, device)
    want = _tangents(torch, fn, arrays)
    assert len(got) == len(want)
    for (ep, et), (tp, tt) in zip(got, want):
        assert_close(ep, tp)
        if tt is None:
            assert et is None
        else:
            assert_close(et, tt)


def test_tangent_of_constant_inputs_only_where_they_flow(device, torch):
    res = []
    for m in (ember, torch):
        kw = {"device": device} if m is ember else {}
        with m.autograd.forward_ad.dual_level():
            x = m.autograd.forward_ad.make_dual(m.ones(3, **kw), m.arange(3.0, **kw))
            c = m.full((3,), 2.0, **kw)
            y = x * c + c
            z = c * 3
            res.append((m.autograd.forward_ad.unpack_dual(y).tangent, m.autograd.forward_ad.unpack_dual(z).tangent))
    assert_close(res[0][0], res[1][0])
    assert res[0][1] is None and res[1][1] is None


def test_inplace_and_no_grad(device, torch):
    res = []
    for m in (ember, torch):
        kw = {"device": device} if m is ember else {}
        fw = m.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(m.tensor([1.0, 2.0], **kw), m.tensor([0.5, 1.0], **kw))
            with m.no_grad():
                a = fw.unpack_dual(x * x).tangent
            x.mul_(3)
            q = m.zeros(2, **kw)
            q.add_(x.sin())
            res.append((a, fw.unpack_dual(x), fw.unpack_dual(q)))
    e, t = res
    assert_close(e[0], t[0])
    assert_close(e[1].primal, t[1].primal)
    assert_close(e[1].tangent, t[1].tangent)
    assert_close(e[2].primal, t[2].primal)
    assert_close(e[2].tangent, t[2].tangent)


def test_reverse_mode_through_tangents(device, torch):
    """A tangent is differentiable in reverse mode with respect to the primal and the tangent."""
    x0, v0 = _arrays((4,), (4,))
    res = []
    for m in (ember, torch):
        kw = {"device": device} if m is ember else {}
        fw = m.autograd.forward_ad
        p = m.tensor(x0, requires_grad=True, **kw)
        v = m.tensor(v0, requires_grad=True, **kw)
        with fw.dual_level():
            y = (fw.make_dual(p, v).sin() * 3).sum()
            t = fw.unpack_dual(y).tangent
        res.append((t,) + m.autograd.grad(t, (p, v)))
    for a, b in zip(*res):
        assert_close(a, b)


def test_forward_over_reverse_hvp(device):
    x0, v0 = _arrays((4,), (4,))
    p = ember.tensor(x0, requires_grad=True, device=device)
    v = ember.tensor(v0, device=device)
    with fwAD.dual_level():
        x = fwAD.make_dual(p, v)
        (g,) = ember.autograd.grad((x ** 3).sum(), p, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent
    assert_close(hvp, 6 * p.detach() * v)


@pytest.mark.parametrize("fn", [lambda x: x.exp().sum(), lambda x: x.tanh().pow(2).sum(),
                                lambda x: (x.sigmoid() * x.softmax(0)).sum()], ids=["exp", "tanh", "sigmoid"])
def test_forward_over_reverse_through_saved_outputs(device, torch, fn):
    x0, v0 = _arrays((4,), (4,))
    res = []
    for m in (ember, torch):
        kw = {"device": device} if m is ember else {}
        fw = m.autograd.forward_ad
        p = m.tensor(x0, requires_grad=True, **kw)
        with fw.dual_level():
            (g,) = m.autograd.grad(fn(fw.make_dual(p, m.tensor(v0, **kw))), p, create_graph=True)
            res.append((g, fw.unpack_dual(g).tangent))
    assert_close(res[0][0], res[1][0].detach())
    assert_close(res[0][1], res[1][1].detach())


def test_levels_and_unpack(device, torch):
    for m in (ember, torch):
        kw = {"device": device} if m is ember else {}
        fw = m.autograd.forward_ad
        x = m.ones(2, **kw)
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(x, x)
        with fw.dual_level() as lvl:
            assert lvl == 0
            with pytest.raises(RuntimeError, match="Nested forward mode AD"):
                fw.enter_dual_level()
            d = fw.make_dual(x, m.ones(2, **kw))
            assert d._base is x
            p, t = fw.unpack_dual(d)
            assert p is not x and t is not None
            assert fw.unpack_dual(p).tangent is None
            u = fw.unpack_dual(x)
            assert isinstance(u, fw.UnpackedDualTensor) and u.tangent is None
            with pytest.raises(RuntimeError, match="different size"):
                fw.make_dual(x, m.ones(3, **kw))
            with pytest.raises(ValueError, match="floating point"):
                fw.make_dual(m.ones(2, dtype=m.long, **kw), m.ones(2, **kw))
        assert fw.unpack_dual(d).tangent is None  # the level closed: tangents are gone
        assert fw.enter_dual_level() == 0
        fw.exit_dual_level()


def test_tangents_through_a_chain_of_ops(device, torch):
    """Tangents compose through a chain of ops (each op propagates its own)."""
    x0 = _arrays((3,))[0]
    res = []
    for m in (ember, torch):
        kw = {"device": device} if m is ember else {}
        fw = m.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(m.tensor(x0, **kw), m.ones(3, **kw))
            y = x.exp() * x
            res.append(fw.unpack_dual(y.tanh()).tangent)
    assert_close(*res)


def _jac_f(m, x, y):
    return x.sin() * y, x.sum() * y.tanh(), x @ y


def _hess_f(m, x, y):
    return (x.sin() * y.exp()).sum() + (x * x * y).sum()


def test_functional_jacobian_forward_mode_runs_on_dual_tensors(device, torch):
    a, b = _arrays((3,), (3,))
    e = ember.autograd.functional.jacobian(lambda *z: _jac_f(ember, *z), (ember.tensor(a, device=device),
                                           ember.tensor(b, device=device)), vectorize=True, strategy="forward-mode")
    t = torch.autograd.functional.jacobian(lambda *z: _jac_f(torch, *z), (torch.tensor(a), torch.tensor(b)),
                                           vectorize=True, strategy="forward-mode")
    assert type(e) is type(t) is list and len(e) == 3
    for er, tr in zip(e, t):
        assert type(er) is type(tr) is list
        for x, y in zip(er, tr):
            assert_close(x, y)


def test_functional_hessian_forward_over_reverse(device, torch):
    a, b = _arrays((3,), (3,))
    e = ember.autograd.functional.hessian(lambda *z: _hess_f(ember, *z), (ember.tensor(a, device=device),
                                          ember.tensor(b, device=device)), vectorize=True,
                                          outer_jacobian_strategy="forward-mode")
    t = torch.autograd.functional.hessian(lambda *z: _hess_f(torch, *z), (torch.tensor(a), torch.tensor(b)),
                                          vectorize=True, outer_jacobian_strategy="forward-mode")
    for er, tr in zip(e, t):
        for x, y in zip(er, tr):
            assert_close(x, y.detach())


def test_saved_tensor_hooks_see_only_the_ops_own_saves(device):
    """The tangent's computation saves nothing through the hooks: a product saves its two factors, as without
    a dual level."""
    log = []
    p = ember.ones(3, requires_grad=True, device=device)
    with fwAD.dual_level():
        with ember.autograd.graph.saved_tensors_hooks(lambda t: log.append(1) or t, lambda t: t):
            y = fwAD.make_dual(p, ember.ones(3, device=device)) * p
        assert_close(fwAD.unpack_dual(y).tangent, p.detach())
    assert len(log) == 2
    y.sum().backward()
    assert_close(p.grad, 2 * p.detach())


RULE_CASES = [
    ("add_alpha", lambda m, x, y: m.add(x, y, alpha=2.5)),
    ("sub_scalar", lambda m, x, y: 2 - x + (y - 1)),
    ("neg_sum_mean", lambda m, x, y: (-x).sum(0) + y.mean(1).sum() + x.sum(dim=1, keepdim=True).mean()),
    ("cat_stack_clone", lambda m, x, y: m.stack([m.cat([x, y.clone()], 1), m.cat([y, x], 1)])),
    ("mul_broadcast", lambda m, x, y: x * y[0] * 3),
    ("mm_matmul", lambda m, x, y: (x @ y.t()).matmul(y)),
    ("pointwise", lambda m, x, y: x.exp() + x.sin() * y.cos() + x.tanh() + y.sigmoid() + x.relu()
     + y.abs().log() + y.abs().sqrt()),
]


@pytest.mark.parametrize("name,fn", RULE_CASES, ids=[c[0] for c in RULE_CASES])
@pytest.mark.parametrize("which", ["both", "first"])
def test_closed_forms_agree_with_the_generic_tangent(device, torch, name, fn, which):
    a, b = _arrays((3, 4), (3, 4))
    va, vb = _arrays((3, 4), (3, 4), seed=1)
    results = []
    for closed in (True, False):
        fwAD.CLOSED_FORMS[0] = closed
        try:
            p = ember.tensor(a, device=device, requires_grad=True)
            with fwAD.dual_level():
                x = fwAD.make_dual(p, ember.tensor(va, device=device))
                y = ember.tensor(b, device=device)
                if which == "both":
                    y = fwAD.make_dual(y, ember.tensor(vb, device=device))
                t = fwAD.unpack_dual(fn(ember, x, y)).tangent
            # reverse mode through the tangent (a linear op's tangent does not depend on the primal)
            gp = ember.autograd.grad(t.sum(), p, materialize_grads=True)[0] if t.requires_grad else \
                ember.zeros_like(p)
            results.append((t, gp))
        finally:
            fwAD.CLOSED_FORMS[0] = True
    assert_close(results[0][0], results[1][0])
    assert_close(results[0][1], results[1][1])
    with torch.autograd.forward_ad.dual_level():
        tx = torch.autograd.forward_ad.make_dual(torch.tensor(a), torch.tensor(va))
        ty = torch.tensor(b)
        if which == "both":
            ty = torch.autograd.forward_ad.make_dual(ty, torch.tensor(vb))
        assert_close(results[0][0], torch.autograd.forward_ad.unpack_dual(fn(torch, tx, ty)).tangent)
