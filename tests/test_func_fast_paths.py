"""The fast paths under per-sample gradients: stacked outer products as one padded GEMM (the matmul kernel),
the module swaps of ``functional_call``, gradients with respect to chosen inputs taking the engine's short
path, and pytree flattening.  Each gives what the general path gives (and PyTorch)."""
import collections

import numpy as np
import pytest

import ember
from ember.func import pytree
from ember.testing import assert_close


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m,n", [(128, 64), (70, 90), (10, 128)])  # the last below the GEMM's size: a multiply
def test_stacked_outer_products_match_torch(device, torch, dtype, m, n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, m, 1)).astype(dtype)
    b = rng.standard_normal((5, 1, n)).astype(dtype)
    out = ember.tensor(a, device=device) @ ember.tensor(b, device=device)
    assert tuple(out.shape) == (5, m, n)
    assert_close(out, (torch.tensor(a) @ torch.tensor(b)).numpy(), rtol=0, atol=0)


def test_stacked_outer_products_keep_inf_and_nan(device):
    a = np.full((2, 64, 1), 2.0, np.float32)
    b = np.ones((2, 1, 64), np.float32)
    a[0, 3, 0], a[1, 5, 0], b[0, 0, 7], b[1, 0, 9] = np.inf, np.nan, 0.0, -np.inf
    with np.errstate(invalid="ignore"):  # (NumPy reports inf * 0, as for any matmul meeting it)
        out = (ember.tensor(a, device=device) @ ember.tensor(b, device=device)).cpu().numpy()
        expected = a * b
    np.testing.assert_array_equal(out, expected)  # inf * 0 is nan, nan stays nan, as the broadcast product


def test_stacked_outer_products_gradcheck(device):
    rng = np.random.default_rng(1)
    a = ember.tensor(rng.standard_normal((2, 64, 1)), device=device, requires_grad=True)
    b = ember.tensor(rng.standard_normal((2, 1, 64)), device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, y: (x @ y).sin(), (a, b))


