"""The short paths of per-sample gradients against PyTorch: the stacked matmul kernel (a stack times one
matrix, a weight repeated by zero strides, stacked outer products by broadcast multiply or by the padded
GEMM), functional_call's direct swap (one walk finds names, submodules and tied tensors; anything unusual
takes the general path), vmap unwrapping a dict or a tensor of outputs directly, and the Linear, elementwise
and cross-entropy rules reading their operands' batching once."""
import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember.nn.utils import stateless
from ember.testing import assert_close


def _t(torch, a):
    return torch.tensor(np.asarray(a))


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "cpu") else np.asarray(t)


# ------------------------------------------------------------------------------------------ matmul kernel
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lead,m,n", [((64,), 128, 128), ((64,), 10, 128), ((8,), 8, 8), ((4, 16), 16, 16),
                                      ((2,), 200, 3), ((64,), 16, 16), ((5,), 1, 1)])
def test_stacked_outer_products_match_torch(device, torch, dtype, lead, m, n):
    # (..., m, 1) @ (..., 1, n): a broadcast multiply for small stacks, a GEMM padded to k = 2 for larger ones
    rng = np.random.default_rng(0)
    a = rng.standard_normal(lead + (m, 1)).astype(dtype)
    b = rng.standard_normal(lead + (1, n)).astype(dtype)
    out = ember.matmul(ember.tensor(a, device=device), ember.tensor(b, device=device))
    ref = torch.matmul(_t(torch, a), _t(torch, b))
    assert tuple(out.shape) == tuple(ref.shape)
    assert out.dtype == getattr(ember, dtype)
    assert_close(out, ref.numpy(), rtol=0, atol=0)  # one product each: exact, as PyTorch's


def test_stacked_outer_products_keep_inf_and_nan_per_sample(device, torch):
    # the padding adds an exact 0 * 0: an inf or nan of one sample stays in that sample's products
    a = np.ones((64, 32, 1), dtype="float32")
    b = np.ones((64, 1, 32), dtype="float32")
    a[3, 5, 0], b[7, 0, 2], a[9, 1, 0] = np.inf, np.nan, 0.0
    b[9, 0, 4] = np.inf  # 0 * inf: nan, as in PyTorch
    with np.errstate(all="ignore"):  # (NumPy's report of 0 * inf is the program's to ask for, as elsewhere)
        out = ember.matmul(ember.tensor(a, device=device), ember.tensor(b, device=device)).cpu().numpy()
    ref = torch.matmul(_t(torch, a), _t(torch, b)).numpy()
    np.testing.assert_array_equal(out, ref)
    assert np.isfinite(np.delete(out, [3, 7, 9], axis=0)).all()


@pytest.mark.parametrize("shapes", [((3, 4, 5), (5, 6)), ((2, 3, 4, 5), (5, 2)), ((6, 1, 5), (6, 5, 7)),
                                    ((6, 1, 5), (5, 7)), ((6, 4, 1), (6, 1, 1))])
def test_stack_times_one_matrix_matches_torch(device, torch, shapes):
    rng = np.random.default_rng(1)
    sa, sb = shapes
    a = rng.standard_normal(sa)
    w = rng.standard_normal(sb[-2:])
    b = np.broadcast_to(w, sb)  # a matrix repeated along the stack by zero strides (as vmap lifts a weight)
    ea, eb = ember.tensor(a, device=device), ember.tensor(w, device=device).expand(*sb)
    out = ember.matmul(ea, eb)
    ref = torch.matmul(_t(torch, a), _t(torch, np.ascontiguousarray(b)))
    assert tuple(out.shape) == tuple(ref.shape)
    assert_close(out, ref.numpy(), rtol=1e-12, atol=1e-12)


def test_stacked_vectors_times_repeated_matrix_match_torch(device, torch):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 5))
    v = rng.standard_normal((6, 5, 1))
    out = ember.matmul(ember.tensor(w, device=device).expand(6, 4, 5), ember.tensor(v, device=device))
    ref = torch.matmul(_t(torch, w).expand(6, 4, 5), _t(torch, v))
    assert_close(out, ref.numpy(), rtol=1e-12, atol=1e-12)


def test_matmul_stack_paths_differentiate(device):
    rng = np.random.default_rng(3)
    a = ember.tensor(rng.standard_normal((3, 4, 1)), device=device, requires_grad=True)
    b = ember.tensor(rng.standard_normal((3, 1, 5)), device=device, requires_grad=True)
    c = ember.tensor(rng.standard_normal((3, 2, 5)), device=device, requires_grad=True)
    w = ember.tensor(rng.standard_normal((5, 6)), device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: ember.matmul(a, b), (a, b))
    assert ember.autograd.gradcheck(lambda c, w: ember.matmul(c, w), (c, w))
    assert ember.autograd.gradcheck(lambda c, w: ember.matmul(c, w.expand(3, 5, 6)), (c, w))


