"""The kernels a transformer's training step spends its time in, on their fast paths, against PyTorch: gelu and
its one-kernel gradient (the CPU backend's float32 form, and oneDNN's primitive where ember-onednn is
installed), values and gradients in float32 and float64, small and chunk-spanning sizes, non-finite inputs, and
second order through the composite formula."""
import contextlib

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")

GELU_KERNELS = ("nn_gelu", "nn_gelu_backward")


def _np(t):
    return t.detach().cpu().numpy()


def _kernel_sets(device):
    """Context managers each running a set of gelu kernels: whatever the backend now has (ember-onednn's where it
    is installed) and, on the CPU, the backend's own."""
    sets = [contextlib.nullcontext]
    if device == "cpu":
        sets.append(lambda: ember.testing.builtin_kernels("cpu", *GELU_KERNELS))
    return sets


def _gelu_both(a, g, approximate, device):
    """``(ember, torch)`` pairs of gelu's value and gradient for NumPy input ``a`` and output gradient ``g``."""
    x = ember.tensor(a, device=device, requires_grad=True)
    y = F.gelu(x, approximate=approximate)
    y.backward(ember.tensor(g, device=device))
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.nn.functional.gelu(tx, approximate=approximate)
    ty.backward(torch.tensor(g))
    return (_np(y), _np(x.grad)), (ty.detach().numpy(), tx.grad.numpy())


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 5), (70001,), (2, 0, 4)])
def test_gelu_value_and_gradient_match_torch(device, approximate, dtype, shape):
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    if dtype == np.float32 and approximate == "tanh":   # (1 + tanh cancels near -inf: PyTorch's own error ~3e-6)
        tol["atol"] = 1e-5
    if device.startswith("array_api"):   # (its series erf is good to ~6e-6)
        tol = dict(rtol=2e-5, atol=2e-5)
    for kernels in _kernel_sets(device):
        with kernels():
            (y, gx), (ty, tgx) = _gelu_both(a, g, approximate, device)
        assert y.dtype == gx.dtype == dtype and y.shape == gx.shape == shape
        np.testing.assert_allclose(y, ty, **tol)
        np.testing.assert_allclose(gx, tgx, **tol)


def test_gelu_gradient_of_strided_and_broadcast_arrays(device):
    a = np.linspace(-7, 7, 2 * 9000, dtype=np.float32).reshape(2, 9000)
    for kernels in _kernel_sets(device):
        with kernels():
            x = ember.tensor(a, device=device, requires_grad=True)
            F.gelu(x[:, ::2]).sum().backward()   # a strided input; a broadcast (zero-stride) output gradient
        tx = torch.tensor(a, requires_grad=True)
        torch.nn.functional.gelu(tx[:, ::2]).sum().backward()
        np.testing.assert_allclose(_np(x.grad), tx.grad.numpy(), rtol=2e-5, atol=2e-6)
        assert np.array_equal(_np(x), a)


def test_gelu_non_finite_inputs(device):
    a = np.linspace(-5, 5, 20000, dtype=np.float32)
    a[[3, 10000, 19990]] = [np.nan, -np.inf, np.inf]
    for kernels in _kernel_sets(device):
        with kernels():
            (y, gx), (_, tgx) = _gelu_both(a, np.ones_like(a), "none", device)
        # the formula's values (PyTorch's float64 kernel): nan stays nan, gelu(-inf) nan, gelu(inf) inf
        assert np.isnan(y[3]) and np.isnan(y[10000]) and y[19990] == np.inf
        # the gradient: NaN at nan and at both infinities, as PyTorch's
        assert np.array_equal(np.isnan(gx), np.isnan(tgx)) and np.isnan(gx[[3, 10000, 19990]]).all()
        finite = np.isfinite(a)
        np.testing.assert_allclose(gx[finite], tgx[finite], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradcheck_and_second_order(device, approximate):
    x = ember.randn(4, 3, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))
    assert ember.autograd.gradgradcheck(lambda t: F.gelu(t, approximate=approximate), (x,))


def test_gelu_gradient_with_graph_matches_the_fast_path(device):
    a = np.random.default_rng(2).standard_normal(9000).astype(np.float32)
    x = ember.tensor(a, device=device, requires_grad=True)
    (fast,) = ember.autograd.grad(F.gelu(x).sum(), x)
    (composite,) = ember.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    assert composite.requires_grad and not fast.requires_grad
    np.testing.assert_allclose(_np(fast), _np(composite), rtol=2e-6, atol=2e-6)
