"""Operators: the only place a differentiable op is defined, one module per family.

Each op is a row or a short class beside its public function, exported through
:mod:`ember.registry` (``ember.*``, ``Tensor.*``, ``linalg``, ``nn.functional``, ...);
importing this package defines them all and shows the Tensor methods.

``ember.ops.<namespace>.<name>`` holds custom operators (:mod:`ember.library`) and the operators plugins
add (:mod:`ember.plugin_ops`): the registry's ``ops.<namespace>``.  The names of this package's own modules
and attributes are :data:`RESERVED`: no such namespace can be registered, so ``ember.ops.shape`` is always
the shape family.
"""
import pkgutil as _pkgutil

from .. import registry
from ..tensor import Tensor
from . import (conversion, creation, indexing, inplace, interop, linalg, nn, nn_conv, nn_loss, nn_recurrent,  # noqa: F401
               nn_sample,
               pointwise, random_ops, reduction, shape, sorting)
from . import linalg_solve  # noqa: F401,E402 - the triangular/LU solves, lstsq, matrix_exp
from . import special_fns  # noqa: F401
from . import complex, fft  # noqa: F401,E402
from .shared_libraries import load_library, loaded_libraries  # noqa: F401,E402

registry.bind("Tensor", Tensor)

RESERVED = frozenset({m.name for m in _pkgutil.iter_modules(__path__)} | {n for n in globals() if not n.startswith("_")}
                     | {"aten", "prim", "prims"})  # and PyTorch's own operator namespaces


def __getattr__(name):
    shown = registry.bound(f"ops.{name}")  # a plugin namespace: its OpNamespace (see ember.plugin_ops)
    if shown:
        return shown[0]
    raise AttributeError(f"module 'ember.ops' has no attribute {name!r} (no plugin registered that namespace)")