def test_matmul_stack_mismatch_raises_like_torch(device, torch):
    a, b = ember.ones(2, 3, 1, device=device), ember.ones(2, 2, 4, device=device)
    with pytest.raises(RuntimeError) as e:
        ember.matmul(a, b)
    with pytest.raises(RuntimeError):
        torch.matmul(torch.ones(2, 3, 1), torch.ones(2, 2, 4))
    assert "matmul" in str(e.value).lower() or "size" in str(e.value).lower()


# ------------------------------------------------------------------------------------------ functional_call
def _copy_into(t_model, model):
    import torch
    with torch.no_grad():
        for (n, p), (m, q) in zip(model.named_parameters(), t_model.named_parameters()):
            assert n == m
            q.copy_(torch.tensor(_np(p)))


def _tied(nn):
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = nn.Linear(3, 3)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    return Tied()


def test_direct_swap_follows_tied_weights_like_torch(device, torch):
    model, t_model = _tied(ember.nn).to(device), _tied(torch.nn)
    _copy_into(t_model, model)
    x = np.random.default_rng(4).standard_normal((2, 3)).astype("float32")
    w = np.full((3, 3), 0.5, dtype="float32")
    for tie in (True, False):
        out = ember.func.functional_call(model, {"a.weight": ember.tensor(w, device=device)},
                                         (ember.tensor(x, device=device),), tie_weights=tie)
        ref = torch.func.functional_call(t_model, {"a.weight": torch.tensor(w)}, (torch.tensor(x),),
                                         tie_weights=tie)
        assert_close(out, ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert model.b.weight is model.a.weight  # put back as it was
    assert_close(model.a.weight, t_model.a.weight.detach().numpy())


def test_direct_swap_rejects_two_values_for_tied_names(device, torch):
    model = _tied(ember.nn).to(device)
    with pytest.raises(ValueError, match="tied"):
        ember.func.functional_call(model, {"a.weight": ember.ones(3, 3, device=device),
                                           "b.weight": ember.zeros(3, 3, device=device)}, (ember.ones(1, 3),))
    with pytest.raises(ValueError, match="tied"):
        torch.func.functional_call(_tied(torch.nn), {"a.weight": torch.ones(3, 3), "b.weight": torch.zeros(3, 3)},
                                   (torch.ones(1, 3),))
    assert isinstance(model.a.weight, ember.nn.Parameter) and model.b.weight is model.a.weight


def _counter(nn, lib):
    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("seen", lib.zeros(()))

        def forward(self, x):
            self.seen = self.seen + 1  # a buffer reassigned in forward
            return self.lin(x) * self.seen

    return Counter()


def test_direct_swap_hands_back_reassigned_buffers_like_torch(device, torch):
    model, t_model = _counter(ember.nn, ember).to(device), _counter(torch.nn, torch)
    _copy_into(t_model, model)
    e_state = {"seen": ember.tensor(4.0, device=device)}
    t_state = {"seen": torch.tensor(4.0)}
    out = ember.func.functional_call(model, e_state, (ember.ones(1, 2, device=device),))
    ref = torch.func.functional_call(t_model, t_state, (torch.ones(1, 2),))
    assert_close(out, ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert float(e_state["seen"]) == float(t_state["seen"]) == 5.0  # the new buffer, handed back
    assert float(model.seen) == float(t_model.seen) == 0.0  # the module's own, put back


def test_direct_swap_puts_originals_back_on_error(device):
    class Boom(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(2, 2)

        def forward(self, x):
            raise ValueError("boom")

    m = Boom().to(device)
    w, b = m.lin.weight, m.lin.bias
    with pytest.raises(ValueError, match="boom"):
        ember.func.functional_call(m, {"lin.weight": ember.zeros(2, 2, device=device)}, (ember.ones(1, 2),))
    assert m.lin.weight is w and m.lin.bias is b


def test_general_path_for_unusual_values_matches_torch(device, torch):
    # a name that is no parameter, a None value: the general path, as PyTorch swaps them
    model, t_model = _mlp(ember.nn).to(device), _mlp(torch.nn)
    _copy_into(t_model, model)
    x = np.random.default_rng(5).standard_normal((3, 5)).astype("float32")
    w = np.ones((7, 5), dtype="float32")
    for given in ({"0.weight": w, "extra": np.ones(2, "float32")}, {"2.bias": None}):
        e_given = {k: None if v is None else ember.tensor(v, device=device) for k, v in given.items()}
        t_given = {k: None if v is None else torch.tensor(v) for k, v in given.items()}
        assert stateless._swap_in_direct(model, e_given) is None
        out = ember.func.functional_call(model, e_given, (ember.tensor(x, device=device),))
        ref = torch.func.functional_call(t_model, t_given, (torch.tensor(x),))
        assert_close(out, ref.detach().numpy(), rtol=1e-6, atol=1e-6)
        assert not hasattr(model, "extra") and not hasattr(t_model, "extra")
        assert isinstance(model[2].bias, ember.nn.Parameter) and isinstance(model[0].weight, ember.nn.Parameter)


def test_child_shadowed_by_class_attribute_takes_the_general_path(device):
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x)

    net = Net().to(device)
    Net.lin = property(lambda self: self._modules["lin"])  # getattr now finds the property first
    try:
        assert stateless._swap_in_direct(net, {"lin.weight": ember.ones(2, 2, device=device)}) is None
        out = ember.func.functional_call(net, {"lin.weight": ember.ones(2, 2, device=device),
                                               "lin.bias": ember.zeros(2, device=device)},
                                         (ember.ones(1, 2, device=device),))
        assert_close(out, np.full((1, 2), 2.0, dtype="float32"))
    finally:
        del Net.lin


def test_direct_swap_restores_everything(device):
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.BatchNorm1d(3)).to(device)
    before = {k: v for k, v in [*model.named_parameters(), *model.named_buffers()]}
    new = {k: v.detach().clone() + 1 for k, v in before.items() if v.is_floating_point()}
    accessor, orig = stateless._swap_in(model, new, True, False)
    assert type(accessor) is stateless._Slots
    for k, v in [*model.named_parameters(), *model.named_buffers()]:
        assert v is new.get(k, before[k])
    stateless._swap_back(accessor, orig, new)
    for k, v in [*model.named_parameters(), *model.named_buffers()]:
        assert v is before[k]


# ------------------------------------------------------------------------------------------ vmap outputs
def test_vmap_dict_and_tensor_outputs_match_torch(device, torch):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 3)).astype("float32")
    c = rng.standard_normal(3).astype("float32")
    ex, ec = ember.tensor(x, device=device), ember.tensor(c, device=device)
    tx, tc = torch.tensor(x), torch.tensor(c)

    def f(lib, v, const):
        return {"a": v.sin(), "b": v * 2, "const": const}  # one output not batched: expanded over the batch

    out = ember.vmap(lambda v: f(ember, v, ec))(ex)
    ref = torch.vmap(lambda v: f(torch, v, tc))(tx)
    assert list(out) == list(ref)
    for k in ref:
        assert tuple(out[k].shape) == tuple(ref[k].shape)
        assert_close(out[k], ref[k].numpy(), rtol=1e-6, atol=1e-6)
    nested = ember.vmap(lambda v: {"p": (v.cos(), v.sum())})(ex)
    t_nested = torch.vmap(lambda v: {"p": (v.cos(), v.sum())})(tx)
    for e, t in zip(nested["p"], t_nested["p"]):
        assert_close(e, t.numpy(), rtol=1e-6, atol=1e-6)
    assert_close(ember.vmap(lambda v: v.exp())(ex), torch.vmap(lambda v: v.exp())(tx).numpy(), rtol=1e-6, atol=1e-6)
    assert_close(ember.vmap(lambda v: ec)(ex), torch.vmap(lambda v: tc)(tx).numpy())
    assert_close(ember.vmap(lambda v: {"a": v.exp()}, out_dims=1)(ex)["a"],
                 torch.vmap(lambda v: {"a": v.exp()}, out_dims=1)(tx)["a"].numpy(), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------------------ rules
def _mlp(nn, sizes=(5, 7, 4), bias=True):
    return nn.Sequential(nn.Linear(sizes[0], sizes[1], bias=bias), nn.ReLU(), nn.Linear(sizes[1], sizes[2], bias=bias))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows", [1, 3])
def test_per_sample_grads_with_several_rows_and_ignored_targets_match_torch(device, torch, bias, rows):
    model, t_model = _mlp(ember.nn, bias=bias).to(device), _mlp(torch.nn, bias=bias)
    _copy_into(t_model, model)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, rows, 5)).astype("float32")
    y = rng.integers(0, 4, (6, rows))
    y[2, 0] = -100

    def e_loss(p, xb, yb):
        return EF.cross_entropy(ember.func.functional_call(model, p, (xb,)), yb)

    def t_loss(p, xb, yb):
        return torch.nn.functional.cross_entropy(torch.func.functional_call(t_model, p, (xb,)), yb)

    ep = {k: v.detach() for k, v in model.named_parameters()}
    tp = {k: v.detach() for k, v in t_model.named_parameters()}
    eg = ember.func.vmap(ember.func.grad(e_loss), in_dims=(None, 0, 0))(
        ep, ember.tensor(x, device=device), ember.tensor(y, device=device))
    tg = torch.func.vmap(torch.func.grad(t_loss), in_dims=(None, 0, 0))(tp, torch.tensor(x), torch.tensor(y))
    assert list(eg) == list(tg)
    for k in tg:
        assert tuple(eg[k].shape) == tuple(tg[k].shape)
        assert_close(eg[k], tg[k].numpy(), rtol=1e-5, atol=1e-6)


