"""1x1 convolutions without padding take the columns straight from the (strided) input: values and every
gradient against PyTorch, and float64 finite differences to second order."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close, to_numpy


@pytest.fixture(autouse=True)
def _own_kernels():
    """These are tests of ember's own convolution kernels: faster ones a plugin installed are set aside."""
    with ember.testing.builtin_kernels("cpu", "conv_forward", "conv_input_grad", "conv_weight_grad"):
        yield


CASES = [  # (input shape, weight shape, stride, groups)
    ((2, 4, 5, 6), (6, 4, 1, 1), 1, 1),
    ((2, 4, 5, 6), (6, 4, 1, 1), 2, 1),
    ((2, 4, 7, 5), (6, 2, 1, 1), (2, 1), 2),
    ((3, 4, 9), (2, 4, 1), 3, 1),
    ((1, 2, 3, 4, 5), (4, 2, 1, 1, 1), 2, 1),
]
IDS = ["s1", "s2", "s21_groups", "1d_s3", "3d_s2"]


def _conv(lib, x):
    return {3: lib.nn.functional.conv1d, 4: lib.nn.functional.conv2d, 5: lib.nn.functional.conv3d}[x.ndim]


@pytest.mark.parametrize("xs, ws, stride, groups", CASES, ids=IDS)
def test_pointwise_conv_matches_torch(torch, device, xs, ws, stride, groups):
    r = np.random.default_rng(0)
    x, w, b = r.standard_normal(xs), r.standard_normal(ws), r.standard_normal(ws[0])
    res = {}
    for lib in (ember, torch):
        dev = device if lib is ember else "cpu"
        ts = [lib.tensor(a, dtype=lib.float32, device=dev, requires_grad=True) for a in (x, w, b)]
        y = _conv(lib, ts[0])(*ts, stride=stride, groups=groups)
        g = lib.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)), dtype=lib.float32, device=dev)
        y.backward(g)
        res[lib] = [y] + [t.grad for t in ts]
    for a, e in zip(res[ember], res[torch]):
        assert a.shape == e.shape
        assert_close(to_numpy(a), e.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xs, ws, stride, groups", CASES[1:3], ids=IDS[1:3])
def test_pointwise_conv_gradcheck(device, xs, ws, stride, groups):
    r = np.random.default_rng(2)
    x, w = (ember.tensor(r.standard_normal(s), dtype=ember.float64, device=device, requires_grad=True)
            for s in (xs, ws))

    def fn(x, w):
        return F.conv2d(x, w, stride=stride, groups=groups)

    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))
