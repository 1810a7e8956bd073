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

# the notes PyTorch's linalg docstrings share (``torch.linalg.common_notes``), in ember's words
common_notes = {
    "experimental_warning": 'This function is "experimental" and it may change in a future release.',
    "sync_note": "When inputs are on an accelerator, this function synchronizes that device with the CPU.",
    "sync_note_ex": "When the inputs are on an accelerator, this function synchronizes only when "
                    ":attr:`check_errors`\\ `= True`.",
    "sync_note_has_ex": "When inputs are on an accelerator, this function synchronizes that device with the CPU. "
                        "For a version of this function that does not synchronize, see :func:`{}`.",
}
