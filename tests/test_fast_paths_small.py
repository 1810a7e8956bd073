"""The per-op fast paths of small-op programs keep every check of the general ones: graph recording of one-tensor
ops (unary ops and views), the keepers of ops that save only some inputs, saved-tensor hooks behind their
process-wide flag, the CPU backend's reshape and view through the array's method, renamed nodes, dimension and
shape arguments, and a one-distribution Categorical's draws.  Each runs with tensor hooks, anomaly mode,
retain_graph, create_graph and an interception handler open, and against PyTorch."""
import threading

import numpy as np
import pytest

import ember
from ember.dispatch import intercept
from ember.testing import assert_close

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")

X0 = np.linspace(-1.5, 1.25, 6).reshape(2, 3)
W0 = np.linspace(0.5, -0.75, 6).reshape(3, 2)


def _program(lib, x, w, seen):
    """Unary ops and views on leaves, on outputs 0 and 1 of a two-output node, and a mul and a linear layer
    (ops that save only the inputs their needed gradients read)."""
    h = x.tanh()
    h.register_hook(lambda g: seen.append("tanh") or g * 2)
    a, b = x.unbind(0)  # b is output 1 of its node: the general path
    v = (-b).unsqueeze(0).view(1, 3).reshape(3).exp() + a.sigmoid()
    y = lib.nn.functional.linear(h, w.t()) * 3.0
    return (v.relu().sum() + (y * y).sum()).squeeze()


def watched_grads(program, x0, w0, device, create_graph, again_of):
    """``program(lib, x, w, seen)`` run in ember (under an interception handler; the kinds it saw) and PyTorch with
    anomaly mode on: per library the loss, both gradients (``create_graph`` as given), a second backward of
    ``again_of`` ("x" or "w") over the kept graph, and a gradient of ``d loss/dx`` where ``create_graph``; the
    hooks' record, the loss's node name and whether ``d loss/dx`` requires grad. Asserts the two libraries' values
    close (rtol 1e-6) and their records equal; returns ember's record and the kinds."""
    if device == "array_api":
        pytest.skip("anomaly mode's NaN check reads gradients with the backend's isnan, which the strict array "
                    "API refuses")
    res, names, kinds = [], [], set()
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(x0, device=dev, requires_grad=True)
        w = lib.tensor(w0, device=dev, requires_grad=True)
        other = x if again_of == "x" else w
        seen = []
        with lib.autograd.detect_anomaly():
            if lib is ember:
                with intercept(lambda kind, Op, args, run: kinds.add(kind.__name__) or run(*args)):
                    loss = program(lib, x, w, seen)
            else:
                loss = program(lib, x, w, seen)
            gx, gw = lib.autograd.grad(loss, (x, w), retain_graph=True, create_graph=create_graph)
            again = lib.autograd.grad(loss, other, retain_graph=create_graph)[0]  # the graph was kept
        second = lib.autograd.grad(gx.sum(), other)[0] if create_graph else (gx if again_of == "x" else gw)
        res.append((loss.detach(), gx.detach(), gw.detach(), again.detach(), second.detach()))
        names.append((seen, type(loss.grad_fn).__name__, gx.requires_grad))
    assert names[0] == names[1]
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-6, atol=1e-8)
    return names[0], kinds


@pytest.mark.parametrize("create_graph", [False, True])
def test_recorded_one_tensor_ops_with_hooks_anomaly_retain_create_and_interception(device, create_graph):
    names, kinds = watched_grads(_program, X0, W0, device, create_graph, "x")
    assert {"unary", "view_op", "binary"} <= kinds
    assert len(names[0]) == (3 if create_graph else 2)  # the hook ran in every pass


