"""ember-onednn's kernels against PyTorch (float32 convolutions, products, batch norm, the gradients of max
pooling and relu, SGD and LSTM layers), the kernels they replaced (float64, small work and refused geometries), and the
library's threads, fork and import order."""
import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
import ember.nn.functional as F
import ember.testing
import ember_onednn
from ember_onednn import binary, conv, dnnl, lstm, matmul, norm, pool

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(os.environ.get("EMBER_ONEDNN") == "0", reason="ember-onednn turned off")

CONVS = [  # (input shape, weight shape, keyword arguments)
    ((4, 8, 20, 20), (16, 8, 3, 3), dict(padding=1)),
    ((2, 8, 21, 19), (12, 8, 3, 5), dict(stride=2, padding=(1, 2))),
    ((2, 8, 20, 20), (8, 4, 3, 3), dict(padding=2, dilation=2, groups=2)),
    ((2, 16, 18, 18), (16, 1, 3, 3), dict(padding=1, groups=16)),
    ((2, 8, 20, 20), (16, 8, 4, 4), dict(padding="same")),   # asymmetric padding
    ((3, 16, 64), (32, 16, 5), dict(padding=2, stride=2)),
    ((2, 4, 10, 12, 12), (8, 4, 3, 3, 3), dict(padding=1)),
    ((4, 16, 14, 14), (32, 16, 1, 1), dict(stride=2)),
]


@pytest.fixture(autouse=True)
def _small_work(monkeypatch):
    # the test geometries are small: take the oneDNN path from a few multiply-adds on
    monkeypatch.setattr(conv, "MIN_WORK", 1)
    monkeypatch.setattr(matmul, "MIN_WORK", 1)
    monkeypatch.setattr(norm, "MIN_SIZE", 1)
    monkeypatch.setattr(pool, "MIN_SIZE", 1)
    monkeypatch.setattr(lstm, "MIN_WORK", 1)
    monkeypatch.setattr(binary, "MIN_SIZE", 1)
    monkeypatch.setattr(binary, "MIN_UPDATE", 1)
    caches = (conv.geometry, matmul.primitive, norm.geometry, pool.geometry, lstm.layer, binary.gradient,
              binary.scaled_sum)
    for c in caches:
        c.cache_clear()
    yield
    for c in caches:
        c.cache_clear()


def _pair(shape, dtype=np.float32, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _close(got, want, tol=2e-4):
    g, w = got.detach().cpu().numpy(), want.detach().numpy()
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max())))


BUILT = []


@pytest.fixture(autouse=True)
def _count(monkeypatch):
    BUILT.clear()
    for cls in (conv.Geometry, norm.Geometry, pool.Geometry, lstm.Layer):
        monkeypatch.setattr(cls, "__init__", _counting(cls.__init__))


def _counting(real):
    def init(self, *a):
        real(self, *a)
        BUILT.append(self)
    return init


def _built(module):
    """The geometries (LSTM layers) of ``module`` built in this test."""
    return [g for g in BUILT if isinstance(g, getattr(module, "Geometry", None) or module.Layer)]


