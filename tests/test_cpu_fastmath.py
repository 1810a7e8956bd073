"""The CPU backend's float32 forms of erf, softmax and its backward, sum/mean/sum_to and index_add
(``ember_cpu_numpy.fastmath``): installed in its kernel table, so eager mode and compiled graphs both use them,
each within float32 tolerance of PyTorch and the replaced kernel serving every other case."""
import copy

import numpy as np
import pytest

import ember
import ember.nn as nn


def _np(t):
    return t.detach().cpu().numpy()


def _numpy_backend(device):
    """The CPU backend's kernel table for ``device``, and the shared library's (skips on other backends)."""
    cpu = pytest.importorskip("ember_cpu_numpy")
    be = ember.empty(1, device=device)._dev.backend
    if not isinstance(be, cpu.NumpyBackend):
        pytest.skip("tests the NumPy backend's own kernels")
    return be.kernels, ember.kernels.library(np)


def test_float32_erf_is_within_a_few_ulp_in_eager_mode(device):
    torch = pytest.importorskip("torch")
    kernels, shared = _numpy_backend(device)
    from ember_cpu_numpy.fastmath import erf_float32
    x = np.concatenate([np.linspace(-6, 6, 200_000, dtype=np.float32), np.logspace(-40, 1, 4000, dtype=np.float32),
                        -np.logspace(-40, 1, 4000, dtype=np.float32)])
    strided = ember.from_numpy(x.reshape(2, -1))[:, ::2]  # (a strided input: read through a copy)
    got = _np(ember.erf(strided)).reshape(-1)
    x = x.reshape(2, -1)[:, ::2].reshape(-1)
    want = torch.erf(torch.from_numpy(x).double()).numpy()
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert got.dtype == np.float32 and np.max(np.abs(got - want) / ulp) < 3
    assert not np.array_equal(got, shared["erf"](x))  # (the eager op went through the faster form)
    special = erf_float32(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30], np.float32))
    assert np.array_equal(special[:4], [0, 0, 1, -1]) and np.signbit(special[1]) and np.isnan(special[4])
    assert special[5] == np.float32(1e-30 * 2 / np.sqrt(np.pi))
    into = np.empty((64, 128), np.float32)[:, ::2]  # (out=, strided as well)
    assert kernels["erf"](x[:4096].reshape(64, 64), out=into) is into
    np.testing.assert_allclose(into.reshape(-1), want[:4096], rtol=4e-7, atol=1e-7)
    small, half = x[:100], x[:8192].astype(np.float16)  # the library's kernel serves, float16 rounded back
    assert np.array_equal(kernels["erf"](small), shared["erf"](small))
    assert kernels["erf"](half).dtype == np.float16 and np.array_equal(kernels["erf"](half), shared["erf"](half))


def test_gelu_network_step_compiled_matches_eager_and_pytorch(device):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 512), nn.GELU(), nn.Linear(512, 4)).to(device)
    twin = copy.deepcopy(model)
    ref = torch.nn.Sequential(torch.nn.Linear(16, 512), torch.nn.GELU(), torch.nn.Linear(512, 4))
    with torch.no_grad():
        for p, q in zip(ref.parameters(), model.parameters()):
            p.copy_(torch.from_numpy(_np(q)))
    compiled = ember.compile(model)
    x = ember.randn(32, 16, device=device)
    tx = torch.from_numpy(_np(x))
    ref(tx).square().sum().backward()
    for _ in range(2):  # (GELU's backward: erf on 16384 float32 elements)
        model.zero_grad()
        twin.zero_grad()
        got, want = compiled(x), twin(x)
        got.square().sum().backward()
        want.square().sum().backward()
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-6)
        for p, q, r in zip(model.parameters(), twin.parameters(), ref.parameters()):
            np.testing.assert_allclose(_np(p.grad), _np(q.grad), rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(_np(q.grad), r.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_reduction_softmax_and_index_add_forms_match_pytorch(device):
    torch = pytest.importorskip("torch")
    fast, shared = _numpy_backend(device)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 4, 16, 32)).astype(np.float32)
    x[..., 3] = -np.inf
    x[0, 0, 0] = -np.inf  # a row with no finite entry: NaN, as in PyTorch
    want = torch.softmax(torch.from_numpy(x).double(), -1).numpy()
    for axis in (3, -1):
        got = fast["softmax"](x, axis)  # (quiet: no warning for the row with no finite entry)
        assert got.dtype == np.float32 and np.isnan(got[0, 0, 0]).all()
        np.testing.assert_allclose(got[0, 0, 1:], want[0, 0, 1:], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got[1:], want[1:], rtol=1e-6, atol=1e-7)
    p = torch.softmax(torch.from_numpy(x[1:]), -1)
    g = torch.randn(p.shape, generator=torch.Generator().manual_seed(0))
    want = torch.ops.aten._softmax_backward_data(g.double(), p.double(), -1, torch.float64).numpy()
    np.testing.assert_allclose(fast["softmax_backward"](g.numpy(), p.numpy(), 3), want, rtol=1e-5, atol=1e-7)
    y = rng.standard_normal((16, 32, 64)).astype(np.float32)
    ty = torch.from_numpy(y).double()
    for axis, keep in ((2, True), (-1, False), ((0, 1), False), ((1,), True), (None, False)):
        dims = tuple(range(3)) if axis is None else axis
        for name, ref in (("sum", ty.sum(dims, keepdim=keep)), ("mean", ty.mean(dims, keepdim=keep))):
            got = fast[name](y, axis, keep)
            assert got.shape == tuple(ref.shape) and got.dtype == np.float32
            np.testing.assert_allclose(got, ref.numpy(), rtol=2e-6, atol=2e-5)
    for shape in ((16, 32, 1), (64,), (32, 64), (16, 1, 64)):
        got = fast["sum_to"](y, shape)
        np.testing.assert_allclose(got, ty.sum_to_size(shape).numpy(), rtol=2e-6, atol=2e-5)
    t = ember.from_numpy(y)  # (the eager ops reach the same kernels)
    np.testing.assert_allclose(_np(t.sum(-1)), ty.sum(-1).numpy(), rtol=2e-6, atol=2e-5)
    np.testing.assert_allclose(_np(ember.softmax(t, -1)), torch.softmax(ty, -1).numpy(), rtol=1e-6, atol=1e-7)
    base = rng.standard_normal((40, 64)).astype(np.float32)
    index = rng.integers(0, 40, 512)
    rows = rng.standard_normal((512, 64)).astype(np.float32)
    want = torch.from_numpy(base).double().index_add(0, torch.from_numpy(index), torch.from_numpy(rows).double())
    before = base.copy()
    got = fast["index_add"](base, 0, index, rows)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    assert np.array_equal(base, before)  # (a new array: the input stays)
    for i in (index - 40, index.clip(0, 39) + 1):  # negative indices: the replaced kernel; one out of range raises
        if i.max() < 40:
            np.testing.assert_allclose(fast["index_add"](base, 0, i, rows), got, rtol=1e-5, atol=1e-5)
        else:
            with pytest.raises(IndexError):
                fast["index_add"](base, 0, i, rows)
    small, wide, strided = y[:2, :2], y.astype(np.float64), y.transpose(2, 1, 0)  # (the replaced kernels serve)
    for a in (small, wide, strided):
        assert np.array_equal(fast["sum"](a, -1, False), shared["sum"](a, -1, False))
        assert np.array_equal(fast["softmax"](a, -1), shared["softmax"](a, -1))
