"""Pointwise ops against PyTorch: the POINTWISE_ROWS of ember.testing.op_table (values, dtypes, gradients,
gradcheck and gradgradcheck in float64) on every backend."""
import pytest

import ember
from ember.testing.op_table import INT_ROWS, POINTWISE_ROWS
from ember.testing.op_table_shape import cases, run_row

pytest.importorskip("torch")


@pytest.mark.parametrize("row,k", cases(POINTWISE_ROWS + INT_ROWS))
def test_row(row, k, device):
    run_row(row, k, device)


def test_operators_and_inplace_forms(device, torch):
    a, b = ember.tensor([5, -3, 7], device=device), ember.tensor([2, 2, -3], device=device)
    ta, tb = torch.tensor([5, -3, 7]), torch.tensor([2, 2, -3])
    for f in (lambda x, y: x // y, lambda x, y: x % y, lambda x, y: x & y, lambda x, y: x | y,
              lambda x, y: x ^ y, lambda x, y: ~x, lambda x, y: x << 1, lambda x, y: x >> 1, lambda x, y: x / y):
        assert f(a, b).tolist() == f(ta, tb).tolist()
        assert str(f(a, b).dtype).split(".")[-1] == str(f(ta, tb).dtype).split(".")[-1]
    x = ember.ones(3, device=device)
    x += 2
    x *= ember.tensor([1.0, 2.0, 3.0], device=device)
    x -= 1
    x /= 2
    assert x.tolist() == [1.0, 2.5, 4.0]


def test_comparison_is_not_differentiable(device):
    x = ember.randn(3, device=device, requires_grad=True)
    assert not (x > 0).requires_grad and (x > 0).dtype is ember.bool


def test_bad_inputs(device):
    with pytest.raises(RuntimeError, match="bitwise_and"):
        ember.ones(2, device=device) & ember.ones(2, device=device)
    with pytest.raises(RuntimeError, match="boolean masks"):
        ember.ones(2, device=device).masked_fill(ember.ones(2, device=device), 0)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        ember.ones(2, device=device).clamp()
    with pytest.raises(ValueError, match="rounding_mode"):
        ember.div(ember.ones(2, device=device), 2, rounding_mode="up")


def test_temporaries_reused_only_when_unshared(device):
    import numpy as np

    n = 1 << 16
    a, b = ember.randn(n, device=device), ember.randn(n, device=device)
    expect = ember.add(ember.mul(a, b), 1.0)
    assert ember.equal(a * b + 1.0, expect)
    x = a * b
    y = x + 1.0  # x is named: it must not change
    assert ember.equal(y, expect) and ember.equal(x, ember.mul(a, b))
    host = np.ones(n, dtype=np.float32)
    if device == "cpu":
        ember.from_numpy(host) * 2.0  # shares memory with host: never written
        assert (host == 1.0).all()
    base = ember.ones(2, n, device=device)
    base[0] * 1.0  # a view of base, left alone
    assert bool((base == 1).all())
    ints = ember.ones(n, dtype=ember.int64, device=device)
    assert (ints * 3 / 2).dtype is ember.float32 and (ints * 3 + 2.5).dtype is ember.float32
    w = ember.randn(n, device=device, requires_grad=True)
    ((w * 2.0) * 3.0 - 1.0).sum().backward()
    assert bool((w.grad == 6.0).all())
