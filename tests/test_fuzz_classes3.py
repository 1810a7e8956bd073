"""Classes of disagreement with PyTorch left open by the differential fuzzer's runs (:mod:`ember.testing.fuzz`) and
found beside it, each swept over its ops, forms and dtypes against PyTorch 2.13: the same calls compute the same
values and the same ones raise the same exception class."""
# ruff: noqa: B023 - each case's lambdas are called at once, inside the loop iteration that makes them
import itertools

import numpy as np
import pytest

import ember
from test_fuzz_classes import _have, _outcome

torch = pytest.importorskip("torch")


# --------------------------------------------------------------------------- adaptive max pooling to an empty output
POOL_SHAPES = {1: [(2, 3, 4), (3, 5), (0, 2, 4)], 2: [(2, 3, 4, 5), (3, 4, 4), (0, 2, 3, 3)],
               3: [(2, 2, 3, 4, 2), (2, 3, 3, 3), (0, 2, 2, 2, 2)]}
POOL_SIZES = {1: [0, 2, (0,)], 2: [0, (0, 2), (2, 0), (None, 0), 3], 3: [0, (2, 0, 1), (0, None, 2), 2]}


def _adaptive_max(m, d, shape, size, dtype, indices, device=None):
    x = m.tensor(np.random.RandomState(d).randn(*shape).astype(np.float32), dtype=getattr(m, dtype))
    if device is not None:
        x = x.to(device)
    x.requires_grad_(True)
    out, idx = getattr(m.nn.functional, f"adaptive_max_pool{d}d")(x, size, return_indices=True)
    if indices:
        return out.shape, idx.dtype == m.int64, out.detach().float().tolist(), idx.tolist()
    out.float().pow(2).sum().backward()
    return out.shape, x.grad.shape, np.round(x.grad.double().tolist(), 4).tolist()  # (float32 sums of windows)


def test_adaptive_max_pool_to_an_empty_output_as_pytorch(device):
    """Adaptive max pooling to an output size with a 0 (and of an empty batch) gives PyTorch's empty result and
    int64 indices; its backward raises PyTorch's RuntimeError where the output is empty past the batch dimension
    and gives the empty batch's empty gradient.  Before: the kernel failed on every empty output (66 of the 144
    cases differed)."""
    for d, dtype, indices in itertools.product((1, 2, 3), _have(device, ("float32", "float64")), (True, False)):
        for shape, size in itertools.product(POOL_SHAPES[d], POOL_SIZES[d]):
            want = _outcome(lambda: _adaptive_max(torch, d, shape, size, dtype, indices))
            got = _outcome(lambda: _adaptive_max(ember, d, shape, size, dtype, indices, device))
            if want[0] == "ok" and got[0] == "ok":
                got, want = (got[0], tuple(got[1][0]), *got[1][1:]), (want[0], tuple(want[1][0]), *want[1][1:])
            assert got == want, (d, shape, size, dtype, indices, got, want)
