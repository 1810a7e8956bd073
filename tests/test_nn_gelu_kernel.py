"""gelu's float32 kernel (a polynomial normal tail evaluated in cache-sized chunks) against PyTorch (atol 1e-5:
the array-API backend's series erf is good to ~6e-6; the NumPy kernel to ~2.4e-7)."""
import numpy as np
import pytest

import ember


def test_gelu_float32_matches_torch_across_chunks(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    # three and a bit chunks, spanning the tail out past float32's range of Phi(x)
    a = np.concatenate([rng.standard_normal(70000) * 4, rng.uniform(-16, 16, 30005),
                        [0.0, -0.0, 1e-30, -1e-30, 5e-39, 8.0, -8.0, 13.5, -13.5, 1e30, -1e30]]).astype(np.float32)
    x = ember.tensor(a, device=device)
    got = ember.nn.functional.gelu(x).cpu().numpy()
    want = torch.nn.functional.gelu(torch.from_numpy(a)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-5)
    assert np.array_equal(np.signbit(got[a == 0]), np.signbit(a[a == 0]))
    # a strided input, and an unchanged input
    np.testing.assert_allclose(ember.nn.functional.gelu(x[::3]).cpu().numpy(), want[::3], rtol=2e-6, atol=1e-5)
    assert np.array_equal(x.cpu().numpy(), a)


def test_gelu_float32_nonfinite_follow_the_formula(device):
    torch = pytest.importorskip("torch")
    a = np.linspace(-5, 5, 40000, dtype=np.float32)
    a[[7, 20000, 39990]] = [np.nan, -np.inf, np.inf]
    got = ember.nn.functional.gelu(ember.tensor(a, device=device)).cpu().numpy()
    want = torch.nn.functional.gelu(torch.from_numpy(a.astype(np.float64))).numpy()
    finite = np.isfinite(a)
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-6, atol=1e-5)
    # x * 0.5 * (1 + erf(x / sqrt 2)): nan stays nan, -inf gives nan (-inf * 0), inf gives inf
    assert np.isnan(got[7]) and np.isnan(got[20000]) and got[39990] == np.inf
