"""``detach()`` shares its source's storage and version counter without being a view of it, against PyTorch: an
in-place write into the detached tensor (or a view of it) records history on the detached tensor only, each side's
in-place change bumps the other's version, and ``.data`` shares no version counter."""
import numpy as np
import pytest

import ember


def _both(torch, device):
    """(module, device) pairs: PyTorch on the CPU, ember on ``device``."""
    return ((torch, "cpu"), (ember, device))


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def test_write_into_detached_with_grad_leaves_source_history(torch, device):
    out = {}
    for m, dev in _both(torch, device):
        x = m.ones(3, requires_grad=True, device=dev)
        old = m.zeros(2, 3, device=dev) * x
        h = old.detach()
        h[0] = x * 3
        (h * 1).sum().backward()
        out[m] = (_np(x.grad), type(old.grad_fn).__name__, type(h.grad_fn).__name__, h._base is None,
                  h._is_view(), old._version, h._version)
    assert out[ember][1:] == out[torch][1:]
    np.testing.assert_allclose(out[ember][0], out[torch][0])
    assert out[torch][1:3] == ("MulBackward0", "CopySlices")


def test_detached_shares_version_both_ways(torch, device):
    for m, dev in _both(torch, device):
        x = m.ones(3, requires_grad=True, device=dev)
        y = x * 2
        z = y * y  # saves y
        d = y.detach()
        v0 = y._version
        d.add_(1)
        assert y._version == d._version == v0 + 1, m
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
        with m.no_grad():
            y.mul_(2)
        assert d._version == y._version == v0 + 2, m
        assert d.detach()._version == d._version, m
        np.testing.assert_allclose(_np(d), [6.0, 6.0, 6.0])


def test_view_of_detached_is_its_view(torch, device):
    out = {}
    for m, dev in _both(torch, device):
        x = m.ones(3, requires_grad=True, device=dev)
        old = m.zeros(2, 3, device=dev) * x
        d = old.detach()
        v = d[1]
        assert v._base is d and v._is_view(), m
        v.mul_(0).add_(x * 2)
        v.sum().backward()
        out[m] = (_np(x.grad), _np(old), type(d.grad_fn).__name__, type(old.grad_fn).__name__, old._version)
    np.testing.assert_allclose(out[ember][0], out[torch][0])
    np.testing.assert_allclose(out[ember][1], out[torch][1])
    assert out[ember][2:] == out[torch][2:]


def test_detach_inplace_and_data(torch, device):
    out = {}
    for m, dev in _both(torch, device):
        x = m.ones(3, requires_grad=True, device=dev)
        y = x * 2
        y.detach_()
        data = x.data
        v0 = x._version
        data.add_(1)  # .data shares no version counter
        out[m] = (y.requires_grad, y.grad_fn is None, y._base is None, x._version - v0, data._base is None,
                  _np(x).tolist())
    assert out[ember] == out[torch]


def test_no_grad_view_unchanged(torch, device):
    out = {}
    for m, dev in _both(torch, device):
        x = m.ones(2, 3, requires_grad=True, device=dev)
        y = x * 1
        with m.no_grad():
            v = y[0]
        msg = None
        try:
            v.add_(1)
        except RuntimeError as e:
            msg = "no_grad" in str(e)
        out[m] = (v._base is y, msg, y._version)
    assert out[ember] == out[torch]


def test_share_memory_of_detached_reaches_source(torch, device):
    if not ember.device(device).backend.host:
        pytest.skip(f"tensors on {device} are not shared through host memory")
    out = {}
    for m, dev in _both(torch, device):
        x = m.arange(4.0, device=dev)
        d = x.detach()[1:]  # a view of a detached tensor: the source's storage is moved too
        d.share_memory_()
        d[0] = 9.0
        out[m] = (x.is_shared(), d.is_shared(), x.tolist())
    assert out[ember] == out[torch]


def test_as_strided_of_detached_view_counts_from_storage_start(torch, device):
    """PyTorch counts the offset from the storage's start; ember gives that value or refuses, never another."""
    y = torch.arange(6.0)
    want = y[1:].detach().as_strided((2,), (1,), 0).tolist()
    e = ember.arange(6.0, device=device)
    try:
        got = e[1:].detach().as_strided((2,), (1,), 0).tolist()
    except RuntimeError as err:
        assert "as_strided" in str(err)
    else:
        assert got == want
    assert e.detach().as_strided((2,), (1,), 1).tolist() == y.detach().as_strided((2,), (1,), 1).tolist()
