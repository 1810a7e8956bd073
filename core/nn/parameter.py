"""``nn.Parameter``: a Tensor that a Module registers as learnable state."""
from __future__ import annotations

from ..ops.creation import empty
from ..tensor import Tensor

_new = object.__new__


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and registers itself when assigned to a Module.

    >>> import ember
    >>> p = ember.nn.Parameter(ember.ones(2))
    >>> p.requires_grad
    True
    """

    _is_param = True

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor as data, got {type(data).__name__}")
        p = _new(cls)
        p._data = data._data
        p._dev = data._dev
        p._rg = False
        p._fn = None
        if requires_grad:
            p.requires_grad = True
        return p

    def __init__(self, data=None, requires_grad=True):
        pass


def is_lazy(obj) -> bool:
    return False
