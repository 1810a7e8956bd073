"""Winograd F(2x2, 3x3) convolutions (3x3 kernel, stride 1, dilation 1) against PyTorch, with the path forced
on and off: the output, the input gradient and the weight gradient (float32 at the Winograd transforms' error,
float64 tightly), gradcheck and gradgradcheck through the path, and the rule that picks it."""
import numpy as np
import pytest

import ember
import ember.kernels.conv as conv_kernels
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close


@pytest.fixture(autouse=True)
def _own_kernels():
    """These are tests of ember's own convolution kernels: faster ones a plugin installed are set aside."""
    with ember.testing.builtin_kernels("cpu", "conv_forward", "conv_input_grad", "conv_weight_grad"):
        yield


F = ember.nn.functional


@pytest.fixture(params=[True, False], ids=["winograd", "im2col"])
def path(request, monkeypatch):
    monkeypatch.setattr(conv_kernels, "WINOGRAD", request.param)
    return request.param


def _pair(torch, shape, device, seed, dtype):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)


# (batch, in channels, out channels, height, width, padding, bias)
SHAPES = [
    (2, 3, 4, 8, 8, 1, True),      # even sizes: whole tiles
    (2, 3, 4, 7, 9, 1, False),     # odd sizes: the last tiles cropped
    (1, 1, 1, 1, 1, 1, True),      # 1x1 image, one channel
    (3, 2, 5, 2, 2, 1, True),      # 2x2 image
    (2, 4, 3, 6, 5, 0, True),      # no padding
    (1, 2, 2, 3, 4, 2, False),     # padding 2: whole tiles of zeros
    (4, 16, 24, 5, 6, 1, True),    # many channels, several samples
    (1, 5, 1, 3, 3, 0, False),     # a 1x1 output: one tile, three quarters cropped
    (2, 3, 2, 3, 6, 0, True),      # one output row
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "n{}c{}o{}_{}x{}p{}{}".format(*s[:6], "b" if s[6] else ""))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_values_and_gradients(device, torch, path, shape, dtype):
    n, c, o, h, w, p, bias = shape
    ex, tx = _pair(torch, (n, c, h, w), device, 1, dtype)
    ew, tw = _pair(torch, (o, c, 3, 3), device, 2, dtype)
    eb, tb = _pair(torch, (o,), device, 3, dtype) if bias else (None, None)
    ey, ty = F.conv2d(ex, ew, eb, padding=p), torch.nn.functional.conv2d(tx, tw, tb, padding=p)
    assert (ey.grad_fn.cols.ndim == 5) == path  # the transformed input is what the weight gradient reuses
    # float32: the transforms add a few roundings per product sum; float64 tightly
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    assert_close(ey, ty, **tol)
    g = np.random.default_rng(4).standard_normal(tuple(ty.shape)).astype(dtype)
    ey.backward(ember.tensor(g, device=device))
    ty.backward(torch.tensor(g))
    assert_close(ex.grad, tx.grad, **tol)
    assert_close(ew.grad, tw.grad, **tol)
    if bias:
        assert_close(eb.grad, tb.grad, **tol)


def test_conv2d_asymmetric_same_padding(device, torch, path):
    ex, tx = _pair(torch, (2, 3, 7, 6), device, 5, "float64")
    ew, tw = _pair(torch, (4, 3, 3, 3), device, 6, "float64")
    ey, ty = F.conv2d(ex, ew, padding="same"), torch.nn.functional.conv2d(tx, tw, padding="same")
    assert_close(ey, ty, rtol=1e-10, atol=1e-10)
    ey.sum().backward()
    ty.sum().backward()
    assert_close(ex.grad, tx.grad, rtol=1e-10, atol=1e-10)
    assert_close(ew.grad, tw.grad, rtol=1e-10, atol=1e-10)


