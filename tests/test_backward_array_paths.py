"""The one-op gradients (tanh, sigmoid, softmax, clamp) and the gradients of Linear, Mul and Div computed on
arrays keep every check of the composed formulas: the same values and node names as PyTorch, double backward
through them, retain_graph, tensor hooks, anomaly mode, version counters, and ops seen by an interception
handler."""
import numpy as np
import pytest

import ember
from ember.dispatch import intercept
from ember.testing import assert_close

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")

RNG = np.random.default_rng(0)
X0 = RNG.standard_normal((3, 4))
W0, B0 = RNG.standard_normal((5, 4)), RNG.standard_normal(5)


def _program(lib, x, lin):
    """Each op with a one-op or on-array gradient, once: Linear (a Parameter weight), tanh, sigmoid, softmax,
    clamp with number bounds, a product and a quotient of tensors, a broadcast difference, relu, a
    concatenation."""
    h = lin(x).tanh()
    y = lib.softmax(h.sigmoid() * 3, -1) + lib.clamp(h, -0.5, 0.4) / (h * x[:, :1] + 2)
    return (lib.cat([y, x[:, 1:]], 1) - x[:, :1]).relu().pow(2).sum()


def _setup(lib, dev):
    x = lib.tensor(X0, device=dev, requires_grad=True)
    lin = lib.nn.Linear(4, 5).to(dev).double()
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(W0, device=dev))
        lin.bias.copy_(lib.tensor(B0, device=dev))
    return x, lin


@pytest.mark.parametrize("mode", ["plain", "create_graph", "hooks_anomaly_retain", "intercepted"])
def test_gradients_match_pytorch_in_every_mode(device, mode):
    if device == "array_api" and mode == "hooks_anomaly_retain":
        pytest.skip("anomaly mode's NaN check uses the backend's isnan on gradients, which the strict array API "
                    "refuses on some dtypes")
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x, lin = _setup(lib, dev)
        seen = []
        y = _program(lib, x, lin)
        if mode == "plain":
            y.backward()
            out = [x.grad, lin.weight.grad, lin.bias.grad]
        elif mode == "create_graph":
            gx, gw = lib.autograd.grad(y, (x, lin.weight), create_graph=True)
            # second derivatives run through the gradients' own nodes
            out = [gx.detach(), gw.detach(), *lib.autograd.grad((gx * gx).sum() + gw.sum(), (x, lin.bias))]
        elif mode == "hooks_anomaly_retain":
            x.register_hook(lambda g, seen=seen: seen.append(tuple(g.shape)) or g * 2)
            with lib.autograd.detect_anomaly():
                y.backward(retain_graph=True)
                first = x.grad.clone()
                y.backward()  # the retained graph runs again; the hook doubles each gradient
            assert seen == [(3, 4), (3, 4)]
            out = [first, x.grad, lin.weight.grad]
        else:
            if lib is ember:
                names = []

                def handler(kind, Op, args, run, names=names):
                    names.append(getattr(Op, "__name__", Op))  # (a factory's Op is its name)
                    return run(*args)
                with intercept(handler):
                    y.backward()
                assert "SoftmaxBackwardDataBackward0" not in names  # the handler sees the formula's own ops
                assert "MmBackward0" in names or "MatmulBackward0" in names
            else:
                y.backward()
            out = [x.grad, lin.weight.grad, lin.bias.grad]
        res.append(out)
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-9, atol=1e-10)


def test_gradient_node_names_are_pytorchs(device):
    names = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        row = []
        for y in (x.tanh(), x.sigmoid(), lib.softmax(x, 1), lib.clamp(x, -0.5, 0.5), x.relu(), x - x.exp()):
            (g,) = lib.autograd.grad(y.pow(2).sum(), x, create_graph=True)
            row.append(g.grad_fn.name())
        names.append(row)
    assert names[0] == names[1]


def test_version_counter_checked_on_the_one_op_paths(device):
    x = ember.tensor(X0, device=device, requires_grad=True)
    for f in (lambda v: v.tanh(), lambda v: v.sigmoid(), lambda v: v.relu(), lambda v: ember.softmax(v, 1)):
        y = f(x * 1)
        s = y.sum()
        y.add_(1)  # the saved output changed in place
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            s.backward()


def test_linear_on_arrays_refuses_nothing_it_should_check(device):
    # a weight of the wrong width is refused before any gradient; a complex linear takes the composed path
    lin = ember.nn.Linear(4, 2).to(device)
    with pytest.raises(RuntimeError, match="in_features=4"):
        lin(ember.ones(3, device=device))
    w = ember.tensor(W0 + 1j * W0, device=device, requires_grad=True)
    xc = ember.tensor(X0 - 2j * X0, device=device, requires_grad=True)
    wt = torch.tensor(W0 + 1j * W0, requires_grad=True)
    xt = torch.tensor(X0 - 2j * X0, requires_grad=True)
    ember.nn.functional.linear(xc, w).abs().sum().backward()
    torch.nn.functional.linear(xt, wt).abs().sum().backward()
    assert_close(w.grad, wt.grad, rtol=1e-9, atol=1e-10)
    assert_close(xc.grad, xt.grad, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_product_with_a_number_on_arrays_matches_pytorch(device, dtype):
    # float32 takes the kernel with the number as it is; float16 goes through the op (computed in float32)
    if device == "array_api" and dtype == "float16":
        pytest.skip("the strict array API has no float16")
    grads = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, dtype=getattr(lib, dtype), device=dev, requires_grad=True)
        ((x * 0.1).tanh() * 3 + (x * 1e-3) * 7).sum().backward()
        grads.append(x.grad)
    assert grads[0].dtype is getattr(ember, dtype)
    assert_close(grads[0], grads[1], rtol=1e-3 if dtype == "float16" else 1e-6, atol=1e-6)
