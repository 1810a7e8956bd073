"""Convolutions whose copies and Winograd transforms split over the CPU thread pool: the output and both
gradients are bit-identical to the single-thread ones (the same operations per element, only partitioned),
on the Winograd path (also a sample at a time through the transforms' scratch) and on im2col's two column
layouts, including blocks of unequal size."""
import numpy as np
import pytest

import ember
import ember.testing
import ember.kernels.conv as conv_kernels
from ember_cpu_numpy import threads as cpu_threads


@pytest.fixture(autouse=True)
def _own_kernels():
    """These are tests of ember's own convolution kernels: faster ones a plugin installed are set aside."""
    with ember.testing.builtin_kernels("cpu", "conv_forward", "conv_input_grad", "conv_weight_grad"):
        yield


F = ember.nn.functional


@pytest.fixture
def threads():
    """``use(t)``: ``ember.set_num_threads(t)`` with BLAS held to one thread (a GEMM's sums may group
    differently on more threads: only ember's own split varies); everything restored afterwards."""
    old = ember.get_num_threads()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # then ember leaves BLAS alone
        threadpool_limits = None
    original = threadpool_limits(limits=None, user_api="blas") if threadpool_limits else None

    def use(t):
        ember.set_num_threads(t)
        if threadpool_limits is not None:
            threadpool_limits(limits=1, user_api="blas")

    yield use
    ember.set_num_threads(old)
    if original is not None:
        original.restore_original_limits()


def _conv(device, dtype, x, w, b, padding, use, threads):
    use(threads)
    ex = ember.tensor(x, device=device, requires_grad=True)
    ew = ember.tensor(w, device=device, requires_grad=True)
    eb = ember.tensor(b, device=device, requires_grad=True)
    y = F.conv2d(ex, ew, eb, padding=padding)
    g = np.random.default_rng(3).standard_normal(tuple(y.shape)).astype(dtype)
    y.backward(ember.tensor(g, device=device))
    return [np.asarray(t.detach().cpu().numpy()) for t in (y, ex.grad, ew.grad, eb.grad)]


# (batch, channels in, channels out, size, padding): large enough that every pass splits (>= 2**18 elements)
SHAPES = [
    (5, 16, 24, 34, 1),   # batch-major columns (rows >= 16), odd batch: blocks of unequal size
    (15, 64, 48, 9, 1),   # batch-last columns (short rows): split over channels
    (5, 16, 16, 33, 0),   # no padding, odd size: the last tiles cropped
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "n{}c{}o{}s{}p{}".format(*s))
@pytest.mark.parametrize("wino", [True, False], ids=["winograd", "im2col"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_thread_split_bit_identical(device, threads, monkeypatch, shape, wino, dtype):
    n, c, o, s, p = shape
    monkeypatch.setattr(conv_kernels, "WINOGRAD", wino)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, s, s)).astype(dtype)
    w = (rng.standard_normal((o, c, 3, 3)) * 0.1).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    one = _conv(device, dtype, x, w, b, p, threads, 1)
    calls = []
    run = cpu_threads._run_blocks
    monkeypatch.setattr(cpu_threads, "_run_blocks", lambda body, k, t: (calls.append(k), run(body, k, t)))
    scratch = conv_kernels.WINO_SCRATCH
    # 2 and 3 threads; the Winograd transforms a sample at a time through their scratch, on 1 and 2 threads
    for t, step in ((2, scratch), (3, scratch), (1, 1), (2, 1)):
        monkeypatch.setattr(conv_kernels, "WINO_SCRATCH", step)
        split = _conv(device, dtype, x, w, b, p, threads, t)
        for a, b_ in zip(one, split):
            assert a.dtype == b_.dtype and a.shape == b_.shape
            assert np.array_equal(a, b_), f"{t} threads, scratch {step}: differs from one thread"
    if device == "cpu":
        assert calls  # the work did go to the pool


def test_conv2d_thread_split_matches_reference(device, threads, monkeypatch, torch):
    # the split result is also the right one: against PyTorch in float64
    monkeypatch.setattr(conv_kernels, "WINOGRAD", True)
    threads(2)
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 16, 32, 32)), rng.standard_normal((8, 16, 3, 3))
    ex = ember.tensor(x, device=device, requires_grad=True)
    ew = ember.tensor(w, device=device, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ey, ty = F.conv2d(ex, ew, padding=1), torch.nn.functional.conv2d(tx, tw, padding=1)
    assert np.allclose(ey.detach().cpu().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    assert np.allclose(ex.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-10)
    assert np.allclose(ew.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-10)