def test_conv2d_non_contiguous_input(device, torch, path):
    ex, tx = _pair(torch, (5, 4, 3, 6), device, 7, "float64")
    ew, tw = _pair(torch, (3, 3, 3, 3), device, 8, "float64")
    ey = F.conv2d(ex.permute(2, 1, 0, 3)[:, :3], ew, padding=1)
    ty = torch.nn.functional.conv2d(tx.permute(2, 1, 0, 3)[:, :3], tw, padding=1)
    assert_close(ey, ty, rtol=1e-10, atol=1e-10)
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    assert_close(ex.grad, tx.grad, rtol=1e-10, atol=1e-10)
    assert_close(ew.grad, tw.grad, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_conv_transpose2d_stride_one(device, torch, path, padding):
    """The transposed convolution is the input-gradient kernel: Winograd's adjoint transforms directly."""
    ex, tx = _pair(torch, (2, 4, 5, 7), device, 9, "float64")
    ew, tw = _pair(torch, (4, 3, 3, 3), device, 10, "float64")
    ey = F.conv_transpose2d(ex, ew, padding=padding)
    ty = torch.nn.functional.conv_transpose2d(tx, tw, padding=padding)
    assert_close(ey, ty, rtol=1e-10, atol=1e-10)
    ey.sum().backward()
    ty.sum().backward()
    assert_close(ex.grad, tx.grad, rtol=1e-10, atol=1e-10)
    assert_close(ew.grad, tw.grad, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("hw,padding", [((5, 4), 1), ((3, 3), 0), ((2, 3), 2)])
def test_gradcheck_and_gradgradcheck(device, path, hw, padding):
    g = ember.Generator().manual_seed(0)
    x = ember.randn(2, 2, *hw, dtype=ember.float64, generator=g).to(device).requires_grad_()
    w = ember.randn(3, 2, 3, 3, dtype=ember.float64, generator=g).to(device).requires_grad_()
    b = ember.randn(3, dtype=ember.float64, generator=g).to(device).requires_grad_()

    def fn(x, w, b):
        return F.conv2d(x, w, b, padding=padding)

    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_double_backward_matches_torch(device, torch, path):
    ex, tx = _pair(torch, (2, 3, 6, 5), device, 11, "float64")
    ew, tw = _pair(torch, (4, 3, 3, 3), device, 12, "float64")
    ey, ty = F.conv2d(ex, ew, padding=1), torch.nn.functional.conv2d(tx, tw, padding=1)
    egx, egw = ember.autograd.grad((ey * ey).sum(), (ex, ew), create_graph=True)
    tgx, tgw = torch.autograd.grad((ty * ty).sum(), (tx, tw), create_graph=True)
    assert_close(egx, tgx, rtol=1e-10, atol=1e-10)
    assert_close(egw, tgw, rtol=1e-10, atol=1e-10)
    ((egx * egx).sum() + (egw ** 3).sum()).backward()
    ((tgx * tgx).sum() + (tgw ** 3).sum()).backward()
    assert_close(ex.grad, tx.grad, rtol=1e-9, atol=1e-9)
    assert_close(ew.grad, tw.grad, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_channels_float32_error(device, torch, path, dtype):
    """ResNet-like channel counts: the float32 error of the transforms stays within 1e-4 of the result's scale."""
    ex, tx = _pair(torch, (2, 128, 6, 6), device, 13, dtype)
    ew, tw = _pair(torch, (64, 128, 3, 3), device, 14, dtype)
    ey, ty = F.conv2d(ex, ew, padding=1), torch.nn.functional.conv2d(tx, tw, padding=1)
    scale = float(ty.detach().abs().max())
    assert_close(ey, ty, rtol=0, atol=1e-5 * scale if dtype == "float32" else 1e-12 * scale)
    ey.sum().backward()
    ty.sum().backward()
    for e, t in ((ex.grad, tx.grad), (ew.grad, tw.grad)):
        s = float(t.abs().max())
        assert_close(e, t, rtol=0, atol=1e-5 * s if dtype == "float32" else 1e-12 * s)


def test_other_geometries_stay_on_im2col(device, monkeypatch):
    """Forced on, Winograd still takes only 3x3 kernels at stride 1, dilation 1, one group, float32/64."""
    monkeypatch.setattr(conv_kernels, "WINOGRAD", True)
    x = ember.randn(1, 4, 6, 6, device=device, requires_grad=True)
    w3 = ember.randn(4, 4, 3, 3, device=device, requires_grad=True)
    assert F.conv2d(x, w3, padding=1).grad_fn.cols.ndim == 5
    assert F.conv2d(x, w3, stride=2).grad_fn.cols.ndim != 5
    assert F.conv2d(x, w3, dilation=2).grad_fn.cols.ndim != 5
    assert F.conv2d(x, ember.randn(4, 2, 3, 3, device=device), groups=2).grad_fn.cols.ndim != 5
    assert F.conv2d(x, ember.randn(4, 4, 5, 5, device=device)).grad_fn.cols.ndim != 5
    assert F.conv1d(x[:, :, 0], ember.randn(4, 4, 3, device=device)).grad_fn.cols.ndim != 5


def test_rule_picks_winograd_for_wide_layers(device, monkeypatch):
    monkeypatch.setattr(conv_kernels, "WINOGRAD", None)
    wide = F.conv2d(ember.randn(4, 128, 14, 14, device=device, requires_grad=True),
                    ember.randn(128, 128, 3, 3, device=device), padding=1)
    narrow = F.conv2d(ember.randn(2, 3, 14, 14, device=device, requires_grad=True),
                      ember.randn(8, 3, 3, 3, device=device), padding=1)
    few_tiles = F.conv2d(ember.randn(2, 128, 4, 4, device=device, requires_grad=True),
                         ember.randn(128, 128, 3, 3, device=device), padding=1)
    assert wide.grad_fn.cols.ndim == 5
    assert narrow.grad_fn.cols.ndim != 5
    assert few_tiles.grad_fn.cols.ndim != 5


def test_rule_bounds_narrow_layers_by_transformed_size(device, monkeypatch):
    # 64 channels: Winograd up to WINO_NARROW_BYTES of transformed input (ResNet-18's 56x56 stage at batch 8),
    # im2col beyond it
    monkeypatch.setattr(conv_kernels, "WINOGRAD", None)
    w = ember.randn(64, 64, 3, 3, device=device)
    x = ember.randn(2, 64, 56, 56, device=device, requires_grad=True)
    assert F.conv2d(x, w, padding=1).grad_fn.cols.ndim == 5
    monkeypatch.setattr(conv_kernels, "WINO_NARROW_BYTES", 64 * 2 * 28 * 28 * 64 - 1)
    assert F.conv2d(x, w, padding=1).grad_fn.cols.ndim != 5
