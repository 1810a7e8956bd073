"""Case table: errors of PyTorch's type, with the state the case inspects untouched.  Cases and their check:
:mod:`ember.testing.case`."""
from __future__ import annotations

import numpy as np

from .case import Case, T


# =========================================================================== errors of PyTorch's type, state untouched
def _fails(call, *inspect):
    """Run ``call(m, dev)`` on fresh inputs; the exception type (or result) and then the inputs afterwards,
    so that a failed call is also checked to leave its inputs as they were."""
    def fn(m, dev):
        made = {}

        def get(name, make):
            if name not in made:
                made[name] = make(m, dev)
            return made[name]

        try:
            r = call(m, dev, get)
        except Exception as exc:  # noqa: BLE001 - the exception type is the result compared
            r = type(exc).__name__
        return r, [made[k] for k in inspect]
    return fn


def _ones(*shape, rg=False):
    return lambda m, dev: m.ones(*shape, dtype=m.float64, device=dev, requires_grad=rg)


def _param(*shape):
    def make(m, dev):
        p = m.nn.Parameter(m.arange(float(np.prod(shape)), dtype=m.float64, device=dev).reshape(shape))
        return p
    return make


ERROR_CASES = [
    Case("add_ shape mismatch", _fails(lambda m, dev, g: g("x", _ones(3)).add_(g("y", _ones(4))), "x", "y")),
    Case("mul_ shape mismatch", _fails(lambda m, dev, g: g("x", _ones(3)).mul_(g("y", _ones(4))), "x")),
    Case("sub_ to a broadcast shape", _fails(lambda m, dev, g: g("x", _ones(3)).sub_(g("y", _ones(2, 3))), "x")),
    Case("div_ shape mismatch", _fails(lambda m, dev, g: g("x", _ones(2, 3)).div_(g("y", _ones(2, 2))), "x")),
    Case("copy_ shape mismatch", _fails(lambda m, dev, g: g("x", _ones(3)).copy_(g("y", _ones(4))), "x")),
    Case("index_add_ out of range", _fails(lambda m, dev, g: g("x", _ones(3)).index_add_(
        0, m.tensor([5], device=dev), g("s", _ones(1))), "x")),
    Case("index_add_ negative", _fails(lambda m, dev, g: g("x", _ones(3)).index_add_(
        0, m.tensor([-1], device=dev), g("s", _ones(1))), "x")),
    Case("index_copy_ out of range", _fails(lambda m, dev, g: g("x", _ones(3)).index_copy_(
        0, m.tensor([3], device=dev), g("s", _ones(1))), "x")),
    Case("conv2d stride 0", _fails(lambda m, dev, g: m.nn.functional.conv2d(_ones(1, 1, 4, 4)(m, dev),
                                                                           _ones(1, 1, 2, 2)(m, dev), stride=0))),
    Case("conv1d stride 0", _fails(lambda m, dev, g: m.nn.functional.conv1d(_ones(1, 1, 4)(m, dev),
                                                                           _ones(1, 1, 2)(m, dev), stride=0))),
    Case("Conv2d stride 0", _fails(lambda m, dev, g: m.nn.Conv2d(1, 1, 2, stride=0).to(dev)(
        m.ones(1, 1, 4, 4, device=dev)))),
    Case("conv_transpose2d stride 0", _fails(lambda m, dev, g: m.nn.functional.conv_transpose2d(
        _ones(1, 1, 4, 4)(m, dev), _ones(1, 1, 2, 2)(m, dev), stride=0))),
    Case("max_pool2d stride 0", _fails(lambda m, dev, g: m.nn.functional.max_pool2d(_ones(1, 1, 4, 4)(m, dev), 2,
                                                                                   stride=0))),
    Case("avg_pool2d stride 0", _fails(lambda m, dev, g: m.nn.functional.avg_pool2d(_ones(1, 1, 4, 4)(m, dev), 2,
                                                                                   stride=0))),
    Case("BatchNorm1d wrong channels", _fails(lambda m, dev, g: g("bn", lambda m, dev: m.nn.BatchNorm1d(3).to(dev))(
        m.ones(4, 5, device=dev)))),
    Case("BatchNorm2d wrong channels", _fails(lambda m, dev, g: m.nn.BatchNorm2d(3).to(dev)(
        m.ones(2, 5, 2, 2, device=dev)))),
    Case("F.batch_norm wrong channels", _fails(lambda m, dev, g: m.nn.functional.batch_norm(
        m.ones(4, 5, device=dev), m.zeros(3, device=dev), m.ones(3, device=dev)))),
    Case("bool-mask assignment, wrong count", _fails(lambda m, dev, g: g("x", _ones(4)).__setitem__(
        m.tensor([True, False, True, False], device=dev), m.tensor([1.0, 2.0, 3.0], dtype=m.float64, device=dev)),
        "x")),
    Case("bool-mask assignment, one value", _fails(lambda m, dev, g: g("x", _ones(4)).__setitem__(
        m.tensor([True, False, True, False], device=dev), m.tensor([5.0], dtype=m.float64, device=dev)), "x")),
    Case("index assignment, wrong count", _fails(lambda m, dev, g: g("x", _ones(4)).__setitem__(
        m.tensor([0, 1], device=dev), m.tensor([1.0, 2.0, 3.0], dtype=m.float64, device=dev)), "x")),
    Case("masked_scatter_ short source", _fails(lambda m, dev, g: g("x", _ones(4)).masked_scatter_(
        m.tensor([True, False, True, False], device=dev), m.tensor([1.0], dtype=m.float64, device=dev)), "x")),
    Case("Module.to(int64)", _fails(lambda m, dev, g: str(m.nn.Linear(2, 2).to(m.int64).weight.dtype))),
    Case("Module.to(dtype=bool)", _fails(lambda m, dev, g: str(m.nn.Linear(2, 2).to(dtype=m.bool).weight.dtype))),
    Case("Module.to(float64)", _fails(lambda m, dev, g: str(m.nn.Linear(2, 2).to(m.float64).weight.dtype))),
    Case("softmax of int", _fails(lambda m, dev, g: m.softmax(m.tensor([1, 2], device=dev), 0))),
    Case("F.softmax of int", _fails(lambda m, dev, g: m.nn.functional.softmax(m.tensor([1, 2], device=dev), 0))),
    Case("one_hot of negative classes", _fails(lambda m, dev, g: m.nn.functional.one_hot(
        m.tensor([-1, 2], device=dev)))),
    Case("one_hot of too large classes", _fails(lambda m, dev, g: m.nn.functional.one_hot(
        m.tensor([5], device=dev), 3))),
    Case("BCE target above 1", _fails(lambda m, dev, g: m.nn.functional.binary_cross_entropy(
        T(m, dev, [0.5, 0.2]), T(m, dev, [1.5, 0.0])))),
    Case("BCE target below 0", _fails(lambda m, dev, g: m.nn.functional.binary_cross_entropy(
        T(m, dev, [0.5, 0.2]), T(m, dev, [-0.5, 0.0])))),
    Case("BCE input above 1", _fails(lambda m, dev, g: m.nn.functional.binary_cross_entropy(
        T(m, dev, [1.5, 0.2]), T(m, dev, [1.0, 0.0])))),
    Case("BCELoss target NaN", _fails(lambda m, dev, g: m.nn.BCELoss()(T(m, dev, [0.5]), T(m, dev, [float("nan")])))),
    Case("from_numpy negative strides", _fails(lambda m, dev, g: m.from_numpy(np.arange(4)[::-1]))),
    Case("from_numpy negative strides 2-d", _fails(lambda m, dev, g: m.from_numpy(np.ones((2, 3))[:, ::-1]))),
    Case("from_numpy non-contiguous", _fails(lambda m, dev, g: m.from_numpy(np.arange(8).reshape(2, 4)[:, ::2]))),
    Case("max of empty", _fails(lambda m, dev, g: m.zeros(0, device=dev).max())),
    Case("min of empty", _fails(lambda m, dev, g: m.zeros(0, device=dev).min())),
    Case("argmax of empty", _fails(lambda m, dev, g: m.zeros(0, device=dev).argmax())),
    Case("argmin of empty", _fails(lambda m, dev, g: m.zeros(0, device=dev).argmin())),
    Case("amax of empty", _fails(lambda m, dev, g: m.zeros(0, device=dev).amax())),
    Case("max of empty dim", _fails(lambda m, dev, g: m.zeros(2, 0, device=dev).max(1))),
    Case("argmax of empty dim", _fails(lambda m, dev, g: m.zeros(2, 0, device=dev).argmax(1))),
    Case("max of empty, other dim", _fails(lambda m, dev, g: m.zeros(2, 0, device=dev).max(0))),
]


