"""Interop: NumPy arrays and DLPack exchange with NumPy and PyTorch, zero-copy (asserted by writing through)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool"]


def _host(device):
    if device != "cpu":
        pytest.skip("NumPy and CPU PyTorch share host memory only")


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_dlpack_numpy_shares_memory(dtype, device):
    _host(device)
    a = np.arange(6).reshape(2, 3).astype(dtype)
    t = ember.from_dlpack(a)
    assert t.dtype == getattr(ember, dtype) and t.shape == (2, 3)
    t[1, 2] = 0
    assert a[1, 2] == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_to_ember_and_back(dtype, device):
    _host(device)
    src = torch.arange(6).reshape(2, 3).to(getattr(torch, dtype))
    t = ember.from_dlpack(src)
    t[0, 0] = 1
    assert src[0, 0].item() == 1
    back = torch.from_dlpack(t)
    back[1, 1] = 0
    assert t[1, 1].item() == 0
    assert back.dtype == src.dtype


def test_non_contiguous_keeps_strides(device):
    _host(device)
    e = ember.arange(6.0).reshape(2, 3).t()
    tt = torch.from_dlpack(e)
    assert tt.stride() == e.stride() == (1, 3)
    assert ember.from_dlpack(torch.ones(2, 3).t()).stride() == (1, 3)
    np.testing.assert_array_equal(np.from_dlpack(e), e.numpy())


def test_legacy_capsule(device):
    _host(device)
    src = torch.ones(3)
    t = ember.from_dlpack(torch.utils.dlpack.to_dlpack(src))
    src[0] = 5  # a legacy capsule cannot signal writability: NumPy imports it read-only, still shared
    assert t[0].item() == 5


def test_dlpack_device(device):
    t = ember.zeros(2, device=device)
    code, index = t.__dlpack_device__()
    assert code == {"cpu": 1, "cuda": 2}.get(t.device.type, code) and index >= 0
    assert ember.from_dlpack(t) is t


def test_export_requires_grad_refused(device):
    t = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="require gradient"):
        t.__dlpack__()
    assert t.detach().__dlpack__() is not None


def test_from_dlpack_bad_input():
    with pytest.raises(TypeError, match="from_dlpack"):
        ember.from_dlpack([1, 2])


def test_numpy_shares_and_force_copies(device):
    _host(device)
    t = ember.zeros(3)
    n = t.numpy()
    n[0] = 4
    assert t[0].item() == 4
    f = t.numpy(force=True)
    f[1] = 9
    assert t[1].item() == 0
    with pytest.raises(RuntimeError, match="requires grad"):
        ember.ones(2, requires_grad=True).numpy()
    np.testing.assert_array_equal(ember.ones(2, requires_grad=True).numpy(force=True), [1, 1])


def test_from_numpy_as_tensor_asarray_share(device):
    _host(device)
    a = np.zeros(3, dtype=np.float32)
    for t in (ember.from_numpy(a), ember.as_tensor(a), ember.asarray(a)):
        t[2] = t[2] + 1
    assert a[2] == 3
    c = ember.asarray(a, copy=True)
    c[0] = 7
    assert a[0] == 0
    assert ember.as_tensor(torch.ones(2)).dtype == ember.float32


def test_array_protocol(device):
    t = ember.arange(4, device=device).reshape(2, 2)
    a = np.asarray(t)
    np.testing.assert_array_equal(a, [[0, 1], [2, 3]])
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.add(t.numpy(force=True), 1).sum() == 10
