"""The short paths of vmap and grad against PyTorch's torch.func: vmap with arguments mapped whole (a tensor
at an int dim, anything at None: no flattening, unmapped containers rebuilt as flattening would), grad's
direct call (one argument counted from 0, a tensor alone without a structure, grad mode left as it is when on
everywhere), per-sample inputs and gradients wrapped at their known shapes, and the Linear rule reading a
per-sample bias once.  Each case checks values and shapes, nesting, grad of vmap, and the errors that name
the argument."""
import collections

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember.testing import assert_close


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _pair(torch, device, a, requires_grad=False):
    return (ember.tensor(a, device=device, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(e, t, tol=1e-10):
    assert tuple(e.shape) == tuple(t.shape)
    assert_close(e, _np(t), rtol=tol, atol=tol)


# ------------------------------------------------------------------------------ vmap, arguments mapped whole
@pytest.mark.parametrize("in_dims,shapes", [
    ((0, 0), ((5, 3), (5, 3))),
    ((0, None), ((5, 3), (3,))),
    ((None, 1), ((3,), (3, 5))),
    ((-1, 0), ((3, 5), (5, 3))),
    ((1, -2), ((2, 5, 3), (5, 3))),
])
def test_mapped_whole_in_dims_match_torch(device, torch, in_dims, shapes):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    es = [ember.tensor(a, device=device) for a in arrays]
    ts = [torch.tensor(a) for a in arrays]

    def f(lib):
        return lambda a, b: (a * b).sin() + b

    out = ember.vmap(f(ember), in_dims=in_dims)(*es)
    ref = torch.func.vmap(f(torch), in_dims=in_dims)(*ts)
    _close(out, ref)


@pytest.mark.parametrize("out_dims", [0, 1, -1, (1, 0), (None, 0), (None, 1)])
def test_mapped_whole_out_dims_match_torch(device, torch, out_dims):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3))
    w = rng.standard_normal(3)
    ex, tx = _pair(torch, device, x)
    ew, tw = _pair(torch, device, w)
    unbatched_first = isinstance(out_dims, tuple) and out_dims[0] is None

    def f(a, b):
        return (b * 2 if unbatched_first else a + b), a * b

    out = ember.vmap(f, in_dims=(0, None), out_dims=out_dims)(ex, ew)
    ref = torch.func.vmap(f, in_dims=(0, None), out_dims=out_dims)(tx, tw)
    for o, r in zip(out, ref):
        _close(o, r)


def test_mapped_whole_nested_vmap_matches_torch(device, torch):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 5))
    y = rng.standard_normal((4, 5))
    ex, tx = _pair(torch, device, x)
    ey, ty = _pair(torch, device, y)

    def inner(lib):
        return lambda a, b: (a * b).sum()

    out = ember.vmap(ember.vmap(inner(ember), in_dims=(0, 0)), in_dims=(0, None))(ex, ey)
    ref = torch.func.vmap(torch.func.vmap(inner(torch), in_dims=(0, 0)), in_dims=(0, None))(tx, ty)
    _close(out, ref)
    out = ember.vmap(ember.vmap(inner(ember), in_dims=(1, None)), in_dims=(None, 0))(ex, ey)
    ref = torch.func.vmap(torch.func.vmap(inner(torch), in_dims=(1, None)), in_dims=(None, 0))(tx, ty)
    _close(out, ref)


def test_grad_of_vmap_through_mapped_whole_matches_torch(device, torch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 4))
    w = rng.standard_normal(4)
    ex, tx = _pair(torch, device, x)
    ew, tw = _pair(torch, device, w)

    def loss(lib, func):
        return lambda w, x: func.vmap(lambda a, b: (a * b).tanh().sum(), in_dims=(None, 0))(w, x).pow(2).sum()

    g = ember.func.grad(loss(ember, ember.func))(ew, ex)
    r = torch.func.grad(loss(torch, torch.func))(tw, tx)
    _close(g, r)


def test_unmapped_containers_are_rebuilt_as_torch_does(device, torch):
    # an argument at None is passed as flattening would: its containers are new, its leaves the same objects
    x = np.arange(6.0).reshape(3, 2)
    Point = collections.namedtuple("Point", "a b")
    for lib, tensor in ((ember, lambda a: ember.tensor(a, device=device)), (torch, torch.tensor)):
        vmap = lib.vmap if lib is ember else torch.func.vmap
        params = {"w": tensor(np.ones(2))}
        seen = {}

        def f(p, q, pt, od, n, s, a, seen=seen):
            seen.update(p=p, q=q, pt=pt, od=od, n=n, s=s)
            p["extra"] = 1  # a change to the rebuilt dict stays inside the call
            return a * p["w"] + q[0] * pt.a + od["k"] * n

        q = [tensor(np.full(2, 2.0))]
        pt = Point(tensor(np.full(2, 3.0)), "label")
        od = collections.OrderedDict(k=tensor(np.full(2, 0.5)))
        out = vmap(f, in_dims=(None, None, None, None, None, None, 0))(params, q, pt, od, 4, "s", tensor(x))
        assert "extra" not in params
        assert seen["p"] is not params and seen["p"]["w"] is params["w"]
        assert seen["q"] is not q and type(seen["q"]) is list and seen["q"][0] is q[0]
        assert type(seen["pt"]) is Point and seen["pt"].a is pt.a and seen["pt"].b == "label"
        assert seen["od"] is not od and seen["od"]["k"] is od["k"]
        assert seen["n"] == 4 and seen["s"] == "s"
        expected = x * 1 + 2 * 3 + 0.5 * 4
        np.testing.assert_allclose(_np(out), expected)


