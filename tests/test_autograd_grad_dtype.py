"""``Tensor.grad_dtype`` against PyTorch: accumulated gradients cast to it, any dtype when it is None."""
import numpy as np
import pytest

import ember


def _np(t):
    return t.detach().cpu().numpy()


# ----------------------------------------------------------------------------------------------- grad_dtype
def test_grad_dtype_casts_accumulated_gradients(device, torch):
    x = ember.ones(3, device=device, requires_grad=True)
    assert x.grad_dtype is ember.float32
    x.grad_dtype = ember.float64
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert x.grad.dtype is ember.float64
    tx = torch.ones(3, requires_grad=True)
    tx.grad_dtype = torch.float64
    (tx * 2).sum().backward()
    (tx * 2).sum().backward()
    np.testing.assert_allclose(_np(x.grad), tx.grad.numpy())
    with pytest.raises(RuntimeError, match="grad_dtype"):
        x.grad = ember.ones(3, device=device)
    with pytest.raises(RuntimeError, match="already a gradient"):
        x.grad_dtype = ember.float16
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2).grad_dtype = ember.float64
    with pytest.raises(RuntimeError, match="dtype or None"):
        x.grad_dtype = "float64"
    y = ember.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="different type"):
        y.grad = ember.ones(2, dtype=ember.float64, device=device)


def test_grad_dtype_none_accepts_a_gradient_of_any_dtype(device, torch):
    if not ember.testing.has_dtype(device, ember.float16):
        pytest.skip(f"the {device} backend has no float16")
    x = ember.ones(3, device=device, requires_grad=True)
    x.grad_dtype = None
    x.grad = ember.ones(3, dtype=ember.float16, device=device)
    assert x.grad_dtype is None and x.grad.dtype is ember.float16
    tx = torch.ones(3, requires_grad=True)
    tx.grad_dtype = None
    tx.grad = torch.ones(3, dtype=torch.float16)
    assert tx.grad_dtype is None and tx.grad.dtype is torch.float16
