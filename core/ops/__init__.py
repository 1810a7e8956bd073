"""Operators: the only place a differentiable op is defined, one module per family.

Each op is a row or a short class beside its public function; everything is
exported through :mod:`ember.registry` (``ember.*``, ``Tensor.*``,
``linalg``, ``nn.functional``, ...).  Modules not yet written with
``registry.export`` list their functions in ``__all__`` (for ``ember.*``)
and ``METHODS`` (Tensor methods); importing this package enters those too.

``ember.ops.<namespace>.<name>`` holds operators added by plugins
(see :mod:`ember.plugin_ops`): the registry's ``ops.<namespace>``.
"""
from .. import registry
from ..tensor import Tensor
from . import (conversion, creation, indexing, inplace, interop, linalg, nn, nn_conv, nn_loss, nn_recurrent,
               pointwise, random_ops, reduction, shape, sorting)

MODULES = [creation, pointwise, reduction, shape, indexing, linalg, inplace, conversion, interop, random_ops,
           sorting]

for _m in MODULES:
    for _name in getattr(_m, "__all__", ()):
        registry.export(getattr(_m, _name), _name, to=("torch",))
    for _name, _fn in getattr(_m, "METHODS", {}).items():
        registry.export(_fn, _name, to=("Tensor",))
registry.bind("Tensor", Tensor)


def __getattr__(name):
    shown = registry.bound(f"ops.{name}")  # a plugin namespace: its OpNamespace (see ember.plugin_ops)
    if shown:
        return shown[0]
    raise AttributeError(f"module 'ember.ops' has no attribute {name!r} (no plugin registered that namespace)")
