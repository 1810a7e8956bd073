"""The fast paths of two-operand ops keep every check of the general ones: graph recording of a tensor with a
second tensor or a number (both leaves or outputs 0 of their nodes, of one shape or broadcast, the same tensor
twice), and a Python float or int meeting a float32 or float64 tensor.  Each runs with tensor and node hooks,
anomaly mode, retain_graph, create_graph and an interception handler open, and against PyTorch."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close
from test_fast_paths_small import watched_grads

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")

X0 = np.linspace(-1.5, 1.25, 6).reshape(2, 3)
W0 = np.linspace(0.5, -0.75, 3)


def _program(lib, x, w, seen):
    """Two-operand ops over leaves, over outputs 0 and 1 of nodes, with broadcasting, with the same tensor twice
    and with numbers on either side (floats, ints)."""
    h = x * w + 0.5  # a leaf and a broadcast leaf, then a number
    h.register_hook(lambda g: seen.append("h") or g * 2)
    h.grad_fn.register_hook(lambda gi, go: seen.append("node") or None)
    a, b = x.unbind(0)  # b is output 1 of its node: the general path
    v = (a - b) * (2 - h[0]) / 3 + b * 0.25
    u = (h * h).tanh() - h * 0.1  # the same tensor twice
    return (v.sum() + (1.5 * u).sigmoid().sum() + (u ** 2).mean()).squeeze()


@pytest.mark.parametrize("create_graph", [False, True])
def test_recorded_two_operand_ops_with_hooks_anomaly_retain_create_and_interception(device, create_graph):
    names, kinds = watched_grads(_program, X0, W0, device, create_graph, "w")
    assert "binary" in kinds
    assert names[0].count("h") == (3 if create_graph else 2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_numbers_with_float_tensors_give_pytorch_values_dtypes_and_gradients(device, dtype):
    numbers = (0.1, 3, -2, 1e30, float("inf"), 2 ** 40)
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, dtype=getattr(lib, dtype), device=dev, requires_grad=True)
        outs = []
        for s in numbers:
            outs += [x + s, s - x, x * s, s * x, x / s]
        grads = lib.autograd.grad(sum(o.sum() for o in outs[:-5]), x)[0]
        res.append(([o.dtype for o in outs], [o.detach() for o in outs], grads))
    assert [str(d).split(".")[-1] for d in res[0][0]] == [str(d).split(".")[-1] for d in res[1][0]]
    for a, b in zip(res[0][1], res[1][1]):
        assert_close(a, b, rtol=1e-6, atol=0)
    assert_close(res[0][2], res[1][2], rtol=1e-6, atol=0)


def test_two_operand_nodes_refuse_inplace_changes_bad_shapes_and_a_second_backward(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        w = lib.tensor(W0, device=dev, requires_grad=True)
        h = x * 1.0
        y = h * w  # saves both inputs
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        z = (x * 2.0) * 3.0
        z.sum().backward()
        with pytest.raises(RuntimeError, match="second time"):
            z.sum().backward()
        with pytest.raises(RuntimeError, match="must match the size"):
            x * lib.ones(4, device=dev)
        n = x + 0.5
        assert n.requires_grad and n.grad_fn is not None and not lib.ones(2, device=dev).add(1.0).requires_grad
        with lib.no_grad():
            assert (x * 2.0).grad_fn is None and not (x * w).requires_grad
        with lib.inference_mode():
            assert (x - 1).is_inference() and not (w * 2).requires_grad


def test_a_float32_tensor_with_a_number_under_a_tensor_subclass_and_integer_tensors(device):
    class Tagged(ember.Tensor):
        pass

    x = ember.tensor(X0, dtype=ember.float32, device=device).as_subclass(Tagged)
    assert type(x * 2.0) is Tagged and type(0.5 - x) is Tagged  # interception sees the number path too
    for s in (2, 2.5, True):
        a = ember.tensor([1, 2, 3], dtype=ember.int32, device=device)
        b = torch.tensor([1, 2, 3], dtype=torch.int32)
        for ea, tb in ((a * s, b * s), (s + a, s + b)):
            assert str(ea.dtype).split(".")[-1] == str(tb.dtype).split(".")[-1]
            np.testing.assert_array_equal(ea.cpu().numpy(), tb.numpy())


def _chain(lib, x, w, seen):
    """One-input nodes, two-input nodes with a number's empty edge, output 1 of a node (the general path), a
    broadcast gradient summed to its input's shape, a leaf reached by several edges."""
    h = x
    for i in range(3):
        h = (h * w + 0.5).tanh() - h * 0.1
        h = h.sigmoid() if i % 2 else h.relu()
    h.register_hook(lambda g: seen.append("h") or g * 1.5)
    h.grad_fn.register_prehook(lambda go: seen.append("pre") or None)
    a, b = h.unbind(0)
    return (a * b.exp() + w).sum()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("create_graph", [False, True])