@pytest.mark.filterwarnings("ignore:Using padding='same'")   # PyTorch's note on its own padded copy
@pytest.mark.parametrize("xs, ws, kw", CONVS, ids=[str(i) for i in range(len(CONVS))])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_forward_and_gradients_match_torch(device, xs, ws, kw, bias):
    d = len(xs) - 2
    x, xt = _pair(xs)
    w, wt = _pair(ws, seed=1)
    b, bt = _pair((ws[0],), seed=2) if bias else (None, None)
    fn, tfn = getattr(F, f"conv{d}d"), getattr(torch.nn.functional, f"conv{d}d")
    y = fn(x.to(device), w.to(device), None if b is None else b.to(device), **kw)
    yt = tfn(xt, wt, bt, **kw)
    _close(y, yt)
    g = np.random.default_rng(3).standard_normal(yt.shape).astype(np.float32)
    y.backward(ember.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    _close(x.grad, xt.grad)
    _close(w.grad, wt.grad)
    if bias:
        _close(b.grad, bt.grad)
    assert bool(BUILT) == (device == "cpu")


@pytest.mark.parametrize("stride, output_padding", [(1, 0), (2, 1), (3, 2)])
def test_conv_transpose_matches_torch(device, stride, output_padding):
    x, xt = _pair((2, 8, 9, 9))
    w, wt = _pair((8, 6, 3, 3), seed=1)
    y = F.conv_transpose2d(x.to(device), w.to(device), stride=stride, padding=1, output_padding=output_padding)
    yt = torch.nn.functional.conv_transpose2d(xt, wt, stride=stride, padding=1, output_padding=output_padding)
    _close(y, yt)
    y.sum().backward()
    yt.sum().backward()
    _close(x.grad, xt.grad)
    _close(w.grad, wt.grad)


def test_second_order_gradients_match_torch(device):
    x, xt = _pair((2, 4, 8, 8))
    w, wt = _pair((6, 4, 3, 3), seed=1)
    y = F.conv2d(x.to(device), w.to(device), padding=1)
    yt = torch.nn.functional.conv2d(xt, wt, padding=1)
    (gx,) = ember.autograd.grad((y * y).sum(), x, create_graph=True)
    (gxt,) = torch.autograd.grad((yt * yt).sum(), xt, create_graph=True)
    _close(gx, gxt)
    (gw,) = ember.autograd.grad((gx * gx).sum(), w)
    (gwt,) = torch.autograd.grad((gxt * gxt).sum(), wt)
    _close(gw, gwt, tol=5e-4)


def test_float64_and_small_work_run_the_replaced_kernel(device, monkeypatch):
    x, xt = _pair((2, 3, 7, 7), np.float64)
    w, wt = _pair((4, 3, 3, 3), np.float64, seed=1)
    _close(F.conv2d(x.to(device), w.to(device)), torch.nn.functional.conv2d(xt, wt), tol=1e-12)
    assert ember.autograd.gradcheck(lambda a, b: F.conv2d(a, b, stride=2), (x.to(device), w.to(device)))
    monkeypatch.setattr(conv, "MIN_WORK", 1 << 40)
    x32, xt32 = _pair((2, 3, 7, 7))
    _close(F.conv2d(x32.to(device), w.float().detach().to(device)), torch.nn.functional.conv2d(xt32, wt.float()))
    assert not BUILT


def test_kernels_agree_with_the_replaced_ones():
    cpu = ember.backend.get_backend("cpu").kernels
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8, 17, 17)).astype(np.float32)
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32)
    p = ((2, 1), (1, 2)), (1, 1), 1
    y, saved = cpu["conv_forward"](x, w, None, (2, 2), *p)
    assert saved is None and BUILT
    want, cols = ember_onednn._replaced("conv_forward")(x, w, None, (2, 2), *p)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(y.shape).astype(np.float32)
    np.testing.assert_allclose(cpu["conv_input_grad"](g, w, x.shape, (2, 2), *p),
                               ember_onednn._replaced("conv_input_grad")(g, w, x.shape, (2, 2), *p),
                               rtol=1e-4, atol=1e-4)
    got = cpu["conv_weight_grad"](x, g, w.shape, (2, 2), *p)
    np.testing.assert_allclose(got, ember_onednn._replaced("conv_weight_grad")(x, g, w.shape, (2, 2), *p, cols),
                               rtol=1e-4, atol=1e-3)
    # what the replaced forward kept for the weight gradient goes back to the replaced kernel
    assert cpu["conv_weight_grad"](x, g, w.shape, (2, 2), *p, cols).shape == w.shape


