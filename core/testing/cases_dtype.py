"""Case table: dtypes and PyTorch's promotion rules.  Cases and their check: :mod:`ember.testing.case`."""
from __future__ import annotations

import numpy as np

from .case import ACTIVE, Case, Raised, outcome, sample


def _pairs(op, scalars=(2, -3, 1000, 2.5, True)):
    """``op`` over every pair of dtypes, every (tensor, Python scalar) pair and a 0-d float16 second operand."""
    def fn(m, dev):
        out = []
        dts = ACTIVE[0]
        half = sample(m, dev, "float16", ()) if "float16" in dts else None
        for da in dts:
            a = sample(m, dev, da)
            for db in dts:
                b = sample(m, dev, db)
                out.append(outcome(lambda a=a, b=b: op(m, a, b)))
            for s in scalars:
                out.append(outcome(lambda a=a, s=s: op(m, a, s)))
            if half is not None:
                out.append(outcome(lambda a=a: op(m, a, half)))
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
        for d in ACTIVE[0]:
            r = outcome(lambda d=d: op(m, sample(m, dev, d)))
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
