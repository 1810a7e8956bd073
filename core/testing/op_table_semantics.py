"""Differential tables for PyTorch's semantics in the corners: autograd safety, dtypes, shapes, errors.

Each :class:`Case` is a program ``fn(m, dev)`` written once for ``m`` = ``ember`` and ``m`` = ``torch``
(``dev`` is the device: the backend under test for ember, ``"cpu"`` for PyTorch).  :func:`check_case`
runs it with both libraries and asserts that they agree: the same exception type when PyTorch raises
(and the state the case inspects after the failure), else the same results (tensors by dtype, shape and
values; other values by equality).  :func:`case_test` turns a table into a pytest test over the
``device`` fixture, so every backend inherits the tables.  Adding a corner is adding a row.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import ember

from .compare import assert_close, has_dtype, to_numpy


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    rtol: float | None = None
    atol: float | None = None
    check_dtype: bool = True
    needs_strides: bool = False  # the case inspects memory overlap, which only strided arrays can show


def T(m, dev, data, dtype="float64", rg=False):  # noqa: N802
    """A tensor of library ``m`` on ``dev`` from host data (``rg``: a leaf requiring grad)."""
    t = m.tensor(np.asarray(data).tolist(), dtype=getattr(m, dtype), device=dev)
    return t.requires_grad_() if rg else t


_RNG = np.random.RandomState(17)
DATA = {  # fixed sample data (the same values for both libraries)
    "v": _RNG.randn(6),
    "m": _RNG.randn(3, 4),
    "c": _RNG.randn(2, 3, 4),
    "w": _RNG.randn(6),
}


def _is_tensor(x):
    return hasattr(x, "dtype") and hasattr(x, "shape") and hasattr(x, "detach")


def _compare(a, e, case, path="result"):
    if _is_tensor(e):
        assert _is_tensor(a), f"{case.name}: {path}: expected a tensor, got {a!r}"
        assert_close(a, e, rtol=case.rtol, atol=case.atol, check_dtype=case.check_dtype, msg=f"{case.name}: {path}")
    elif isinstance(e, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(e), f"{case.name}: {path}: {a!r} != {e!r}"
        for i, (x, y) in enumerate(zip(a, e)):
            _compare(x, y, case, f"{path}[{i}]")
    elif isinstance(e, float) and math.isnan(e):
        assert isinstance(a, float) and math.isnan(a), f"{case.name}: {path}: {a!r} != nan"
    elif isinstance(e, str):
        assert str(a).replace("ember.", "torch.") == e, f"{case.name}: {path}: {a!r} != {e!r}"
    elif e is None or isinstance(e, (bool, int, float, complex)):
        close = isinstance(a, float) and isinstance(e, float) and np.isclose(a, e, rtol=case.rtol or 1e-5,
                                                                              atol=case.atol or 1e-8)
        assert a == e or close, \
            f"{case.name}: {path}: {a!r} != {e!r}"
    else:
        np.testing.assert_allclose(to_numpy(a), to_numpy(e), err_msg=f"{case.name}: {path}")


class Raised:
    """What a case produced when it raised: the exception type (compared by name) and the message."""

    def __init__(self, exc):
        self.type, self.message = type(exc).__name__, str(exc)

    def __repr__(self):
        return f"{self.type}({self.message[:200]!r})"


def run(case: Case, m, dev) -> Any:
    try:
        return case.fn(m, dev)
    except Exception as exc:  # noqa: BLE001 - a raised exception is a result to compare
        return Raised(exc)


def _lacks(device) -> list:
    """The dtypes of :data:`DTYPES` that ``device``'s backend cannot hold (array_api_strict has no float16)."""
    return [d for d in DTYPES if not has_dtype(device, getattr(ember, d))]


def check_case(case: Case, device: str) -> None:
    """Run ``case`` with ember on ``device`` and with PyTorch on the CPU; assert that they agree.

    The dtype sweeps cover the dtypes the backend has (both libraries run the same list); a single case that
    needs a dtype the backend lacks, or reinterpreting bytes (``view(dtype)``) where its arrays cannot, is
    skipped."""
    import pytest  # optional: only the test builders need pytest
    import torch  # optional: the reference

    lacks = _lacks(device)
    if any(d in case.name for d in lacks):
        pytest.skip(f"the {device} backend has no {', '.join(d for d in lacks if d in case.name)}")
    if case.needs_strides and not _has_strides(device):
        pytest.skip(f"the {device} backend's arrays report no strides (memory overlap is invisible)")
    if case.name.startswith("view") and not _views_dtypes(device):
        pytest.skip(f"the {device} backend's arrays cannot be reinterpreted as another dtype")
    _ACTIVE[0] = [d for d in DTYPES if d not in lacks]
    try:
        expected = run(case, torch, "cpu")
        actual = run(case, ember, device)
    finally:
        _ACTIVE[0] = DTYPES
    if isinstance(expected, Raised):
        assert isinstance(actual, Raised), f"{case.name}: PyTorch raises {expected!r}; ember returned {actual!r}"
        assert actual.type == expected.type, f"{case.name}: PyTorch raises {expected!r}; ember raises {actual!r}"
        return
    assert not isinstance(actual, Raised), f"{case.name}: ember raises {actual!r}; PyTorch returns {expected!r}"
    _compare(actual, expected, case)


def case_test(cases):
    """A pytest test running every case of ``cases`` on the ``device`` fixture."""
    import pytest  # optional: only the test builders need pytest

    pytest.importorskip("torch")

    @pytest.mark.parametrize("case", cases, ids=[c.name for c in cases])
    def test_case(case, device):
        check_case(case, device)

    return test_case


