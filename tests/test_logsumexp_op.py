"""``logsumexp`` as one op against PyTorch: values with infinities and NaN, integer promotion, empty dims, its
gradient with and without a graph being built, double backward, and its node's name and saved values."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close

pytest.importorskip("torch")

CASES = [((3, 4), 1, False), ((3, 4), (0, 1), True), ((2, 3, 4), (0, 2), False), ((2, 3, 4), -1, True),
         ((5,), 0, False), ((), 0, False)]


def test_values_and_gradients(device, torch):
    rng = np.random.default_rng(0)
    for shape, dim, keepdim in CASES:
        a = rng.standard_normal(shape).astype(np.float32)
        x = ember.tensor(a, device=device, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        y, ty = ember.logsumexp(x, dim, keepdim), torch.logsumexp(t, dim, keepdim)
        assert_close(y, ty, msg=f"{shape} {dim} {keepdim}")
        w = rng.standard_normal(ty.shape).astype(np.float32)
        y.backward(ember.tensor(w, device=device))
        ty.backward(torch.tensor(w))
        assert_close(x.grad, t.grad, msg=f"grad {shape} {dim} {keepdim}")


def test_infinities_nan_integers_and_empty(device, torch):
    inf, nan = float("inf"), float("nan")
    rows = [[-inf, -inf], [inf, 1.0], [nan, 1.0], [inf, -inf], [-inf, 2.0], [1e308, 1e308]]
    x = ember.tensor(rows, dtype=ember.float64, device=device, requires_grad=True)
    t = torch.tensor(rows, dtype=torch.float64, requires_grad=True)
    y, ty = x.logsumexp(1), t.logsumexp(1)
    np.testing.assert_array_equal(y.detach().cpu().numpy(), ty.detach().numpy())
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), t.grad.numpy())  # NaN where PyTorch's formula gives it
    ints = [[1, 2, 3], [4, 5, 6]]
    assert_close(ember.logsumexp(ember.tensor(ints, device=device), 1), torch.logsumexp(torch.tensor(ints), 1))
    for shape, dim in (((0, 3), 0), ((3, 0), 0), ((3, 0), 1)):
        assert_close(ember.logsumexp(ember.zeros(shape, device=device), dim),
                     torch.logsumexp(torch.zeros(shape), dim), msg=f"{shape} {dim}")


def test_double_backward(device, torch):
    rng = np.random.default_rng(1)
    for shape, dim, keepdim in CASES[:3]:
        x = ember.tensor(rng.standard_normal(shape), device=device, requires_grad=True)
        assert gradcheck(lambda v, dim=dim, keepdim=keepdim: ember.logsumexp(v, dim, keepdim), (x,))
        assert gradgradcheck(lambda v, dim=dim, keepdim=keepdim: ember.logsumexp(v, dim, keepdim), (x,))
    a = rng.standard_normal((3, 4))
    x = ember.tensor(a, device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    (g,) = ember.autograd.grad(ember.logsumexp(x, 1).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad(torch.logsumexp(t, 1).sum(), t, create_graph=True)
    assert_close(g, tg)
    (g.pow(2).sum()).backward()
    (tg.pow(2).sum()).backward()
    assert_close(x.grad, t.grad)


def test_node_name_and_saved_values(device, torch):
    x = ember.randn(3, 4, device=device, requires_grad=True)
    t = torch.tensor(x.detach().cpu().numpy(), requires_grad=True)
    for dim, keepdim in ((1, False), ((0, 1), True)):
        y, ty = ember.logsumexp(x, dim, keepdim), torch.logsumexp(t, dim, keepdim)
        node, tnode = y.grad_fn, ty.grad_fn
        assert node.name() == tnode.name() == "LogsumexpBackward0"
        assert node._saved_dim == tnode._saved_dim and node._saved_keepdim == tnode._saved_keepdim
        assert node._saved_self is x and tnode._saved_self is t
        assert_close(node._saved_result, tnode._saved_result)
