"""Random graphs: the engine's gradients against PyTorch's on the same programs.

Each seed builds a small DAG from a few leaves (some not requiring grad)
with ops that share, broadcast, view and reuse values, then backpropagates
from one or more roots (a leaf among them sometimes), with and without
``retain_graph`` and tensor hooks, and through ``autograd.grad``.
"""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

OPS = [
    ("add", 2, lambda m, a, b: a + b),
    ("mul", 2, lambda m, a, b: a * b),
    ("sub_scaled", 2, lambda m, a, b: a - 0.5 * b),
    ("relu", 1, lambda m, a: a.relu()),
    ("tanh", 1, lambda m, a: a.tanh()),
    ("exp_small", 1, lambda m, a: (a * 0.1).exp()),
    ("matmul", 2, lambda m, a, b: a @ b),
    ("transpose", 1, lambda m, a: a.t()),
    ("row_sum", 1, lambda m, a: a.sum(1, keepdim=True)),
    ("col_mean", 1, lambda m, a: a.mean(0)),
    ("slice", 1, lambda m, a: a[1:3]),
    ("clone", 1, lambda m, a: a.clone()),
]


def _program(seed):
    """A list of steps ``(op index, operand indices)`` over a growing list of values (4 leaves of 4x4 first)."""
    rng = np.random.RandomState(seed)
    steps, shapes = [], [(4, 4)] * 4
    for _ in range(rng.randint(4, 12)):
        for _ in range(20):
            k = rng.randint(len(OPS))
            name, arity = OPS[k][0], OPS[k][1]
            picks = [rng.randint(len(shapes)) for _ in range(arity)]
            shape = _shape_of(name, [shapes[i] for i in picks])
            if shape is not None:
                steps.append((k, picks))
                shapes.append(shape)
                break
    return steps


def _shape_of(name, shapes):
    a = shapes[0]
    if name in ("add", "mul", "sub_scaled"):
        b = shapes[1]
        try:
            return tuple(np.broadcast_shapes(a, b))
        except ValueError:
            return None
    if name == "matmul":
        b = shapes[1]
        return (a[0], b[1]) if len(a) == 2 and len(b) == 2 and a[1] == b[0] else None
    if name == "transpose":
        return a[::-1] if len(a) == 2 else None
    if name == "row_sum":
        return (a[0], 1) if len(a) == 2 else None
    if name == "col_mean":
        return a[1:] if len(a) == 2 else None
    if name == "slice":
        return (min(a[0], 3) - 1,) + a[1:] if a[0] >= 3 else None
    return a


def _run(m, leaves_np, needs, steps, device=None):
    kw = {} if device is None else {"device": device}
    leaves = [m.tensor(x, requires_grad=rg, **kw) for x, rg in zip(leaves_np, needs)]
    vals = list(leaves)
    for k, picks in steps:
        vals.append(OPS[k][2](m, *[vals[i] for i in picks]))
    vals.append(vals[-1].sum() * vals[0].mean())  # the output always depends on leaf 0
    return leaves, vals


@pytest.mark.parametrize("seed", range(24))
def test_random_graph_gradients_match_torch(device, torch, seed):
    rng = np.random.RandomState(1000 + seed)
    leaves_np = [rng.standard_normal((4, 4)) for _ in range(4)]
    needs = [True, True, bool(rng.randint(2)), False]
    steps = _program(seed)
    hook_on = rng.randint(len(steps)) + 4
    retain = bool(rng.randint(2))
    calls = {"ember": [], "torch": []}
    grads = {}
    for name, m, dev in (("ember", ember, device), ("torch", torch, None)):
        leaves, vals = _run(m, leaves_np, needs, steps, dev)
        out = vals[-1]
        if vals[hook_on].requires_grad:
            vals[hook_on].register_hook(lambda g, c=calls[name]: c.append(g.clone()))
        roots = [(out * out).sum()]
        root_grads = [None]
        if seed % 3 == 0:  # a leaf as a second root, with its own gradient
            roots.append(leaves[0])
            root_grads.append(m.full((4, 4), 0.5, dtype=m.float64, **({} if dev is None else {"device": dev})))
        m.autograd.backward(roots, root_grads, retain_graph=retain)
        if retain:  # the same graph again: gradients accumulate
            m.autograd.backward(roots[:1], root_grads[:1])
        grads[name] = [t.grad for t in leaves]
    for g, tg in zip(grads["ember"], grads["torch"]):
        assert (g is None) == (tg is None)
        if g is not None:
            assert_close(g, tg, rtol=1e-10, atol=1e-10)
    assert len(calls["ember"]) == len(calls["torch"])
    for g, tg in zip(calls["ember"], calls["torch"]):
        assert_close(g, tg, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("seed", range(12))
def test_random_graph_autograd_grad_matches_torch(device, torch, seed):
    rng = np.random.RandomState(2000 + seed)
    leaves_np = [rng.standard_normal((4, 4)) for _ in range(4)]
    needs = [True, True, True, False]
    steps = _program(100 + seed)
    results = {}
    for name, m, dev in (("ember", ember, device), ("torch", torch, None)):
        leaves, vals = _run(m, leaves_np, needs, steps, dev)
        out = vals[-1]
        mid = next((v for v in vals[4:-1] if v.requires_grad), leaves[0])
        wrt = [leaves[0], leaves[1], mid]
        results[name] = m.autograd.grad(out.sum(), wrt, allow_unused=True, create_graph=True)
        results[name + "2"] = [t.grad for t in leaves]  # autograd.grad accumulates nothing
    for g, tg in zip(results["ember"], results["torch"]):
        assert (g is None) == (tg is None)
        if g is not None:
            assert_close(g.detach(), tg.detach(), rtol=1e-10, atol=1e-10)
    assert all(g is None for g in results["ember2"])
