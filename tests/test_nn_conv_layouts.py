"""Convolution in both column layouts (short and long output rows) and max pooling on windows that tile the
input, with ties, against PyTorch: values and every gradient."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close


def _pair(torch, shape, device, seed, integers=False):
    rng = np.random.default_rng(seed)
    a = (rng.integers(0, 3, shape) if integers else rng.standard_normal(shape)).astype(np.float32)
    return ember.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("width", [9, 20], ids=["short-rows", "long-rows"])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_both_layouts(device, torch, width, groups):
    ex, tx = _pair(torch, (3, 4, 7, width), device, 1)
    ew, tw = _pair(torch, (6, 4 // groups, 3, 3), device, 2)
    eb, tb = _pair(torch, (6,), device, 3)
    eF, tF = ember.nn.functional, torch.nn.functional
    eo = eF.conv2d(ex, ew, eb, stride=1, padding=1, groups=groups)
    to = tF.conv2d(tx, tw, tb, stride=1, padding=1, groups=groups)
    assert_close(eo, to, rtol=1e-4, atol=1e-5)
    (eo * eo).sum().backward()
    (to * to).sum().backward()
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        assert_close(e.grad, t.grad, rtol=1e-4, atol=1e-3)


def test_conv_columns_are_not_shared_between_live_results(device, torch):
    w = ember.randn(2, 1, 3, 3, device=device)
    a = ember.nn.functional.conv2d(ember.ones(1, 1, 8, 20, device=device), w)
    b = ember.nn.functional.conv2d(ember.zeros(1, 1, 8, 20, device=device), w)
    assert float(a.abs().sum()) > 0 and float(b.abs().sum()) == 0


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_pool_tiling_with_ties(device, torch, dims):
    shape = (2, 3) + (8,) * dims
    ex, tx = _pair(torch, shape, device, 4, integers=True)  # small integers: many ties in each window
    ef = getattr(ember.nn.functional, f"max_pool{dims}d")
    tf = getattr(torch.nn.functional, f"max_pool{dims}d")
    eo, to = ef(ex.relu(), 2), tf(tx.relu(), 2)
    assert_close(eo, to)
    (eo * ember.arange(eo.numel(), device=device).reshape(eo.shape)).sum().backward()
    (to * torch.arange(to.numel()).reshape(to.shape)).sum().backward()
    assert_close(ex.grad, tx.grad)
