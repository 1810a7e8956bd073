"""``F.linear_cross_entropy`` and its loss module against PyTorch: the reference path and the path chunked
over the batch, each reduction, weights, ignored targets, label smoothing and options (its rows, every check,
run in tests/test_kit.py with ember.testing.rows_nn)."""
import warnings

import numpy as np
import pytest

import ember


def _np(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------------------------ linear_cross_entropy
def _lce_case(rng, probs, n=10, d=4, c=7):
    x, w, b = rng.standard_normal((n, d)), rng.standard_normal((c, d)), rng.standard_normal(c)
    if probs:
        t = rng.random((n, c))
        t /= t.sum(1, keepdims=True)
    else:
        t = rng.integers(0, c, n)
        t[3] = -100
    return x, w, b, t, rng.random(c) + 0.5


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("probs", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing,weighted", [(0.0, False), (0.2, True)])
@pytest.mark.filterwarnings("ignore:linear_cross_entropy")  # configurations the chunked path leaves to the reference
def test_linear_cross_entropy_matches_pytorch(device, torch, chunked, probs, reduction, label_smoothing, weighted):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    rng = np.random.default_rng(0)
    x, w, b, t, cw = _lce_case(rng, probs)
    opts = ember.nn.LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method=None) if chunked else None
    X, W, B = (ember.tensor(v, device=device, requires_grad=True) for v in (x, w, b))
    tX, tW, tB = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    out = ember.nn.functional.linear_cross_entropy(
        X, W, ember.tensor(t, device=device), linear_bias=B,
        weight=ember.tensor(cw, device=device) if weighted else None, reduction=reduction,
        label_smoothing=label_smoothing, options=opts)
    ref = torch.nn.functional.linear_cross_entropy(
        tX, tW, torch.tensor(t), linear_bias=tB, weight=torch.tensor(cw) if weighted else None,
        reduction=reduction, label_smoothing=label_smoothing)
    np.testing.assert_allclose(_np(out), ref.detach().numpy(), rtol=1e-10)
    assert (type(out.grad_fn).__name__ == "LinearCrossEntropyChunkedBackward0") == (
        chunked and not probs and label_smoothing == 0)
    go = rng.standard_normal(tuple(ref.shape))
    out.backward(ember.tensor(go, device=device))
    ref.backward(torch.tensor(go))
    for e, r in ((X, tX), (W, tW), (B, tB)):
        np.testing.assert_allclose(_np(e.grad), r.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_linear_cross_entropy_reference_path_gradgradcheck(device):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    x = ember.randn(4, 3, dtype=ember.float64, device=device, requires_grad=True)
    w = ember.randn(5, 3, dtype=ember.float64, device=device, requires_grad=True)
    t = ember.tensor([0, 4, 2, 1], device=device)
    f = lambda a, b: ember.nn.functional.linear_cross_entropy(a, b, t)  # noqa: E731
    assert ember.autograd.gradcheck(f, (x, w))
    assert ember.autograd.gradgradcheck(f, (x, w))


def test_linear_cross_entropy_chunked_backward_once_unless_allowed(device):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    x = ember.randn(8, 3, device=device, requires_grad=True)
    w = ember.randn(6, 3, device=device, requires_grad=True)
    t = ember.randint(0, 6, (8,), device=device)
    F = ember.nn.functional
    loss = F.linear_cross_entropy(x, w, t, options=ember.nn.LinearCrossEntropyOptions(batch_chunk_size=2,
                                                                                        chunking_method=None))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="allow_retain_graph"):
        loss.backward()
    g = x.grad.clone()
    x.grad = None
    loss = F.linear_cross_entropy(x, w, t, options=ember.nn.LinearCrossEntropyOptions(allow_retain_graph=True))
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(_np(x.grad), 2 * _np(g), rtol=1e-5)


def test_linear_cross_entropy_options_and_errors(torch):
    O, TO = ember.nn.LinearCrossEntropyOptions, torch.nn.LinearCrossEntropyOptions
    for kwargs in ({"acc_policy": "fast"}, {"chunking_method": "square"}, {"batch_chunk_size": 0},
                   {"chunking_method": "aspect_ratio:0"}):
        with pytest.raises(ValueError):
            TO(**kwargs)
        with pytest.raises(ValueError):
            O(**kwargs)
    for kwargs in ({}, {"chunking_method": "aspect_ratio"}, {"chunking_method": "aspect_ratio:4"},
                   {"batch_chunk_size": 16}, {"batch_chunk_size": 4096, "chunking_method": None}):
        assert O(**kwargs).chunk_size(1000, 64, 512) == TO(**kwargs)._adjust(1000, 64, 512, torch.float32) \
            .batch_chunk_size
    with pytest.raises(ValueError, match="different chunk sizes"):
        O(batch_chunk_size=3, chunking_method="aspect_ratio").chunk_size(1000, 64, 512)
    F = ember.nn.functional
    with pytest.raises(ValueError, match="reduction"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 1]), reduction="avg")
    with pytest.raises(RuntimeError, match="linear_weight"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 2), ember.tensor([0, 1]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), ember.tensor([0, 9]), options=O())
    for kw in ({"label_smoothing": 0.1}, {}):
        t = ember.tensor([0, 1]) if kw else ember.full((2, 4), 0.25)
        with pytest.warns(UserWarning, match="options`` ignored"):
            F.linear_cross_entropy(ember.ones(2, 3), ember.ones(4, 3), t, options=O(), **kw)


def test_linear_cross_entropy_loss_module_matches_pytorch(device, torch):
    if ember.device(device).type == "meta":
        pytest.skip("meta tensors have no values")
    m = ember.nn.LinearCrossEntropyLoss(5, 10, out_features=(4, 3), bias=True).to(device)
    tm = torch.nn.LinearCrossEntropyLoss(5, 10, out_features=(4, 3), bias=True).double()
    assert m.linear.weight.shape == tuple(tm.linear.weight.shape) == (120, 5)
    with torch.no_grad():
        tm.linear.weight.copy_(torch.tensor(_np(m.linear.weight), dtype=torch.float64))
        tm.linear.bias.copy_(torch.tensor(_np(m.linear.bias), dtype=torch.float64))
    x = np.random.default_rng(0).standard_normal((2, 5))
    t = np.random.default_rng(1).integers(0, 10, (2, 4, 3))
    out = m(ember.tensor(x, dtype=ember.float32, device=device), ember.tensor(t, device=device))
    ref = tm(torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # K-dimensional losses take the reference path, with a warning
        out2 = ember.nn.LinearCrossEntropyLoss(5, 10, out_features=(2,), options=ember.nn.LinearCrossEntropyOptions())
    assert out2.options is not None
    with pytest.raises(RuntimeError, match="weight shape"):
        ember.nn.LinearCrossEntropyLoss(5, 10, weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="label_smoothing"):
        ember.nn.LinearCrossEntropyLoss(5, 10, label_smoothing=2.0)
