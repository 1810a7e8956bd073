"""ember.func / ember.vmap against torch.func: batching rules, transforms, functional_call, the recipes."""
import copy
import functools

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember.func import batching
from ember.testing import assert_close


def _arrays(*shapes, seed=0, ints=None):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, ints, s) if ints else rng.standard_normal(s) for s in shapes]


def _close(a, b, **kw):
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _close(a[k], b[k], **kw)
    elif isinstance(b, (tuple, list)):
        assert len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _close(x, y, **kw)
    else:
        assert_close(a, b, **kw)


def both(torch, device, fn, arrays, **vmap_kw):
    """``vmap(fn)`` on ember and on torch over the same data; compares the results, returns ember's."""
    e_in = [ember.tensor(a, device=device) for a in arrays]
    t_in = [torch.tensor(a) for a in arrays]
    batching.LOOPED.clear()
    e = ember.vmap(functools.partial(fn, ember, EF), **vmap_kw)(*e_in)
    t = torch.vmap(functools.partial(fn, torch, torch.nn.functional), **vmap_kw)(*t_in)
    _close(e, t)
    return e


# --------------------------------------------------------------------------- rules, checked against torch.vmap
RULES = {
    "pointwise": (lambda m, F, x, y: (x * y).exp() + x.sin() - 2, [(4, 3), (4, 3)], {}),
    "broadcast-unbatched": (lambda m, F, x, y: x * y + y, [(4, 2, 3), (3,)], {"in_dims": (0, None)}),
    "broadcast-ranks": (lambda m, F, x, y: x + y, [(4, 3), (4, 2, 3)], {}),
    "scalar-sample": (lambda m, F, x, y: x * y, [(4,), (4, 3)], {}),
    "where-clamp": (lambda m, F, x, y: m.where(x > 0, x, y).clamp(-0.5, 0.5), [(4, 3), (4, 3)], {}),
    "sum-dims": (lambda m, F, x: (x.sum(), x.sum(0), x.sum(-1, keepdim=True), x.mean((0, 1))), [(4, 2, 3)], {}),
    "var-amax-lse": (lambda m, F, x: (x.var(1), x.amax(0), m.logsumexp(x, -1), x.max(1).values,
                                      x.argmax(-1), x.cumsum(1)), [(4, 2, 3)], {}),
    "softmax": (lambda m, F, x: (F.softmax(x, -1), F.log_softmax(x, 0)), [(4, 2, 3)], {}),
    "matmul-both": (lambda m, F, x, y: (x @ y, x[0] @ y, x @ y[:, 0], x[0] @ y[:, 0]), [(4, 2, 3), (4, 3, 5)], {}),
    "matmul-one": (lambda m, F, x, y: (x @ y, y.t() @ x.t()), [(4, 2, 3), (3, 5)], {"in_dims": (0, None)}),
    "bmm-ranks": (lambda m, F, x, y: m.matmul(x, y), [(4, 6, 2, 3), (4, 3, 5)], {}),
    "linear": (lambda m, F, x, w, b: F.linear(x, w, b), [(4, 2, 3), (5, 3), (5,)], {"in_dims": (0, None, None)}),
    "linear-batched-w": (lambda m, F, x, w, b: F.linear(x, w, b), [(4, 3), (4, 5, 3), (5,)],
                         {"in_dims": (0, 0, None)}),
    "shape": (lambda m, F, x: (x.reshape(6), x.view(3, 2), x.t(), x.permute(1, 0), x.unsqueeze(0).expand(2, 2, 3),
                               x.flatten(), x.transpose(0, 1)), [(4, 2, 3)], {}),
    "index": (lambda m, F, x: (x[0], x[:, 1:], x[..., 0], x[None], x[[0, 1, 1]], x[:, [2, 0]]), [(4, 2, 3)], {}),
    "cat-stack": (lambda m, F, x, y: (m.cat([x, y], 0), m.stack([x, y], 1), x.unbind(1), x.split(1, 1)),
                  [(4, 2, 3), (2, 3)], {"in_dims": (0, None)}),
    "gather": (lambda m, F, x, i: m.gather(x, 1, i), [(4, 2, 3)], {}),
    "in-dims-1": (lambda m, F, x, y: x * y, [(3, 4), (4, 3)], {"in_dims": (1, 0)}),
    "in-dims-neg": (lambda m, F, x: x.sum(0), [(3, 4)], {"in_dims": -1}),
    "out-dims": (lambda m, F, x: (x * 2, x.sum(0)), [(4, 2, 3)], {"out_dims": (1, 0)}),
    "out-dims-neg": (lambda m, F, x: x * 2, [(4, 2, 3)], {"out_dims": -1}),
    "losses": (lambda m, F, x, y: (F.mse_loss(x, y), F.l1_loss(x, y, reduction="sum"),
                                   F.binary_cross_entropy_with_logits(x, y.sigmoid())), [(4, 5), (4, 5)], {}),
    "conv-pool": (lambda m, F, x, w: F.max_pool2d(F.conv2d(x, w, padding=1), 2), [(3, 2, 1, 6, 6), (4, 1, 3, 3)],
                  {"in_dims": (0, None)}),
    "conv-batched-w": (lambda m, F, x, w: F.conv2d(x, w, stride=2), [(3, 2, 2, 5, 5), (3, 4, 2, 3, 3)], {}),
}


