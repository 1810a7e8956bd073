"""Deprecated APIs from before PyTorch 0.4: ``Variable``, ``volatile``, instance-style Functions."""
from __future__ import annotations

import warnings

from ..tensor import Tensor
from .function import VOLATILE


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated: ``Variable(t, requires_grad=..., volatile=...)`` returns a Tensor.

    A volatile Variable never requires grad, and every result computed from
    it is volatile too (computed without recording), as in PyTorch 0.3.
    """

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        warnings.warn("Variable is deprecated: tensors carry autograd state themselves; use the tensor directly "
                      "(and `with ember.no_grad():` instead of volatile=True)", DeprecationWarning, stacklevel=2)
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        t._vo = None
        if volatile:
            t._rg, t._fn, t._volatile = True, VOLATILE, True
        elif requires_grad:
            t.requires_grad_(True)
        return t