def _clip(grads, **kw):
    def fn(m, dev):
        ps = [m.nn.Parameter(m.ones(len(gr), dtype=m.float64, device=dev)) for gr in grads]
        for p, gr in zip(ps, grads):
            p.grad = T(m, dev, gr)
        try:
            n = m.nn.utils.clip_grad_norm_(ps, 1.0, **kw)
        except Exception as exc:  # noqa: BLE001 - the exception type is the result compared
            n = type(exc).__name__
        return n, [p.grad for p in ps]
    return fn


ERROR_CASES += [
    Case("clip_grad_norm_ with a NaN gradient", _clip([[float("nan"), 1.0], [2.0]])),
    Case("clip_grad_norm_ with an infinite gradient", _clip([[float("inf"), 1.0], [2.0]])),
    Case("clip_grad_norm_ with a NaN gradient, inf norm", _clip([[float("nan"), 1.0], [2.0]], norm_type=float("inf"))),
    Case("clip_grad_norm_ non-finite error", _clip([[float("nan"), 1.0], [2.0]], error_if_nonfinite=True)),
    Case("clip_grad_norm_ below max", _clip([[0.1, 0.2], [0.3]])),
    Case("clip_grad_norm_ above max", _clip([[3.0, 4.0], [12.0]])),
]