def test_one_tensor_node_refuses_a_second_backward_and_an_inplace_change(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        y = x.exp().sum()
        y.backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.backward()
        h = x * 1.0
        z = h.exp()  # saves its output
        z.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
        s = x.sin()  # saves its input, a leaf
        with lib.no_grad():
            x.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            s.sum().backward()


def test_one_tensor_ops_on_a_leaf_without_grad_and_on_a_no_grad_view(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        assert x.detach().exp().grad_fn is None
        with lib.no_grad():
            v = x[0]
        y = v.exp()  # a view made under no_grad: a leaf no gradient flows into
        assert y.requires_grad
        y.sum().backward()
        assert x.grad is None


def test_saved_tensor_hooks_see_every_saved_tensor_and_stay_in_their_thread(device):
    counts = {}
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        packed = []

        def pack(t, packed=packed):
            packed.append(tuple(t.shape))
            return t.clone()

        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = (x.sin() * x).sum()
        counts[lib.__name__] = len(packed)
        (g,) = lib.autograd.grad(y, x)
        assert_close(g, (x.cos() * x + x.sin()).detach(), rtol=1e-6, atol=1e-8)
    assert counts["ember"] == counts["torch"] == 3  # sin's input, both of mul's
    # hooks open in another thread are not this thread's
    packed, opened, done = [], threading.Event(), threading.Event()

    def other():
        with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
            opened.set()
            done.wait(10)
    th = threading.Thread(target=other)
    th.start()
    try:
        assert opened.wait(10)
        x = ember.tensor(X0, device=device, requires_grad=True)
        (x.sin() * x).sum().backward()
    finally:
        done.set()
        th.join()
    assert packed == []
    assert_close(x.grad, (x.cos() * x + x.sin()).detach(), rtol=1e-6, atol=1e-8)


def test_view_and_reshape_of_a_strided_tensor(device):
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        t = x.t()
        if lib is ember and device == "array_api":
            pytest.skip("arrays without strides copy views")
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            t.view(6)
        r = t.reshape(6)  # a copy
        with lib.no_grad():
            r.mul_(0)
        assert float(x.detach().abs().sum()) > 0
        v = x.view(3, 2)  # a view: shares x's storage and version counter
        with lib.no_grad():
            x.add_(0)
        assert v._version == x._version == 1
        for bad in [(-2, -3), (4, 2), (-1, -1), (0, 6)]:
            with pytest.raises(RuntimeError):
                x.view(*bad)
        res.append([tuple(x.view(*s).shape) for s in [(6,), (-1, 2), (3, -1), (1, 6, 1)]])
    assert res[0] == res[1]


def test_dims_and_node_names(device):
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        out = [x.unsqueeze(0), x.unsqueeze(-1), x.unsqueeze(2), x.squeeze(0), x.sum(1), x.sum(-1)]
        res.append([(tuple(t.shape), type(t.grad_fn).__name__, getattr(t.grad_fn, "_saved_dim", None)) for t in out])
        for bad in (3, -4):
            with pytest.raises(IndexError, match="Dimension out of range"):
                x.unsqueeze(bad)
        with pytest.raises(TypeError):
            x.unsqueeze(1.0)
    assert res[0] == res[1]


def test_categorical_draws_of_one_distribution(device):
    if device == "array_api":
        pytest.skip("multinomial draws through the backend's generator")
    p = ember.tensor([0.2, 0.5, 0.3], device=device)
    d = ember.distributions.Categorical(p)
    batch = ember.distributions.Categorical(p.unsqueeze(0))  # the batched path: the same draws
    for shape in [(), (5,), (2, 3)]:
        ember.manual_seed(0)
        a = d.sample(shape)
        ember.manual_seed(0)
        b = batch.sample(shape)
        tshape = tuple(torch.distributions.Categorical(torch.tensor([0.2, 0.5, 0.3])).sample(shape).shape)
        assert tuple(a.shape) == tshape and a.dtype is ember.int64
        assert a.tolist() == b.reshape(tshape).tolist()
    with pytest.raises(ValueError):
        ember.distributions.Categorical(ember.tensor([0.2, -0.5], device=device), validate_args=True)