def test_bad_input_raises_as_before(device):
    x = ember.randn(2, 3, 8, 8, device=device)
    w = ember.randn(4, 5, 3, 3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(x, w)
    assert w.grad is None


@pytest.mark.parametrize("shapes", [((33, 47), (47, 29)), ((5, 7, 16), (16, 9)), ((6, 5, 8), (6, 8, 7))])
def test_matmul_matches_torch(device, shapes):
    a, at = _pair(shapes[0])
    b, bt = _pair(shapes[1], seed=1)
    y = a.to(device) @ b.to(device)
    yt = at @ bt
    _close(y, yt)
    y.sum().backward()
    yt.sum().backward()
    _close(a.grad, at.grad)
    _close(b.grad, bt.grad)


def test_matmul_reads_strided_operands_and_falls_back():
    mm = ember.backend.get_backend("cpu").kernels["matmul"]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 30)).astype(np.float32)
    b = rng.standard_normal((20, 30)).astype(np.float32)
    want = a.astype(np.float64) @ b.T.astype(np.float64)
    np.testing.assert_allclose(mm(a, b.T), want, rtol=1e-4, atol=1e-4)           # a transposed view, read in place
    assert matmul.primitive.cache_info().currsize == 1
    np.testing.assert_allclose(mm(a[::-1], b.T), want[::-1], rtol=1e-4, atol=1e-4)   # negative strides: replaced
    np.testing.assert_allclose(mm(a.astype(np.float64), b.T.astype(np.float64)), want, rtol=1e-12)
    assert matmul.primitive.cache_info().currsize == 1


def test_threads_follow_set_num_threads():
    gomp = dnnl._gomp
    before = ember.get_num_threads()
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            F.conv2d(ember.randn(1, 2, 6, 6), ember.randn(2, 2, 3, 3))
            assert gomp.omp_get_max_threads() == n
    finally:
        ember.set_num_threads(before)


def test_threads_run_convolutions_at_once():
    x = ember.randn(2, 4, 12, 12)
    w = ember.randn(8, 4, 3, 3)
    want = F.conv2d(x, w, padding=1).numpy()
    out, errors = [], []

    def work():
        try:
            for _ in range(20):
                out.append(F.conv2d(x, w, padding=1).numpy())
        except Exception as e:  # reported below
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(out) == 60
    for o in out:
        np.testing.assert_array_equal(o, want)


def _child(q):
    x = ember.ones(1, 2, 6, 6)
    q.put(float(F.conv2d(x, ember.ones(3, 2, 3, 3)).sum()))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_runs_convolutions():
    F.conv2d(ember.randn(2, 4, 12, 12), ember.randn(8, 4, 3, 3))   # the parent's OpenMP pool is up
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert q.get(timeout=5) == 1 * 3 * 16 * 18.0


def test_turned_off_by_environment():
    code = "import ember; print(sorted(op for _, op, plugin, *_ in ember.plugins.REGISTRY.overridden() " \
           "if plugin == 'onednn'))"
    env = dict(os.environ)
    on = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    env["EMBER_ONEDNN"] = "0"
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert on.stdout.strip() == str(sorted([
        "conv_forward", "conv_input_grad", "conv_weight_grad", "matmul", "linear", "softmax_backward",
        "batch_norm_train", "batch_norm_backward", "max_pool_backward", "lstm_forward", "lstm_backward",
        "relu_backward", "sgd_update", "nn_gelu", "nn_gelu_backward", "layer_norm", "layer_norm_backward"]))
    assert off.stdout.strip() == "[]"


def test_builtin_kernels_set_the_plugin_aside():
    x, w = ember.randn(2, 4, 12, 12), ember.randn(8, 4, 3, 3)
    with ember.testing.builtin_kernels("cpu", "conv_forward"):
        inside = F.conv2d(x, w).numpy()
        assert not BUILT
    np.testing.assert_allclose(F.conv2d(x, w).numpy(), inside, rtol=1e-4, atol=1e-4)
    assert BUILT


NORMS = [(8, 16, 6, 6), (4, 5, 7, 9), (3, 24, 11), (2, 3, 4, 5, 6)]   # 5 and 3 channels: a part-filled block


