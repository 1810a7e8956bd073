"""Float32 uniforms (``rand``, and the dropout masks drawn from them): range, resolution and distribution."""
import numpy as np

import ember


def _ks_uniform(u):
    """Kolmogorov-Smirnov distance of the samples ``u`` from U[0, 1)."""
    u = np.sort(u.astype(np.float64))
    n = u.size
    return max(np.max(np.arange(1, n + 1) / n - u), np.max(u - np.arange(n) / n))


def test_rand_float32_range_and_distribution(device):
    g = ember.Generator(device=device).manual_seed(3)
    n = 200_000
    u = ember.rand(n, generator=g, device=device)
    assert u.dtype == ember.float32
    a = u.cpu().numpy()
    assert a.min() >= 0.0 and a.max() < 1.0
    # KS distance of n uniform draws: 1.63 / sqrt(n) is its 1% critical value
    assert _ks_uniform(a) < 1.63 / np.sqrt(n)
    assert abs(a.mean() - 0.5) < 4 * np.sqrt(1 / 12 / n)
    assert np.unique(a).size > 0.98 * n  # (24-bit resolution: few repeats among 2e5 draws)


def test_rand_reproducible_by_seed(device):
    ember.manual_seed(11)
    a = ember.rand(1000, device=device)
    ember.manual_seed(11)
    b = ember.rand(1000, device=device)
    assert ember.equal(a, b)
    assert not ember.equal(a, ember.rand(1000, device=device))


def test_dropout_float32_keep_rate(device):
    ember.manual_seed(5)
    n, p = 400_000, 0.3
    y = ember.nn.functional.dropout(ember.ones(n, device=device), p=p, training=True).cpu().numpy()
    dropped = np.mean(y == 0)
    assert abs(dropped - p) < 4 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(y[y != 0], 1 / (1 - p), rtol=1e-6)
