"""``Module.register_backward_hook`` (the deprecated, non-full hook) against PyTorch: it sees the gradients of the
last node of the module's forward, laid out as PyTorch's graph has them, warns as PyTorch warns, and a tuple it
returns replaces those gradients."""
import re
import warnings

import numpy as np
import pytest

import ember


def _arr(seed, *shape):
    return np.random.RandomState(seed).randn(*shape)


def _layers(m, dev):
    """name -> (module factory, input arrays, which inputs require grad), built alike for ember and PyTorch."""
    nn = m.nn

    def sized(mod, *arrays):
        mod = mod.double().to(dev)
        with m.no_grad():
            for p, a in zip(mod.parameters(), arrays):
                p.copy_(m.tensor(a, device=dev))
        return mod

    def linear(bias=True):
        return sized(nn.Linear(3, 2, bias=bias), _arr(1, 2, 3), _arr(2, 2))

    class Ops(nn.Module):
        def forward(self, x):
            return (x * 2).sin() + 1

    class Product(nn.Module):
        def forward(self, x, y):
            return x * y

    class MatMul(nn.Module):
        def forward(self, x, y):
            return x @ y

    class TwoOut(nn.Module):
        def forward(self, x, y):
            return x * 2, y * 3

    return {
        "linear": (linear, [(4, 3)]),
        "linear_frozen_input": (linear, [(4, 3, False)]),
        "linear_1d": (linear, [(3,)]),
        "linear_3d": (linear, [(2, 4, 3)]),
        "linear_no_bias": (lambda: linear(False), [(4, 3)]),
        "conv2d": (lambda: sized(nn.Conv2d(2, 3, 3), _arr(3, 3, 2, 3, 3), _arr(4, 3)), [(1, 2, 5, 5)]),
        "conv2d_no_bias": (lambda: sized(nn.Conv2d(2, 3, 3, bias=False), _arr(3, 3, 2, 3, 3)), [(1, 2, 5, 5)]),
        "relu": (nn.ReLU, [(2, 3)]),
        "sequential": (lambda: nn.Sequential(linear(), nn.ReLU()), [(4, 3)]),
        "sequential_linear_last": (lambda: nn.Sequential(nn.ReLU(), linear()), [(4, 3)]),
        "several_ops": (Ops, [(2, 3)]),
        "two_inputs": (Product, [(2, 3), (2, 3)]),
        "two_inputs_broadcast": (Product, [(2, 3), (3,)]),
        "two_inputs_one_frozen": (Product, [(2, 3), (2, 3, False)]),
        "matmul": (MatMul, [(2, 3), (3, 4)]),
        "two_outputs": (TwoOut, [(2, 3), (2, 3)]),
    }


def _run(m, dev, name, scale):
    """Forward + backward with a legacy hook that records what it sees (and multiplies it by ``scale``)."""
    make, specs = _layers(m, dev)[name]
    mod = make()
    inputs = [m.tensor(_arr(i + 5, *s[:len(s) - (s[-1] is False)]), device=dev).requires_grad_(s[-1] is not False)
              for i, s in enumerate(specs)]
    seen = []

    def hook(module, grad_input, grad_output):
        assert module is mod
        seen.append([None if g is None else g.tolist() for g in grad_input] + ["|"]
                    + [g.tolist() for g in grad_output])
        if scale is not None:
            return tuple(None if g is None else g * scale for g in grad_input)

    mod.register_backward_hook(hook)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = mod(*inputs)
    out = out if isinstance(out, tuple) else (out,)
    sum(o.sum() for o in out).backward()
    grads = [None if t.grad is None else t.grad.tolist() for t in [*inputs, *mod.parameters()]]
    return seen, [(w.category, str(w.message)) for w in caught], grads


def _close(a, b):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if a is None or isinstance(a, str):
        return a == b
    return b is not None and not isinstance(b, str) and np.allclose(a, b)


@pytest.mark.parametrize("scale", [None, 10.0])
@pytest.mark.parametrize("name", list(_layers(ember, "cpu")))
def test_legacy_hook_matches_torch(device, torch, name, scale):
    seen, warned, grads = _run(ember, device, name, scale)
    t_seen, t_warned, t_grads = _run(torch, "cpu", name, scale)
    assert _close(seen, t_seen), (seen, t_seen)
    assert [(c.__name__, msg.replace("torch", "ember")) for c, msg in t_warned] == [
        (c.__name__, msg) for c, msg in warned]
    assert _close(grads, t_grads)


def _bad_hook_error(m, dev, ret, module="relu"):
    mod = {"relu": m.nn.ReLU(), "add": _add_one(m)}[module]
    x = m.ones(2, 2, device=dev, requires_grad=True)
    mod.register_backward_hook(lambda mod, gi, go: ret(m, gi))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = mod(x)
    with pytest.raises((RuntimeError, TypeError)) as info:
        y.sum().backward()
    msg = str(info.value).replace("torch", "ember").replace("<lambda>", "hook")
    return info.type, re.sub(r"ember\.\w+\.(\w+Tensor)", r"ember.\1", msg)  # the device's tensor type names


def _add_one(m):
    class AddOne(m.nn.Module):
        def forward(self, x):
            return x + 1
    return AddOne()


@pytest.mark.parametrize("ret,module", [
    (lambda m, gi: gi + gi, "relu"),
    (lambda m, gi: gi[0] * 3, "relu"),
    (lambda m, gi: [gi[0] * 3], "relu"),
    (lambda m, gi: (m.ones(3, dtype=gi[0].dtype, device=gi[0].device),), "relu"),
    (lambda m, gi: (m.ones(2, dtype=gi[0].dtype, device=gi[0].device),), "relu"),
    (lambda m, gi: (gi[0].double(),), "relu"),
    (lambda m, gi: (3,), "relu"),
    (lambda m, gi: (gi[0], gi[0]), "add"),
], ids=["count", "tensor", "list", "size", "broadcast", "dtype", "int", "fills_none"])
def test_legacy_hook_bad_replacement(device, torch, ret, module):
    assert _bad_hook_error(ember, device, ret, module) == _bad_hook_error(torch, "cpu", ret, module)
