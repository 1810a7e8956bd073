"""ember.autograd.functional against torch.autograd.functional: values, nesting, create_graph, strict."""
import numpy as np
import pytest

import ember
import ember.autograd.functional as AF
from ember.testing import assert_close


def _pair(torch, device, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    return (tuple(ember.tensor(a, device=device) for a in arrays), tuple(torch.tensor(a) for a in arrays))


def _close(a, b):
    """Nested tuples of tensors agree in structure and values."""
    if isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    else:
        assert isinstance(a, ember.Tensor), type(a)
        assert_close(a, b)


def f_one(m, x):
    return (x ** 2).sin() * x.sum()


def f_two(m, x, y):
    return (x * y.exp()).sum(), x.sin() * 2 + y


def f_scalar(m, x, y):
    return (x ** 3 * y).sum() + (x * y).sum() ** 2


CASES = [
    ("one", f_one, [(3,)]),
    ("one-2d", f_one, [(2, 3)]),
    ("two", f_two, [(3,), (3,)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_matches_torch(device, torch, name, fn, shapes, vectorize):
    (e_in, t_in) = _pair(torch, device, *shapes)
    one = len(shapes) == 1
    e = AF.jacobian(lambda *a: fn(ember, *a), e_in[0] if one else e_in, vectorize=vectorize)
    t = torch.autograd.functional.jacobian(lambda *a: fn(torch, *a), t_in[0] if one else t_in, vectorize=vectorize)
    _close(e, t)


def test_jacobian_forward_mode_strategy(device, torch):
    (e_in, t_in) = _pair(torch, device, (3,), (3,))
    e = AF.jacobian(lambda *a: f_two(ember, *a), e_in, vectorize=True, strategy="forward-mode")
    t = torch.autograd.functional.jacobian(lambda *a: f_two(torch, *a), t_in, vectorize=True, strategy="forward-mode")
    _close(e, t)
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(lambda x: x, e_in[0], strategy="forward-mode")
    with pytest.raises(ValueError, match="strategy"):
        AF.jacobian(lambda x: x, e_in[0], strategy="sideways")


@pytest.mark.parametrize("create_graph", [False, True])
def test_hessian_hvp_vhp_match_torch(device, torch, create_graph):
    (e_in, t_in) = _pair(torch, device, (3,), (3,))
    (e_v, t_v) = _pair(torch, device, (3,), (3,), seed=1)
    e_h = AF.hessian(lambda *a: f_scalar(ember, *a), e_in, create_graph=create_graph)
    t_h = torch.autograd.functional.hessian(lambda *a: f_scalar(torch, *a), t_in, create_graph=create_graph)
    _close(e_h, t_h)
    for name in ("hvp", "vhp", "vjp"):
        e = getattr(AF, name)(lambda *a: f_scalar(ember, *a), e_in, e_v if name != "vjp" else None,
                              create_graph=create_graph)
        t = getattr(torch.autograd.functional, name)(lambda *a: f_scalar(torch, *a), t_in,
                                                     t_v if name != "vjp" else None, create_graph=create_graph)
        _close(e, t)


def test_jvp_vjp_tuple_outputs(device, torch):
    (e_in, t_in) = _pair(torch, device, (3,), (3,))
    (e_v, t_v) = _pair(torch, device, (3,), (3,), seed=2)
    e_out = AF.jvp(lambda *a: f_two(ember, *a), e_in, e_v)
    t_out = torch.autograd.functional.jvp(lambda *a: f_two(torch, *a), t_in, t_v)
    _close(e_out, t_out)
    (e_u, t_u) = _pair(torch, device, (), (3,), seed=3)
    _close(AF.vjp(lambda *a: f_two(ember, *a), e_in, e_u), torch.autograd.functional.vjp(
        lambda *a: f_two(torch, *a), t_in, t_u))


def test_create_graph_results_differentiate_again(device, torch):
    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, device=device, requires_grad=True)
    tx = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    j = AF.jacobian(lambda v: v.exp() * v, x, create_graph=True)
    tj = torch.autograd.functional.jacobian(lambda v: v.exp() * v, tx, create_graph=True)
    assert j.requires_grad
    j.sum().backward()
    tj.sum().backward()
    assert_close(x.grad, tx.grad)
    # without create_graph the result is cut from the graph
    assert not AF.jacobian(lambda v: v.exp(), x).requires_grad


def test_independent_input_gives_zeros_or_strict_error(device, torch):
    x, y = ember.ones(2, device=device), ember.ones(3, device=device)
    jx, jy = AF.jacobian(lambda a, b: a * 2, (x, y))
    assert_close(jy, torch.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        AF.jacobian(lambda a: ember.ones(2, device=device), x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: (a * 2).sum(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True`"):
        AF.jacobian(lambda a: a * 2, x, strict=True, vectorize=True)
    # a linear function has a Hessian independent of the input: strict refuses it
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0"):
        AF.hessian(lambda a: (a * 2).sum(), x, strict=True)
    assert_close(AF.hessian(lambda a: (a * 2).sum(), x), torch.zeros(2, 2))


def test_bad_input(device):
    x = ember.ones(2, device=device)
    with pytest.raises(TypeError, match="inputs given to jacobian must be either a Tensor or a tuple"):
        AF.jacobian(lambda a: a, [x])
    with pytest.raises(RuntimeError, match="v has invalid size: should be"):
        AF.vjp(lambda a: a * 2, x, ember.ones(3, device=device))
    with pytest.raises(RuntimeError, match="single element"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        AF.hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hvp(lambda a: a * 2, x, x)
    assert x.grad is None


def test_pytorch_doc_examples(device):
    # the examples of torch.autograd.functional's docstrings, with import ember as torch
    torch = ember

    def exp_reducer(x):
        return x.exp().sum(dim=1)

    inputs = torch.rand(4, 4, device=device)
    v = torch.ones(4, device=device)
    out, vjp_val = AF.vjp(exp_reducer, inputs, v)
    assert_close(vjp_val, inputs.exp())

    def adder(x, y):
        return 2 * x + 3 * y

    inputs = (torch.rand(2, device=device), torch.rand(2, device=device))
    v = torch.ones(2, device=device)
    _, (gx, gy) = AF.vjp(adder, inputs, v)
    assert gx.tolist() == [2.0, 2.0] and gy.tolist() == [3.0, 3.0]
    _, jv = AF.jvp(adder, inputs, (v, v))
    assert jv.tolist() == [5.0, 5.0]

    def exp_adder(x, y):
        return 2 * x.exp() + 3 * y

    inputs = (torch.rand(2, device=device), torch.rand(2, device=device))
    jx, jy = AF.jacobian(exp_adder, inputs)
    assert_close(jx, ember.diag(2 * inputs[0].exp()))
    assert jy.tolist() == [[3.0, 0.0], [0.0, 3.0]]

    def pow_adder_reducer(x, y):
        return (2 * x.pow(2) + 3 * y.pow(2)).sum()

    inputs = (torch.rand(2, device=device), torch.rand(2, device=device))
    (hxx, hxy), (hyx, hyy) = AF.hessian(pow_adder_reducer, inputs)
    assert hxx.tolist() == [[4.0, 0.0], [0.0, 4.0]] and hyy.tolist() == [[6.0, 0.0], [0.0, 6.0]]
    assert hxy.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    _, (a, b) = AF.hvp(pow_adder_reducer, inputs, (torch.zeros(2, device=device), torch.ones(2, device=device)))
    assert a.tolist() == [0.0, 0.0] and b.tolist() == [6.0, 6.0]