@pytest.mark.parametrize("shape", NORMS, ids=[str(i) for i in range(len(NORMS))])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_matches_torch(device, shape, affine):
    d = len(shape) - 2
    m, mt = getattr(ember.nn, f"BatchNorm{d}d")(shape[1], affine=affine), \
        getattr(torch.nn, f"BatchNorm{d}d")(shape[1], affine=affine)
    if affine:
        with torch.no_grad():
            mt.weight.uniform_(0.5, 1.5)
            mt.bias.uniform_(-1, 1)
        m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in mt.state_dict().items()})
    m.to(device)
    x, xt = _pair(shape)
    with torch.no_grad():
        xt.mul_(3).add_(2)
    x = ember.tensor(xt.detach().numpy(), requires_grad=True)
    g = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    y, yt = m(x.to(device)), mt(xt)
    _close(y, yt)
    y.backward(ember.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    _close(x.grad, xt.grad)
    for a, b in [(m.running_mean, mt.running_mean), (m.running_var, mt.running_var)] + \
            ([(m.weight.grad, mt.weight.grad), (m.bias.grad, mt.bias.grad)] if affine else []):
        _close(a, b)
    assert _built(norm) or device != "cpu"


def test_batch_norm_kernels_agree_with_the_replaced_ones():
    cpu = ember.backend.get_backend("cpu").kernels
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((6, 20, 5, 7)) * 2 + 1).astype(np.float32)
    w, b = rng.uniform(0.5, 1.5, 20).astype(np.float32), rng.standard_normal(20).astype(np.float32)
    got, want = cpu["batch_norm_train"](x, w, b, 1e-3), ember_onednn._replaced("batch_norm_train")(x, w, b, 1e-3)
    assert len(_built(norm)) == 1
    for a, e in zip(got, want):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(x.shape).astype(np.float32)
    _, mean, _, invstd = want
    for input_grad in (True, False):
        got = cpu["batch_norm_backward"](g, x, w, mean, invstd, input_grad)
        want = ember_onednn._replaced("batch_norm_backward")(g, x, w, mean, invstd, input_grad)
        assert (got[0] is None) == (want[0] is None) == (not input_grad)
        for a, e in zip(got, want):
            if e is not None:
                np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)


def test_batch_norm_float64_small_and_double_backward(device, monkeypatch):
    x, xt = _pair((4, 3, 5, 5), np.float64)
    w, wt = _pair((3,), np.float64, seed=1)
    assert ember.autograd.gradcheck(lambda a, c: F.batch_norm(a, None, None, c, None, training=True),
                                    (x.to(device), w.to(device)))
    monkeypatch.setattr(norm, "MIN_SIZE", 1 << 40)
    x32, xt32 = _pair((4, 3, 5, 5))
    _close(F.batch_norm(x32.to(device), None, None, training=True),
           torch.nn.functional.batch_norm(xt32, None, None, training=True))
    assert not BUILT
    monkeypatch.setattr(norm, "MIN_SIZE", 1)
    # a differentiated backward runs the composed form, on the statistics recomputed from x
    x32 = x32.detach().requires_grad_()
    (gx,) = ember.autograd.grad((F.batch_norm(x32.to(device), None, None, training=True) ** 3).sum(), x32,
                                create_graph=True)
    (gxt,) = torch.autograd.grad((torch.nn.functional.batch_norm(xt32, None, None, training=True) ** 3).sum(),
                                 xt32, create_graph=True)
    _close(gx, gxt)
    _close(ember.autograd.grad((gx * gx).sum(), x32)[0], torch.autograd.grad((gxt * gxt).sum(), xt32)[0], tol=1e-3)


POOLS = [((4, 8, 16, 16), dict(kernel_size=3, stride=2, padding=1)),
         ((2, 3, 10, 10), dict(kernel_size=3, stride=2, ceil_mode=True)),
         ((2, 4, 15, 15), dict(kernel_size=3, dilation=2, padding=1)),
         ((2, 4, 30), dict(kernel_size=4, stride=3, padding=2)),
         ((2, 4, 7, 8, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True))]


@pytest.mark.parametrize("shape, kw", POOLS, ids=[str(i) for i in range(len(POOLS))])
def test_max_pool_gradient_matches_torch(device, shape, kw):
    fn = f"max_pool{len(shape) - 2}d"
    x, xt = _pair(shape)
    y, yt = getattr(F, fn)(x.to(device), **kw), getattr(torch.nn.functional, fn)(xt, **kw)
    _close(y, yt, tol=0)
    g = np.random.default_rng(3).standard_normal(yt.shape).astype(np.float32)
    y.backward(ember.tensor(g, device=device))
    yt.backward(torch.tensor(g))
    _close(x.grad, xt.grad, tol=1e-6)
    assert len(_built(pool)) == (device == "cpu")