# =========================================================================== autograd: in-place activations
def _inplace_act(call):
    """Apply an in-place activation to an intermediate (``x * 1.5``), then backpropagate a weighted sum."""
    def fn(m, dev):
        x = T(m, dev, DATA["v"] * 3, rg=True)
        y = x * 1.5
        z = call(m, y)
        assert z is y, "an in-place activation returns its input"
        (z * T(m, dev, DATA["w"])).sum().backward()
        return z.detach(), x.grad, y.requires_grad
    return fn


def _module(name, *args, **kw):
    return lambda m, y: getattr(m.nn, name)(*args, inplace=True, **kw)(y)


def _functional(name, *args, **kw):
    return lambda m, y: getattr(m.nn.functional, name)(y, *args, inplace=True, **kw)


INPLACE_ACTIVATIONS = [
    Case("ReLU", _inplace_act(_module("ReLU"))),
    Case("ReLU6", _inplace_act(_module("ReLU6"))),
    Case("LeakyReLU", _inplace_act(_module("LeakyReLU", 0.1))),
    Case("ELU", _inplace_act(_module("ELU", 0.7))),
    Case("CELU", _inplace_act(_module("CELU", 0.7))),
    Case("SELU", _inplace_act(_module("SELU"))),
    Case("Hardtanh", _inplace_act(_module("Hardtanh", -2.0, 2.5))),
    Case("SiLU", _inplace_act(_module("SiLU"))),
    Case("Mish", _inplace_act(_module("Mish"))),
    Case("Hardswish", _inplace_act(_module("Hardswish"))),
    Case("Hardsigmoid", _inplace_act(_module("Hardsigmoid"))),
    Case("Threshold", _inplace_act(_module("Threshold", 0.2, -3.0))),
    Case("F.threshold", _inplace_act(_functional("threshold", 0.2, -3.0))),
    Case("F.relu", _inplace_act(_functional("relu"))),
    Case("F.relu6", _inplace_act(_functional("relu6"))),
    Case("F.leaky_relu", _inplace_act(_functional("leaky_relu", 0.2))),
    Case("F.elu", _inplace_act(_functional("elu"))),
    Case("F.hardtanh", _inplace_act(_functional("hardtanh"))),
    Case("F.silu", _inplace_act(_functional("silu"))),
    Case("torch.relu_", _inplace_act(lambda m, y: m.relu_(y))),
    Case("torch.selu_", _inplace_act(lambda m, y: m.selu_(y))),
    Case("torch.celu_", _inplace_act(lambda m, y: m.celu_(y))),
    Case("torch.threshold_", _inplace_act(lambda m, y: m.threshold_(y, 0.1, 2.0))),
    Case("Tensor.sigmoid_", _inplace_act(lambda m, y: y.sigmoid_())),
    Case("Tensor.tanh_", _inplace_act(lambda m, y: y.tanh_())),
    Case("Tensor.exp_", _inplace_act(lambda m, y: y.exp_())),
    Case("Tensor.clamp_", _inplace_act(lambda m, y: y.clamp_(-1, 1))),
    # the same on a view: the base's history is rewritten (CopySlices)
    Case("ReLU6 on a view", _inplace_act(lambda m, y: (m.nn.ReLU6(inplace=True)(y[1:4]), y)[1])),
    Case("SiLU on a view", _inplace_act(lambda m, y: (m.nn.functional.silu(y[::2], inplace=True), y)[1])),
]


def _index_put(index, value_rg=False):
    def fn(m, dev):
        x = T(m, dev, DATA["v"], rg=True)
        v = T(m, dev, [1.5, -2.0], rg=value_rg)
        y = x * 2
        y[index(m, dev)] = v
        (y * y * T(m, dev, DATA["w"])).sum().backward()
        return y.detach(), x.grad, v.grad if value_rg else None, y.grad_fn.name()
    return fn


INDEX_ASSIGN = [
    Case("x[list] = v", _index_put(lambda m, dev: [0, 3])),
    Case("x[list] = v (v requires grad)", _index_put(lambda m, dev: [0, 3], True)),
    Case("x[tensor] = v", _index_put(lambda m, dev: m.tensor([4, 1], device=dev), True)),
    Case("x[mask] = v", _index_put(lambda m, dev: T(m, dev, [1, 0, 0, 0, 1, 0], "bool"), True)),
]


# =========================================================================== autograd: version counters
def _out_modified(op):
    def fn(m, dev):
        x = T(m, dev, DATA["v"] * 0.3 + 1.5, rg=True)
        y = op(x)
        y.mul_(2)
        y.sum().backward()
        return x.grad
    return fn


def _out_modified_unnamed(op):
    def fn(m, dev):  # the modified output is not kept in a variable: the check must not depend on its life
        x = T(m, dev, DATA["v"] * 0.3 + 1.5, rg=True)
        op(x).mul_(2).sum().backward()
        return x.grad
    return fn


def _expanded_inplace(rg):
    def fn(m, dev):
        x = T(m, dev, [1.0], rg=rg)
        y = (x * 1 if rg else x).expand(3)
        y.add_(1)
        return x
    return fn


def _nograd_view(base_rg, other_rg, inside):
    def fn(m, dev):
        x = T(m, dev, DATA["v"], rg=base_rg)
        b = x * 1 if base_rg else x
        with m.no_grad():
            v = b[:3]
        w = T(m, dev, [2.0, 3.0, 4.0], rg=other_rg)
        if inside:
            with m.no_grad():
                v.mul_(w)
        else:
            v.mul_(w)
        return b.detach()
    return fn


