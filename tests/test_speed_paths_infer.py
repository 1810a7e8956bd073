"""The inference fast paths behind bench/bench_midsize.py's resnet_infer row against PyTorch on every backend:
batch norm in eval mode as one kernel when no graph is recorded (equal, bit for bit, to the composed ops the
same call records under autograd) and max pooling one spatial axis at a time; float64 gradcheck of both
functions; the CPU backend's thread split of these kernels against one thread, bit for bit; and the reused
output buffers never handed out while a result still holds them."""
import threading

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing import assert_close, to_numpy

torch = pytest.importorskip("torch")
F = ember.nn.functional


@pytest.fixture
def threads():
    """Run the test body, then restore the thread count it found."""
    before = ember.get_num_threads()
    yield
    ember.set_num_threads(before)


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype.kind in "fc" else a


# ------------------------------------------------------------------ batch norm, eval mode
def _bn_args(rng, shape, dtype, affine=True):
    c = shape[1]
    x = rng.standard_normal(shape).astype(dtype) * 3 + 1
    mean = rng.standard_normal(c).astype(dtype)
    var = rng.uniform(0.2, 3.0, c).astype(dtype)
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None
    return x, mean, var, w, b


def _e(a, device, **kw):
    return None if a is None else ember.tensor(a, device=device, **kw)


def _t(a):
    return None if a is None else torch.tensor(a)


BN_SHAPES = [(5, 3), (4, 3, 7), (3, 6, 5, 4), (2, 3, 4, 3, 5), (2, 40, 33, 31)]


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", BN_SHAPES, ids=str)
def test_batch_norm_eval_matches_torch_and_the_composed_ops(device, shape, dtype, affine):
    x, mean, var, w, b = _bn_args(np.random.default_rng(1), shape, dtype, affine)
    args = [_e(a, device) for a in (x, mean, var, w, b)]
    with ember.no_grad():
        fused = F.batch_norm(args[0], args[1], args[2], args[3], args[4], False, 0.1, 1e-4)
    assert fused.grad_fn is None and fused.shape == x.shape and fused.dtype == args[0].dtype
    expect = torch.nn.functional.batch_norm(_t(x), _t(mean), _t(var), _t(w), _t(b), False, 0.1, 1e-4)
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {}
    assert_close(fused, expect, **tol)
    # the same call recording a graph runs the composed ops: the same arithmetic, bit for bit
    xg = _e(x, device, requires_grad=True)
    composed = F.batch_norm(xg, args[1], args[2], args[3], args[4], False, 0.1, 1e-4)
    assert composed.grad_fn is not None
    assert np.array_equal(_bits(to_numpy(fused)), _bits(to_numpy(composed.detach())))


def test_batch_norm_eval_non_contiguous_and_empty_inputs(device):
    rng = np.random.default_rng(2)
    x, mean, var, w, b = _bn_args(rng, (6, 4, 5, 3), "float32")
    xt = np.ascontiguousarray(x.transpose(3, 1, 2, 0))  # (3, 4, 5, 6), then viewed back as (6, 4, 5, 3)
    xe = _e(xt, device).permute(3, 1, 2, 0)
    assert device != "cpu" or not xe.is_contiguous()  # (libraries without strided views copy)
    with ember.no_grad():
        y = F.batch_norm(xe, _e(mean, device), _e(var, device), _e(w, device), _e(b, device), False)
        empty = F.batch_norm(_e(np.zeros((0, 4, 2), np.float32), device), _e(mean, device), _e(var, device))
    expect = torch.nn.functional.batch_norm(torch.tensor(x), _t(mean), _t(var), _t(w), _t(b), False)
    assert_close(y, expect, rtol=1e-5, atol=1e-5)
    assert tuple(empty.shape) == (0, 4, 2)


