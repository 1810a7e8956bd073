"""Forward-mode automatic differentiation: dual tensors carry a tangent through every operation.

Inside a :class:`dual_level`, :func:`make_dual` attaches a tangent to a
tensor; every op on dual tensors computes its output's tangent (the
Jacobian-vector product of the op at its inputs), and :func:`unpack_dual`
reads it back.  Tangents are computed at the dispatch interception point
for every op alike: the JVP of an op is the derivative of its vector-Jacobian
product with respect to the cotangent (``jvp(v) = d/du [vjp(u)] . v``), so
any op with a backward has a forward derivative, to any order.

>>> import ember
>>> import ember.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     x = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0]))
...     fwAD.unpack_dual(x * x).tangent
tensor([2., 0.])
"""
from __future__ import annotations

import threading
import weakref
from typing import NamedTuple

from ..autograd.engine import grad as _grad
from ..autograd.function import SAVED_HOOKS
from ..autograd.grad_mode import STATE, enable_grad
from ..dispatch import apply, binary, unary, view_op
from ..interception import intercept
from ..writes import inplace
from ..tensor import Tensor

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual"]

_LEVEL = [None]  # the open level (0) or None; forward AD has one level at a time, as in PyTorch
_LIVE: list = []  # weak references to the tensors holding a tangent at the open level
_INTERCEPT = [None]
_QUIET = threading.local()  # .on: make views without propagating tangents (unpack_dual's primal)


class UnpackedDualTensor(NamedTuple):
    """A dual tensor's parts: ``primal`` (a view without the tangent) and ``tangent`` (or None)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Open a forward-AD level and return it; tangents live until :func:`exit_dual_level`."""
    if _LEVEL[0] is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")

    ic = intercept(_handler)
    ic.__enter__()
    _INTERCEPT[0] = ic
    _LEVEL[0] = 0
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the forward-AD level: every tangent made in it is dropped."""
    if level is None:
        level = _LEVEL[0]
    if _LEVEL[0] is None or level != _LEVEL[0]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This "
                           "is not supported.")
    _INTERCEPT[0].__exit__(None, None, None)
    _INTERCEPT[0] = None
    _LEVEL[0] = None
    for ref in _LIVE:
        t = ref()
        if t is not None:
            t.__dict__.pop("_fw", None)
    _LIVE.clear()


class dual_level:
    """Context manager for a forward-AD level: ``with dual_level(): ...``."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _current(level):
    if _LEVEL[0] is None:
        return None
    if level is not None and level != _LEVEL[0]:
        raise RuntimeError(f"Forward AD level {level} is not the current level {_LEVEL[0]}")
    return _LEVEL[0]


def _set_tangent(t, v):
    if "_fw" not in t.__dict__:
        _LIVE.append(weakref.ref(t))
    t.__dict__["_fw"] = v


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient (differentiable in both)."""
    if _current(level) is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual: expected tensor and tangent to be Tensors")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tangent.device != tensor.device:
        raise RuntimeError(f"make_dual: expected tangent on {tensor.device}, got {tangent.device}")
    _QUIET.on = True
    try:
        out = tensor.view_as(tensor)
    finally:
        _QUIET.on = False
    _set_tangent(out, tangent)
    return out


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor``: the primal is a view without the tangent; tangent None if none."""
    lvl = _current(level)
    tangent = tensor.__dict__.get("_fw") if isinstance(tensor, Tensor) and lvl is not None else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    _QUIET.on = True
    try:
        primal = tensor.view_as(tensor)
    finally:
        _QUIET.on = False
    return UnpackedDualTensor(primal, tangent)


# --------------------------------------------------------------------------- propagation
def _tangent_of(a):
    return a.__dict__.get("_fw") if isinstance(a, Tensor) else None


def _has_tangent(args):
    for a in args:
        if isinstance(a, Tensor):
            if "_fw" in a.__dict__:
                return True
        elif type(a) in (list, tuple) and any(isinstance(t, Tensor) and "_fw" in t.__dict__ for t in a):
            return True
    return False


def _handler(kind, Op, args, run):
    if getattr(_QUIET, "on", False) or not _has_tangent(args):
        return run(*args)

    if kind is view_op and not any(isinstance(p, Tensor) for p in args[1:]):
        out = run(*args)  # a view is linear: its tangent is the same view of the tangent
        _set_tangent(out, run(args[0].__dict__["_fw"], *args[1:]))
        return out
    if kind is inplace:
        tangents = _quiet_jvp(kind, Op, args, run, True)
        out = run(*args)
    else:
        out = run(*args)
        rule = _RULES.get(getattr(Op, "op_name", None)) if CLOSED_FORMS[0] else None
        tangents = None
        if rule is not None:
            hooks = SAVED_HOOKS.stack
            SAVED_HOOKS.stack = ()
            try:
                tangents = rule(kind, args, out, run)
            finally:
                SAVED_HOOKS.stack = hooks
        if tangents is None:
            tangents = _quiet_jvp(kind, Op, args, run, False)
    outs = out if type(out) in (tuple, list) else (out,)
    for o, v in zip(outs, tangents):
        if isinstance(o, Tensor) and v is not None:
            _set_tangent(o, v)
            fn = o._fn
            if fn is not None and fn._out is not None:  # a saved output: backward formulas read it from the node
                _set_tangent(fn, v)
    return out