def _inference_use(call):
    def fn(m, dev):
        with m.inference_mode():
            x = T(m, dev, DATA["v"])
        w = T(m, dev, DATA["w"], rg=True)
        out = call(m, x, w)
        out.sum().backward()
        return w.grad, x.is_inference()
    return fn


def _view_sees_base(m, dev):
    x = T(m, dev, DATA["v"][:3], rg=True)
    w = T(m, dev, DATA["w"][:3], rg=True)
    b = x.clone()
    v = b[1:3]
    b.mul_(w)
    (v * v).sum().backward()
    return v.detach(), x.grad, w.grad


def _view_sees_base_leaf_view(m, dev):
    x = T(m, dev, DATA["m"], rg=True)
    w = T(m, dev, DATA["w"][:4], rg=True)
    b = x * 1
    v = b.t()
    r = b[1]
    r.mul_(w)  # changes b through another view: v must see it
    (v * 3).sum().backward()
    return x.grad, w.grad


VERSION_CHECKS = [
    Case("sigmoid output modified", _out_modified(lambda x: x.sigmoid())),
    Case("tanh output modified", _out_modified(lambda x: x.tanh())),
    Case("exp output modified", _out_modified(lambda x: x.exp())),
    Case("sqrt output modified", _out_modified(lambda x: x.sqrt())),
    Case("relu output modified", _out_modified(lambda x: x.relu())),
    Case("softmax output modified", _out_modified(lambda x: x.softmax(0))),
    Case("sigmoid output modified, unnamed", _out_modified_unnamed(lambda x: x.sigmoid())),
    Case("exp output modified, unnamed", _out_modified_unnamed(lambda x: x.exp())),
    Case("input of mul modified", _out_modified(lambda x: (lambda y: (y * y, y)[1])(x * 1))),
    Case("in-place on an expanded tensor", _expanded_inplace(True), needs_strides=True),
    Case("in-place on an expanded tensor, no grad", _expanded_inplace(False), needs_strides=True),
    Case("no_grad view of a leaf modified under grad", _nograd_view(True, False, False)),
    Case("no_grad view modified by a grad operand", _nograd_view(False, True, False)),
    Case("no_grad view modified under no_grad", _nograd_view(True, True, True)),
    Case("no_grad view of a constant modified", _nograd_view(False, False, False)),
    Case("inference tensor saved (mul)", _inference_use(lambda m, x, w: x * w)),
    Case("inference tensor not saved (add)", _inference_use(lambda m, x, w: x + w)),
    Case("inference tensor not saved (cat)", _inference_use(lambda m, x, w: m.cat([x, w]))),
    Case("inference tensor requires_grad_", lambda m, dev: _inference_use(lambda m, x, w: x.requires_grad_())(m, dev)),
    Case("inference tensor in-place outside", _inference_use(lambda m, x, w: x.add_(1) * w)),
    Case("view sees its base's in-place change", _view_sees_base),
    Case("view sees a sibling view's change", _view_sees_base_leaf_view),
]


# =========================================================================== autograd: edge-case gradients
def _grad_of(make, op):
    def fn(m, dev):
        x = make(m, dev)
        y = op(m, x)
        y.sum().backward()
        return y.detach(), x.grad + 0  # + 0: PyTorch's gradient of sgn is a lazy zero tensor
    return fn


def _const(m, dev):
    return T(m, dev, [[2.0, 2.0, 2.0], [1.0, -1.0, 3.0]], rg=True)


def _zero_rows(m, dev):
    return T(m, dev, [[0.0, 0.0, 0.0], [1.0, -2.0, 2.0]], rg=True)


def _nans(m, dev):
    return T(m, dev, [float("nan"), 0.0, -1.5, 2.0, float("inf"), -0.0], rg=True)


def _probs(m, dev):
    return T(m, dev, [0.0, 1.0, 0.5, 0.0, 1.0, 0.25], rg=True)


_TARGETS = [1.0, 0.0, 1.0, 0.0, 1.0, 0.5]


def _bce(reduction):
    return lambda m, p: m.nn.functional.binary_cross_entropy(p, T(m, p.device, _TARGETS), reduction=reduction)


def _ignored(loss, reduction="mean", some=False):
    def op(m, x):
        t = m.tensor([-100, 2 if some else -100, -100], device=x.device)
        return getattr(m.nn.functional, loss)(x if loss == "cross_entropy" else x.log_softmax(1), t,
                                              reduction=reduction)
    return op


def _logits(m, dev):
    return T(m, dev, DATA["m"], rg=True)


