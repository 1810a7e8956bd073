"""The elementwise chain's fast paths against PyTorch: a product's gradient with a number or tensor factor on the
arrays (float32/float64; other dtypes by the op), sigmoid's kernel without the floating-point guard (SciPy's expit;
the general formula still quiet), and tanh's and sigmoid's gradient kernels with one reused temporary (same shape
and dtype; anything else by the shared formula).  Each keeps hooks, anomaly mode, retain_graph, create_graph,
interception and the in-place and shape checks of the general paths."""
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from test_fast_paths_small import watched_grads

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")

X0 = np.linspace(-2.5, 2.0, 12)
W0 = np.linspace(0.75, -1.25, 12)


def _half_skip(device, dtype):
    if dtype in ("float16", "bfloat16") and device == "array_api":
        pytest.skip(f"the strict array API has no {dtype}")


def _chain(lib, x, w, seen):
    """Two rounds of the benchmark's chain (products with a tensor and with numbers, tanh, sigmoid, relu), a hook
    on an intermediate that doubles its gradient and a node hook."""
    h = x
    for i in range(2):
        h = (h * w + 0.5).tanh() - h * 0.1
        if i == 0:
            h.register_hook(lambda g: seen.append("h") or g * 2)
            h.grad_fn.register_hook(lambda gi, go: seen.append("node") or None)
        h = h.sigmoid() if i % 2 else h.relu()
    return (3 * h).sum() + (h * 2).mean()


@pytest.mark.parametrize("create_graph", [False, True])
def test_chain_gradients_with_hooks_anomaly_retain_create_and_interception(device, create_graph):
    _, kinds = watched_grads(_chain, X0, W0, device, create_graph, "w")
    assert "binary" in kinds and "unary" in kinds


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_product_with_a_number_gives_pytorch_gradients_and_second_gradients(device, dtype):
    _half_skip(device, dtype)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, dtype=getattr(lib, dtype), device=dev, requires_grad=True)
        y = (x * 0.1 + 3 * x * x + x * -2).sum()
        g = lib.autograd.grad(y, x, create_graph=True)[0]
        gg = lib.autograd.grad(g.sum(), x)[0]
        res.append((g.detach(), gg, g.dtype))
    assert str(res[0][2]).split(".")[-1] == str(res[1][2]).split(".")[-1]
    tol = 1e-3 if dtype == "float16" else 1e-6
    assert_close(res[0][0], res[1][0], rtol=tol, atol=tol)
    assert_close(res[0][1], res[1][1], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_sigmoid_at_extremes_warns_of_nothing_and_matches_pytorch(device, dtype):
    _half_skip(device, dtype)
    v = [-1e4, -100.0, -20.0, -0.5, 0.0, 0.5, 20.0, 100.0, 1e4, float("nan"), float("inf"), -float("inf")]
    x = ember.tensor(v, dtype=getattr(ember, dtype), device=device)
    with warnings.catch_warnings(), np.errstate(all="raise"):  # the program's own error state is left alone
        warnings.simplefilter("error")
        y = x.sigmoid()
    t = torch.tensor(v, dtype=getattr(torch, dtype)).sigmoid()
    assert_close(y.float(), t.float(), rtol=1e-2 if dtype in ("float16", "bfloat16") else 1e-6, atol=0)  # (NaN: NaN)


@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_saved_output_gradients_of_any_shape_and_dtype_match_pytorch(device, op):
    # a 0-d output, a float16 one, and a double backward whose gradient meets the output broadcast
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        a = lib.tensor(0.3, device=dev, requires_grad=True)
        b = lib.tensor(X0[:4], dtype=lib.float16 if device != "array_api" else lib.float32, device=dev,
                       requires_grad=True)
        c = lib.tensor(X0.reshape(3, 4), device=dev, requires_grad=True)
        ga, gb = lib.autograd.grad(getattr(a, op)() * 2 + getattr(b, op)().float().sum(), (a, b))
        yc = getattr(c, op)()
        gc = lib.autograd.grad(yc, c, lib.ones(4, device=dev).expand(3, 4) * 0.5, create_graph=True)[0]
        gcc = lib.autograd.grad((gc * gc).sum(), c)[0]
        res.append((ga, gb.float(), gc.detach(), gcc))
    for i, (e, t) in enumerate(zip(*res)):  # (float16: PyTorch computes in float32 and rounds once)
        assert_close(e, t, rtol=1e-2 if i == 1 else 1e-6, atol=1e-6)


def test_chain_nodes_refuse_inplace_changes_bad_shapes_and_a_second_backward(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        w = lib.tensor(W0, device=dev, requires_grad=True)
        with pytest.raises(RuntimeError, match="size of tensor a"):
            x * w[:5]
        h = x * 1.0
        y = (h * w).sum()
        h.add_(1)  # the product's saved factor changed
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
        t = (x * 1.0).tanh()
        z = t.sum()
        t.mul_(2)  # tanh's saved output changed
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()
        s = (x * 0.5).sigmoid().sum()
        s.backward()
        with pytest.raises(RuntimeError, match="second time"):
            s.backward()
