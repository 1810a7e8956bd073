"""``F.glu`` under ``ember.vmap`` (and ``ember.func.grad`` inside it) runs as one batched op, as in
``torch.func.vmap``."""
import numpy as np
import pytest

import ember
from ember.func import batching


@pytest.mark.parametrize("dim,in_dims", [(-1, 0), (1, 0), (-1, 1), (0, 2), (-2, 1), (0, 0), (-1, 2)])
def test_glu_batches(device, torch, dim, in_dims):
    x = np.random.RandomState(0).randn(4, 6, 8)
    xe, xt = ember.tensor(x, device=device), torch.tensor(x)
    batching.LOOPED.clear()
    got = ember.vmap(lambda v: ember.nn.functional.glu(v, dim), in_dims=in_dims)(xe)
    grad = ember.vmap(ember.func.grad(lambda v: ember.nn.functional.glu(v, dim).sum()), in_dims=in_dims)(xe)
    assert not batching.LOOPED, f"ran per sample: {dict(batching.LOOPED)}"
    want = torch.func.vmap(lambda v: torch.nn.functional.glu(v, dim), in_dims=in_dims)(xt)
    want_grad = torch.func.vmap(torch.func.grad(lambda v: torch.nn.functional.glu(v, dim).sum()),
                                in_dims=in_dims)(xt)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad.cpu().numpy(), want_grad.numpy(), rtol=1e-12)


def test_glu_nested_vmap(device, torch):
    x = np.random.RandomState(1).randn(2, 3, 4, 6)
    got = ember.vmap(ember.vmap(lambda v: ember.nn.functional.glu(v, -1), in_dims=1))(ember.tensor(x, device=device))
    want = torch.func.vmap(torch.func.vmap(lambda v: torch.nn.functional.glu(v, -1), in_dims=1))(torch.tensor(x))
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-12)


def test_glu_odd_dimension_under_vmap(device):
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        ember.vmap(lambda v: ember.nn.functional.glu(v, 0))(ember.randn(2, 3, device=device))