@pytest.mark.parametrize("name", list(RULES))
def test_vmap_rules_match_torch(device, torch, name):
    fn, shapes, kw = RULES[name]
    arrays = _arrays(*shapes)
    if name == "gather":
        arrays.append(np.random.default_rng(1).integers(0, 3, (4, 2, 2)))
    both(torch, device, fn, arrays, **kw)
    assert not batching.LOOPED, f"ran per sample: {dict(batching.LOOPED)}"


def test_vmap_losses_with_targets(device, torch):
    x, = _arrays((5, 3, 4))
    t = np.random.default_rng(2).integers(0, 4, (5, 3))
    both(torch, device, lambda m, F, x, t: (F.cross_entropy(x, t), F.nll_loss(F.log_softmax(x, -1), t),
                                            F.cross_entropy(x, t, reduction="sum")), [x, t])


def test_vmap_without_rule_runs_per_sample(device, torch):
    x, = _arrays((4, 3, 3))
    e = both(torch, device, lambda m, F, x: (x.flip(0), m.tril(x), m.roll(x, 1, 0)), [x])
    assert e[0].shape == (4, 3, 3) and batching.LOOPED  # correct, through the fallback


def test_vmap_nested_and_dict_inputs(device, torch):
    x, y = _arrays((2, 3, 4), (3, 4))
    e = ember.vmap(ember.vmap(lambda a, b: (a * b).sum(), in_dims=(0, 0)), in_dims=(0, None))(
        ember.tensor(x, device=device), ember.tensor(y, device=device))
    t = torch.vmap(torch.vmap(lambda a, b: (a * b).sum(), in_dims=(0, 0)), in_dims=(0, None))(
        torch.tensor(x), torch.tensor(y))
    assert_close(e, t)
    d = {"a": ember.tensor(x, device=device), "b": ember.tensor(y, device=device)}
    td = {"a": torch.tensor(x), "b": torch.tensor(y)}
    e = ember.vmap(lambda d: d["a"] @ d["b"].t(), in_dims=({"a": 1, "b": None},))(d)
    t = torch.vmap(lambda d: d["a"] @ d["b"].t(), in_dims=({"a": 1, "b": None},))(td)
    assert_close(e, t)


def test_vmap_chunk_size_and_randomness(device, torch):
    x = ember.tensor(_arrays((10, 3))[0], device=device)
    assert_close(ember.vmap(lambda v: v.sum(), chunk_size=3)(x), torch.tensor(_arrays((10, 3))[0]).sum(1))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ember.vmap(lambda v: v + ember.rand(3, device=device))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ember.vmap(lambda v: EF.dropout(v, 0.5))(x)
    same = ember.vmap(lambda v: v * 0 + ember.rand(3, device=device), randomness="same")(x)
    diff = ember.vmap(lambda v: v * 0 + ember.rand(3, device=device), randomness="different")(x)
    assert (same - same[0]).abs().max().item() == 0
    assert (diff - diff[0]).abs().max().item() > 0
    drop = ember.vmap(lambda v: EF.dropout(v, 0.5), randomness="different")(ember.ones(10, 50, device=device))
    assert drop.shape == (10, 50) and set(drop.unique().tolist()) <= {0.0, 2.0}
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        ember.vmap(lambda v: v, randomness="sometimes")