def test_unmapped_nested_containers_are_rebuilt(device):
    inner = {"b": ember.ones(2, device=device)}
    outer = {"a": inner, "t": (ember.ones(2, device=device),)}
    seen = {}

    def f(p, x):
        seen["p"] = p
        return x * p["a"]["b"] + p["t"][0]

    out = ember.vmap(f, in_dims=(None, 0))(outer, ember.ones(3, 2, device=device))
    assert seen["p"] is not outer and seen["p"]["a"] is not inner and seen["p"]["a"]["b"] is inner["b"]
    np.testing.assert_allclose(_np(out), np.full((3, 2), 2.0))


def test_mapped_whole_mismatched_sizes_name_the_arguments(device, torch):
    a, b = ember.ones(3, 2, device=device), ember.ones(4, 2, device=device)
    with pytest.raises(ValueError, match=r"argument 0 has size 3, argument 1 has size 4"):
        ember.vmap(lambda x, y: x + y, in_dims=(0, 0))(a, b)
    with pytest.raises(ValueError, match=r"argument 1 has size 2, argument 2 has size 4"):
        ember.vmap(lambda w, x, y: x + y, in_dims=(None, 1, 0))(a, a, b.t().t())
    with pytest.raises(ValueError):
        torch.func.vmap(lambda x, y: x + y, in_dims=(0, 0))(torch.ones(3, 2), torch.ones(4, 2))


def test_mapped_whole_bad_dims_raise_as_torch_does(device, torch):
    a = ember.ones(3, 2, device=device)
    ta = torch.ones(3, 2)
    with pytest.raises(ValueError, match=r"in_dim=2 for some input.*dimensionality 2"):
        ember.vmap(lambda x: x, in_dims=(2,))(a)
    with pytest.raises(ValueError):
        torch.func.vmap(lambda x: x, in_dims=(2,))(ta)
    with pytest.raises(ValueError, match=r"the input is of type <class 'int'>"):
        ember.vmap(lambda x, y: x, in_dims=(0, 0))(a, 3)
    with pytest.raises(ValueError):
        torch.func.vmap(lambda x, y: x, in_dims=(0, 0))(ta, 3)
    with pytest.raises(ValueError, match=r"Expected at least one Tensor to vmap over"):
        ember.vmap(lambda x, y: x, in_dims=(None, None))(a, a)
    with pytest.raises(ValueError, match=r"in_dim must be either an integer dimension or None"):
        ember.vmap(lambda x: x, in_dims=(0.0,))(a)
    # a container mapped at an int: every tensor in it at that dim (the general path)
    out = ember.vmap(lambda p: p[0] + p[1], in_dims=(0,))((a, a * 2))
    ref = torch.func.vmap(lambda p: p[0] + p[1], in_dims=(0,))((ta, ta * 2))
    _close(out, ref)


# ------------------------------------------------------------------------------ grad's direct call
def _mlp_params(rng, device, torch):
    shapes = {"0.weight": (5, 4), "0.bias": (5,), "2.weight": (3, 5), "2.bias": (3,)}
    arrays = {k: rng.standard_normal(s) for k, s in shapes.items()}
    return ({k: ember.tensor(a, device=device) for k, a in arrays.items()},
            {k: torch.tensor(a) for k, a in arrays.items()})


def _mlp(nn):
    return nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double()