def test_max_pool_gradient_goes_to_the_first_maximum(device):
    # ties everywhere: PyTorch gives each window's gradient to its first maximum, and so does oneDNN
    a = np.repeat(np.arange(6, dtype=np.float32) // 2, 6).reshape(1, 1, 6, 6)
    x, xt = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    F.max_pool2d(x.to(device), 3, 1, 1).sum().backward()
    torch.nn.functional.max_pool2d(xt, 3, 1, 1).sum().backward()
    _close(x.grad, xt.grad, tol=0)
    cpu = ember.backend.get_backend("cpu").kernels
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (3, 4, 10, 10)).astype(np.float32)
    p = (3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1)
    best = cpu["max_pool"](x, *p)
    g = rng.integers(-4, 5, best.shape).astype(np.float32)   # (sums of overlapping windows: exact in any order)
    np.testing.assert_array_equal(cpu["max_pool_backward"](g, x, best, *p),
                                  ember_onednn._replaced("max_pool_backward")(g, x, best, *p))
    assert _built(pool)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 7, 9), (4, 1000)])
def test_relu_gradient_matches_torch(device, shape):
    """relu's gradient, nan, infinite and signed-zero inputs among them: a nan output passes its gradient
    on, every output <= 0 stops it, as PyTorch's threshold_backward."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape).astype(np.float32)
    a.reshape(-1)[:5] = [np.nan, -0.0, 0.0, np.inf, -np.inf]
    g = rng.standard_normal(shape).astype(np.float32)
    for inplace in (False, True):
        x, xt = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y = ember.nn.ReLU(inplace=inplace)(x.to(device) * 1)
        yt = torch.nn.ReLU(inplace=inplace)(xt * 1)
        y.backward(ember.tensor(g, device=device))
        yt.backward(torch.tensor(g))
        np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    hits = binary.gradient.cache_info().hits + binary.gradient.cache_info().misses
    assert hits == (2 if device == "cpu" else 0)


def test_relu_gradient_agrees_with_the_replaced_kernel_and_falls_back(device):
    cpu = ember.backend.get_backend("cpu").kernels
    rng = np.random.default_rng(5)
    out = np.maximum(rng.standard_normal((6, 50, 11)), 0).astype(np.float32)
    out.reshape(-1)[:2] = np.nan
    g = rng.standard_normal(out.shape).astype(np.float32)
    got = cpu["relu_backward"](g, out)
    assert got.shape == g.shape and binary.gradient.cache_info().currsize == 1
    np.testing.assert_array_equal(got, ember_onednn._replaced("relu_backward")(g, out))
    np.testing.assert_array_equal(cpu["relu_backward"](g[:, ::2], out[:, ::2]),   # strided: copied first
                                  ember_onednn._replaced("relu_backward")(g[:, ::2], out[:, ::2]))
    binary.gradient.cache_clear()
    x = ember.tensor(rng.standard_normal((4, 7)), requires_grad=True, device=device)  # float64: NumPy's kernel
    ember.relu(x).sum().backward()
    np.testing.assert_array_equal(ember.testing.to_numpy(x.grad), (ember.testing.to_numpy(x) > 0).astype(float))
    assert binary.gradient.cache_info().currsize == 0


SGD_SETTINGS = [dict(momentum=0.9), dict(momentum=0.9, dampening=0.3, maximize=True), dict(),
                dict(maximize=True), dict(momentum=0.5, weight_decay=0.1), dict(momentum=0.9, nesterov=True)]


@pytest.mark.parametrize("kw", SGD_SETTINGS, ids=[str(i) for i in range(len(SGD_SETTINGS))])
def test_sgd_matches_torch(device, kw):
    """Five SGD steps on a parameter of an odd size: PyTorch's trajectory; settings the primitives do not cover
    (weight decay, Nesterov) and the first step with momentum run the replaced kernel."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((7, 301)).astype(np.float32)
    grads = [rng.standard_normal(a.shape).astype(np.float32) for _ in range(5)]
    p, pt = ember.tensor(a, device=device, requires_grad=True), torch.tensor(a, requires_grad=True)
    opt, topt = ember.optim.SGD([p], lr=0.1, **kw), torch.optim.SGD([pt], lr=0.1, **kw)
    for g in grads:
        p.grad, pt.grad = ember.tensor(g, device=device), torch.tensor(g)
        opt.step()
        topt.step()
        _close(p, pt, tol=1e-6)
    served = device == "cpu" and not kw.get("weight_decay") and not kw.get("nesterov")
    assert (binary.scaled_sum.cache_info().hits > 0) == served