def test_engine_edge_walk_with_hooks_saved_tensor_hooks_anomaly_retain_and_create_graph(device, create_graph):
    if device == "array_api":
        pytest.skip("anomaly mode's NaN check reads gradients with the backend's isnan, which the strict array "
                    "API refuses")
    res, logs = [], []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        w = lib.tensor(W0, device=dev, requires_grad=True)
        seen, unpacked = [], []
        with lib.autograd.detect_anomaly(), lib.autograd.graph.saved_tensors_hooks(
                lambda t: t, lambda t, u=unpacked: u.append(1) or t):
            loss = _chain(lib, x, w, seen)
            loss.backward(retain_graph=True, create_graph=create_graph)
            first = (x.grad.detach().clone(), w.grad.detach().clone())
            gw = lib.autograd.grad(loss, w, retain_graph=create_graph)[0]  # the graph was kept
        second = lib.autograd.grad(x.grad.sum(), w)[0] if create_graph else gw
        res.append((loss.detach(), *first, gw.detach(), second.detach()))
        logs.append((seen, bool(unpacked), x.grad.requires_grad))
        with pytest.raises(RuntimeError, match="second time"):
            lib.autograd.grad(loss, w)
    assert logs[0] == logs[1] and logs[0][1]
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_node_hooks_replace_gradients_and_refuse_a_wrong_count_and_saved_values_free_as_pytorch(device):
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        w = lib.tensor(W0, device=dev, requires_grad=True)
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 2, None))
        y.sum().backward()
        assert_close(x.grad, 2 * lib.tensor(W0, device=dev).expand(2, 3), rtol=0, atol=0)
        assert w.grad is None

        def bad(gi, go):
            return (gi[0],)

        y = x * w
        y.grad_fn.register_hook(bad)
        with pytest.raises(RuntimeError, match=r"hook 'bad' has returned an incorrect number of values \(got 1, "
                                               r"but expected 2\)"):
            y.sum().backward()
        z = x.exp()
        (z * 3.0).sum().backward()
        with pytest.raises(RuntimeError, match="after they have already been freed"):
            z.grad_fn._saved_result  # noqa: B018 - reading it refuses
        x.grad = None
        s = x.sum(1)  # nodes that keep no tensor: a second backward runs, as in PyTorch
        s.sum().backward()
        s.sum().backward()
        assert_close(x.grad, lib.full((2, 3), 2.0, dtype=x.dtype, device=dev), rtol=0, atol=0)


def _fan_in(lib, x, w, stash):
    """Many gradients summed into one node's and one leaf's pending gradient: the same tensor twice (``h + h``),
    a gradient a hook keeps, a retained one."""
    h = x * w
    h.retain_grad()
    h.register_hook(lambda g: stash.append(g) or None)
    s = h + h
    t = (s * 2 + h).relu() + h.tanh() + h * 3.0
    return t.sum() + ((x + x) * w).sum() + (x * 0.5).sum()


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("create_graph", [False, True])
def test_gradients_summed_in_place_leave_hooked_retained_and_accumulated_grads_as_pytorch(device, create_graph):
    res = []
    for lib, dev in ((ember, device), (torch, "cpu")):
        x = lib.tensor(X0, device=dev, requires_grad=True)
        w = lib.tensor(W0, device=dev, requires_grad=True)
        stash = []
        loss = _fan_in(lib, x, w, stash)
        lib.autograd.backward(loss, retain_graph=True, create_graph=create_graph)
        first = (x.grad.detach().clone(), w.grad.detach().clone(), stash[0].detach().clone())
        grad_before = x.grad  # the tensor the first backward left: accumulated into (or replaced) as PyTorch's
        gx = lib.autograd.grad(loss, x, retain_graph=True)[0]
        loss.backward()
        res.append((*first, gx, x.grad.detach(), w.grad.detach(), stash[0].detach(), stash[1].detach(),
                    stash[2].detach(), grad_before.detach()))
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-6, atol=1e-7)


def _kept_sums(lib, device, plain=False):
    """A subclass that keeps each sum it makes, for a node whose second gradient (of four) is of that subclass;
    ``plain``: it hands back a plain tensor of the sum's data (what it kept shares that data)."""
    seen = []

    class Kept(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            r = super().__torch_function__(func, types, args, kwargs or {})
            if getattr(func, "__name__", "") in ("add", "__add__"):
                seen.append((r, r.tolist()))
                if plain:
                    return r.as_subclass(lib.Tensor)
            return r

    x = lib.tensor([1.0, 2.0], device=device, requires_grad=True)
    n = x * 1.0
    outs = [n * float(i + 2) for i in range(4)]
    outs[1].register_hook(lambda g: g.as_subclass(Kept))
    ((outs[0].sum() + outs[1].sum()) + (outs[2].sum() + outs[3].sum())).backward()
    return [(r.tolist(), made) for r, made in seen], x.grad.tolist()


@pytest.mark.parametrize("plain", [False, True])
def test_a_sum_made_through_a_subclass_is_never_added_into_in_place(device, plain):
    kept, grad = _kept_sums(ember, device, plain)
    assert kept and all(now == made for now, made in kept), kept  # (what the subclass kept is as it was made)
    assert grad == _kept_sums(torch, "cpu", plain)[1] == [14.0, 14.0]
