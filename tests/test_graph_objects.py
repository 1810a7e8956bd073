"""The Python objects a recorded graph keeps: few per node (each counts towards the next garbage collection),
with ``next_functions`` still PyTorch's ``(node, output_nr)`` pairs wherever a node's edges come from."""
import gc

import numpy as np
import pytest

import ember


def _edges(fn):
    """``next_functions`` as ``(node name, output_nr)`` pairs (None for no node)."""
    return tuple((None if n is None else type(n).__name__, nr) for n, nr in fn.next_functions)


def _programs(m, **device):
    """Graphs whose edges carry output numbers other than 0, numbers, leaves and inputs without gradient."""
    x = m.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True, **device)
    c = m.tensor([1.0, 2.0, 3.0], **device)
    a, b = x.unbind(0)
    v, i = x.max(1)
    return {
        "unbind": a * b + c,
        "max": v * 2.0,
        "leaf": (x * c).sum(),
        "number": x + 0.5,
        "cat": m.cat([a, c, b]),
    }


def test_next_functions_match_pytorch(device):
    torch = pytest.importorskip("torch")
    ours, theirs = _programs(ember, device=device), _programs(torch)
    for name in ours:
        e, t = ours[name].grad_fn, theirs[name].grad_fn
        assert _edges(e) == _edges(t), name
        assert [_edges(n) for n, _ in e.next_functions if n is not None and n.next_functions] == \
            [_edges(n) for n, _ in t.next_functions if n is not None and n.next_functions], name


def test_next_functions_set_on_a_node_reads_back(device):
    x = ember.randn(3, requires_grad=True, device=device)
    y = (x * 2).exp()
    fn = y.grad_fn
    edges = fn.next_functions
    fn.next_functions = edges + ((None, 0),)
    assert fn.next_functions == edges + ((None, 0),)
    fn.next_functions = edges
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), 2 * np.exp(2 * x.detach().cpu().numpy()), rtol=1e-6)


def test_a_recorded_op_keeps_few_tracked_objects(device):
    x = ember.randn(64, requires_grad=True, device=device)
    w = ember.randn(64, requires_grad=True, device=device)
    keep = [x * w, x.tanh()]  # (first calls: the shared tuples of this shape exist)
    n = 200
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        before = len(gc.get_objects())
        h = x
        for _ in range(n):
            h = h * w
            keep.append(h)
        per_op = (len(gc.get_objects()) - before) / n
    finally:
        if was:
            gc.enable()
    # the node, its result, its edges' nodes and its saved inputs (and the array, where the array library's
    # arrays are Python objects): no tuple per edge, per shape or per version
    own = sum(gc.is_tracked(o) for o in (h._data, h._data.dtype))
    assert per_op <= 4.1 + own, per_op
    h.sum().backward()
    assert w.grad is not None