def test_sgd_kernel_agrees_with_the_replaced_one_and_falls_back():
    cpu = ember.backend.get_backend("cpu").kernels
    below = ember_onednn._replaced("sgd_update")
    rng = np.random.default_rng(7)
    p, g, buf = (rng.standard_normal((5, 333)).astype(np.float32) for _ in range(3))
    cases = [(0.01, 0, 0.9, 0, False, False), (0.01, 0, 0.9, 0.25, False, True), (0.01, 0, 0, 0, False, False),
             (0.01, 0, 0, 0, False, True)]
    for args in cases:
        mine, theirs = [p.copy(), buf.copy()], [p.copy(), buf.copy()]
        b = None if args[2] == 0 else mine[1]
        assert cpu["sgd_update"](mine[0], g, b, *args) is b
        below(theirs[0], g, None if args[2] == 0 else theirs[1], *args)
        np.testing.assert_array_equal(mine[0], theirs[0])   # each product rounded before the sum, as NumPy's
        np.testing.assert_array_equal(mine[1], theirs[1])
    assert binary.scaled_sum.cache_info().currsize == 1
    binary.scaled_sum.cache_clear()
    for arrays in [(p.astype(np.float64), g.astype(np.float64), buf.astype(np.float64)),   # float64
                   (p.T.copy().T, g.T.copy().T, buf.T.copy().T)]:                          # column-major
        mine = [a.copy(order="K") for a in arrays]
        theirs = [a.copy(order="K") for a in arrays]
        cpu["sgd_update"](*mine, 0.01, 0, 0.9, 0, False, False)
        below(*theirs, 0.01, 0, 0.9, 0, False, False)
        np.testing.assert_array_equal(mine[0], theirs[0])
    first = cpu["sgd_update"](p.copy(), g, None, 0.01, 0, 0.9, 0, False, False)   # the first step makes its buffer
    np.testing.assert_array_equal(first, g)
    assert binary.scaled_sum.cache_info().currsize == 0


def test_imported_before_ember():
    code = "import ember_onednn.pool, ember_onednn\nimport ember\n" \
           "print(sorted(op for _, op, plugin, *_ in ember.plugins.REGISTRY.overridden() if plugin == 'onednn'))"
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True)
    assert "max_pool_backward" in out.stdout and "conv_forward" in out.stdout


def _lstm_pair(**kw):
    mt = torch.nn.LSTM(**kw)
    m = ember.nn.LSTM(**kw)
    m.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in mt.state_dict().items()})
    return m, mt


LSTMS = [dict(input_size=4, hidden_size=6), dict(input_size=5, hidden_size=8, num_layers=2, bidirectional=True),
         dict(input_size=3, hidden_size=7, bias=False, batch_first=True)]


@pytest.mark.parametrize("kw", LSTMS, ids=[str(i) for i in range(len(LSTMS))])
@pytest.mark.parametrize("state", [True, False])
def test_lstm_matches_torch(device, kw, state):
    m, mt = _lstm_pair(**kw)
    m.to(device)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    x, xt = _pair((3, 7, kw["input_size"]))
    h, ht = _pair((layers, 3 if kw.get("batch_first") else 7, kw["hidden_size"]), seed=1)
    c, ct = _pair(h.shape, seed=2)
    out, (hn, cn) = m(x.to(device), (h.to(device), c.to(device)) if state else None)
    outt, (hnt, cnt) = mt(xt, (ht, ct) if state else None)
    for a, b in ((out, outt), (hn, hnt), (cn, cnt)):
        _close(a, b, tol=1e-5)
    ((out * out).sum() + 2 * hn.sum() + (cn * cn).sum()).backward()
    ((outt * outt).sum() + 2 * hnt.sum() + (cnt * cnt).sum()).backward()
    _close(x.grad, xt.grad, tol=1e-5)
    if state:
        _close(h.grad, ht.grad, tol=1e-5)
        _close(c.grad, ct.grad, tol=1e-5)
    for p, pt in zip(m.parameters(), mt.parameters()):
        _close(p.grad, pt.grad, tol=1e-5)
    assert len(_built(lstm)) == (layers if device == "cpu" else 0)


