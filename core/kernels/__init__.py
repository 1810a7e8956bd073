"""The shared kernel library: every kernel written once against ``xp``.

``library(xp)`` returns ``{op name: function}`` for any NumPy-compatible array
module.  A backend adopts the table and replaces only the entries it can do
better.  Kernels take and return arrays of ``xp``; they never see Tensors.
Non-view kernels return fresh arrays.

The table is assembled from the modules in ``MODULES``, one per op family of
``ember.ops`` (pointwise, reduction, shape, indexing, linalg, nn, random,
creation, sorting), with the recurrent time loops (``rnn``), the CTC
recursions (``ctc``) and the optimizer updates (``optim``) in their own;
each has a ``kernels(xp) -> dict`` function.  A module's
``MUTATING`` maps its kernels that write into array arguments (``copy_``, the
optimizer updates, ...) to the positions of the arguments they write: a
backend that retries a failed kernel another way must not let a first
attempt's partial writes count twice.
"""
from __future__ import annotations

import importlib

MODULES = ["pointwise", "reduction", "shape", "indexing", "linalg", "nn", "rnn", "ctc", "random", "creation",
           "sorting", "optim", "fft"]


def _mutating() -> dict:
    table = {}
    for m in MODULES:
        table.update(getattr(importlib.import_module(f"{__name__}.{m}"), "MUTATING", {}))
    return table


def library(xp) -> dict:
    """The kernel table for array module ``xp``."""
    table = {}
    for name in MODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        for op, fn in mod.kernels(xp).items():
            if op in table:
                raise RuntimeError(f"kernel {op!r} defined twice (in ember.kernels.{name} and an earlier module)")
            table[op] = fn
    return table


MUTATING = _mutating()