def test_batch_norm_eval_module_under_no_grad_matches_torch(device):
    rng = np.random.default_rng(3)
    e, t = ember.nn.BatchNorm2d(5).to(device).eval(), torch.nn.BatchNorm2d(5).eval()
    stats = [rng.standard_normal(5).astype("float32") for _ in range(2)] + \
        [rng.uniform(0.5, 2, 5).astype("float32"), rng.standard_normal(5).astype("float32")]
    with ember.no_grad(), torch.no_grad():
        for pe, pt, v in zip((e.weight, e.bias, e.running_var, e.running_mean),
                             (t.weight, t.bias, t.running_var, t.running_mean), stats):
            pe.copy_(ember.tensor(v, device=device))
            pt.copy_(torch.tensor(v))
        x = rng.standard_normal((3, 5, 6, 7)).astype("float32")
        ye, yt = e(ember.tensor(x, device=device)), t(torch.tensor(x))
    assert ye.grad_fn is None
    assert_close(ye, yt, rtol=1e-5, atol=1e-5)


def test_batch_norm_eval_refuses_mismatched_statistics(device):
    x = ember.zeros(2, 3, 4, device=device)
    with ember.no_grad(), pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(x, ember.zeros(4, device=device), ember.ones(3, device=device))


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_eval_gradcheck(device, affine):
    x, mean, var, w, b = _bn_args(np.random.default_rng(4), (3, 4, 5), "float64", affine)
    xs = [_e(a, device, requires_grad=True) for a in (x, w, b) if a is not None]
    m, v = _e(mean, device), _e(var, device)

    def fn(*ts):
        wb = ts[1:] if affine else (None, None)
        return F.batch_norm(ts[0], m, v, *wb, False, 0.1, 1e-3)

    assert gradcheck(fn, tuple(xs))


# ------------------------------------------------------------------ max pooling
POOLS = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 112, 112), 3, 2, 1, 1, False),  # ResNet's stem
    ((2, 3, 9, 9), 3, 2, 1, 1, True),
    ((2, 3, 10, 11), (2, 3), (1, 2), (1, 0), (2, 1), True),
    ((1, 2, 7, 7), 2, 2, 0, 1, False),
    ((2, 2, 8, 8), 3, 3, 1, 2, True),
    ((1, 1, 5, 5), 5, 1, 2, 1, False),
    ((3, 2, 6, 13), (1, 4), (3, 1), (0, 2), 1, True),
]


def _pool_input(rng, shape, dtype):
    if dtype == "int32":
        return rng.integers(-1000, 1000, shape).astype(dtype)
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    flat = a.reshape(-1)
    flat[::37] = np.nan
    flat[5::41] = np.inf
    flat[7::43] = -np.inf
    return a


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("geometry", POOLS, ids=str)
def test_max_pool2d_matches_torch(device, geometry, dtype):
    shape, k, s, p, d, ceil = geometry
    a = _pool_input(np.random.default_rng(5), shape, dtype)
    with ember.no_grad():
        out = F.max_pool2d(ember.tensor(a, device=device), k, s, p, d, ceil)
        out_i, idx = F.max_pool2d(ember.tensor(a, device=device), k, s, p, d, ceil, return_indices=True)
    exp, exp_idx = torch.nn.functional.max_pool2d(torch.tensor(a), k, s, p, d, ceil, return_indices=True)
    assert tuple(out.shape) == tuple(exp.shape)
    got = to_numpy(out)
    assert np.array_equal(got, exp.numpy(), equal_nan=True)
    assert np.array_equal(to_numpy(out_i), got, equal_nan=True)
    if dtype == "int32" or not np.isnan(a).any():
        assert np.array_equal(to_numpy(idx), exp_idx.numpy())


@pytest.mark.parametrize("dims", [1, 3])
def test_max_pool_1d_3d_match_torch(device, dims):
    shape = (2, 3, 11) if dims == 1 else (2, 2, 6, 7, 9)
    a = _pool_input(np.random.default_rng(6), shape, "float32")
    fe = getattr(F, f"max_pool{dims}d")
    ft = getattr(torch.nn.functional, f"max_pool{dims}d")
    for k, s, p, ceil in ((3, 2, 1, False), (2, 3, 1, True), (3, 1, 0, False)):
        out = fe(ember.tensor(a, device=device), k, s, p, 1, ceil)
        assert np.array_equal(to_numpy(out), ft(torch.tensor(a), k, s, p, 1, ceil).numpy(), equal_nan=True)


