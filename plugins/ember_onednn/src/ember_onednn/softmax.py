"""Softmax's gradient along the last axis on oneDNN's softmax backward primitive, for float32: ``y * (g - sum(g *
y))`` in one JIT pass over the rows, where the CPU backend's float32 form takes five NumPy passes (4096 rows of
32 with a cold cache: 0.08 ms against 0.13; PyTorch 0.06).  The forward stays on the CPU backend's rows form
(oneDNN's was no faster there, and a NaN in a row poisons only its own entry, where PyTorch's whole row is NaN).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .dnnl import DIFF_DST, DIFF_SRC, DST, ENGINE, FORWARD_TRAINING, Desc, DnnlError, Primitive, f32, handle, lib

ACCURATE = 0x30000  # dnnl_softmax_accurate

MIN_SIZE = 1 << 12
"""Elements below which the replaced kernel runs."""


@lru_cache(maxsize=256)
def backward(rows, n):
    """The softmax backward primitive over ``rows`` rows of ``n``: ``(y, g) -> [gx]``; None where oneDNN has none."""
    try:
        d = Desc((rows, n))
        hint = handle(lib.dnnl_softmax_forward_primitive_desc_create, ENGINE, FORWARD_TRAINING, ACCURATE, d.h, d.h,
                      1, None, what="softmax forward primitive_desc_create")
        pd = handle(lib.dnnl_softmax_backward_primitive_desc_create, ENGINE, ACCURATE, d.h, d.h, d.h, 1, hint, None,
                    what="softmax backward primitive_desc_create")
        return Primitive(pd, [(DST, d), (DIFF_DST, d)], [(DIFF_SRC, d)])
    except DnnlError:
        return None


def kernels(replaced):
    """``softmax_backward``; ``replaced(op)`` is the kernel it falls back on."""

    def softmax_backward(g, y, axis):
        n = y.shape[-1] if y.ndim else 0
        p = g.shape == y.shape and y.size >= MIN_SIZE and n > 1 and axis % y.ndim == y.ndim - 1 and f32(g, y) and \
            backward(y.size // n, n)
        if not p:
            return replaced("softmax_backward")(g, y, axis)
        return p(np.ascontiguousarray(y).reshape(-1, n), np.ascontiguousarray(g).reshape(-1, n))[0].reshape(y.shape)

    return {"softmax_backward": softmax_backward}
