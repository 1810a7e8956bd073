"""Per-sample gradients, ``vmap(grad(loss))``, against torch.func: the fast paths (weights repeated over the
batch by zero strides, the per-sample Linear, the backward pass with the vmap levels set aside) give the
same values as PyTorch in float32 and float64, laid out as PyTorch lays them out."""
import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember import dispatch
from ember.func import batching
from ember.testing import assert_close, kit

SIZES = (6, 9, 7, 4)


def test_rows_are_in_the_conformance_kit():
    # tests/test_kit.py runs the rows of the per-sample ops (every check) on every backend
    assert "ember.testing.rows_func" in kit.TABLES


def _mlp(nn, sizes=SIZES, bias=True):
    layers = []
    for i, (fi, fo) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(fi, fo, bias=bias))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _pair(torch, device, dtype="float32", bias=True):
    model = _mlp(ember.nn, bias=bias).to(device)
    t_model = _mlp(torch.nn, bias=bias)
    if dtype == "float64":
        model, t_model = model.double(), t_model.double()
    with torch.no_grad():
        for p, q in zip(model.parameters(), t_model.parameters()):
            q.copy_(torch.tensor(p.detach().cpu().numpy()))
    return model, t_model


def _params(model):
    return {k: v.detach() for k, v in model.named_parameters()}


def _close_tree(e, t, **kw):
    assert set(e) == set(t)
    for k in t:
        assert tuple(e[k].shape) == tuple(t[k].shape), k
        assert_close(e[k], t[k].detach().numpy(), **kw)


def _loss_fns(torch, model, t_model, reduction="mean", ignore_index=-100):
    def e_loss(params, x, y):
        out = ember.func.functional_call(model, params, (x.unsqueeze(0),))
        return EF.cross_entropy(out, y.unsqueeze(0), reduction=reduction, ignore_index=ignore_index)

    def t_loss(params, x, y):
        out = torch.func.functional_call(t_model, params, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, y.unsqueeze(0), reduction=reduction,
                                                 ignore_index=ignore_index)

    return e_loss, t_loss


def _data(n=5, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, SIZES[0])).astype(dtype), rng.integers(0, SIZES[-1], n)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_per_sample_grads_match_torch_func(device, torch, dtype, bias):
    model, t_model = _pair(torch, device, dtype, bias)
    xs, ys = _data(dtype=dtype)
    e_loss, t_loss = _loss_fns(torch, model, t_model)
    batching.LOOPED.clear()
    g = ember.func.vmap(ember.func.grad(e_loss), in_dims=(None, 0, 0))(
        _params(model), ember.tensor(xs, device=device), ember.tensor(ys, device=device))
    assert not batching.LOOPED, dict(batching.LOOPED)
    tg = torch.func.vmap(torch.func.grad(t_loss), in_dims=(None, 0, 0))(
        _params(t_model), torch.tensor(xs), torch.tensor(ys))
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {}
    _close_tree(g, tg, **tol)
    for k, v in g.items():  # written (sample, *parameter shape) in order, as PyTorch's are
        assert v.is_contiguous(), k
        assert v.dtype == model.get_parameter(k).dtype


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_per_sample_grads_ignored_targets(device, torch, reduction):
    # a sample whose one row is ignored: no gradient; its mean is 0/0 (NaN), as PyTorch's
    model, t_model = _pair(torch, device, "float64")
    xs, ys = _data(6, "float64", seed=1)
    ys[2] = 1
    e_loss, t_loss = _loss_fns(torch, model, t_model, reduction=reduction, ignore_index=1)
    g, v = ember.func.vmap(ember.func.grad_and_value(e_loss), in_dims=(None, 0, 0))(
        _params(model), ember.tensor(xs, device=device), ember.tensor(ys, device=device))
    tg, tv = torch.func.vmap(torch.func.grad_and_value(t_loss), in_dims=(None, 0, 0))(
        _params(t_model), torch.tensor(xs), torch.tensor(ys))
    _close_tree(g, tg)
    assert_close(v, tv.numpy())  # NaNs compare equal
    assert float(g["0.weight"][2].abs().sum()) == 0.0
    assert np.isnan(v[2].item()) == (reduction == "mean")


def test_per_sample_loss_target_out_of_bounds(device):
    model = _mlp(ember.nn).to(device)
    xs, ys = _data()
    ys[3] = SIZES[-1]

    def loss(params, x, y):
        return EF.cross_entropy(ember.func.functional_call(model, params, (x.unsqueeze(0),)), y.unsqueeze(0))

    with pytest.raises(IndexError, match="out of bounds"):
        ember.func.vmap(ember.func.grad(loss), in_dims=(None, 0, 0))(
            _params(model), ember.tensor(xs, device=device), ember.tensor(ys, device=device))


def test_per_sample_grads_sequences_and_inputs(device, torch):
    # samples of several rows (a weight's gradient sums over them) and the gradient for the input as well
    model, t_model = _pair(torch, device, "float64")
    rng = np.random.default_rng(4)
    xs, ys = rng.standard_normal((4, 3, SIZES[0])), rng.integers(0, SIZES[-1], (4, 3))

    def e_loss(params, x, y):
        return EF.cross_entropy(ember.func.functional_call(model, params, (x,)), y)

    def t_loss(params, x, y):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(t_model, params, (x,)), y)

    g, gx = ember.func.vmap(ember.func.grad(e_loss, argnums=(0, 1)), in_dims=(None, 0, 0))(
        _params(model), ember.tensor(xs, device=device), ember.tensor(ys, device=device))
    tg, tgx = torch.func.vmap(torch.func.grad(t_loss, argnums=(0, 1)), in_dims=(None, 0, 0))(
        _params(t_model), torch.tensor(xs), torch.tensor(ys))
    _close_tree(g, tg)
    assert_close(gx, tgx.numpy())


