"""``ember.linalg``: inverses, determinants, solves, decompositions, products and norms, all differentiable.

Every function is defined in :mod:`ember.ops.linalg` (products, norms) or
:mod:`ember.ops.linalg_decomp` (inverses, determinants, solves,
decompositions) and exported there to the ``linalg`` namespace, which this
module shows.

>>> import ember
>>> ember.linalg.inv(ember.eye(2) * 2)
tensor([[0.5000, 0.0000],
        [0.0000, 0.5000]])
"""
from __future__ import annotations

import sys as _sys
from collections import namedtuple  # noqa: F401 - was public here

from . import registry as _registry
from .autograd.function import Op  # noqa: F401 - was public here
from .dispatch import unary  # noqa: F401 - was public here
from .ops.linalg_decomp import (  # noqa: F401 - the Op classes and result types, public here as before
    QR, SVD, Cholesky, CholeskyExResult, Det, Eigh, EighResult, Inv, LinAlgError, Pinv, QRResult, Slogdet,
    SlogdetResult, Solve, SVDResult,
)
from .tensor import Tensor  # noqa: F401 - was public here

_registry.bind("linalg", _sys.modules[__name__])
