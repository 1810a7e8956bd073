"""Pickling support for tensors (the full ``save``/``load`` lives here too once written)."""
from __future__ import annotations

import numpy as np


def _rebuild_tensor(array, device, requires_grad, is_param=False):
    from .ops.creation import from_numpy

    t = from_numpy(np.array(array, copy=True))
    if device != "cpu":
        t = t.to(device)
    if is_param:
        from .nn.parameter import Parameter

        return Parameter(t, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _reduce_tensor(t):
    arr = t._dev.backend.to_numpy(t._data)
    return (_rebuild_tensor, (np.ascontiguousarray(arr), str(t._dev), t._rg, t._is_param))