# --------------------------------------------------------------------------- closed forms
CLOSED_FORMS = [True]  # off: every op takes the generic double-vjp (the tests compare the two)


def _tan(a):
    """An operand's tangent: its own, zeros for a tensor without one, 0 for a Python scalar."""
    if isinstance(a, Tensor):
        v = a.__dict__.get("_fw")
        return a.new_zeros(a.shape) if v is None else v
    return 0


def _linear(kind, args, out, run):
    """Ops linear in their tensor operands together: the op applied to the tangents."""

    if kind is unary:
        return (run(_tan(args[0]), *args[1:]),)
    if kind is binary:
        return (run(_tan(args[0]), _tan(args[1]), *args[2:]),)
    if kind is apply and type(args[0]) in (list, tuple):
        return (run(type(args[0])(_tan(t) for t in args[0]), *args[1:]),)
    return None


def _bilinear(kind, args, out, run):
    """Products (``mul``, ``mm``, ``matmul``): one term per operand with a tangent."""

    if kind is not binary:
        return None
    a, b = args[0], args[1]
    terms = []
    if _tangent_of(a) is not None:
        terms.append(run(a.__dict__["_fw"], b, *args[2:]))
    if _tangent_of(b) is not None:
        terms.append(run(a, b.__dict__["_fw"], *args[2:]))
    return (terms[0] if len(terms) == 1 else terms[0] + terms[1],)


def _pointwise(fn):
    """A unary pointwise op whose derivative is ``fn(x, y)`` (input and output): tangent ``v * fn(x, y)``."""
    def rule(kind, args, out, run):

        if kind is not unary or len(args) != 1:
            return None
        x = args[0]
        return (x.__dict__["_fw"] * fn(x, out),)
    return rule


# closed forms by OPS key (the op's declaration); every other op takes the generic double-vjp
_RULES = dict.fromkeys(("Add", "AddScaled", "Sub", "neg", "Sum", "Mean", "Cat", "Stack", "clone", "contiguous"),
                       _linear)
_RULES.update(dict.fromkeys(("Mul", "Matmul"), _bilinear))
_RULES.update({
    "exp": _pointwise(lambda x, y: y),
    "sin": _pointwise(lambda x, y: x.cos()),
    "cos": _pointwise(lambda x, y: -x.sin()),
    "tanh": _pointwise(lambda x, y: 1 - y * y),
    "sigmoid": _pointwise(lambda x, y: y * (1 - y)),
    "relu": _pointwise(lambda x, y: x > 0),
    "log": _pointwise(lambda x, y: x.reciprocal()),
    "sqrt": _pointwise(lambda x, y: (2 * y).reciprocal()),
})


def _quiet_jvp(kind, Op, args, run, inplace):
    hooks = SAVED_HOOKS.stack  # what the tangent's computation saves is its own business, not the hooks'
    SAVED_HOOKS.stack = ()
    try:
        return _jvp(kind, Op, args, run, inplace)
    finally:
        SAVED_HOOKS.stack = hooks


def _jvp(kind, Op, args, run, inplace=False):
    """The tangents of the outputs of ``kind(Op, *args)`` (None for outputs without one)."""
    create = STATE.enabled and any(
        isinstance(a, Tensor) and a._rg or type(a) in (list, tuple) and any(isinstance(t, Tensor) and t._rg for t in a)
        or (_tangent_of(a) is not None and _tangent_of(a)._rg) for a in args)
    primals, tans = [], []

    def sub(a):
        if not isinstance(a, Tensor):
            return a
        v = a.__dict__.get("_fw")
        if v is None:
            return a.detach()
        p = a.view_as(a) if (create and a._rg and not inplace) else a.detach().requires_grad_()
        primals.append(p)
        tans.append(v)
        return p

    new = []
    for a in args:
        if type(a) in (list, tuple) and a and isinstance(a[0], Tensor):
            new.append(type(a)(sub(t) for t in a))
        else:
            new.append(sub(a))
    with enable_grad():
        if inplace:  # the write lands on a copy, recorded as the in-place op it is
            if not (args[0].is_floating_point() or args[0].is_complex()):
                return [None]
            new[0] = (new[0] if new[0].requires_grad else new[0].detach().requires_grad_()).clone()
        y = run(*new)
    ys = y if type(y) in (tuple, list) else (y,)
    idx = [i for i, o in enumerate(ys) if isinstance(o, Tensor) and o.requires_grad
           and (o.is_floating_point() or o.is_complex())]
    res = [None] * len(ys)
    if not idx:
        return res
    with enable_grad():
        us = [ys[i].detach().new_zeros(ys[i].shape).requires_grad_() for i in idx]
        gs = _grad([ys[i] for i in idx], primals, grad_outputs=us, create_graph=True, allow_unused=True)
        pairs = [(g, v) for g, v in zip(gs, tans) if g is not None and g.requires_grad]
        if pairs:
            outs = _grad([g for g, _ in pairs], us, grad_outputs=[v.to(g.dtype) if v.dtype != g.dtype else v
                                                                     for g, v in pairs],
                         create_graph=create, allow_unused=True)
        else:
            outs = [None] * len(us)
    for i, u, t in zip(idx, us, outs):
        if t is None:
            t = u.detach().new_zeros(u.shape)
        elif not create:
            t = t.detach()
        res[i] = t
    return res