def test_linear_rule_with_unbatched_input_or_batched_bias_matches_torch(device, torch):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 4)).astype("float64")
    ws = rng.standard_normal((5, 2, 4)).astype("float64")
    bs = rng.standard_normal((5, 2)).astype("float64")
    w1 = rng.standard_normal((2, 4)).astype("float64")
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    out = ember.vmap(EF.linear, in_dims=(None, 0, 0))(ex, ember.tensor(ws, device=device),
                                                      ember.tensor(bs, device=device))
    ref = torch.vmap(torch.nn.functional.linear, in_dims=(None, 0, 0))(tx, torch.tensor(ws), torch.tensor(bs))
    assert_close(out, ref.numpy(), rtol=1e-12, atol=1e-12)
    out = ember.vmap(EF.linear, in_dims=(None, None, 0))(ex, ember.tensor(w1, device=device),
                                                         ember.tensor(bs, device=device))
    ref = torch.vmap(torch.nn.functional.linear, in_dims=(None, None, 0))(tx, torch.tensor(w1), torch.tensor(bs))
    assert_close(out, ref.numpy(), rtol=1e-12, atol=1e-12)
    x3 = rng.standard_normal((5, 2, 3, 4))
    out = ember.vmap(EF.linear)(ember.tensor(x3, device=device), ember.tensor(ws, device=device))
    ref = torch.vmap(torch.nn.functional.linear)(torch.tensor(x3), torch.tensor(ws))
    assert tuple(out.shape) == tuple(ref.shape)
    assert_close(out, ref.numpy(), rtol=1e-12, atol=1e-12)


