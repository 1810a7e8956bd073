"""Tiny-input paths of softmax, matmul and multinomial against PyTorch (values, gradients, dtypes, edge sizes:
empty, 1x1, non-contiguous), and dims given as bools refused as PyTorch refuses them."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SHAPES = [(4,), (4, 4), (1, 1), (0, 3), (3, 0)]


def _pair(shape, device, transpose=False, dtype=np.float64):
    a = np.random.default_rng(len(shape) + sum(shape)).standard_normal(shape).astype(dtype)
    e = ember.tensor(a, device=device, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    return (e.t(), t.t()) if transpose else (e, t)


def _close(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_softmax_tiny_matches_torch(shape, device):
    for transpose in ((False, True) if len(shape) == 2 else (False,)):
        e, t = _pair(shape, device, transpose)
        for dim in (-1, 0):
            ye, yt = e.softmax(dim), t.softmax(dim)
            _close(ye, yt)
            g = np.arange(ye.numel(), dtype=np.float64).reshape(tuple(ye.shape))
            (ge,) = ember.autograd.grad(ye, e, ember.tensor(g, device=device))
            (gt,) = torch.autograd.grad(yt, t, torch.tensor(g))
            _close(ge, gt)
    x = ember.tensor([[1.0, 2.0]], device=device)
    assert ember.softmax(x, -1).dtype is ember.float32
    assert ember.nn.functional.softmax(x, -1, dtype=ember.float64).dtype is ember.float64


@pytest.mark.parametrize("shapes", [((4, 4), (4, 4)), ((1, 1), (1, 1)), ((0, 3), (3, 2)), ((2, 3), (3, 0)),
                                    ((4,), (4, 4)), ((4, 4), (4,))], ids=str)
def test_matmul_tiny_matches_torch(shapes, device):
    (ea, ta), (eb, tb) = _pair(shapes[0], device), _pair(shapes[1][::-1], device, transpose=len(shapes[1]) == 2)
    if len(shapes[1]) == 1:
        (eb, tb) = _pair(shapes[1], device)
    ye, yt = ea @ eb, ta @ tb
    _close(ye, yt)
    g = np.ones(tuple(ye.shape))
    ge = ember.autograd.grad(ye, (ea, eb), ember.tensor(g, device=device))
    gt = torch.autograd.grad(yt, (ta, tb), torch.tensor(g))
    for a, b in zip(ge, gt):
        _close(a, b)
    f32 = ember.ones(2, 2, device=device)
    assert (f32 @ f32).dtype is ember.float32
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes"):
        f32 @ ember.ones(3, 2, device=device)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_multinomial_shapes_dtypes_and_draws(dtype, device):
    d = getattr(ember, dtype)
    if not ember.testing.has_dtype(device, d):
        pytest.skip(f"the {device} backend has no {dtype}")
    w = ember.tensor([0.0, 3.0, 0.0, 1.0], dtype=d, device=device)
    before = w.clone()
    for probs, lead in ((w, ()), (ember.stack([w, w.flip(0)]), (2,)), (ember.stack([w, w]).t().t(), (2,))):
        for replacement, n in ((True, 7), (False, 2), (False, 1)):
            r = ember.multinomial(probs, n, replacement)
            assert r.dtype is ember.int64 and tuple(r.shape) == lead + (n,)
            rows = probs.reshape(-1, 4)
            picked = rows.gather(1, r.reshape(-1, n))
            assert bool((picked > 0).all())  # never a category of weight 0
    assert ember.equal(w, before)
    draws = ember.multinomial(ember.tensor([1.0, 3.0], dtype=d, device=device), 4000, True).double().mean()
    assert abs(float(draws) - 0.75) < 0.05
    rows = ember.tensor([[1.0, 3.0]], dtype=d, device=device).expand(4000, 2)  # one draw a row, no replacement
    assert abs(float(ember.multinomial(rows, 1).double().mean()) - 0.75) < 0.05
    ember.manual_seed(3)
    a = ember.multinomial(w, 5, True)
    ember.manual_seed(3)
    assert ember.equal(a, ember.multinomial(w, 5, True))
    out = ember.empty(5, dtype=ember.int64, device=device)
    assert ember.multinomial(w, 5, True, out=out) is out
    grad_w = ember.tensor([1.0, 2.0], device=device, requires_grad=True)
    assert not ember.multinomial(grad_w, 2, True).requires_grad


@pytest.mark.parametrize("probs", [[1.0, float("nan")], [1.0, float("inf")], [1.0, -1.0], [0.0, 0.0],
                                   [[1.0, 1.0], [0.0, 0.0]], [[1.0, float("nan")], [1.0, 1.0]]], ids=str)
def test_multinomial_bad_weights_as_torch(probs, device):
    with pytest.raises(RuntimeError) as te:
        torch.multinomial(torch.tensor(probs), 1)
    with pytest.raises(RuntimeError) as ee:
        ember.multinomial(ember.tensor(probs, device=device), 1)
    assert str(te.value).split(":")[-1].strip()[:20] in str(ee.value)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0,)], ids=str)
def test_multinomial_empty_as_torch(shape, device):
    for replacement in (True, False):
        try:
            expected = tuple(torch.multinomial(torch.ones(shape), 2, replacement).shape)
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match=str(exc).split("(")[0][:30]):
                ember.multinomial(ember.ones(shape, device=device), 2, replacement)
        else:
            assert tuple(ember.multinomial(ember.ones(shape, device=device), 2, replacement).shape) == expected


CALLS = [lambda m, x: x.unsqueeze(True), lambda m, x: x.sum(True), lambda m, x: x.softmax(True),
         lambda m, x: x.transpose(True, 0), lambda m, x: m.cat([x, x], True), lambda m, x: x.cumsum(False),
         lambda m, x: x.argmax(True), lambda m, x: x.select(True, 0), lambda m, x: x.narrow(False, 0, 1)]


@pytest.mark.parametrize("call", CALLS, ids=range(len(CALLS)))
def test_bool_dim_is_a_type_error(call, device):
    with pytest.raises(TypeError):
        call(torch, torch.ones(2, 3))
    x = ember.ones(2, 3, device=device)
    with pytest.raises(TypeError, match="must be int, not bool"):
        call(ember, x)
    assert tuple(x.shape) == (2, 3)
    assert tuple(x.unsqueeze(np.int64(1)).shape) == tuple(torch.ones(2, 3).unsqueeze(np.int64(1)).shape)