def test_per_sample_grads_nested_vmap_and_tracked_params(device, torch):
    model, t_model = _pair(torch, device, "float64")
    rng = np.random.default_rng(5)
    xs, ys = rng.standard_normal((2, 3, SIZES[0])), rng.integers(0, SIZES[-1], (2, 3))
    e_loss, t_loss = _loss_fns(torch, model, t_model)
    inner = (None, 0, 0)
    g = ember.func.vmap(ember.func.vmap(ember.func.grad(e_loss), in_dims=inner), in_dims=inner)(
        _params(model), ember.tensor(xs, device=device), ember.tensor(ys, device=device))
    tg = torch.func.vmap(torch.func.vmap(torch.func.grad(t_loss), in_dims=inner), in_dims=inner)(
        _params(t_model), torch.tensor(xs), torch.tensor(ys))
    _close_tree(g, tg)
    # parameters that require grad (not detached) take the general path and give the same values
    e_loss2, _ = _loss_fns(torch, model, t_model)
    g2 = ember.func.vmap(ember.func.grad(e_loss2), in_dims=(None, 0, 0))(
        dict(model.named_parameters()), ember.tensor(xs[0], device=device), ember.tensor(ys[0], device=device))
    _close_tree(g2, {k: v[0] for k, v in tg.items()})


def test_per_sample_hessian_diagonal_block(device, torch):
    # a second derivative inside vmap: the backward passes keep their graph for the outer transform
    rng = np.random.default_rng(6)
    w, xs = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))

    def f(m, F):
        return lambda w, x: F.linear(x, w).tanh().sum()

    e = ember.func.vmap(ember.func.hessian(f(ember, EF)), in_dims=(None, 0))(
        ember.tensor(w, device=device), ember.tensor(xs, device=device))
    t = torch.func.vmap(torch.func.hessian(f(torch, torch.nn.functional)), in_dims=(None, 0))(
        torch.tensor(w), torch.tensor(xs))
    assert_close(e, t.numpy())


def test_outer_handlers_still_see_the_backward_pass(device):
    # the vmap levels are set aside for the backward pass over physical tensors; other handlers are not
    seen = []

    def spy(kind, Op, args, run):
        seen.append(Op if isinstance(Op, str) else Op.__name__)
        return run(*args)

    w, xs = ember.randn(3, 4, device=device), ember.randn(5, 4, device=device)
    with dispatch.intercept(spy):
        g = ember.func.vmap(ember.func.grad(lambda w, x: EF.linear(x, w).sum()), in_dims=(None, 0))(w, xs)
    assert "LinearStackBackward0" in seen and "MmBackward0" in seen  # the per-sample product and its weight gradient
    assert_close(g, np.broadcast_to(xs.cpu().numpy()[:, None, :], (5, 3, 4)))


@pytest.mark.parametrize("m", [1, 2])
def test_matmul_with_an_operand_repeated_over_the_stack(device, torch, m):
    # zero-stride (expanded) stacks multiply as one GEMM; values, layout and gradients as PyTorch's
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((5, 4, m))
    for first in (True, False):
        ea = ember.tensor(a, device=device, requires_grad=True)
        eb = ember.tensor(b, device=device, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        if first:
            e, t = ea.expand(5, 3, 4) @ eb, ta.expand(5, 3, 4) @ tb
        else:
            e, t = eb.mT @ ea.mT.expand(5, 4, 3), tb.mT @ ta.mT.expand(5, 4, 3)
        assert_close(e, t.detach().numpy())
        assert e.is_contiguous() and tuple(e.view(-1).shape) == (t.numel(),)
        (e * e).sum().backward()
        (t * t).sum().backward()
        assert_close(ea.grad, ta.grad.numpy())
        assert_close(eb.grad, tb.grad.numpy())
    empty = ember.zeros(0, 3, 4, device=device) @ ember.zeros(4, 2, device=device).expand(0, 4, 2)
    assert empty.shape == (0, 3, 2)


def test_gradient_of_a_per_sample_gradient_penalty(device, torch):
    # grad over vmap(grad): the inner backward pass keeps its graph for the outer transform
    model, t_model = _pair(torch, device, "float64")
    xs, ys = _data(4, "float64", seed=8)
    e_loss, t_loss = _loss_fns(torch, model, t_model)

    def penalty(lib, loss, x, y):
        def f(params):
            g = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
            return sum((v ** 2).sum() for v in g.values())
        return f

    e = ember.func.grad(penalty(ember, e_loss, ember.tensor(xs, device=device), ember.tensor(ys, device=device)))(
        _params(model))
    t = torch.func.grad(penalty(torch, t_loss, torch.tensor(xs), torch.tensor(ys)))(_params(t_model))
    _close_tree(e, t)


def test_per_sample_linear_complex_gradients(device, torch):
    # the adjoint convention of PyTorch for complex inputs: g @ conj(w), g^T @ conj(x)
    rng = np.random.default_rng(9)
    shapes = ((3, 2, 4), (3, 5, 4), (3, 5))
    arrays = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    grads = []
    for m, dev in ((ember, device), (torch, "cpu")):
        ts = [m.tensor(a, device=dev, requires_grad=True) for a in arrays]
        y = m.vmap(m.nn.functional.linear)(*ts)
        (y.abs() ** 2).sum().backward()
        grads.append([t.grad for t in ts])
    for e, t in zip(*grads):
        assert_close(e, t.numpy())