def test_small_lstm_runs_on_onednn_on_one_thread_only(monkeypatch):
    monkeypatch.setattr(lstm, "MIN_WORK", 1 << 22)  # the plugin's own threshold (the fixture lowers it)
    m, mt = _lstm_pair(input_size=4, hidden_size=6, bidirectional=True)
    x, xt = _pair((5, 1, 4))
    want = mt(xt)[0]
    prior = ember.get_num_threads()
    try:
        for threads, built in ((2, 0), (1, 2)):
            ember.set_num_threads(threads)
            lstm.layer.cache_clear()
            BUILT.clear()
            _close(m(x)[0], want, tol=1e-5)
            assert len(_built(lstm)) == built
    finally:
        ember.set_num_threads(prior)


def test_lstm_kernels_agree_with_the_replaced_ones():
    cpu = ember.backend.get_backend("cpu").kernels
    rng = np.random.default_rng(0)
    T, B, I, H = 6, 4, 5, 3
    x, h0, c0 = (rng.standard_normal(s).astype(np.float32) for s in ((T, B, I), (B, H), (B, H)))
    w_ih, w_hh = rng.standard_normal((4 * H, I)).astype(np.float32), rng.standard_normal((4 * H, H)).astype(np.float32)
    b_ih, b_hh = rng.standard_normal(4 * H).astype(np.float32), rng.standard_normal(4 * H).astype(np.float32)
    dout, dh, dc = (rng.standard_normal(s).astype(np.float32) for s in ((T, B, H), (B, H), (B, H)))
    for reverse in (False, True):
        for needs in ((True, True, True), (False, False, True)):
            res = []
            for fwd, bwd in ((cpu["lstm_forward"], cpu["lstm_backward"]),
                             (ember_onednn._replaced("lstm_forward"), ember_onednn._replaced("lstm_backward"))):
                out, h, c, cache = fwd(x, w_ih, w_hh, b_ih, b_hh, h0, c0, None, None, reverse)
                res.append([out, h, c, *bwd(dout, dh, dc, cache, x, w_ih, w_hh, None, None, reverse, needs)])
            assert isinstance(cache, tuple) and not isinstance(cache, lstm.Saved)
            for a, e in zip(*res):
                assert (a is None) == (e is None)
                if e is not None:
                    assert a.shape == e.shape and a.dtype == e.dtype
                    np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-4)
    assert len(_built(lstm)) == 2


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")   # PyTorch's own note
def test_lstm_projections_packed_sequences_and_float64_run_the_replaced_kernels(device):
    m, mt = _lstm_pair(input_size=4, hidden_size=6, proj_size=3)
    x, xt = _pair((5, 2, 4))
    _close(m.to(device)(x.to(device))[0], mt(xt)[0], tol=1e-5)
    m, mt = _lstm_pair(input_size=4, hidden_size=6)
    packed = ember.nn.utils.rnn.pack_padded_sequence(x.to(device), [5, 3], enforce_sorted=True)
    packedt = torch.nn.utils.rnn.pack_padded_sequence(xt, [5, 3], enforce_sorted=True)
    _close(m.to(device)(packed)[0].data, mt(packedt)[0].data, tol=1e-5)
    assert not _built(lstm)
    m64 = ember.nn.LSTM(3, 4).double().to(device)
    x64 = ember.randn(4, 2, 3, dtype=ember.float64, device=device, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: m64(a)[0], (x64,))
    assert not _built(lstm)
