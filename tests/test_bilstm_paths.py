"""The paths a BiLSTM-CRF's training step and Viterbi decode take, against PyTorch (eager ops) and against eager
mode bit for bit (compiled calls): ``logsumexp`` over a few elements (one ``logaddexp`` reduce) and its
gradient."""
import numpy as np
import pytest

import ember
from ember.kernels.reduction import TINY_LSE, TINY_LSE_AXIS
from ember.testing import assert_close

pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tiny_logsumexp_against_pytorch(device, torch, dtype):
    """Shapes on both sides of the tiny path's limits, each dim, keepdim, with a gradient."""
    rng = np.random.default_rng(0)
    shapes = [((7, 7), 1), ((7, 7), 0), ((7,), 0), ((2, 3, 4), 1), ((4, TINY_LSE_AXIS), 1),
              ((4, TINY_LSE_AXIS + 1), 1), ((TINY_LSE // 8, 8), 1), ((TINY_LSE // 8 + 1, 8), 1)]
    for shape, dim in shapes:
        for keepdim in (False, True):
            a = (rng.standard_normal(shape) * 3).astype(dtype)
            x = ember.tensor(a, device=device, requires_grad=True)
            t = torch.tensor(a, requires_grad=True)
            y, ty = ember.logsumexp(x, dim, keepdim), torch.logsumexp(t, dim, keepdim)
            assert_close(y, ty, msg=f"{shape} {dim} {keepdim}")
            w = rng.standard_normal(ty.shape).astype(dtype)
            y.backward(ember.tensor(w, device=device))
            ty.backward(torch.tensor(w))
            assert_close(x.grad, t.grad, msg=f"grad {shape} {dim} {keepdim}")


def test_tiny_logsumexp_infinities_and_nan(device, torch):
    rows = [[-INF, -INF, -INF], [INF, 1.0, 2.0], [NAN, 1.0, -INF], [INF, -INF, 0.0], [-INF, 2.0, -INF],
            [3e38, 3e38, 3e38], [-3e38, 1.0, 2.0]]
    for dtype in ("float32", "float64"):
        x = ember.tensor(rows, dtype=getattr(ember, dtype), device=device, requires_grad=True)
        t = torch.tensor(rows, dtype=getattr(torch, dtype), requires_grad=True)
        y, ty = x.logsumexp(1), t.logsumexp(1)
        np.testing.assert_array_equal(y.detach().cpu().numpy(), ty.detach().numpy(), err_msg=dtype)
        y.sum().backward()
        ty.sum().backward()
        assert_close(x.grad, t.grad, msg=dtype)  # (NaN where PyTorch's formula gives it)