EDGE_GRADS = [
    Case("std of a constant row", _grad_of(_const, lambda m, x: x.std(1))),
    Case("std of a constant, all", _grad_of(lambda m, dev: T(m, dev, [3.0, 3.0], rg=True), lambda m, x: x.std())),
    Case("std of one element, correction 0", _grad_of(lambda m, dev: T(m, dev, [3.0], rg=True),
                                                      lambda m, x: x.std(correction=0))),
    Case("var of a constant row", _grad_of(_const, lambda m, x: x.var(1))),
    Case("std_mean of a constant row", _grad_of(_const, lambda m, x: m.std_mean(x, 1)[0])),
    Case("F.normalize of a zero row", _grad_of(_zero_rows, lambda m, x: m.nn.functional.normalize(x))),
    Case("F.normalize p=1 of a zero row", _grad_of(_zero_rows, lambda m, x: m.nn.functional.normalize(x, 1.0))),
    Case("norm of a zero row", _grad_of(_zero_rows, lambda m, x: x.norm(dim=1))),
    Case("cross_entropy, all ignored", _grad_of(_logits, _ignored("cross_entropy"))),
    Case("cross_entropy, all ignored, sum", _grad_of(_logits, _ignored("cross_entropy", "sum"))),
    Case("cross_entropy, some ignored", _grad_of(_logits, _ignored("cross_entropy", some=True))),
    Case("nll_loss, all ignored", _grad_of(_logits, _ignored("nll_loss"))),
    Case("nll_loss, all ignored, sum", _grad_of(_logits, _ignored("nll_loss", "sum"))),
    Case("binary_cross_entropy at 0 and 1", _grad_of(_probs, _bce("mean"))),
    Case("binary_cross_entropy at 0 and 1, none", _grad_of(_probs, _bce("none"))),
    Case("BCELoss at 0 and 1", _grad_of(_probs, lambda m, p: m.nn.BCELoss()(p, T(m, p.device, _TARGETS)))),
    Case("abs at NaN", _grad_of(_nans, lambda m, x: x.abs())),
    Case("sign at NaN", _grad_of(_nans, lambda m, x: x.sign())),
    Case("sgn at NaN", _grad_of(_nans, lambda m, x: x.sgn())),
]


# =========================================================================== grad_fn names of x[...]
def _index_name(expr):
    def fn(m, dev):
        x = T(m, dev, DATA["c"], rg=True)
        y = eval(f"x[{expr}]", {"x": x})  # noqa: S307 - a fixed index expression of this table
        return y.grad_fn.name(), y.detach()
    return fn


INDEX_NAMES = [Case(f"x[{e}]", _index_name(e)) for e in (
    "0", ":, 1", "0:1", "None", "..., 0", ":", "0, :", "0, None", "None, 0", "0, 1:2", "1:2, 0", ":, :, None",
    "...", "0, 0, 0", "0, ...", "::2", "-1", "1, -2")]
INDEX_NAMES.append(Case("select(1, 2)", lambda m, dev: T(m, dev, DATA["c"], rg=True).select(1, 2).grad_fn.name()))


AUTOGRAD_CASES = INPLACE_ACTIVATIONS + INDEX_ASSIGN + VERSION_CHECKS + EDGE_GRADS + INDEX_NAMES


# =========================================================================== op rows (the conformance kit's format)
from .op_table_shape import F, Row, r  # noqa: E402

_P = np.array([[0.05, 0.5, 0.93], [0.3, 0.71, 0.12]])
_Q = np.array([[0.1, 0.9, 0.4], [0.8, 0.25, 0.05]])  # inside (0, 1): finite differences move them

ROWS = [
    Row("binary_cross_entropy", lambda m, p, t: m.nn.functional.binary_cross_entropy(p, t),
        [[F(_P), F(_Q)], [F(_P), F(_Q, grad=False)]]),
    Row("binary_cross_entropy none", lambda m, p, t: m.nn.functional.binary_cross_entropy(p, t, reduction="none"),
        [[F(_P), F(_Q)]]),
    Row("x[None]", lambda m, x: (x[None], x[0, None], x[:, None]), [[r(2, 3)]]),
    Row("x[0] select", lambda m, x: (x[0], x[:, 1], x[..., -1]), [[r(2, 3)]]),
    Row("x[...] alias", lambda m, x: x[...], [[r(2, 3)]]),
    Row("std", lambda m, x: (x.std(), x.std(1), x.std(0, correction=0)), [[r(3, 4)]]),
]


# =========================================================================== dtypes and promotion
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
_SAMPLE = {  # values every dtype holds exactly (bool: 0/1; unsigned: non-negative)
    "bool": [True, False, True, True],
    "uint8": [3, 0, 7, 250],
    "float": [1.5, -2.25, 0.0, 3.0],
    "int": [3, -2, 0, 7],
}


def sample(m, dev, dtype, shape=(4,)):
    """A tensor of ``dtype`` with fixed values (the same for both libraries)."""
    kind = "bool" if dtype == "bool" else "uint8" if dtype == "uint8" else "float" if "float" in dtype else "int"
    data = np.array(_SAMPLE[kind]).reshape(shape) if shape != () else np.array(_SAMPLE[kind][0])
    return m.tensor(data.tolist(), dtype=getattr(m, dtype), device=dev)