@pytest.mark.parametrize("bias", [True, False])
def test_per_sample_gradients_match_torch(device, torch, bias):
    rng = np.random.default_rng(4)
    ep, tp = _mlp_params(rng, device, torch)
    if not bias:
        ep = {k: v for k, v in ep.items() if "bias" not in k}
        tp = {k: v for k, v in tp.items() if "bias" not in k}
    emodel, tmodel = _mlp(ember.nn).to(device), _mlp(torch.nn)
    if not bias:
        emodel[0].bias = emodel[2].bias = None
        tmodel[0].bias = tmodel[2].bias = None
    x = rng.standard_normal((7, 4))
    y = rng.integers(0, 3, 7)
    ex, tx = _pair(torch, device, x)
    ey, ty = ember.tensor(y, device=device), torch.tensor(y)

    def loss(lib, func, model):
        def f(p, s, t):
            return lib.nn.functional.cross_entropy(func.functional_call(model, p, (s.unsqueeze(0),)), t.unsqueeze(0))
        return f

    g = ember.func.vmap(ember.func.grad(loss(ember, ember.func, emodel)), in_dims=(None, 0, 0))(ep, ex, ey)
    r = torch.func.vmap(torch.func.grad(loss(torch, torch.func, tmodel)), in_dims=(None, 0, 0))(tp, tx, ty)
    assert set(g) == set(r)
    for k in r:
        _close(g[k], r[k])
    # grad_and_value and has_aux through the same direct call
    gv, v = ember.func.vmap(ember.func.grad_and_value(loss(ember, ember.func, emodel)), in_dims=(None, 0, 0))(
        ep, ex, ey)
    rv, rvv = torch.func.vmap(torch.func.grad_and_value(loss(torch, torch.func, tmodel)), in_dims=(None, 0, 0))(
        tp, tx, ty)
    _close(v, rvv)
    for k in rv:
        _close(gv[k], rv[k])


@pytest.mark.parametrize("argnums", [0, 1, -1, (0, 1), (1,)])
def test_grad_argnums_match_torch(device, torch, argnums):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    ea, ta = _pair(torch, device, a)
    eb, tb = _pair(torch, device, b)

    def f(x, y):
        return (x.sin() * y.exp()).sum()

    g = ember.func.grad(f, argnums=argnums)(ea, eb)
    r = torch.func.grad(f, argnums=argnums)(ta, tb)
    if isinstance(argnums, tuple):
        assert isinstance(g, tuple) and len(g) == len(r)
        for x, y in zip(g, r):
            _close(x, y)
    else:
        _close(g, r)


def test_grad_of_tensor_alone_and_scalar_parameters_under_vmap_match_torch(device, torch):
    # a 0-d parameter: its per-sample gradient has the batch dimension alone
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3))
    s = np.array(0.7)
    ex, tx = _pair(torch, device, x)
    es, ts = _pair(torch, device, s)

    def f(p, v):
        return (p * v).sin().sum()

    g = ember.vmap(ember.func.grad(f), in_dims=(None, 0))(es, ex)
    r = torch.func.vmap(torch.func.grad(f), in_dims=(None, 0))(ts, tx)
    _close(g, r)
    g = ember.vmap(ember.func.grad(f, argnums=1), in_dims=(None, 0))(es, ex)
    r = torch.func.vmap(torch.func.grad(f, argnums=1), in_dims=(None, 0))(ts, tx)
    _close(g, r)
    gd = ember.vmap(ember.func.grad(lambda p, v: f(p["s"] + p["t"][0], v)), in_dims=(None, 0))(
        {"s": es, "t": (es * 2,)}, ex)
    rd = torch.func.vmap(torch.func.grad(lambda p, v: f(p["s"] + p["t"][0], v)), in_dims=(None, 0))(
        {"s": ts, "t": (ts * 2,)}, tx)
    _close(gd["s"], rd["s"])
    _close(gd["t"][0], rd["t"][0])


def test_nested_grad_in_vmap_matches_torch(device, torch):
    # grad of grad inside vmap: the outer transform keeps the inner one's graph
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 3))
    w = rng.standard_normal(3)
    ex, tx = _pair(torch, device, x)
    ew, tw = _pair(torch, device, w)

    def f(lib, func):
        inner = func.grad(lambda w, v: (w * v).sin().sum() * (w ** 2).sum())
        return lambda w, v: (inner(w, v) ** 2).sum()

    g = ember.vmap(ember.func.grad(f(ember, ember.func)), in_dims=(None, 0))(ew, ex)
    r = torch.func.vmap(torch.func.grad(f(torch, torch.func)), in_dims=(None, 0))(tw, tx)
    _close(g, r, tol=1e-9)


def test_grad_under_no_grad_keeps_modes(device, torch):
    x = ember.tensor([0.5, 1.0], device=device, dtype=ember.float64)
    tx = torch.tensor([0.5, 1.0], dtype=torch.float64)

    def f(v):
        return v.sin().sum()

    with ember.no_grad():
        g = ember.func.grad(f)(x)
        assert not ember.is_grad_enabled()
    with torch.no_grad():
        r = torch.func.grad(f)(tx)
    _close(g, r)
    assert ember.is_grad_enabled()
    g = ember.func.grad(f)(x)
    _close(g, r)
    assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def test_grad_puts_grad_mode_back_after_the_function_turns_it_off(device):
    # as under enable_grad: what the function leaves changed is put back on exit
    x = ember.tensor([0.5, 1.0], device=device)

    def f(v):
        out = v.sin().sum()
        ember.set_grad_enabled(False)
        return out

    g = ember.func.grad(f)(x)
    assert ember.is_grad_enabled()
    np.testing.assert_allclose(_np(g), np.cos([0.5, 1.0]))


