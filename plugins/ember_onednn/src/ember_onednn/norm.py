"""Training-mode batch norm on oneDNN, forward and backward, for float32 inputs of 1 to 3 spatial dimensions.

oneDNN's JIT batch norm runs on channel-blocked layouts (16 channels to a block); on the row-major layout
it has only a reference loop, slower than NumPy's.  So each call reorders its inputs into the blocked
layout and its output back, as :class:`~ember_onednn.dnnl.Primitive` does for every primitive.  The
statistics are PyTorch's: the batch mean and the biased variance.

The backward receives ``1/std`` rather than the variance and ``eps``: it passes ``1/invstd**2`` as the
variance with an ``eps`` of 0, which gives oneDNN the same ``std``.
"""
from __future__ import annotations

import ctypes
import math
from functools import lru_cache

import numpy as np

from .dnnl import DIFF_DST, DIFF_SRC, DST, ENGINE, FORWARD_TRAINING, SRC, Desc, DnnlError, Primitive, f32, handle, \
    lib

WHAT = "batch normalization primitive_desc_create"

BACKWARD = 128
USE_SCALE, USE_SHIFT = 2, 4
ARG_MEAN, ARG_VARIANCE, ARG_SCALE, ARG_SHIFT, ARG_DIFF_SCALE, ARG_DIFF_SHIFT = 49, 50, 51, 52, 255, 256
BLOCKED = {3: 56, 4: 78, 5: 121}   # dnnl_aBc16b, dnnl_aBcd16b, dnnl_aBcde16b: 16 channels to a block

MIN_SIZE = 1 << 12
"""Elements below which batch norm runs on the replaced kernels."""


class Geometry:
    """A batch norm's shape and ``eps``, with its forward and backward primitives (each built on first use)."""

    def __init__(self, shape, eps):
        self.plain, self.blocked, self.channels = Desc(shape), Desc(shape, BLOCKED[len(shape)]), Desc(shape[1:2])
        self.eps = eps
        self.hint = handle(lib.dnnl_batch_normalization_forward_primitive_desc_create, ENGINE, FORWARD_TRAINING,
                           self.blocked.h, self.blocked.h, ctypes.c_float(eps), USE_SCALE | USE_SHIFT, None,
                           what=WHAT)
        self._forward = self._backward = None

    def forward(self):
        """``(x, scale, shift) -> (y, mean bytes, variance bytes)``."""
        if self._forward is None:
            c = self.channels
            self._forward = Primitive(self.hint, [(SRC, self.plain)], [(DST, self.plain)],
                                      raw_ins=[(ARG_SCALE, c), (ARG_SHIFT, c)],
                                      raw_outs=[(ARG_MEAN, c), (ARG_VARIANCE, c)])
        return self._forward

    def backward(self):
        """``(x, g, mean, variance, scale) -> (gx, gscale bytes, gshift bytes)``, for an ``eps`` of 0."""
        if self._backward is None:
            b, c = self.blocked.h, self.channels
            pd = handle(lib.dnnl_batch_normalization_backward_primitive_desc_create, ENGINE, BACKWARD, b, b, b,
                        ctypes.c_float(0.0), USE_SCALE | USE_SHIFT, self.hint, None, what=WHAT)
            self._backward = Primitive(pd, [(SRC, self.plain), (DIFF_DST, self.plain)], [(DIFF_SRC, self.plain)],
                                       raw_ins=[(ARG_MEAN, c), (ARG_VARIANCE, c), (ARG_SCALE, c)],
                                       raw_outs=[(ARG_DIFF_SCALE, c), (ARG_DIFF_SHIFT, c)])
        return self._backward


@lru_cache(maxsize=256)
def geometry(shape, eps):
    """The :class:`Geometry` of a batch norm, or None where it runs on the replaced kernels."""
    if len(shape) not in BLOCKED or math.prod(shape) < MIN_SIZE:
        return None
    try:
        return Geometry(shape, eps)
    except DnnlError:
        return None


def _vector(v, c, fill):
    return np.full(c, fill, np.float32) if v is None else np.ascontiguousarray(v, np.float32).reshape(c)


def kernels(replaced):
    """``batch_norm_train`` and ``batch_norm_backward``; ``replaced(op)`` is the kernel each falls back on."""

    def batch_norm_train(x, w, b, eps):
        geo = f32(x, w, b) and geometry(x.shape, float(eps))
        if not geo:
            return replaced("batch_norm_train")(x, w, b, eps)
        c = x.shape[1]
        y, mean, var = geo.forward()(np.ascontiguousarray(x), _vector(w, c, 1), _vector(b, c, 0))
        shape = (1, c) + (1,) * (x.ndim - 2)
        mean, var = mean.view(np.float32).reshape(shape), var.view(np.float32).reshape(shape)
        return y, mean, var, 1 / np.sqrt(var + np.float32(eps))

    def batch_norm_backward(g, x, w, mean, invstd, input_grad=True):
        geo = f32(g, x, w, mean, invstd) and geometry(x.shape, 0.0)
        if not geo or g.shape != x.shape:
            return replaced("batch_norm_backward")(g, x, w, mean, invstd, input_grad)
        c = x.shape[1]
        inv = np.asarray(invstd, np.float32).reshape(c)
        gx, gw, gb = geo.backward()(np.ascontiguousarray(x), np.ascontiguousarray(g),
                                    np.ascontiguousarray(mean, np.float32).reshape(c), 1 / (inv * inv),
                                    _vector(w, c, 1))
        return (gx if input_grad else None), gw.view(np.float32), gb.view(np.float32)

    return {"batch_norm_train": batch_norm_train, "batch_norm_backward": batch_norm_backward}
