"""``cond`` and ``while_loop`` against PyTorch: the chosen branch runs, with gradients."""
import numpy as np
import pytest

import ember


def _np(t):
    return t.detach().cpu().numpy()


def test_cond_runs_the_chosen_branch_with_gradients(device, torch):
    x = ember.tensor([1.0, -2.0], device=device, requires_grad=True)
    y = ember.cond(x.sum() > 0, lambda a: a * 2, lambda a: a * 3, (x,))
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 3.0])
    assert ember.cond(True, lambda a, b: a + b, lambda a, b: a - b, [x, x]).shape == (2,)
    with pytest.raises(RuntimeError, match="single-element"):
        ember.cond(ember.tensor([True, False], device=device), lambda a: a, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="bool or tensor"):
        ember.cond("a", lambda a: a, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="callable"):
        ember.cond(True, 3, lambda a: a, (x,))
    with pytest.raises(RuntimeError, match="tensor leaves"):
        ember.cond(True, lambda a: a, lambda a: a, x)
    with pytest.raises(RuntimeError, match="tensor leaves"):
        ember.cond(True, lambda a: a, lambda a: a, (3,))


def test_while_loop_matches_pytorch(device, torch):
    x = np.array([1.0, 2.0, -3.0])
    i, y = ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                            (ember.tensor(0, device=device), ember.tensor(x, device=device)))
    ti, ty = torch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (torch.tensor(0), torch.tensor(x)))
    assert i.item() == ti.item() == 3
    np.testing.assert_allclose(_np(y), ty.numpy())
    (z,) = ember.while_loop(lambda i: i > 5, lambda i: (i - 1,), (ember.tensor(3, device=device),))
    assert z.item() == 3  # no iteration: the inputs come back
    with pytest.raises(RuntimeError, match="callable"):
        ember.while_loop(3, lambda i: (i,), (ember.tensor(0),))
    with pytest.raises(RuntimeError, match="tensor or int leaves"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1,), ("a",))
    with pytest.raises(RuntimeError, match="number of outputs"):
        ember.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1,), (ember.tensor(0), ember.zeros(2)))
    with pytest.raises(RuntimeError, match="metadata"):
        ember.while_loop(lambda i: i < 3, lambda i: (i + 1.0,), (ember.tensor(0),))
    with pytest.raises(RuntimeError, match="cond_fn"):
        ember.while_loop(lambda i: ember.tensor([True, True]), lambda i: (i + 1,), (ember.tensor(0),))
