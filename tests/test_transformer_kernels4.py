"""A transformer step's kernels on their fast paths, against PyTorch: clip_grad_norm_'s sums of squares as one
dot each (non-finite and overflowing gradients, float32 and float64), and ember-onednn's primitives called
again with other arrays, the same arrays and arrays in place (a memory object is pointed again only at a new
address)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")


def _np(t):
    return t.detach().cpu().numpy()


def _params(lib, arrays, device=None):
    """Parameters holding ``arrays`` as their gradients (``lib``: ember or torch)."""
    ps = []
    for a in arrays:
        p = lib.nn.Parameter(lib.zeros(a.shape, dtype=getattr(lib, str(a.dtype)), **(
            {"device": device} if device else {})))
        p.grad = lib.tensor(a, **({"device": device} if device else {}))
        ps.append(p)
    return ps


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "clipped", "inf", "nan", "overflow", "one element"])
def test_clip_grad_norm_matches_torch(device, dtype, case):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((7, 5), (5,), (3, 4, 2), (1,))]
    max_norm = 1e9 if case == "plain" else 0.5
    if case == "inf":
        arrays[1][2] = np.inf
    elif case == "nan":
        arrays[2][0, 1, 1] = np.nan
    elif case == "overflow":  # (squares beyond float32's range: an infinite norm, the gradients scaled by 0)
        arrays[0] *= 1e30
    elif case == "one element":
        arrays = arrays[3:]
    ps, tps = _params(ember, arrays, device), _params(torch, arrays)
    with np.errstate(all="ignore"):
        got = ember.nn.utils.clip_grad_norm_(ps, max_norm)
        want = torch.nn.utils.clip_grad_norm_(tps, max_norm)
    assert got.dtype == ember.float32 if dtype == np.float32 else got.dtype == ember.float64
    tol = dict(rtol=2e-6) if dtype == np.float32 else dict(rtol=1e-13)
    np.testing.assert_allclose(_np(got), want.numpy(), **tol)
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), **tol)


def test_clip_grad_norm_keeps_the_error_for_a_non_finite_norm(device):
    ps = _params(ember, [np.array([1.0, np.inf], np.float32)], device)
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(_np(ps[0].grad), [1.0, np.inf])  # (left untouched)


def test_clip_grad_norm_of_non_contiguous_gradients_matches_torch(device):
    a = np.random.default_rng(2).standard_normal((6, 8)).astype(np.float32)
    p, tp = _params(ember, [a], device)[0], _params(torch, [a])[0]
    p.grad, tp.grad = ember.tensor(a.T.copy(), device=device).t(), torch.tensor(a.T.copy()).t()
    got = ember.nn.utils.clip_grad_norm_([p], 0.1)
    want = torch.nn.utils.clip_grad_norm_([tp], 0.1)
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=2e-6)
    np.testing.assert_allclose(_np(p.grad), tp.grad.numpy(), rtol=2e-6)


def _onednn_layer_norm():
    try:
        from ember_onednn import layer_norm
    except (ImportError, OSError):  # (not installed, or no oneDNN library)
        pytest.skip("ember-onednn is not available")
    return layer_norm


def test_onednn_primitive_called_again_with_other_arrays_matches_torch():
    # the same primitive (one geometry) over new, repeated and alternating arrays: each call reads its own
    onednn_ln = _onednn_layer_norm()
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((64, 128)).astype(np.float32) for _ in range(3)]
    w, b = rng.standard_normal(128).astype(np.float32), rng.standard_normal(128).astype(np.float32)
    kernel = onednn_ln.kernels(lambda name: None)["layer_norm"]
    for x in (xs[0], xs[1], xs[1], xs[0], xs[2], xs[0]):
        y, mean, rstd = kernel(x, w, b, 1, 1e-5)
        want = torch.nn.functional.layer_norm(torch.tensor(x), (128,), torch.tensor(w), torch.tensor(b))
        np.testing.assert_allclose(y, want.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(mean[:, 0], x.mean(1), rtol=1e-5, atol=1e-6)


def test_onednn_matmul_into_a_reused_buffer_matches_torch(device):
    # products whose outputs come back on the same pages call after call, their operands changing in between
    rng = np.random.default_rng(4)
    for _ in range(3):
        a = rng.standard_normal((256, 128)).astype(np.float32)
        w = rng.standard_normal((96, 128)).astype(np.float32)
        got = F.linear(ember.tensor(a, device=device), ember.tensor(w, device=device))
        want = torch.nn.functional.linear(torch.tensor(a), torch.tensor(w))
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-4, atol=1e-4)
        del got
