"""Masked attention's batched products on the CPU backend's path for a transposed right operand (copied to C
order before NumPy's loop over the stack), against PyTorch: the scores ``q @ k.transpose(-2, -1)`` of heads split
from one packed projection, their gradients, and the operands that path must leave to the plain kernel or
handle by copy (an expanded stack, float64, a vector column, a 3-D stack)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _heads(lib, qkv, heads, device=None):
    """q, k and v of shape (B, heads, T, d) as views of one packed (B, T, 3 * heads * d) projection."""
    kw = {"device": device} if device else {}
    x = lib.tensor(qkv, requires_grad=True, **kw)
    B, T, C3 = qkv.shape
    width = C3 // 3
    q, k, v = (t.view(B, T, heads, width // heads).transpose(1, 2) for t in x.split(width, dim=2))
    return x, q, k, v


def test_masked_attention_products_match_torch(device):
    rng = np.random.default_rng(0)
    qkv = rng.standard_normal((4, 32, 3 * 64)).astype(np.float32)
    g = rng.standard_normal((4, 4, 32, 16)).astype(np.float32)
    mask = np.tril(np.ones((32, 32), np.float32))
    out = {}
    for lib, dev in ((ember, device), (torch, None)):
        x, q, k, v = _heads(lib, qkv, 4, dev)
        att = (q @ k.transpose(-2, -1)) * 0.25
        m = lib.tensor(mask, **({"device": dev} if dev else {}))
        att = att.masked_fill(m == 0, float("-inf")).softmax(-1)
        y = att @ v
        y.backward(lib.tensor(g, **({"device": dev} if dev else {})))
        out[lib.__name__] = (y.detach().cpu().numpy(), x.grad.cpu().numpy())
    for mine, ref in zip(out["ember"], out["torch"]):
        np.testing.assert_allclose(mine, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["transposed", "expanded", "float64", "column", "3-d", "strided left"])
def test_stacked_matmul_operands_match_torch(device, case):
    rng = np.random.default_rng(1)
    dtype = np.float64 if case == "float64" else np.float32
    a = rng.standard_normal((2, 8, 32, 16)).astype(dtype)
    b = rng.standard_normal((2, 8, 32, 16)).astype(dtype)
    if case == "column":
        b = b[..., :1, :]  # (its transpose a stack of columns)
    if case == "3-d":
        a, b = a[0], b[0]

    def product(lib, dev):
        A = lib.tensor(a, **({"device": dev} if dev else {}))
        B = lib.tensor(b, **({"device": dev} if dev else {}))
        if case == "expanded":  # (one key matrix for every batch and head: zero strides in front)
            B = B[:1, :1].expand(2, 8, 32, 16)
        if case == "strided left":
            A = A.transpose(1, 2).contiguous().transpose(1, 2)
        return A @ B.transpose(-2, -1)

    mine, ref = product(ember, device), product(torch, None)
    assert mine.dtype == ember.float64 if case == "float64" else mine.dtype == ember.float32
    assert tuple(mine.shape) == tuple(ref.shape)
    np.testing.assert_allclose(mine.cpu().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_transposed_operand_left_as_it_was(device):
    # the copy is the kernel's own: the key tensor, its transposed view and its version are untouched
    rng = np.random.default_rng(2)
    q = ember.tensor(rng.standard_normal((2, 4, 32, 16)).astype(np.float32), device=device)
    k = ember.tensor(rng.standard_normal((2, 4, 32, 16)).astype(np.float32), device=device)
    kt = k.transpose(-2, -1)
    before, version = k.cpu().numpy().copy(), k._version
    s = q @ kt
    assert k._version == version
    np.testing.assert_array_equal(k.cpu().numpy(), before)
    ref = torch.tensor(q.cpu().numpy()) @ torch.tensor(before).transpose(-2, -1)
    np.testing.assert_allclose(s.cpu().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)


def test_sums_as_products_share_nothing_with_their_results(device):
    # the CPU backend's row and column sums are products with one kept vector of ones: a result written in place
    # must leave the next sums (and softmax's row sums) as PyTorch's
    rng = np.random.default_rng(3)
    x = rng.standard_normal((256, 48)).astype(np.float32)
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    first = ex.sum(0)
    first.mul_(0).add_(7)
    rows = ex.sum(1)
    rows.fill_(-1)
    for mine, ref in ((ex.sum(0), tx.sum(0)), (ex.sum(1), tx.sum(1)), (ex.mean(0), tx.mean(0)),
                      (ex.softmax(-1), tx.softmax(-1))):
        np.testing.assert_allclose(mine.cpu().numpy(), ref.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(first.cpu().numpy(), np.full(48, 7, np.float32))


@pytest.mark.parametrize("case", ["plain", "high rows", "low rows", "mostly high", "non-finite"])
def test_softmax_rows_without_a_maximum_pass_match_torch(device, case):
    # rows are exponentiated as they are; those whose sums show a maximum above 64, far below zero, or an
    # infinite or NaN entry are shifted by their own maximum
    rng = np.random.default_rng(4)
    x = rng.standard_normal((128, 40)).astype(np.float32) * 3  # (past the fast forms' 4096 elements)
    if case == "high rows":
        x[::7] += 70
        x[5, 3] = 88.0
    elif case == "low rows":
        x[1::5] -= 60
    elif case == "mostly high":
        x += 100
    elif case == "non-finite":
        x[2] = -np.inf
        x[4, :9] = -np.inf
        x[6, 1] = np.inf
        x[8, 30] = np.nan
    target = rng.integers(0, 40, 128)
    ex, tx = ember.tensor(x, device=device), torch.tensor(x)
    for f in ("softmax", "log_softmax"):
        np.testing.assert_allclose(getattr(ex, f)(-1).cpu().numpy(), getattr(tx, f)(-1).numpy(), rtol=1e-5,
                                   atol=2e-5)
    if case == "non-finite":
        return
    ex.requires_grad_(True)
    tx.requires_grad_(True)
    mine = ember.nn.functional.cross_entropy(ex, ember.tensor(target, device=device))
    ref = torch.nn.functional.cross_entropy(tx, torch.tensor(target))
    mine.backward()
    ref.backward()
    np.testing.assert_allclose(mine.item(), ref.item(), rtol=1e-5)
    np.testing.assert_allclose(ex.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("every", [9, 1])
def test_softmax_of_rows_far_below_zero_keeps_small_probabilities_exact(device, every):
    # a row topped by -20 with entries near -100: unshifted, exp(-100) is subnormal in float32 and its few bits
    # came out as a 1.6% error once divided by the row's small sum; such rows are shifted by their own maximum
    rng = np.random.default_rng(5)
    x = rng.standard_normal((128, 40)).astype(np.float32) * 3
    deep = slice(1, None, every)
    x[deep] = rng.uniform(-101, -95, x[deep].shape).astype(np.float32)
    x[deep, 0] = -20.0
    x[deep, 1] = -np.inf
    mine = ember.tensor(x, device=device).softmax(-1).cpu().numpy()[deep]
    ref = torch.tensor(x).softmax(-1).numpy()[deep]
    assert (ref[:, 2:] > 0).all() and (ref[:, 2:] < 1e-30).all()
    np.testing.assert_allclose(mine, ref, rtol=1e-6, atol=0)