def test_max_pool2d_unbatched_and_gradient_match_torch(device):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 12, 10)).astype("float32")
    g = rng.standard_normal((3, 6, 5)).astype("float32")
    xe, xt = ember.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    ye, yt = F.max_pool2d(xe, 3, 2, 1), torch.nn.functional.max_pool2d(xt, 3, 2, 1)
    assert_close(ye, yt.detach())
    ye.backward(ember.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    assert_close(xe.grad, xt.grad)


@pytest.mark.parametrize("geometry", [((2, 2, 7, 8), 3, 2, 1, 1, False), ((1, 2, 9, 9), (2, 3), 2, (1, 0), 2, True)],
                         ids=str)
def test_max_pool2d_gradcheck(device, geometry):
    shape, k, s, p, d, ceil = geometry
    # distinct values a step apart: no ties for the finite differences to cross
    a = np.random.default_rng(8).permutation(np.prod(shape)).reshape(shape).astype("float64") * 0.1
    x = ember.tensor(a, device=device, requires_grad=True)
    assert gradcheck(lambda t: F.max_pool2d(t, k, s, p, d, ceil), (x,))


def test_max_pool2d_refuses_bad_geometry(device):
    x = ember.zeros(1, 1, 4, 4, device=device)
    with pytest.raises(RuntimeError, match="max_pool2d: pad should be at most half of effective kernel size"):
        F.max_pool2d(x, 2, 2, 2)


# ------------------------------------------------------------------ threads and reused buffers
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_thread_split_kernels_are_bit_identical_to_one_thread(device, threads, dtype):
    rng = np.random.default_rng(9)
    x, mean, var, w, b = _bn_args(rng, (4, 16, 40, 45), dtype)  # 115,200 elements a sample: split over samples
    p = _pool_input(rng, (4, 16, 90, 91), dtype)

    def run():
        with ember.no_grad():
            bn = F.batch_norm(*[_e(a, device) for a in (x, mean, var, w, b)], False)
            mp = F.max_pool2d(ember.tensor(p, device=device), 3, 2, 1)
        return to_numpy(bn), to_numpy(mp)

    ember.set_num_threads(4)
    split = run()
    ember.set_num_threads(1)
    single = run()
    for s, o in zip(split, single):
        assert s.dtype == o.dtype and np.array_equal(_bits(s), _bits(o))


def test_kernel_blocks_run_on_the_backends_pool(threads):
    cpu = pytest.importorskip("ember_cpu_numpy")
    run_blocks, min_size = ember.backend.get_backend("cpu").run_blocks, cpu.threads.MIN_SIZE  # the contract's hook
    ember.set_num_threads(2)
    seen, blocks = set(), []
    lock = threading.Lock()

    def body(lo, hi):
        with lock:
            seen.add(threading.get_ident())
            blocks.append((lo, hi))

    run_blocks(body, 9, min_size)
    assert sorted(blocks) == [(0, 5), (5, 9)] and len(seen) == 2
    blocks.clear()
    run_blocks(body, 9, min_size - 1)  # small work: one call on this thread
    assert blocks == [(0, 9)]
    ember.set_num_threads(1)
    blocks.clear()
    run_blocks(body, 9, min_size)
    assert blocks == [(0, 9)]


def test_reused_output_buffers_stay_with_their_results(device):
    rng = np.random.default_rng(10)
    xs = [rng.standard_normal((4, 8, 64, 64)).astype("float32") for _ in range(3)]
    mean, var = np.zeros(8, "float32"), np.ones(8, "float32")
    with ember.no_grad():
        bns = [F.batch_norm(_e(x, device), _e(mean, device), _e(var, device), None, None, False, 0.1, 0.0)
               for x in xs]
        pools = [F.max_pool2d(_e(x, device), 2) for x in xs]
        del bns[1], pools[1]  # one result let go: its buffer may serve the next call, the others' not
        bns.append(F.batch_norm(_e(xs[1] * 2, device), _e(mean, device), _e(var, device), None, None, False,
                                0.1, 0.0))
        pools.append(F.max_pool2d(_e(xs[1] * 2, device), 2))
    for y, x in zip(bns, (xs[0], xs[2], xs[1] * 2)):
        assert np.array_equal(to_numpy(y), x)
    for y, x in zip(pools, (xs[0], xs[2], xs[1] * 2)):
        assert np.array_equal(to_numpy(y), x.reshape(4, 8, 32, 2, 32, 2).max(axis=(3, 5)))
