"""Nodes restructured to PyTorch's: quantile's last node (an in-place squeeze), the 1-d max pools' (a squeeze),
max pooling's double-backward node, and the tensors that composites and decompositions give by PyTorch's saved
names (``_saved_mat1``, ``_saved_index``, ``_saved_Q``...): values and gradients against PyTorch, freed by the
backward, version-checked."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(device, data):
    return (torch.tensor(data, requires_grad=True),
            ember.tensor(data, requires_grad=True, device=device))


def _grads_match(call, data, device):
    """``call(m, x)`` on both libraries: node names, values and the gradient of a weighted sum agree."""
    xt, xe = _pair(device, data)
    want, got = call(torch, xt), call(ember, xe)
    assert got.grad_fn.name() == want.grad_fn.name()
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-12)
    w = np.cos(np.arange(want.numel())).reshape(tuple(want.shape))
    (want * torch.tensor(w)).sum().backward()
    (got * ember.tensor(w, device=device)).sum().backward()
    np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


QUANTILES = {
    "all": lambda m, x: m.quantile(x, 0.3),
    "dim_keepdim": lambda m, x: x.quantile(0.7, dim=1, keepdim=True),
    "q_vector": lambda m, x: m.quantile(x, x.detach().new_tensor([0.2, 0.9]), dim=0),
    "nearest": lambda m, x: m.quantile(x, 0.4, dim=-1, interpolation="nearest"),
    "nan": lambda m, x: m.nanquantile(m.where(x > 0.8, float("nan"), x), 0.5, dim=1),
}


@pytest.mark.parametrize("label", sorted(QUANTILES))
def test_quantile_node_and_gradient(label, device):
    data = np.random.default_rng(3).random((3, 5))
    _grads_match(QUANTILES[label], data, device)


@pytest.mark.parametrize("p", [None, 2, -2])
def test_cond_node_and_gradient(p, device):
    # PyTorch's 2-norm condition number: a ratio of singular-value slices, squeezed (SqueezeBackward1)
    data = np.random.default_rng(10).random((2, 3, 3)) + np.eye(3)
    _grads_match(lambda m, a: m.linalg.cond(a, p), data, device)


def test_quantile_gradcheck(device):
    x = ember.tensor(np.random.default_rng(4).random((3, 4)), requires_grad=True, device=device)
    assert ember.autograd.gradcheck(lambda t: ember.quantile(t, ember.tensor([0.25, 0.6], dtype=ember.float64,
                                                                             device=device), dim=1), (x,))


POOLS_1D = {
    "max": lambda m, x: m.nn.functional.max_pool1d(x, 3, 2, 1),
    "max_unbatched": lambda m, x: m.nn.functional.max_pool1d(x[0], 2),
    "max_indices": lambda m, x: m.max_pool1d_with_indices(x, 3, 1, 1, ceil_mode=True)[0],
    "adaptive_indices": lambda m, x: m.nn.functional.adaptive_max_pool1d(x, 3, return_indices=True)[0],
}


@pytest.mark.parametrize("label", sorted(POOLS_1D))
def test_max_pool1d_node_as_pytorch(label, device):
    # PyTorch's 1-d pools are 2-d ones between an unsqueeze and a squeeze: the squeeze's node and what it keeps
    data = np.random.default_rng(8).random((2, 3, 7))
    _grads_match(POOLS_1D[label], data, device)
    xt, xe = _pair(device, data)
    want, got = POOLS_1D[label](torch, xt).grad_fn, POOLS_1D[label](ember, xe).grad_fn
    assert (got._saved_dim, got._saved_self_sym_sizes) == (want._saved_dim, want._saved_self_sym_sizes)


@pytest.mark.parametrize("d", [1, 2])
def test_conv_transpose_node_as_pytorch(d, device):
    # PyTorch's one node of a transposed convolution (bias included); ember's stands for it
    rng = np.random.default_rng(9)
    data, w, b = rng.random((2, 3) + (4,) * d), rng.random((3, 2) + (3,) * d), rng.random(2)
    conv = f"conv_transpose{d}d"

    def call(m, x):
        kw = {"device": x.device} if m is ember else {}
        return getattr(m.nn.functional, conv)(x, m.tensor(w, **kw), m.tensor(b, **kw), stride=2, padding=1)
    _grads_match(call, data, device)


def test_max_pool_double_backward_node(device):
    data = np.random.default_rng(5).random((1, 2, 4, 4))
    xt, xe = _pair(device, data)
    gg = np.random.default_rng(6).random((1, 2, 4, 4))
    results = []
    for m, x in ((torch, xt), (ember, xe)):
        kw = {"device": device} if m is ember else {}
        g = m.ones(1, 2, 2, 2, dtype=m.float64, requires_grad=True, **kw)
        gx = m.autograd.grad(m.nn.functional.max_pool2d(x, 2), x, g, create_graph=True)[0]
        (gg_g,) = m.autograd.grad((gx * m.tensor(gg, **kw)).sum(), g)
        results.append((gx.grad_fn.name(), gg_g.cpu().numpy() if m is ember else gg_g.numpy()))
    assert results[0][0] == results[1][0] == "MaxPool2DWithIndicesBackwardBackward0"
    np.testing.assert_allclose(results[1][1], results[0][1])


def _operands(m, device, mat2_grad=True):
    kw = {"device": device} if m is ember else {}
    a = m.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, **kw).clone()
    b = m.tensor([[0.5, -1.0], [2.0, 1.0]], requires_grad=mat2_grad, **kw).clone()
    return a, b


def _reading(m, device, change=None, backward=False, mat2_grad=True):
    """What reading addmm's ``_saved_mat1`` gives: its values, None, or the RuntimeError's kind."""
    a, b = _operands(m, device, mat2_grad)
    y = m.addmm(m.zeros(2, 2, dtype=a.dtype, **({"device": device} if m is ember else {})), a, b)
    if change is not None:
        with m.no_grad():
            (a, b)[change].add_(1)
    if backward:
        y.sum().backward()
    try:
        v = y.grad_fn._saved_mat1
    except RuntimeError as exc:
        return "freed" if "freed" in str(exc) else "modified" if "inplace" in str(exc) else str(exc)
    return None if v is None else v.detach().cpu().numpy().tolist()


@pytest.mark.parametrize("case", [{}, {"mat2_grad": False}, {"backward": True}, {"mat2_grad": False, "backward": True},
                                  {"change": 0}, {"change": 1}])
def test_composite_saved_operands_as_pytorch(case, device):
    assert _reading(ember, device, **case) == _reading(torch, "cpu", **case)


def test_composite_saved_operands_are_the_inputs(device):
    a, b = _operands(ember, device)
    fn = ember.addcmul(a, a, b, value=0.5).grad_fn
    assert fn._saved_tensor1 is a and fn._saved_tensor2 is b and fn._saved_value == 0.5
    x = ember.tensor([3.0, -4.0], requires_grad=True, device=device)
    assert ember.linalg.vector_norm(x).grad_fn._saved_self is x


@pytest.mark.parametrize("op", ["index_select", "scatter", "scatter_add", "scatter_reduce", "index_fill"])
def test_saved_index_is_the_index_and_freed(op, device):
    x = ember.rand(3, 4, requires_grad=True, device=device)
    index = ember.tensor([[0, 2], [1, 1], [3, 0]], device=device)
    row = index[0]
    calls = {"index_select": lambda: x.index_select(1, row),
             "scatter": lambda: x.scatter(1, index, 1.0), "scatter_add": lambda: x.scatter_add(1, index, x[:, :2]),
             "scatter_reduce": lambda: x.scatter_reduce(1, index, x[:, :2], "amax"),
             "index_fill": lambda: x.index_fill(1, row, 0.0)}
    y = calls[op]()
    fn = y.grad_fn
    want = row if op in ("index_select", "index_fill") else index
    assert fn._saved_index is want
    y.sum().backward()
    with pytest.raises(RuntimeError, match="already been freed"):
        fn._saved_index  # noqa: B018


def test_decomposition_outputs_by_name(device):
    data = np.random.default_rng(7).random((3, 3)) + 3 * np.eye(3)
    at, ae = _pair(device, data)
    qt, rt = torch.linalg.qr(at)
    qe, re = ember.linalg.qr(ae)
    fn = qe.grad_fn
    assert fn._saved_Q.grad_fn is fn and fn._saved_R.grad_fn is fn
    np.testing.assert_allclose(fn._saved_Q.detach().cpu().numpy(), qt.grad_fn._saved_Q.detach().numpy())
    assert ember.linalg.inv(ae).grad_fn._saved_inverse is not None
    (qe.sum() + re.sum()).backward()
    with pytest.raises(RuntimeError, match="already been freed"):
        fn._saved_R  # noqa: B018
    with pytest.raises(RuntimeError, match="second time"):  # (its saved outputs are gone, as PyTorch's)
        (qe.sum() + re.sum()).backward()


def _decomposition_reads(m, device):
    """A solve's and a slogdet's other saved values, read by name after their operand changed in place (reading
    one does not build the LU, which ember makes from the operand when read)."""
    x = m.tensor([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]], dtype=m.float64, requires_grad=True)
    kw = {"device": device} if m is ember else {}
    y, z = x.to(**kw) * 1, x.to(**kw) * 1
    sol = m.linalg.solve(y, m.ones(3, 1, dtype=m.float64, **kw))
    _, logdet = m.linalg.slogdet(z)
    lu = sol.grad_fn._saved_LU.cpu().tolist(), sol.grad_fn._saved_pivots.cpu().tolist()
    with m.no_grad():
        y.add_(1)
        z.add_(1)
    return sol.grad_fn._saved_left, logdet.grad_fn._saved_sign.item(), lu


def test_decompositions_read_one_saved_value_without_the_others(device):
    assert _decomposition_reads(ember, device) == _decomposition_reads(torch, "cpu")


def test_overload_node_names_and_saved_fields_survive_tracing_and_compile_capture(device):
    """Nodes named per overload at creation keep their names while a graph is traced (jit.trace, compile's first
    call) as in eager mode, and as PyTorch names them."""
    def f(x, v, w):
        return x.unsqueeze(0).sum(1), x @ v, v.dot(v), ember.nn.functional.linear(x, w)

    x, v, w = (ember.randn(*s, device=device, requires_grad=True) for s in ((3, 4), (4,), (5, 4)))
    eager = [o.grad_fn.name() for o in f(x, v, w)]
    traced = []
    ember.jit.trace(lambda *a: traced.extend(o.grad_fn.name() for o in f(*a)) or f(*a)[0], (x, v, w))
    captured = [o.grad_fn.name() for o in ember.compile(f)(x, v, w)]
    assert eager == captured == traced[:4] == ["SumBackward1", "MvBackward0", "DotBackward0", "MmBackward0"]
    assert f(x, v, w)[1].grad_fn._saved_vec is not None