def test_elementwise_rule_keeps_dtype_and_shape_like_torch(device, torch):
    x = np.random.default_rng(9).standard_normal((4, 3, 2))
    for name in ("relu", "sigmoid", "tanh"):
        out = ember.vmap(getattr(ember, name))(ember.tensor(x, device=device))
        ref = torch.vmap(getattr(torch, name))(torch.tensor(x))
        assert out.dtype == ember.float64 and tuple(out.shape) == tuple(ref.shape)
        assert_close(out, ref.numpy(), rtol=1e-12, atol=1e-12)
    out = ember.vmap(lambda v: v.to(ember.float32))(ember.tensor(x, device=device))
    assert out.dtype == ember.float32 and tuple(out.shape) == (4, 3, 2)


def test_grad_of_several_arguments_and_nested_levels_match_torch(device, torch):
    rng = np.random.default_rng(10)
    w = rng.standard_normal((3, 2))
    b = rng.standard_normal(3)
    x = rng.standard_normal((4, 5, 2))

    def e_f(p, q, v):
        return (EF.linear(v, p["w"], q) ** 2).sum()

    def t_f(p, q, v):
        return (torch.nn.functional.linear(v, p["w"], q) ** 2).sum()

    eg = ember.func.vmap(ember.func.grad(e_f, argnums=(0, 1)), in_dims=(None, None, 0))(
        {"w": ember.tensor(w, device=device)}, ember.tensor(b, device=device), ember.tensor(x, device=device))
    tg = torch.func.vmap(torch.func.grad(t_f, argnums=(0, 1)), in_dims=(None, None, 0))(
        {"w": torch.tensor(w)}, torch.tensor(b), torch.tensor(x))
    assert_close(eg[0]["w"], tg[0]["w"].numpy(), rtol=1e-12, atol=1e-12)
    assert_close(eg[1], tg[1].numpy(), rtol=1e-12, atol=1e-12)
    eg = ember.vmap(ember.vmap(ember.func.grad(e_f), in_dims=(None, None, 0)), in_dims=(None, None, 0))(
        {"w": ember.tensor(w, device=device)}, ember.tensor(b, device=device), ember.tensor(x, device=device))
    tg = torch.vmap(torch.vmap(torch.func.grad(t_f), in_dims=(None, None, 0)), in_dims=(None, None, 0))(
        {"w": torch.tensor(w)}, torch.tensor(b), torch.tensor(x))
    assert tuple(eg["w"].shape) == tuple(tg["w"].shape)
    assert_close(eg["w"], tg["w"].numpy(), rtol=1e-12, atol=1e-12)
