"""Operators.  Each module defines ops (forward and backward side by side) and a
``METHODS`` table of Tensor methods; importing this package attaches them.

``ember.ops.<namespace>.<name>`` holds operators added by plugins
(see :mod:`ember.ops.plugin_ops`).
"""
from ..tensor import Tensor
from . import (conversion, creation, indexing, inplace, interop, linalg, pointwise, random_ops, reduction, shape,
               sorting)
from .plugin_ops import namespace_getattr

# every module here has METHODS (Tensor methods) and __all__ (functions exported as ember.<name>)
MODULES = [creation, pointwise, reduction, shape, indexing, linalg, inplace, conversion, interop, random_ops,
           sorting]


def attach(methods: dict) -> None:
    """Install ``{name: function}`` as Tensor methods."""
    for name, fn in methods.items():
        setattr(Tensor, name, fn)


for _m in MODULES:
    attach(getattr(_m, "METHODS", {}))


def __getattr__(name):
    return namespace_getattr(name)
