"""The CPU fast paths behind bench/bench_midsize.py against PyTorch on every backend (their batch-norm rows, every
check, run in tests/test_kit.py with ember.testing.rows_nn): the batch-norm module in eval and train mode,
running statistics included, and the thread-split elementwise kernels of the CPU backend against one thread,
bit for bit."""
import threading

import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batchnorm2d_module_train_then_eval_matches_torch(device, dtype):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((4, 3, 5, 5)).astype(dtype) * 2 + 1 for _ in range(3)]
    e, t = ember.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    w, b = rng.standard_normal(3).astype(dtype), rng.standard_normal(3).astype(dtype)
    e = e.to(device=device, dtype=getattr(ember, dtype))
    t = t.to(getattr(torch, dtype))
    with ember.no_grad():
        e.weight.copy_(ember.tensor(w, device=device))
        e.bias.copy_(ember.tensor(b, device=device))
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
        t.bias.copy_(torch.tensor(b))
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {}
    for x in xs[:2]:
        assert_close(e(ember.tensor(x, device=device)), t(torch.tensor(x)).detach(), **tol)
    assert_close(e.running_mean, t.running_mean, **tol)
    assert_close(e.running_var, t.running_var, **tol)
    e.eval()
    t.eval()
    xe = ember.tensor(xs[2], device=device, requires_grad=True)
    xt = torch.tensor(xs[2], requires_grad=True)
    ye, yt = e(xe), t(xt)
    assert_close(ye, yt.detach(), **tol)
    g = rng.standard_normal(ye.shape).astype(dtype)
    ye.backward(ember.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    assert_close(xe.grad, xt.grad, **tol)
    assert_close(e.weight.grad, t.weight.grad, **tol)
    assert_close(e.bias.grad, t.bias.grad, **tol)


# ------------------------------------------------------------------ thread-split elementwise kernels
def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype.kind in "fc" else a


@pytest.fixture
def two_threads():
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def _special_values(a):
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -1e-30]
    return a


SHAPES = [((40, 80, 90), (40, 80, 90)), ((40, 80, 90), (80, 1)), ((1, 300, 1000), (7, 1, 1000)), ((300000,), ())]
SHAPE_IDS = ["same", "bcast_inner", "bcast_lead", "scalar"]


def _operands(rng, dtype, shapes, positive=False):
    if dtype == "int64":
        a = rng.integers(-50, 50, shapes[0])
        b = rng.integers(1, 50, shapes[1]) if positive else rng.integers(-50, 50, shapes[1])
    else:
        a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    return _special_values(np.asarray(a).astype(dtype)), np.asarray(b).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("shapes", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("ufunc", ["add", "subtract", "multiply", "divide", "maximum"])
def test_split_binary_is_bit_identical_to_the_ufunc(two_threads, dtype, shapes, ufunc):
    from ember_cpu_numpy.threads import split_binary

    uf = getattr(np, ufunc)
    a, b = _operands(np.random.default_rng(7), dtype, shapes, positive=ufunc == "divide")
    threaded, single = split_binary(uf)(a, b), uf(a, b)
    assert threaded.dtype == single.dtype and threaded.shape == single.shape
    assert np.array_equal(_bits(threaded), _bits(single))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["relu", "relu_backward"])
def test_split_relu_is_bit_identical_to_one_thread(device, two_threads, dtype, op, monkeypatch):
    from ember_cpu_numpy import threads

    monkeypatch.setattr(threads, "RELU_SPLIT", 1 << 16)  # the blocks of (40, 80, 90) go to two threads
    rng = np.random.default_rng(7)
    a, g = _operands(rng, dtype, ((40, 80, 90), (40, 80, 90)))

    def run():
        x = ember.tensor(a, device=device, requires_grad=op == "relu_backward")
        out = ember.relu(x)
        if op == "relu":
            return out
        out.backward(ember.tensor(g, device=device))
        return x.grad

    threaded = ember.testing.to_numpy(run())
    ember.set_num_threads(1)
    single = ember.testing.to_numpy(run())
    assert threaded.dtype == single.dtype and np.array_equal(_bits(threaded), _bits(single))
    nan = np.isnan(a)
    expect = np.maximum(a, 0) if op == "relu" else np.where((a > 0) | nan, g, 0)
    assert np.array_equal(np.isnan(threaded), np.isnan(expect)) and (threaded[~nan] == expect[~nan]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("size", [4095, 4096, 1 << 16, (1 << 16) + 1, 300001])
def test_relu_in_blocks_matches_torch(device, dtype, size):
    """relu on the CPU compares contiguous inputs block by block against a block of zeros: every size around
    the block boundaries, strided inputs and relu_ in place give PyTorch's values, nan and -0.0 included."""
    a = _operands(np.random.default_rng(8), dtype, ((size,), ()))[0]
    expect = torch.relu(torch.tensor(a)).numpy()

    def same(t, ref):
        return np.array_equal(ember.testing.to_numpy(t), ref, equal_nan=dtype != "int64")

    x = ember.tensor(a, device=device)
    outs = [ember.relu(x), ember.relu(x[::2]), x.clone()]
    assert ember.relu_(outs[2]) is outs[2]
    for got, want in zip(outs, (expect, expect[::2], expect)):
        assert same(got, want)
        if x.device.type == "cpu":  # NumPy's maximum, zero first: PyTorch's bits (-0.0 stays -0.0)
            assert np.array_equal(_bits(ember.testing.to_numpy(got)), _bits(want))
    assert same(x, a)  # the input left as it was


def test_split_kernels_run_blocks_on_the_pool(two_threads):
    from ember_cpu_numpy import threads

    seen = set()
    a = np.ones((8, 1 << 16), np.float32)

    def body(lo, hi):
        seen.add(threading.get_ident())
        np.add(a[lo:hi], a[lo:hi], out=out[lo:hi])

    out = np.empty_like(a)
    threads._run_blocks(body, a.shape[0], 2)
    assert len(seen) == 2 and (out == 2).all()
    assert threads._blocks(7, 3) == [(0, 3), (3, 6), (6, 7)]