def test_vmap_bad_input(device):
    x, y = ember.ones(3, device=device), ember.ones(4, device=device)
    with pytest.raises(ValueError, match=r"got sizes \[3, 4\] for the mapped dimension \(argument 0 has size 3, "
                                         r"argument 1 has size 4\)"):
        ember.vmap(lambda a, b: a + b)(x, y)
    with pytest.raises(ValueError, match=r"argument 1\['w'\] has size 4"):
        ember.vmap(lambda a, d: a + d["w"])(x, {"w": y})
    with pytest.raises(ValueError, match="expected in_dim to satisfy -1 <= in_dim < 1"):
        ember.vmap(lambda a: a, in_dims=1)(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        ember.vmap(lambda a, b: a, in_dims=(0, 0, 0))(x, x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        ember.vmap(lambda a, n: a * n)(x, 2)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        ember.vmap(lambda a: a * 2, out_dims=None)(x)
    with pytest.raises(ValueError, match="must only return Tensors"):
        ember.vmap(lambda a: 3)(x)
    with pytest.raises(RuntimeError, match=r"vmap: .*\.item\(\)"):
        ember.vmap(lambda a: a.item())(x)
    with pytest.raises(RuntimeError, match="more elements than `self`"):
        ember.vmap(lambda a: ember.zeros((), device=device).add_(a))(x)
    assert ember.vmap(lambda a: 3 * a, out_dims=0)(x).tolist() == [3.0, 3.0, 3.0]


def test_vmap_inplace_on_batched(device, torch):
    x, y = _arrays((4, 3), (3,))
    both(torch, device, lambda m, F, x, y: x.clone().mul_(2).add_(y), [x, y], in_dims=(0, None))


# --------------------------------------------------------------------------- transforms against torch.func
def _loss(m, params, x):
    return ((x @ params["w"]).tanh() * params["b"]).sum()


def test_grad_and_value_argnums_has_aux(device, torch):
    w, b, x = _arrays((3, 2), (2,), (5, 3))
    ep = {"w": ember.tensor(w, device=device), "b": ember.tensor(b, device=device)}
    tp = {"w": torch.tensor(w), "b": torch.tensor(b)}
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    _close(ember.func.grad(functools.partial(_loss, ember))(ep, ex),
           torch.func.grad(functools.partial(_loss, torch))(tp, tx))
    _close(ember.func.grad(functools.partial(_loss, ember), argnums=(0, 1))(ep, ex),
           torch.func.grad(functools.partial(_loss, torch), argnums=(0, 1))(tp, tx))

    def with_aux(m, p, x):
        y = x @ p["w"]
        return (y ** 2).sum(), {"y": y}

    e = ember.func.grad_and_value(functools.partial(with_aux, ember), has_aux=True)(ep, ex)
    t = torch.func.grad_and_value(functools.partial(with_aux, torch), has_aux=True)(tp, tx)
    _close(e, t)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor"):
        ember.func.grad(lambda v: v * 2)(ex)
    with pytest.raises(RuntimeError, match="argnums"):
        ember.func.grad(lambda v: v.sum(), argnums=2)(ex)


def test_nested_grad_is_second_derivative(device, torch):
    x = ember.tensor([0.3, -1.2], dtype=ember.float64, device=device)
    tx = torch.tensor([0.3, -1.2], dtype=torch.float64)
    e = ember.func.grad(lambda v: ember.func.grad(lambda u: (u.sin() * u).sum())(v).sum())(x)
    t = torch.func.grad(lambda v: torch.func.grad(lambda u: (u.sin() * u).sum())(v).sum())(tx)
    assert_close(e, t)


def test_vjp_jvp_linearize(device, torch):
    x, v = _arrays((3,), (3,))
    ex, ev, tx, tv = (ember.tensor(x, device=device), ember.tensor(v, device=device), torch.tensor(x),
                      torch.tensor(v))

    def f(m, a):
        return a.sin() * a.sum(), a.exp()

    eo, efn = ember.func.vjp(functools.partial(f, ember), ex)
    to, tfn = torch.func.vjp(functools.partial(f, torch), tx)
    _close(eo, to)
    _close(efn((ev, ev)), tfn((tv, tv)))
    _close(ember.func.jvp(functools.partial(f, ember), (ex,), (ev,)),
           torch.func.jvp(functools.partial(f, torch), (tx,), (tv,)))
    _, lin = ember.func.linearize(lambda a: a.sin() * 2, ex)
    _close(lin(ev), torch.func.jvp(lambda a: a.sin() * 2, (tx,), (tv,))[1])
    # vmap over the vjp function: the Jacobian row by row
    _, fn = ember.func.vjp(lambda a: a.sin() * a.sum(), ex)
    _, tfn = torch.func.vjp(lambda a: a.sin() * a.sum(), tx)
    _close(ember.vmap(fn)(ember.eye(3, dtype=ember.float64, device=device)),
           torch.vmap(tfn)(torch.eye(3, dtype=torch.float64)))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        ember.func.jvp(lambda a: a, ex, (ev,))


def test_jacrev_jacfwd_hessian(device, torch):
    x, y = _arrays((3,), (2, 3))
    ex, ey, tx, ty = (ember.tensor(x, device=device), ember.tensor(y, device=device), torch.tensor(x),
                      torch.tensor(y))

    def f(m, a, b):
        return (b @ a).exp(), (a * a).sum()

    for name in ("jacrev", "jacfwd"):
        for argnums in (0, 1, (0, 1)):
            _close(getattr(ember.func, name)(functools.partial(f, ember), argnums=argnums)(ex, ey),
                   getattr(torch.func, name)(functools.partial(f, torch), argnums=argnums)(tx, ty))
    _close(ember.func.hessian(lambda a, b: ((b @ a) ** 3).sum(), argnums=(0, 1))(ex, ey),
           torch.func.hessian(lambda a, b: ((b @ a) ** 3).sum(), argnums=(0, 1))(tx, ty))
    # per-sample Jacobians
    _close(ember.vmap(ember.func.jacrev(lambda a: a.sin() * a.sum()))(ey),
           torch.vmap(torch.func.jacrev(lambda a: a.sin() * a.sum()))(ty))


# --------------------------------------------------------------------------- functional_call and friends
def test_functional_call_tie_weights_strict(device, torch):
    lin = ember.nn.Linear(3, 2).to(device)
    x = ember.ones(4, 3, device=device)
    w = ember.zeros(2, 3, device=device)
    out = ember.func.functional_call(lin, {"weight": w}, (x,))
    assert_close(out, (lin.bias * ember.ones(4, 2, device=device)).detach().cpu().numpy())
    assert lin.weight is not w and isinstance(lin.weight, ember.nn.Parameter)  # restored
    out = ember.func.functional_call(lin, ({"weight": w}, {"bias": ember.ones(2, device=device)}), x)
    assert out.tolist() == [[1.0, 1.0]] * 4
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        ember.func.functional_call(lin, {"weight": w}, (x,), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        ember.func.functional_call(lin, ({"weight": w}, {"weight": w}), (x,))

    class Tied(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ember.nn.Linear(2, 2, bias=False)
            self.b = ember.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied().to(device)
    two = ember.eye(2, device=device) * 2
    assert ember.func.functional_call(m, {"a.weight": two}, (ember.ones(1, 2, device=device),)).tolist() == \
        [[4.0, 4.0]]
    untied = ember.func.functional_call(m, {"a.weight": two}, (ember.ones(1, 2, device=device),), tie_weights=False)
    assert_close(untied, (m.b(ember.ones(1, 2, device=device) * 2)).detach().cpu().numpy())


def test_stack_module_state(device):
    models = [ember.nn.Linear(3, 2).to(device) for _ in range(4)]
    params, buffers = ember.func.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3) and params["weight"].is_leaf and params["weight"].requires_grad
    assert_close(params["bias"][2], models[2].bias.detach().cpu().numpy())
    with pytest.raises(RuntimeError, match="Expected at least one model"):
        ember.func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        ember.func.stack_module_state([ember.nn.Linear(3, 2), ember.nn.ReLU()])


class _MLP:
    @staticmethod
    def build(nn):
        return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


def _copy_weights(e_model, t_model, torch):
    for p, q in zip(e_model.parameters(), t_model.parameters()):
        with torch.no_grad():
            q.copy_(torch.tensor(p.detach().cpu().numpy()))


def test_per_sample_gradients_recipe(device, torch):
    # PyTorch's per-sample-gradients tutorial, against a per-example loop and against torch.func
    model = _MLP.build(ember.nn).to(device)
    t_model = _MLP.build(torch.nn).double()
    model = model.double()
    _copy_weights(model, t_model, torch)
    data, = _arrays((8, 6))
    targets = np.random.default_rng(3).integers(0, 3, 8)
    ed, et = ember.tensor(data, device=device), ember.tensor(targets, device=device)

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = ember.func.functional_call(model, (params, buffers), (batch,))
        return EF.cross_entropy(predictions, targets)

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    batching.LOOPED.clear()
    grads = ember.vmap(ember.func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, ed, et)
    assert not batching.LOOPED
    for i in range(8):  # the per-example loop
        model.zero_grad()
        EF.cross_entropy(model(ed[i:i + 1]), et[i:i + 1]).backward()
        for name, p in model.named_parameters():
            assert_close(grads[name][i], p.grad.detach().cpu().numpy())

    def t_loss(params, buffers, sample, target):
        pred = torch.func.functional_call(t_model, (params, buffers), (sample.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(pred, target.unsqueeze(0))

    tg = torch.vmap(torch.func.grad(t_loss), in_dims=(None, None, 0, 0))(
        {k: v.detach() for k, v in t_model.named_parameters()}, {}, torch.tensor(data), torch.tensor(targets))
    _close(grads, tg)


def test_model_ensembling_recipe_with_meta_base(device, torch):
    models = [_MLP.build(ember.nn).to(device) for _ in range(3)]
    t_models = [_MLP.build(torch.nn).double() for _ in range(3)]
    for m, t in zip(models, t_models):
        m.double()
        _copy_weights(m, t, torch)
    data, = _arrays((3, 5, 6))
    params, buffers = ember.func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    assert base[0].weight.is_meta

    def fmodel(params, buffers, x):
        return ember.func.functional_call(base, (params, buffers), (x,))

    out = ember.vmap(fmodel)(params, buffers, ember.tensor(data, device=device))
    tp, tb = torch.func.stack_module_state(t_models)
    t_base = copy.deepcopy(t_models[0]).to("meta")
    t_out = torch.vmap(lambda p, b, x: torch.func.functional_call(t_base, (p, b), (x,)))(tp, tb, torch.tensor(data))
    _close(out, t_out)
    out2 = ember.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, ember.tensor(data[0], device=device))
    _close(out2, torch.stack([t(torch.tensor(data[0])) for t in t_models]))


def test_vmap_examples_from_docs(device):
    torch = ember
    # batched dot product
    batched_dot = torch.func.vmap(torch.dot)
    x, y = torch.randn(2, 5, device=device), torch.randn(2, 5, device=device)
    assert_close(batched_dot(x, y), (x * y).sum(1).cpu().numpy())
    # batch a model's forward
    weights = torch.randn(10, device=device)

    def model(feature_vec):
        return feature_vec.dot(weights).relu()

    examples = torch.randn(4, 10, device=device)
    assert_close(torch.vmap(model)(examples), (examples @ weights).relu().cpu().numpy())
    # Jacobian rows by vjp
    N = 5
    x = torch.randn(N, requires_grad=True, device=device)
    y = x ** 2
    I_N = torch.eye(N, device=device)

    def get_vjp(v):
        return torch.autograd.grad(y, x, v, retain_graph=True)

    jacobian = torch.vmap(get_vjp)(I_N)
    assert_close(jacobian[0], torch.diag(2 * x).detach().cpu().numpy())
    # nested vmap: batched outer products
    batched_outer = torch.vmap(torch.vmap(torch.mul, in_dims=(0, None)), in_dims=(None, 0))
    a, b = torch.randn(3, device=device), torch.randn(4, device=device)
    assert_close(batched_outer(a, b), (b[:, None] * a[None, :]).cpu().numpy())
    assert torch.vmap(torch.sum, in_dims=1)(torch.randn(2, 5, device=device)).shape == (5,)
    f = lambda x: x ** 2  # noqa: E731
    assert torch.vmap(f, in_dims=1, out_dims=1)(torch.randn(2, 5, device=device)).shape == (2, 5)
    assert torch.vmap(lambda x: (x.sum(), x * 2), out_dims=(0, 1))(torch.randn(3, 4, device=device))[1].shape == \
        (4, 3)


def test_per_sample_grads_example(device):
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), os.pardir, "examples", "per_sample_grads.py")
    spec = importlib.util.spec_from_file_location("example_per_sample_grads", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--batch", "6", "--repeat", "1", "--device", device]) < 1e-5
