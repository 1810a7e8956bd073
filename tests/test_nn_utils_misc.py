"""Legacy weight_norm/spectral_norm, stateless.functional_call, fusion and the smaller nn.utils against PyTorch."""
import doctest
import pickle
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import stateless
from ember.testing import assert_close

TOL = dict(rtol=1e-9, atol=1e-10)


def to_numpy(t):
    return t.detach().cpu().numpy()


def twins(torch, make, device):
    tm = make(torch.nn).double()
    em = make(nn)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return em.to(device=device, dtype=ember.float64), tm


def from_torch(t, device):
    return ember.tensor(t.detach().numpy(), device=device)


# ------------------------------------------------------------------------------------ legacy weight norm
@pytest.mark.parametrize("dim", [0, 1, None])
def test_legacy_weight_norm_matches_torch(torch, device, dim):
    em, tm = twins(torch, lambda lib: lib.Conv1d(3, 4, 2), device)
    msg = r"`torch.nn.utils.weight_norm` is deprecated in favor of `torch.nn.utils.parametrizations.weight_norm`."
    with pytest.warns(FutureWarning, match=msg):
        nn.utils.weight_norm(em, dim=dim)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tm, dim=dim)
    assert list(em.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert_close(em.weight_g, tm.weight_g, **TOL)
    x = np.random.default_rng(0).standard_normal((2, 3, 5))
    eo, to = em(ember.tensor(x, device=device)), tm(torch.tensor(x))
    assert_close(eo, to, **TOL)
    eo.pow(2).sum().backward()
    to.pow(2).sum().backward()
    for name in ("weight_g", "weight_v", "bias"):
        assert_close(getattr(em, name).grad, getattr(tm, name).grad, msg=name, **TOL)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"), \
            pytest.warns(FutureWarning):
        nn.utils.weight_norm(em, dim=dim)
    nn.utils.remove_weight_norm(em)
    torch.nn.utils.remove_weight_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert isinstance(em.weight, nn.Parameter) and not em._forward_pre_hooks
    assert_close(em.weight, tm.weight, **TOL)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(em)


# ------------------------------------------------------------------------------------ legacy spectral norm
def test_legacy_spectral_norm_matches_torch(torch, device):
    em, tm = twins(torch, lambda lib: lib.Linear(5, 4), device)
    nn.utils.spectral_norm(em, n_power_iterations=3)
    torch.nn.utils.spectral_norm(tm, n_power_iterations=3)
    assert list(em.state_dict()) == list(tm.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    with ember.no_grad():
        em.weight_u.copy_(from_torch(tm.weight_u, device))
        em.weight_v.copy_(from_torch(tm.weight_v, device))
    x = np.random.default_rng(1).standard_normal((2, 5))
    for _ in range(2):  # training: each forward takes power-iteration steps
        eo, to = em(ember.tensor(x, device=device)), tm(torch.tensor(x))
        assert_close(eo, to, **TOL)
        assert_close(em.weight_u, tm.weight_u, **TOL)
    eo.sum().backward()
    to.sum().backward()
    assert_close(em.weight_orig.grad, tm.weight_orig.grad, **TOL)
    em.eval()
    tm.eval()
    u = to_numpy(em.weight_u).copy()
    assert_close(em(ember.tensor(x, device=device)), tm(torch.tensor(x)), **TOL)
    assert np.array_equal(to_numpy(em.weight_u), u)
    # round trip through the state dict, and remove
    em2 = nn.utils.spectral_norm(nn.Linear(5, 4).to(device=device, dtype=ember.float64))
    em2.load_state_dict(em.state_dict())
    em2.eval()
    assert_close(em2(ember.tensor(x, device=device)), tm(torch.tensor(x)), **TOL)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        nn.utils.spectral_norm(em)
    nn.utils.remove_spectral_norm(em)
    torch.nn.utils.remove_spectral_norm(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert not em._forward_pre_hooks and not em._state_dict_hooks and not em._load_state_dict_pre_hooks
    assert_close(em.weight, tm.weight, **TOL)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(em)


def test_legacy_spectral_norm_loads_version0_state_dict(torch, device):
    """A state dict with ``weight`` and no ``weight_v`` (before version 1): v is solved for, as PyTorch does."""
    em, tm = twins(torch, lambda lib: lib.Linear(5, 3), device)
    torch.nn.utils.spectral_norm(tm)
    tm.eval()
    tm(torch.zeros(1, 5).double())  # sets tm.weight
    old = {"bias": tm.bias, "weight_orig": tm.weight_orig, "weight_u": tm.weight_u, "weight": tm.weight}
    nn.utils.spectral_norm(em)
    em.load_state_dict({k: from_torch(v, device) for k, v in old.items()})
    tm.load_state_dict({k: v.detach().clone() for k, v in old.items()})
    assert_close(em.weight_v, tm.weight_v, rtol=1e-7, atol=1e-9)
    em.eval()
    assert_close(em(ember.ones(1, 5, device=device, dtype=ember.float64)), tm(torch.ones(1, 5).double()),
                 rtol=1e-7, atol=1e-9)


def test_legacy_spectral_norm_conv_transpose_dim(device):
    m = nn.utils.spectral_norm(nn.ConvTranspose2d(3, 5, 2).to(device))
    assert m.weight_u.shape == (5,) and m.weight_v.shape == (3 * 2 * 2,)


# ------------------------------------------------------------------------------------ stateless


def tied_net(lib):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.Linear(3, 3)
            self.b = lib.Linear(3, 3)
            self.b.weight = self.a.weight
            self.bn = lib.BatchNorm1d(3)

        def forward(self, x):
            return self.bn(self.b(self.a(x)))
    return Net()


def test_functional_call_matches_torch(torch, device):
    em, tm = twins(torch, tied_net, device)
    rng = np.random.default_rng(2)
    w, bias, x = rng.standard_normal((3, 3)), rng.standard_normal(3), rng.standard_normal((4, 3))
    ew = ember.tensor(w, device=device, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    erm, trm = ember.zeros(3, device=device, dtype=ember.float64), torch.zeros(3, dtype=torch.float64)
    eparams = {"a.weight": ew, "a.bias": ember.tensor(bias, device=device), "bn.running_mean": erm}
    tparams = {"a.weight": tw, "a.bias": torch.tensor(bias), "bn.running_mean": trm}
    with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
        eo = stateless.functional_call(em, eparams, ember.tensor(x, device=device))
    to = torch.func.functional_call(tm, tparams, (torch.tensor(x),))
    assert_close(eo, to, **TOL)
    eo.pow(2).sum().backward()
    to.pow(2).sum().backward()
    assert_close(ew.grad, tw.grad, **TOL)  # tied: b.weight was the given tensor too
    assert_close(erm, trm, **TOL)  # the buffer given was updated in place by batch norm
    # the module's own tensors are back (its running_var, not given, was updated as in PyTorch)
    for k, v in tm.state_dict().items():
        assert_close(em.state_dict()[k], v, msg=k, **TOL)
    assert em.b.weight is em.a.weight and em.a.weight.grad is None
    # untied: only a.weight is replaced
    eo = stateless._functional_call(em, {"a.weight": ew}, (ember.tensor(x, device=device),), tie_weights=False)
    to = torch.func.functional_call(tm, {"a.weight": tw}, (torch.tensor(x),), tie_weights=False)
    assert_close(eo, to, **TOL)


def test_functional_call_kwargs_strict_and_errors(device):
    m = nn.Linear(2, 2).to(device)
    w, b = ember.ones(2, 2, device=device), ember.zeros(2, device=device)
    out = stateless._functional_call(m, {"weight": w, "bias": b}, kwargs={"input": ember.ones(1, 2, device=device)})
    assert_close(out, np.full((1, 2), 2.0, np.float32))
    with pytest.raises(RuntimeError, match="Error\\(s\\) in reparametrizing for Linear:\n\tUnexpected key\\(s\\): "
                                           "'extra'.\n\tMissing key\\(s\\): 'bias'."):
        stateless._functional_call(m, {"weight": w, "extra": b}, (ember.ones(1, 2, device=device),), strict=True)
    net = tied_net(nn).to(device)
    with pytest.raises(ValueError, match=r"functional_call got multiple values for keys \['a.weight', 'b.weight'\], "
                                         "which are tied"):
        stateless._functional_call(net, {"a.weight": w.clone(), "b.weight": w.clone()}, (ember.ones(1, 3),))
    own = m.weight

    class Boom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = m

        def forward(self, x):
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        stateless._functional_call(Boom(), {"lin.weight": w}, (ember.ones(1, 2),))
    assert m.weight is own  # restored after the exception
    with pytest.raises(RuntimeError, match="The stateless API can't be used with nn.DataParallel module"):
        stateless._functional_call(nn.DataParallel(m), {}, ())


def test_reparametrize_module_new_attribute(device):
    m = nn.Linear(2, 2).to(device)
    extra = ember.ones(1, device=device)
    with stateless._reparametrize_module(m, {"weight": ember.zeros(2, 2, device=device), "scale": extra}):
        assert m.scale is extra and bool((m.weight == 0).all())
    assert not hasattr(m, "scale") and isinstance(m.weight, nn.Parameter)


# ------------------------------------------------------------------------------------ fusion
@pytest.mark.parametrize("kind", ["conv", "conv_t", "conv_nobias"])
def test_fuse_conv_bn_matches_torch(torch, device, kind):
    def make(lib):
        if kind == "conv_t":
            return lib.Sequential(lib.ConvTranspose2d(3, 4, 2), lib.BatchNorm2d(4))
        return lib.Sequential(lib.Conv2d(3, 4, 2, bias=kind == "conv"), lib.BatchNorm2d(4))

    em, tm = twins(torch, make, device)
    rng = np.random.default_rng(3)
    with ember.no_grad(), torch.no_grad():
        for k, v in (("running_mean", rng.standard_normal(4)), ("running_var", rng.random(4) + 0.5),
                     ("weight", rng.standard_normal(4)), ("bias", rng.standard_normal(4))):
            getattr(em[1], k).copy_(ember.tensor(v, device=device))
            getattr(tm[1], k).copy_(torch.tensor(v))
    em.eval()
    tm.eval()
    fe = nn.utils.fuse_conv_bn_eval(em[0], em[1], transpose=kind == "conv_t")
    ft = torch.nn.utils.fuse_conv_bn_eval(tm[0], tm[1], transpose=kind == "conv_t")
    assert fe is not em[0] and isinstance(fe.weight, nn.Parameter) and fe.weight.requires_grad
    assert_close(fe.weight, ft.weight, **TOL)
    assert_close(fe.bias, ft.bias, **TOL)
    x = rng.standard_normal((1, 3, 4, 4))
    assert_close(fe(ember.tensor(x, device=device)), em(ember.tensor(x, device=device)), rtol=1e-9, atol=1e-9)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(em[0].train(), em[1])


def test_fuse_linear_bn_matches_torch(torch, device):
    em, tm = twins(torch, lambda lib: lib.Sequential(lib.Linear(3, 4), lib.BatchNorm1d(4)), device)
    rng = np.random.default_rng(4)
    with ember.no_grad(), torch.no_grad():
        for k, v in (("running_mean", rng.standard_normal(4)), ("running_var", rng.random(4) + 0.5)):
            getattr(em[1], k).copy_(ember.tensor(v, device=device))
            getattr(tm[1], k).copy_(torch.tensor(v))
    em.eval()
    tm.eval()
    fe = nn.utils.fuse_linear_bn_eval(em[0], em[1])
    ft = torch.nn.utils.fuse_linear_bn_eval(tm[0], tm[1])
    assert_close(fe.weight, ft.weight, **TOL)
    assert_close(fe.bias, ft.bias, **TOL)
    we, be = nn.utils.fuse_linear_bn_weights(em[0].weight, None, em[1].running_mean, em[1].running_var, 1e-5,
                                             em[1].weight, em[1].bias)
    wt, bt = torch.nn.utils.fuse_linear_bn_weights(tm[0].weight, None, tm[1].running_mean, tm[1].running_var, 1e-5,
                                                   tm[1].weight, tm[1].bias)
    assert_close(we, wt, **TOL)
    assert_close(be, bt, **TOL)
    with pytest.raises(AssertionError, match="To fuse, linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(em[0], nn.BatchNorm1d(3).eval())


# ------------------------------------------------------------------------------------ small ones
def test_get_total_norm_and_clip_grads_with_norm(torch, device):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    for norm_type in (2.0, 1.0, 3, float("inf")):
        ne = nn.utils.get_total_norm([ember.tensor(a, device=device) for a in arrays], norm_type)
        nt = torch.nn.utils.get_total_norm([torch.tensor(a) for a in arrays], norm_type)
        assert_close(ne, nt, **TOL)
    ep = [nn.Parameter(ember.tensor(a, device=device)) for a in arrays]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    for e, t in zip(ep, tp):
        e.grad, t.grad = e.detach() * 2, t.detach() * 2
    total_e = nn.utils.get_total_norm([p.grad for p in ep])
    total_t = torch.nn.utils.get_total_norm([p.grad for p in tp])
    nn.utils.clip_grads_with_norm_(ep, 1.0, total_e)
    torch.nn.utils.clip_grads_with_norm_(tp, 1.0, total_t)
    for e, t in zip(ep, tp):
        assert_close(e.grad, t.grad, **TOL)
    assert_close(nn.utils.clip_grad_norm_(ep, 0.5), torch.nn.utils.clip_grad_norm_(tp, 0.5), **TOL)
    assert float(nn.utils.get_total_norm([]).item()) == 0.0
    bad = [ember.tensor([float("nan")], device=device)]
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        nn.utils.get_total_norm(bad, error_if_nonfinite=True)


def test_skip_init(device):
    m = nn.utils.skip_init(nn.Linear, 5, 1, device=device)
    assert isinstance(m, nn.Linear) and m.weight.shape == (1, 5) and m.weight.device.type == device
    with pytest.raises(RuntimeError, match="Expected a Module; got"):
        nn.utils.skip_init(int)

    class NoDevice(nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        nn.utils.skip_init(NoDevice, 3)


def test_convert_weight_memory_format(device):
    net = nn.Sequential(nn.Conv2d(2, 3, 2), nn.Sequential(nn.Conv3d(2, 2, 1), nn.ConvTranspose2d(3, 2, 2)))
    net.to(device)
    before = {k: to_numpy(v).copy() for k, v in net.state_dict().items()}
    params = list(net.parameters())
    assert nn.utils.convert_conv2d_weight_memory_format(net, "channels_last") is net
    assert nn.utils.convert_conv3d_weight_memory_format(net, "channels_last_3d") is net
    assert list(net.parameters()) == params or all(a is b for a, b in zip(net.parameters(), params))
    assert all(np.array_equal(to_numpy(v), before[k]) for k, v in net.state_dict().items())


def test_namespace_matches_torch(torch):
    import torch.nn.utils  # noqa: F401
    assert set(torch.nn.utils.__all__) <= set(dir(nn.utils))
    for mod in ("parametrize", "parametrizations", "stateless", "prune"):
        __import__(f"torch.nn.utils.{mod}")
        theirs = set(getattr(torch.nn.utils, mod).__all__) if hasattr(getattr(torch.nn.utils, mod), "__all__") \
            else set()
        assert theirs <= set(dir(getattr(nn.utils, mod))), mod


@pytest.mark.parametrize("module", ["weight_norm", "spectral_norm", "stateless", "fusion", "init",
                                    "memory_format", "clip_grad"])
def test_docs_examples_run(module):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        result = doctest.testmod(sys.modules[f"ember.nn.utils.{module}"])
    assert result.attempted > 0 and result.failed == 0


def test_pickle_of_pruned_and_weight_normed_modules(device):
    import ember.nn.utils.prune as prune
    m = prune.l1_unstructured(nn.Linear(3, 3).to(device), "weight", 0.5)
    c = pickle.loads(pickle.dumps(m))
    assert_close(c.weight_mask, m.weight_mask)
    c(ember.ones(1, 3, device=device))
    assert_close(c.weight, m.weight)


def test_functional_call_docs_examples(device):
    class Foo(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", ember.ones((), device=device))
            self.foo_tied = self.foo

        def forward(self, x):
            self.foo = self.foo + 1
            return x + self.foo + self.foo_tied

    a = {"foo": ember.zeros((), device=device)}
    mod = Foo()
    stateless._functional_call(mod, a, ember.ones((), device=device))
    assert mod.foo.item() == 1.0 and a["foo"].item() == 1.0  # the reassigned buffer is handed back

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("foo", ember.ones((), device=device))
            self.register_buffer("foo_tied", self.foo)

        def forward(self, x):
            return x + self.foo + self.foo_tied

    mod, x = Tied(), ember.zeros((), device=device)
    assert mod(x).item() == 2.0
    assert stateless._functional_call(mod, {"foo": ember.zeros((), device=device)}, x).item() == 0.0
    assert stateless._functional_call(mod, {"foo": ember.zeros((), device=device)}, x,
                                      tie_weights=False).item() == 1.0
    new_a = {"foo": ember.zeros((), device=device), "foo_tied": ember.zeros((), device=device)}
    with pytest.raises(ValueError, match="which are tied"):  # as PyTorch (its docstring says otherwise)
        stateless._functional_call(mod, new_a, x)
    assert stateless._functional_call(mod, new_a, x, tie_weights=False).item() == 0.0
