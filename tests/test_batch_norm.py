"""Training-mode batch norm, one graph node (``NativeBatchNormBackward0``): values, running statistics,
first and second derivatives against PyTorch and float64 finite differences, and forward-mode AD; the
backend's own ``batch_norm_train``/``batch_norm_backward`` kernels (set apart from any plugin's) over several
blocks, and their split over the CPU thread pool (bit-identical to one thread)."""
import numpy as np
import pytest

import ember
import ember.kernels.norm
import ember.nn.functional as F
import ember.testing
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close, to_numpy

SHAPES = [(5, 3), (4, 3, 6), (3, 2, 4, 5), (2, 3, 2, 3, 2)]


def _inputs(shape, seed=0):
    r = np.random.default_rng(seed)
    c = shape[1]
    return r.standard_normal(shape) * 2 + 0.5, r.standard_normal(c), r.standard_normal(c)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_training_batch_norm_matches_torch(torch, device, shape, affine):
    x, w, b = _inputs(shape)
    g = np.random.default_rng(1).standard_normal(shape)
    res = {}
    for lib in (ember, torch):
        dev = device if lib is ember else "cpu"
        xt = lib.tensor(x, dtype=lib.float32, device=dev, requires_grad=True)
        wt = lib.tensor(w, dtype=lib.float32, device=dev, requires_grad=True) if affine else None
        bt = lib.tensor(b, dtype=lib.float32, device=dev, requires_grad=True) if affine else None
        rm = lib.zeros(shape[1], device=dev)
        rv = lib.ones(shape[1], device=dev)
        y = lib.nn.functional.batch_norm(xt, rm, rv, wt, bt, True, 0.3, 1e-5)
        y.backward(lib.tensor(g, dtype=lib.float32, device=dev))
        grads = [xt.grad] + ([wt.grad, bt.grad] if affine else [])
        res[lib] = [y, rm, rv] + grads
    for a, e in zip(res[ember], res[torch]):
        assert_close(to_numpy(a), e.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_grad_fn_is_one_node(torch, device):
    x = ember.randn(4, 3, 2, device=device, requires_grad=True)
    y = F.batch_norm(x, None, None, ember.ones(3, device=device), ember.zeros(3, device=device), True)
    t = torch.nn.functional.batch_norm(torch.randn(4, 3, 2, requires_grad=True), None, None, training=True)
    assert type(y.grad_fn).__name__ == type(t.grad_fn).__name__ == "NativeBatchNormBackward0"


@pytest.mark.parametrize("shape", SHAPES[:3], ids=str)
def test_training_batch_norm_gradcheck(device, shape):
    x, w, b = _inputs(shape, 2)

    def t(a):
        return ember.tensor(a, dtype=ember.float64, device=device, requires_grad=True)

    args = (t(x), t(w), t(b))

    def fn(x, w, b):
        return F.batch_norm(x, None, None, w, b, True)

    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)
    assert gradgradcheck(lambda x: F.batch_norm(x, None, None, None, None, True), (args[0],))


def test_double_backward_matches_torch(torch, device):
    x, w, b = _inputs((4, 3, 5), 3)
    out = {}
    for lib in (ember, torch):
        dev = device if lib is ember else "cpu"
        xs = [lib.tensor(a, dtype=lib.float64, device=dev, requires_grad=True) for a in (x, w, b)]
        y = lib.nn.functional.batch_norm(xs[0], None, None, xs[1], xs[2], True)
        (gx,) = lib.autograd.grad((y ** 3).sum(), xs[0], create_graph=True)
        (gx * gx).sum().backward()
        out[lib] = [a.grad for a in xs]
    for a, e in zip(out[ember], out[torch]):
        assert_close(to_numpy(a), e.numpy(), rtol=1e-7, atol=1e-8)


def test_forward_ad_through_training_batch_norm(torch, device):
    import ember.autograd.forward_ad as fwAD
    x, w, b = _inputs((4, 3, 2), 4)
    v = np.random.default_rng(5).standard_normal(x.shape)
    with fwAD.dual_level():
        d = fwAD.make_dual(ember.tensor(x, device=device), ember.tensor(v, device=device))
        y = F.batch_norm(d, None, None, ember.tensor(w, device=device), ember.tensor(b, device=device), True)
        tangent = fwAD.unpack_dual(y).tangent
    fn = lambda a: torch.nn.functional.batch_norm(a, None, None, torch.tensor(w), torch.tensor(b), True)  # noqa: E731
    _, expected = torch.func.jvp(fn, (torch.tensor(x),), (torch.tensor(v),))
    assert_close(to_numpy(tangent), expected.numpy(), rtol=1e-7, atol=1e-8)


def test_failed_batch_norm_leaves_running_stats(device):
    rm, rv = ember.zeros(3, device=device), ember.ones(3, device=device)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(ember.randn(1, 3, device=device), rm, rv, training=True)
    assert rm.tolist() == [0.0, 0.0, 0.0] and rv.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("shape", [(9, 8, 40, 40), (33, 5, 7), (7, 600, 2, 3)], ids=str)
@pytest.mark.parametrize("needs_x", [True, False], ids=["x", "params"])
def test_own_kernels_over_blocks_match_torch(torch, device, shape, needs_x):
    # (9, 8, 40, 40): two samples to a block, the last block one sample; (7, 600, 2, 3): one block
    x, w, b = _inputs(shape, 6)
    g = np.random.default_rng(7).standard_normal(shape)
    res = {}
    with ember.testing.builtin_kernels(device, "batch_norm_train", "batch_norm_backward"):
        for lib in (ember, torch):
            dev = device if lib is ember else "cpu"
            xt, wt, bt = (lib.tensor(a, dtype=lib.float32, device=dev, requires_grad=r)
                          for a, r in ((x, needs_x), (w, True), (b, True)))
            y = lib.nn.functional.batch_norm(xt, None, None, wt, bt, True)
            y.backward(lib.tensor(g, dtype=lib.float32, device=dev))
            res[lib] = [y, wt.grad, bt.grad] + ([xt.grad] if needs_x else [])
    assert res[ember][0].dtype == ember.float32
    for a, e in zip(res[ember], res[torch]):
        assert_close(to_numpy(a), e.detach().numpy(), rtol=2e-4, atol=2e-4)


def test_own_kernels_split_over_threads_bit_for_bit():
    from ember.backend import get_backend
    r = np.random.default_rng(8)
    x = (r.standard_normal((10, 16, 48, 48)) * 3 + 1).astype(np.float32)   # > the thread pool's MIN_SIZE elements
    g = r.standard_normal(x.shape).astype(np.float32)
    w, b = r.standard_normal(16).astype(np.float32), r.standard_normal(16).astype(np.float32)
    old = ember.get_num_threads()
    out = []
    try:
        with ember.testing.builtin_kernels("cpu", "batch_norm_train", "batch_norm_backward"):
            k = get_backend("cpu").kernels
            for t in (1, 2, 3):
                ember.set_num_threads(t)
                y, mean, var, invstd = k["batch_norm_train"](x, w, b, 1e-5)
                out.append([y, mean, var, invstd, *k["batch_norm_backward"](g, x, w, mean, invstd)])
    finally:
        ember.set_num_threads(old)
    assert ember.kernels.norm.BN_BLOCK < x[0].size * 2 and len(out[0]) == 7
    for other in out[1:]:
        for a, e in zip(other, out[0]):
            np.testing.assert_array_equal(a, e)