def test_grad_restores_modes_when_the_function_raises(device):
    x = ember.tensor([0.5], device=device)

    def f(v):
        ember.set_grad_enabled(False)
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        ember.func.grad(f)(x)
    assert ember.is_grad_enabled()
    with ember.no_grad(), pytest.raises(KeyError, match="inside"):
        ember.func.grad(f)(x)
    assert ember.is_grad_enabled()


def test_grad_errors_as_torch(device, torch):
    x = ember.ones(3, device=device)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        ember.func.grad(lambda v: v * 2)(x)
    with pytest.raises(RuntimeError):
        torch.func.grad(lambda v: v * 2)(torch.ones(3))
    with pytest.raises(RuntimeError, match=r"Got argnums=2, but only 1 positional inputs"):
        ember.func.grad(lambda v: v.sum(), argnums=2)(x)
    with pytest.raises(RuntimeError, match=r"argnums must be int or Tuple"):
        ember.func.grad(lambda v: v.sum(), argnums=[0])(x)
    with pytest.raises(TypeError, match="expected the differentiated inputs to be Tensors"):
        ember.func.grad(lambda v: v[0].sum())([x, 1.0])
    # an integer input cannot require grad: under vmap too
    with pytest.raises(RuntimeError, match="floating point"):
        ember.vmap(ember.func.grad(lambda p, v: (p * v).sum()), in_dims=(None, 0))(
            ember.ones(3, dtype=ember.int64, device=device), ember.ones(2, 3, device=device))


# ------------------------------------------------------------------------------ the Linear rule's bias
@pytest.mark.parametrize("which", ["weight", "bias", "both", "input"])
def test_linear_rule_per_sample_operands_match_torch(device, torch, which):
    rng = np.random.default_rng(8)
    B = 4
    x = rng.standard_normal((B, 2, 3)) if which != "input" else rng.standard_normal((B, 3))
    w = rng.standard_normal((B, 5, 3)) if which in ("weight", "both") else rng.standard_normal((5, 3))
    b = rng.standard_normal((B, 5)) if which in ("bias", "both") else rng.standard_normal(5)
    dims = (0, 0 if w.ndim == 3 else None, 0 if b.ndim == 2 else None)
    ex, tx = _pair(torch, device, x, True)
    ew, tw = _pair(torch, device, w, True)
    eb, tb = _pair(torch, device, b, True)
    out = ember.vmap(EF.linear, in_dims=dims)(ex, ew, eb)
    ref = torch.func.vmap(torch.nn.functional.linear, in_dims=dims)(tx, tw, tb)
    _close(out, ref)
    gy = rng.standard_normal(tuple(ref.shape))
    out.backward(ember.tensor(gy, device=device))
    ref.backward(torch.tensor(gy))
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        _close(e.grad, t.grad)


def test_shape_rules_under_vmap_match_torch(device, torch):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 4))
    ex, tx = _pair(torch, device, x)

    def f(v):
        return v.unsqueeze(0).expand(2, 4).reshape(8).view(2, 4).unsqueeze(-1)

    out = ember.vmap(f)(ex)
    ref = torch.func.vmap(f)(tx)
    _close(out, ref)


def test_per_sample_gradients_used_inside_vmap_have_one_samples_shape(device, torch):
    # the gradients come back at the level with the inputs' logical shapes: reductions and shapes inside the
    # mapped function see one sample's gradient
    rng = np.random.default_rng(10)
    w, b = rng.standard_normal((3, 2)), rng.standard_normal(3)
    x = rng.standard_normal((5, 2))
    ew, tw = _pair(torch, device, w)
    eb, tb = _pair(torch, device, b)
    ex, tx = _pair(torch, device, x)

    def per_sample(lib, func):
        def f(p, v):
            return (lib.tanh(p["w"] @ v + p["b"]) ** 2).sum()

        def g(p, v):
            gr = func.grad(f)(p, v)
            assert tuple(gr["w"].shape) == (3, 2) and tuple(gr["b"].shape) == (3,)
            return gr["w"].sum(0) * gr["w"].shape[0] + gr["b"].sum(-1) + gr["w"].reshape(-1)[:2]
        return g

    out = ember.vmap(per_sample(ember, ember.func), in_dims=(None, 0))({"w": ew, "b": eb}, ex)
    ref = torch.func.vmap(per_sample(torch, torch.func), in_dims=(None, 0))({"w": tw, "b": tb}, tx)
    _close(out, ref)