def _call(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a raised exception is a result to compare
        return Raised(exc)


def _has_strides(device) -> bool:
    return ember.zeros(2, 3, device=device).t().stride() == (1, 3)


def _views_dtypes(device) -> bool:
    try:
        ember.zeros(2, device=device).view(ember.int32)
    except RuntimeError:
        return False
    return True


_ACTIVE = [DTYPES]  # the dtypes the current case sweeps (those the backend under test has)


def _pairs(op, scalars=(2, -3, 1000, 2.5, True)):
    """``op`` over every pair of dtypes, every (tensor, Python scalar) pair and a 0-d float16 second operand."""
    def fn(m, dev):
        out = []
        dts = _ACTIVE[0]
        half = sample(m, dev, "float16", ()) if "float16" in dts else None
        for da in dts:
            a = sample(m, dev, da)
            for db in dts:
                b = sample(m, dev, db)
                out.append(_call(lambda a=a, b=b: op(m, a, b)))
            for s in scalars:
                out.append(_call(lambda a=a, s=s: op(m, a, s)))
            if half is not None:
                out.append(_call(lambda a=a: op(m, a, half)))
        return out
    return fn


def _dtype_of(r):
    return (str(r.dtype).split(".")[-1], r.double().tolist())


def _result_dtypes(op, **kw):
    def fn(m, dev):
        return [r.type if isinstance(r, Raised) else _dtype_of(r) for r in _pairs(op, **kw)(m, dev)]
    return fn


def _unary_dtypes(op):
    def fn(m, dev):
        out = []
        for d in _ACTIVE[0]:
            r = _call(lambda d=d: op(m, sample(m, dev, d)))
            out.append(r.type if isinstance(r, Raised) else _dtype_of(r))
        return out
    return fn


_BINARY = {
    "add": lambda m, a, b: m.add(a, b), "sub": lambda m, a, b: m.sub(a, b), "mul": lambda m, a, b: m.mul(a, b),
    "div": lambda m, a, b: m.div(a, b), "floor_divide": lambda m, a, b: m.floor_divide(a, b + 9),
    "remainder": lambda m, a, b: m.remainder(a, b + 9), "fmod": lambda m, a, b: m.fmod(a, b + 9),
    "atan2": lambda m, a, b: m.atan2(a, b), "hypot": lambda m, a, b: m.hypot(a, b),
    "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b), "fmax": lambda m, a, b: m.fmax(a, b),
    "fmin": lambda m, a, b: m.fmin(a, b), "copysign": lambda m, a, b: m.copysign(a, b),
    "xlogy": lambda m, a, b: m.xlogy(a, b), "logaddexp": lambda m, a, b: m.logaddexp(a, b),
    "eq": lambda m, a, b: m.eq(a, b), "lt": lambda m, a, b: m.lt(a, b), "ge": lambda m, a, b: m.ge(a, b),
    "where": lambda m, a, b: m.where(m.tensor([True, False, True, False], device=a.device), a, b),
    "clamp_min": lambda m, a, b: m.clamp_min(a, b), "clamp_max": lambda m, a, b: m.clamp_max(a, b),
    "bitwise_and": lambda m, a, b: m.bitwise_and(a, b), "bitwise_or": lambda m, a, b: m.bitwise_or(a, b),
    "true_divide": lambda m, a, b: a / b, "floordiv operator": lambda m, a, b: a // (b + 9),
    "sub operator": lambda m, a, b: a - b,
    "rsub": lambda m, a, b: b - a if not isinstance(b, m.Tensor) else m.rsub(a, b),
    "mod operator": lambda m, a, b: a % (b + 9),
}
_UNARY = {
    "neg": lambda m, a: -a, "sqrt": lambda m, a: a.sqrt(), "exp": lambda m, a: a.exp(),
    "sigmoid": lambda m, a: a.sigmoid(), "sign": lambda m, a: a.sign(),
    "sum": lambda m, a: a.sum(), "prod": lambda m, a: a.prod(), "mean": lambda m, a: a.mean(),
    "cumsum": lambda m, a: a.cumsum(0), "cumprod": lambda m, a: a.cumprod(0), "amax": lambda m, a: a.amax(),
    "softmax": lambda m, a: a.softmax(0),
    "log_softmax": lambda m, a: a.log_softmax(0),
    "square": lambda m, a: a.square(), "reciprocal": lambda m, a: a.reciprocal(), "bitwise_not": lambda m, a: ~a,
    "logical_not": lambda m, a: a.logical_not(), "clamp scalar": lambda m, a: a.clamp(0.5, 2),
    "clamp int scalar": lambda m, a: a.clamp(0, 2), "mul 0-d float": lambda m, a: a * m.tensor(2.5),
    "add 0-d int": lambda m, a: a + m.tensor(3), "cumsum float16 accumulate": lambda m, a: (a * 0 + 0.1).cumsum(0),
}

# ops that take no Python number as their second argument (PyTorch: TypeError) are swept over tensor pairs
_TENSOR_ONLY = {"atan2", "maximum", "minimum", "copysign", "bitwise_and", "bitwise_or"}
DTYPE_CASES = ([Case(f"dtype pairs: {n}", _result_dtypes(op, **({"scalars": ()} if n in _TENSOR_ONLY else {})),
                     rtol=1e-2, atol=1e-2) for n, op in _BINARY.items()]
               + [Case(f"dtypes: {n}", _unary_dtypes(op), rtol=1e-2, atol=1e-2) for n, op in _UNARY.items()])


def _view_as(dtype, data=(1.0, 2.0), src="float32"):
    def fn(m, dev):
        x = m.tensor([list(data)], dtype=getattr(m, src), device=dev)
        v = x.view(getattr(m, dtype))
        v.view(-1)[0] = 1  # writes through to x: the same bytes
        return v, x
    return fn


DTYPE_CASES += [
    Case("tensor([np.float64])", lambda m, dev: m.tensor([np.float64(1.5)], device=dev)),
    Case("tensor([np.float32])", lambda m, dev: m.tensor([np.float32(1.5)], device=dev)),
    Case("tensor([np.int32])", lambda m, dev: m.tensor([np.int32(3)], device=dev)),
    Case("tensor([np.float64, 1])", lambda m, dev: m.tensor([np.float64(1.5), 1], device=dev)),
    Case("tensor([np.float16, 1.0])", lambda m, dev: m.tensor([np.float16(1.5), 1.0], device=dev)),
    Case("tensor([np.int32, 2])", lambda m, dev: m.tensor([np.int32(1), 2], device=dev)),
    Case("tensor([np.int8, True])", lambda m, dev: m.tensor([[np.int8(1), True]], device=dev)),
    Case("view(int32)", _view_as("int32")),
    Case("view(uint8)", _view_as("uint8")),
    Case("view(int16)", _view_as("int16")),
    Case("view float64 as float32", _view_as("float32", src="float64")),
    Case("view float32 as float64", _view_as("float64", (1.0, 2.0, 3.0, 4.0))),
    Case("view odd size as float64", _view_as("float64", (1.0, 2.0, 3.0))),
    Case("view 0-d as int16", lambda m, dev: m.tensor(1.0, device=dev).view(m.int16)),
    Case("view non-contiguous as int16", lambda m, dev: m.ones(4, 2, device=dev).t().view(m.int16)),
    Case("cumsum float16 accumulates in float32", lambda m, dev: m.full((2048,), 0.1, dtype=m.float16,
                                                                        device=dev).cumsum(0)[-8:]),
    Case("cumsum bfloat16 accumulates in float32", lambda m, dev: m.full((2048,), 0.1, dtype=m.bfloat16,
                                                                         device=dev).cumsum(0)[-8:].float()),
    Case("int8 * 1000 wraps", lambda m, dev: m.tensor([3, -5, 100], dtype=m.int8, device=dev) * 1000),
    Case("int8.add_(1000) wraps", lambda m, dev: m.tensor([3, -5, 100], dtype=m.int8, device=dev).add_(1000)),
    Case("uint8 - 1000 wraps", lambda m, dev: m.tensor([3, 0, 200], dtype=m.uint8, device=dev) - 1000),
    Case("int16 * 2**40 wraps", lambda m, dev: m.tensor([3, -5], dtype=m.int16, device=dev) * 2 ** 40),
    Case("full int32 overflow", lambda m, dev: m.full((2,), 2 ** 40, dtype=m.int32, device=dev)),
    Case("full uint8 of -3", lambda m, dev: m.full((2,), -3, dtype=m.uint8, device=dev)),
    Case("float16 * 2**20 is inf", lambda m, dev: m.tensor([1.0, -2.0], dtype=m.float16, device=dev) * 2 ** 20),
    Case("bool remainder", lambda m, dev: m.remainder(m.tensor([True], device=dev), m.tensor([True], device=dev))),
    Case("bool fmod", lambda m, dev: m.fmod(m.tensor([True], device=dev), True)),
    Case("bool floor_divide", lambda m, dev: m.tensor([True], device=dev) // m.tensor([True], device=dev)),
    Case("bool - bool", lambda m, dev: m.tensor([True], device=dev) - m.tensor([True], device=dev)),
    Case("int - True", lambda m, dev: m.tensor([3], device=dev) - True),
    Case("True - int", lambda m, dev: True - m.tensor([3], device=dev)),
    Case("-bool", lambda m, dev: -m.tensor([True], device=dev)),
    Case("complex <", lambda m, dev: m.tensor([1j], device=dev) < m.tensor([2j], device=dev)),
    Case("softmax of int64", lambda m, dev: m.tensor([1, 2], device=dev).softmax(0)),
    Case("softmax of int64 with dtype", lambda m, dev: m.tensor([1, 2], device=dev).softmax(0, dtype=m.float64)),
    Case("F.log_softmax of int", lambda m, dev: m.nn.functional.log_softmax(m.tensor([[1, 2]], device=dev), 1)),
]


# =========================================================================== indexing and shapes
def _index_shape(expr):
    def fn(m, dev):
        x = m.tensor(np.arange(120.0).reshape(2, 3, 4, 5).tolist(), device=dev, requires_grad=True)
        idx = m.tensor([0, 2], device=dev)
        y = eval(f"x[{expr}]", {"x": x, "idx": idx})  # noqa: S307 - a fixed index expression of this table
        (y * y).sum().backward()
        return y.detach(), x.grad
    return fn


def _index_assign(expr):
    def fn(m, dev):
        x = m.zeros(2, 3, 4, 5, device=dev)
        idx = m.tensor([0, 2], device=dev)
        target = eval(f"x[{expr}]", {"x": x, "idx": idx})  # noqa: S307 - a fixed index expression of this table
        exec(f"x[{expr}] = v", {"x": x, "idx": idx,  # noqa: S102 - a fixed index expression of this table
                                "v": m.arange(float(target.numel()), device=dev).reshape(target.shape)})
        return x
    return fn


_INDEX_EXPRS = ["0, :, idx", ":, 0, :, idx", "0, idx", "idx, 0", "0, ..., idx", ":, idx, :, 0", "0, :, idx, None",
                "None, 0, :, idx", "0, :, [[0], [1]], idx", "1, idx, 1", "idx, :, idx", "0, [0, 1], :, idx",
                "-1, :, idx, 4"]

_REDUCTIONS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: x.mean(d), "prod": lambda x, d: x.prod(d),
    "amax": lambda x, d: x.amax(d), "amin": lambda x, d: x.amin(d), "std": lambda x, d: x.std(d, correction=0),
    "var": lambda x, d: x.var(d, correction=0), "logsumexp": lambda x, d: x.logsumexp(d),
    "argmax": lambda x, d: x.argmax(d), "argmin": lambda x, d: x.argmin(d), "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d), "cumsum": lambda x, d: x.cumsum(d),
    "cumprod": lambda x, d: x.cumprod(d), "max": lambda x, d: x.max(d)[0], "min": lambda x, d: x.min(d)[1],
    "median": lambda x, d: x.median(d)[0], "norm": lambda x, d: x.norm(dim=d), "all": lambda x, d: x.all(d),
    "any": lambda x, d: x.any(d), "nansum": lambda x, d: x.nansum(d), "count_nonzero": lambda x, d: x.count_nonzero(d),
    "sum keepdim": lambda x, d: x.sum(d, keepdim=True), "amax keepdim": lambda x, d: x.amax(d, keepdim=True),
    "nanmean": lambda x, d: x.nanmean(d), "kthvalue": lambda x, d: x.kthvalue(1, d)[0],
    "aminmax": lambda x, d: x.aminmax(dim=d)[0],
}


def _reduce_0d(red, d):
    def fn(m, dev):
        x = m.tensor(2.5, device=dev, requires_grad=True)
        y = red(x, d)
        if y.dtype.is_floating_point:
            y.sum().backward()
        return y.detach(), x.grad
    return fn


def _reduce_empty(red, d):
    def fn(m, dev):
        import warnings
        with warnings.catch_warnings():  # PyTorch warns about var/std without degrees of freedom
            warnings.simplefilter("ignore")
            return red(m.zeros(2, 0, device=dev), d)
    return fn


def _warned(call):
    """``call``'s result and the messages of the warnings it gave (PyTorch's wording, library names aside)."""
    def fn(m, dev):
        import warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = call(m, dev)
        return r, [str(i.message).replace("torch.Size", "Size").replace("ember.Size", "Size") for i in w]
    return fn


def _img(m, dev, shape=(2, 3, 5, 7)):
    return m.tensor((np.arange(np.prod(shape)).reshape(shape) % 11 / 7.0).tolist(), device=dev,
                    dtype=m.float64, requires_grad=True)


def _resize(shape=(2, 3, 5, 7), **kw):
    def fn(m, dev):
        x = _img(m, dev, shape)
        y = m.nn.functional.interpolate(x, **kw)
        (y * y).sum().backward()
        return y.detach(), x.grad
    return fn


def _embedding_freq(m, dev):
    e = m.nn.Embedding(5, 2, scale_grad_by_freq=True).to(dev)
    with m.no_grad():
        e.weight.copy_(m.arange(10.0).reshape(5, 2))
    out = e(m.tensor([[0, 1, 1], [3, 1, 0]], device=dev))
    (out * m.arange(12.0, device=dev).reshape(2, 3, 2)).sum().backward()
    return out.detach(), e.weight.grad


def _index_fill_value_grad(m, dev):
    x = T(m, dev, DATA["m"], rg=True)
    v = m.tensor(2.0, dtype=m.float64, device=dev, requires_grad=True)
    y = x.index_fill(1, m.tensor([0, 2], device=dev), v)
    (y * T(m, dev, DATA["m"])).sum().backward()
    return y.detach(), x.grad, v.grad


SHAPE_CASES = (
    [Case(f"x[{e}]", _index_shape(e)) for e in _INDEX_EXPRS]
    + [Case(f"x[{e}] = v", _index_assign(e)) for e in _INDEX_EXPRS]
    + [Case(f"0-d {n} dim={d}", _reduce_0d(r, d)) for n, r in _REDUCTIONS.items() for d in (0, -1)]
    + [Case(f"0-d {n} dim=1", _reduce_0d(r, 1)) for n, r in list(_REDUCTIONS.items())[:4]]
    + [Case(f"empty {n} dim={d}", _reduce_empty(r, d)) for n, r in _REDUCTIONS.items() for d in (0, 1)]
    + [Case(f"empty {n}", _reduce_empty(lambda x, d, n=n: getattr(x, n)(), None))
       for n in ("max", "min", "amax", "amin", "argmax", "argmin", "sum", "mean", "prod", "median", "nanmedian",
                 "logsumexp", "std", "var", "aminmax", "all", "any", "norm")]
    + [
        Case("logsumexp of empty", lambda m, dev: m.logsumexp(m.zeros(0, device=dev), 0)),
        Case("logsumexp of empty rows", lambda m, dev: m.logsumexp(m.zeros(3, 0, device=dev), 1, keepdim=True)),
        Case("2.0 in 2-d", lambda m, dev: (2.0 in T(m, dev, [[1.0, 2.0]]), 5 in T(m, dev, [[1.0, 2.0]]))),
        Case("tensor in 2-d", lambda m, dev: (T(m, dev, [1.0, 2.0]) in T(m, dev, [[1.0, 2.0]]),
                                              T(m, dev, [3.0]) in T(m, dev, [[1.0, 2.0]]))),
        Case("2 in 0-d", lambda m, dev: 2 in m.tensor(2, device=dev)),
        Case("str in tensor", lambda m, dev: "a" in m.tensor([1], device=dev)),
        Case("unique_consecutive dim=0", lambda m, dev: m.unique_consecutive(
            m.tensor([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]], device=dev), return_inverse=True,
            return_counts=True, dim=0)),
        Case("unique_consecutive dim=1", lambda m, dev: m.unique_consecutive(
            m.tensor([[1, 1, 2], [1, 1, 3]], device=dev), return_counts=True, dim=1)),
        Case("F.normalize p=inf", _grad_of(lambda m, dev: T(m, dev, [[3.0, -4.0], [1.0, 2.0]], rg=True),
                                           lambda m, x: m.nn.functional.normalize(x, p=float("inf")))),
        Case("F.normalize p=inf dim=0", _grad_of(lambda m, dev: T(m, dev, [[3.0, -4.0], [1.0, 2.0]], rg=True),
                                                 lambda m, x: m.nn.functional.normalize(x, p=float("inf"), dim=0))),
        Case("F.normalize p=3", _grad_of(lambda m, dev: T(m, dev, [[3.0, -4.0], [1.0, 2.0]], rg=True),
                                         lambda m, x: m.nn.functional.normalize(x, p=3.0))),
        Case("Embedding(scale_grad_by_freq=True)", _embedding_freq),
        Case("index_fill with a 0-d tensor value", _index_fill_value_grad),
        Case("mse_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.mse_loss(
            m.ones(3, 1, device=dev), m.zeros(3, device=dev)))),
        Case("MSELoss broadcasts and warns", _warned(lambda m, dev: m.nn.MSELoss()(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("l1_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.l1_loss(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("smooth_l1_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.smooth_l1_loss(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("huber_loss broadcasts and warns", _warned(lambda m, dev: m.nn.functional.huber_loss(
            m.ones(3, 1, device=dev), m.arange(3.0, device=dev)))),
        Case("mse_loss of shapes that do not broadcast", _warned(lambda m, dev: m.nn.functional.mse_loss(
            m.ones(3, 2, device=dev), m.zeros(4, device=dev)))),
        Case("fmax/fmin ignore NaN", lambda m, dev: (
            m.fmax(T(m, dev, [float("nan"), 1.0, float("nan")]), T(m, dev, [2.0, float("nan"), float("nan")])),
            m.fmin(T(m, dev, [float("nan"), 1.0]), T(m, dev, [2.0, float("nan")])))),
    ]
    + [Case(f"interpolate {kw}", _resize(**kw)) for kw in (
        {"size": (7, 9), "mode": "bicubic"}, {"size": (3, 4), "mode": "bicubic"},
        {"scale_factor": 1.5, "mode": "bicubic", "align_corners": True},
        {"scale_factor": 0.5, "mode": "bicubic", "align_corners": False},
        {"size": (7, 3), "mode": "nearest-exact"}, {"scale_factor": 2.3, "mode": "nearest-exact"},
        {"size": 11, "mode": "nearest-exact", "shape": (2, 3, 5)},
        {"size": (2, 3), "mode": "bilinear", "antialias": True},
        {"size": (3, 2), "mode": "bicubic", "antialias": True},
        {"size": (9, 11), "mode": "bilinear", "antialias": True},
        {"size": (9, 11), "mode": "bicubic", "antialias": True},
        {"scale_factor": 0.4, "mode": "bilinear", "antialias": True},
        {"size": (2, 5), "mode": "bicubic", "antialias": True},
        {"size": 3, "mode": "linear", "antialias": True, "shape": (2, 3, 5)},
        {"size": (4, 4), "mode": "bicubic", "shape": (2, 3, 4, 5, 6)},
    )]
)


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


# =========================================================================== a failed optimizer step changes nothing
OPTIMIZERS = {  # every optimizer of ember.optim, with settings that give each a state worth keeping
    "SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"lr": 0.1}, "AdamW": {"lr": 0.1}, "Adamax": {"lr": 0.1},
    "NAdam": {"lr": 0.1}, "RAdam": {"lr": 0.1}, "RMSprop": {"lr": 0.1, "momentum": 0.5, "centered": True},
    "Adagrad": {"lr": 0.1}, "Adadelta": {"lr": 0.1}, "Rprop": {"lr": 0.1}, "ASGD": {"lr": 0.1, "t0": 0},
    "SparseAdam": {"lr": 0.1}, "Adafactor": {"lr": 0.1}, "Muon": {"lr": 0.1}, "LBFGS": {"lr": 0.1},
}


def _snapshot(opt, params):
    import copy
    state = {id(p): {k: (v.detach().clone() if hasattr(v, "detach") else copy.deepcopy(v)) for k, v in s.items()}
             for p, s in opt.state.items()}
    return [p.detach().clone() for p in params], state, copy.deepcopy([{k: v for k, v in g.items() if k != "params"}
                                                                       for g in opt.param_groups])


def _same(a, b):
    if isinstance(a, ember.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).logical_or(a.isnan() & b.isnan()).all())
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def failed_step(m, name, dev, wrong):
    """Two steps of optimizer ``name``, then a step with a gradient of the wrong shape (``wrong``: 'grad', the
    gradient replaced; 'param', the parameter's data replaced).  Returns the exception type of the failed step
    and, for ember, whether parameters, state and settings are exactly as before it."""
    a = m.nn.Parameter(m.tensor([[0.5, -1.0], [2.0, 0.25]], device=dev))
    b = m.nn.Parameter(m.tensor([[1.5, 1.0], [-2.0, 0.75]], device=dev))
    opt = getattr(m.optim, name)([a, b], **OPTIMIZERS[name])

    def closure():
        opt.zero_grad()
        loss = (a * a).sum() + (b * b * 3).sum() + (a * b).sum()
        loss.backward()
        return loss

    for _ in range(2):
        closure() if name != "LBFGS" else None
        try:
            opt.step(closure) if name == "LBFGS" else opt.step()
        except Exception:  # noqa: BLE001 - optimizers refusing these gradients (SparseAdam) fail alike below
            pass
    closure() if name != "LBFGS" else None
    if wrong == "param":
        b.data = m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device=dev)
    else:
        b._grad = m.ones(3, device=dev) if m.__name__ == "ember" else None
        if m.__name__ != "ember":
            b.data = m.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device=dev)
    before = _snapshot(opt, [a, b]) if m.__name__ == "ember" else None
    try:
        opt.step(lambda: (a * a).sum()) if name == "LBFGS" else opt.step()
        raised = None
    except Exception as exc:  # noqa: BLE001 - the exception type is the result compared
        raised = type(exc).__name__
    unchanged = _same(before, _snapshot(opt, [a, b])) if before is not None else None
    return raised, unchanged
