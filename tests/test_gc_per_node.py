"""Garbage-collector load of a recorded graph: the tracked objects each recorded op keeps alive until the backward
(each counts towards Python's next collection and is traversed by it), the graph freed by reference counting
after the backward, and no reference cycle left by a training step."""
import gc
import weakref

import numpy as np

import ember


def _kept_per_op(make, device, n=100):
    """Tracked objects alive per call of ``make(h) -> h`` over ``n`` chained calls (the results held only through
    the graph, the last one by the caller), with the collector off while they are counted. Instance dicts are left
    out: CPython 3.11 gives a class's instances dicts of their own once attributes were set on some instance in
    another order, which depends on what ran earlier in the process, not on the op."""
    x = ember.randn(4, 8, requires_grad=True, device=device)
    make(make(x))  # (first calls: the shared tuples of these shapes and parameters exist)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        before = _count()
        h = x
        for _ in range(n):
            h = make(h)
        per_op = (_count() - before) / n
    finally:
        if was:
            gc.enable()
    return per_op, h


def _count():
    return sum(type(o) is not dict for o in gc.get_objects())


def _tracked_arrays(device):
    """Tracked objects an array adds, where the array library's arrays are Python containers."""
    a = ember.randn(2, device=device)._data
    return sum(gc.is_tracked(o) for o in (a, a.dtype))


def test_chained_ops_keep_few_objects_each(device):
    # h * w keeps its node, its edges, its saved inputs and h (a tensor kept alive); + 1.0 its node and edges;
    # tanh its node, edges, and its output's array, weak reference and version
    w = ember.randn(4, 8, requires_grad=True, device=device)
    per_round, h = _kept_per_op(lambda h: (h * w + 1.0).tanh(), device)
    assert round(per_round) <= 10 + 2 * _tracked_arrays(device), per_round
    h.sum().backward()
    assert w.grad is not None


def test_multi_output_nodes_keep_no_tuples_of_their_own(device):
    # unbind's node keeps its outputs' (shape, dtype, device) and each product's node its edges' output numbers:
    # tuples shared by equal nodes (it was 29 objects a round, 17 now)
    per_round, h = _kept_per_op(lambda h: ember.stack([u * 1.0 for u in h.unbind(0)]), device)
    assert round(per_round) <= 17 + 4 * _tracked_arrays(device), per_round
    h.sum().backward()


def test_multi_output_metadata_and_edge_numbers_are_shared(device):
    x = ember.randn(3, 4, requires_grad=True, device=device)
    y1, y2 = x.unbind(0), x.unbind(0)
    assert y1[0].grad_fn._out_meta is y2[0].grad_fn._out_meta
    z1, z2 = y1[1] * y1[2], y2[1] * y2[2]
    assert z1.grad_fn._nrs == (1, 2) and z1.grad_fn._nrs is z2.grad_fn._nrs
    (z1.sum() + z2.sum()).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy()[1], 2 * x.detach().cpu().numpy()[2], rtol=1e-6)


def test_graph_freed_after_backward(device):
    x = ember.randn(16, requires_grad=True, device=device)
    h = x
    for _ in range(5):
        h = (h * x).sigmoid()
    mid = weakref.ref(h)
    node = weakref.ref(h.grad_fn)
    loss = h.sum()
    del h
    loss.backward()
    del loss
    assert mid() is None and node() is None


def _step(model, opt, data, target):
    opt.zero_grad()
    loss = ember.nn.functional.cross_entropy(model(data).transpose(0, 1).unbind(0)[0].view(8, 3), target)
    loss.backward()
    opt.step()


def test_training_step_leaves_no_reference_cycles(device):
    # (a cycle would stay until a collection: the step's graph is freed by reference counting alone)
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(5, 6), ember.nn.Tanh(), ember.nn.Linear(6, 3)).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    data = ember.randn(8, 5, device=device).unsqueeze(1)
    target = ember.tensor([0, 1, 2, 0, 1, 2, 0, 1], device=device)
    _step(model, opt, data, target)  # (the optimizer's state exists)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(3):
            _step(model, opt, data, target)
        assert gc.collect() == 0
    finally:
        if was:
            gc.enable()