def test_per_sample_gradients_of_wide_layers_match_torch(device, torch):
    # per-sample weight gradients of 80x64 and 64x80: the padded GEMM; 3x64: the broadcast multiply
    sizes = (64, 80, 64, 3)

    def mlp(nn):
        return nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.ReLU(), nn.Linear(sizes[1], sizes[2]), nn.ReLU(),
                             nn.Linear(sizes[2], sizes[3]))

    model, t_model = mlp(ember.nn).to(device), mlp(torch.nn)
    with torch.no_grad():
        for p, q in zip(model.parameters(), t_model.parameters()):
            q.copy_(torch.tensor(p.detach().cpu().numpy()))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, sizes[0])).astype(np.float32)
    y = rng.integers(0, sizes[-1], 7)

    def loss(lib, mod):
        def f(params, sample, target):
            out = lib.func.functional_call(mod, params, (sample.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, target.unsqueeze(0))
        return f

    e = ember.func.vmap(ember.func.grad(loss(ember, model)), in_dims=(None, 0, 0))(
        {k: v.detach() for k, v in model.named_parameters()}, ember.tensor(x, device=device),
        ember.tensor(y, device=device))
    t = torch.func.vmap(torch.func.grad(loss(torch, t_model)), in_dims=(None, 0, 0))(
        {k: v.detach() for k, v in t_model.named_parameters()}, torch.tensor(x), torch.tensor(y))
    assert set(e) == set(t)
    for k in t:
        assert tuple(e[k].shape) == tuple(t[k].shape)
        assert_close(e[k], t[k].numpy(), rtol=1e-4, atol=1e-6)


# --------------------------------------------------------------------------- functional_call
class _Tied(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = ember.nn.Linear(3, 3)
        self.b = ember.nn.Linear(3, 3)
        self.b.weight = self.a.weight
        self.register_buffer("scale", ember.ones(3))

    def forward(self, x):
        return self.b(self.a(x)) * self.scale


def test_functional_call_ties_and_restores(device):
    m = _Tied().to(device)
    w, s = m.a.weight, m.scale
    x = ember.ones(2, 3, device=device)
    new_w = ember.zeros(3, 3, device=device)
    out = ember.func.functional_call(m, {"a.weight": new_w, "scale": 2 * ember.ones(3, device=device)}, (x,))
    # b.weight follows a.weight (tied): both layers multiply by 0, only the biases remain
    expected = (m.b.bias + ember.zeros(2, 3, device=device)) * 2
    assert_close(out, expected.detach().cpu().numpy())
    assert m.a.weight is w and m.b.weight is w and m.scale is s  # the originals are back
    untied = ember.func.functional_call(m, {"a.weight": new_w}, (x,), tie_weights=False)
    assert_close(untied, m.b(m.a.bias.expand(2, 3)).detach().cpu().numpy())
    with pytest.raises(ValueError, match="tied"):
        ember.func.functional_call(m, {"a.weight": new_w, "b.weight": ember.ones(3, 3, device=device)}, (x,))


class _Shadowed(ember.nn.Module):
    """A child registered as ``inner`` behind a property of that name: the swap follows what getattr finds."""

    def __init__(self):
        super().__init__()
        self.real = ember.nn.Linear(2, 2)
        self._modules["inner"] = ember.nn.Linear(2, 2)

    @property
    def inner(self):
        return self.real

    def forward(self, x):
        return self.real(x)


def test_functional_call_follows_getattr_over_the_child_registry(device):
    m = _Shadowed().to(device)
    x = ember.ones(1, 2, device=device)
    out = ember.func.functional_call(m, {"inner.weight": ember.zeros(2, 2, device=device)}, (x,))
    assert_close(out, m.real.bias.detach().cpu().numpy()[None])
    assert m.real.weight is not None and isinstance(m.real.weight, ember.nn.Parameter)


def test_functional_call_errors_are_unchanged(device):
    m = ember.nn.Linear(2, 2).to(device)
    x = ember.ones(1, 2, device=device)
    with pytest.raises(TypeError, match="not an instance of torch.Tensor"):
        ember.func.functional_call(m, {"weight": 3}, (x,))
    with pytest.raises(RuntimeError, match="Unexpected key"):
        ember.func.functional_call(m, {"nope": ember.ones(2, device=device)}, (x,), strict=True)
    w = m.weight
    with pytest.raises(AttributeError):
        ember.func.functional_call(m, {"missing.weight": ember.ones(2, 2, device=device)}, (x,))
    assert m.weight is w


# --------------------------------------------------------------------------- the engine's short path
def test_grad_with_respect_to_intermediate_tensors(device, torch):
    v = np.array([0.3, -1.2, 2.0])
    x = ember.tensor(v, device=device, requires_grad=True)
    y = x * 2
    z = y.sin()
    gy, gx = ember.autograd.grad(z.sum() * 3, (y, x), retain_graph=True)
    tx = torch.tensor(v, requires_grad=True)
    ty = tx * 2
    tgy, tgx = torch.autograd.grad(ty.sin().sum() * 3, (ty, tx))
    assert_close(gy, tgy.numpy())
    assert_close(gx, tgx.numpy())
    (gz,) = ember.autograd.grad(z.sum(), z)
    assert_close(gz, np.ones(3))


def test_grad_runs_hooks_and_frees_the_graph(device):
    x = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x.exp()
    seen = []
    y.register_hook(lambda g: seen.append(g.cpu().numpy().copy()) or g * 10)
    (g,) = ember.autograd.grad((y * 2).sum(), x)
    assert len(seen) == 1
    assert_close(g, (20 * np.exp([1.0, 2.0])).astype(np.float32))
    w = x.sin().cos()
    ember.autograd.grad(w.sum(), x)
    with pytest.raises(RuntimeError):
        ember.autograd.grad(w.sum(), x)  # the graph was freed (retain_graph not given)


# --------------------------------------------------------------------------- pytree
def test_pytree_round_trips():
    Point = collections.namedtuple("Point", "x y")
    value = {"a": [1, (2, 3)], "b": Point(4, {"c": 5}), "d": (), "e": []}
    leaves, spec = pytree.tree_flatten(value)
    assert leaves == [1, 2, 3, 4, 5]
    assert spec.num_leaves == 5
    assert pytree.tree_unflatten(leaves, spec) == value
    assert type(pytree.tree_unflatten(leaves, spec)["b"]) is Point
    assert pytree.tree_map(lambda v: v * 10, value)["b"].y == {"c": 50}


class _OwnTraversal(ember.nn.Module):
    """A child whose named_parameters hides its second weight: the tie map follows its traversal."""

    def __init__(self, shared):
        super().__init__()
        self.w = shared
        self.hidden = shared

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield (prefix + "." if prefix else "") + "w", self.w


class _Outer(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = ember.nn.Parameter(ember.ones(2))
        self.child = _OwnTraversal(self.w)

    def forward(self, x):
        return x * self.w * self.child.hidden

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield "w", self.w
        yield from self.child.named_parameters("child")


def test_functional_call_tie_map_follows_an_own_traversal(device):
    m = _Outer().to(device)
    x = ember.ones(2, device=device)
    # w and child.w are tied by the traversal; child.hidden is not named by it, so it keeps the old value
    out = ember.func.functional_call(m, {"w": 3 * ember.ones(2, device=device)}, (x,))
    assert_close(out, np.full(2, 3.0, np.float32))
    assert m.child.w is m.w
