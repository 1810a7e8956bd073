"""Deprecated APIs from before PyTorch 0.4: ``Variable``, ``volatile``, instance-style Functions."""
from __future__ import annotations

import warnings

from .function import BackwardCFunction, grad_edge
from .grad_mode import STATE, no_grad


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        from ..tensor import Tensor

        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated: ``Variable(t, requires_grad=..., volatile=...)`` returns a Tensor.

    A volatile Variable never requires grad, and every result computed from
    it is volatile too (computed without recording), as in PyTorch 0.3.
    """

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from ..tensor import Tensor

        warnings.warn("Variable is deprecated: tensors carry autograd state themselves; use the tensor directly "
                      "(and `with ember.no_grad():` instead of volatile=True)", DeprecationWarning, stacklevel=2)
        if data is None:
            from ..ops.creation import tensor

            data = tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        t._base = None
        if volatile:
            from .function import VOLATILE

            t._rg, t._fn, t._volatile = True, VOLATILE, True
        elif requires_grad:
            t.requires_grad_(True)
        return t


class _LegacyNode(BackwardCFunction):
    pass


def apply_legacy(fn, args):
    """Run an instance-style Function ``fn(*inputs)``: ``self.save_for_backward``, ``self.saved_tensors``."""
    from ..tensor import Tensor

    tensors = [a for a in args if isinstance(a, Tensor)]
    node = _LegacyNode()
    node._fn_cls = _LegacyBridge(fn)
    fn.saved_tensors = ()
    fn.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
    node.needs_input_grad = fn.needs_input_grad
    with no_grad():
        out = type(fn).forward(fn, *args)
    fn.saved_tensors = getattr(fn, "to_save", ())
    if not (STATE.enabled and any(t._rg for t in tensors)):
        return out
    outs = (out,) if isinstance(out, Tensor) else tuple(out)
    node.next_functions = tuple(grad_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args)
    node._shapes = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None for a in args)
    node.n_outputs = len(outs)
    node._out_meta = tuple((o._data.shape, o.dtype, o._dev) for o in outs)
    res = []
    for i, o in enumerate(outs):
        if o._fn is not None or any(o is a for a in tensors):
            o = o.detach()
            o._base = None
        o._rg, o._fn, o._nr = True, node, i
        res.append(o)
    return res[0] if isinstance(out, Tensor) else tuple(res)


class _LegacyBridge:
    def __init__(self, fn):
        self.fn = fn

    def backward(self, node, *grads):
        return type(self.fn).backward(self.fn, *grads)
