"""Max pooling's gradient on oneDNN, for float32 pooling of 1 to 3 spatial dimensions.

oneDNN's backward reads the argmax of every window from a workspace its training forward writes, so the
kernel runs both: the forward again over ``x`` (its output is dropped), then the backward.  Each output
gradient goes to its window's first maximum, as in PyTorch and the replaced kernel.  The two primitives of
each geometry are built once and kept.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import dnnl
from .dnnl import ARG_WORKSPACE, DIFF_DST, DIFF_SRC, DST, ENGINE, FORWARD_TRAINING, SRC, Desc, \
    DnnlError, Primitive, dims, lib

POOLING_MAX = 511

MIN_SIZE = 1 << 14
"""Input elements below which the gradient runs on the replaced kernel (there the calls cost more than they
save)."""


class Geometry:
    """One max pooling's shapes and parameters, with its forward (for the workspace) and backward primitives."""

    def __init__(self, x_shape, y_shape, k, stride, padding, dilation):
        x, y = Desc(x_shape), Desc(y_shape)
        params = (dims(stride), dims(k), dims([d - 1 for d in dilation]), dims([lo for lo, _ in padding]),
                  dims([hi for _, hi in padding]))
        fwd = dnnl.handle(lib.dnnl_pooling_forward_primitive_desc_create, ENGINE, FORWARD_TRAINING, POOLING_MAX,
                          x.h, y.h, *params, None, what="pooling forward primitive_desc_create")
        ws = dnnl.query_md(fwd, ARG_WORKSPACE)
        self.forward = Primitive(fwd, [(SRC, x)], [(DST, y)], raw_outs=[(ARG_WORKSPACE, ws)])
        bwd = dnnl.handle(lib.dnnl_pooling_backward_primitive_desc_create, ENGINE, POOLING_MAX, x.h, y.h, *params,
                          fwd, None, what="pooling backward primitive_desc_create")
        self.backward = Primitive(bwd, [(DIFF_DST, y)], [(DIFF_SRC, x)], raw_ins=[(ARG_WORKSPACE, ws)])


@lru_cache(maxsize=256)
def geometry(x_shape, y_shape, k, stride, padding, dilation):
    """The :class:`Geometry` of a max pooling, or None where it runs on the replaced kernel."""
    d = len(x_shape) - 2
    if not 1 <= d <= 3 or math.prod(x_shape) < MIN_SIZE or min(y_shape) <= 0:
        return None
    try:
        return Geometry(x_shape, y_shape, k, stride, padding, dilation)
    except DnnlError:
        return None


def kernels(replaced):
    """``max_pool_backward``; ``replaced(op)`` is the kernel it falls back on."""

    def max_pool_backward(g, x, best, k, stride, padding, dilation):
        geo = dnnl.f32(x, g) and \
            geometry(x.shape, g.shape, tuple(k), tuple(stride), tuple(map(tuple, padding)), tuple(dilation))
        if not geo:
            return replaced("max_pool_backward")(g, x, best, k, stride, padding, dilation)
        _, ws = geo.forward(np.ascontiguousarray(x))
        return geo.backward(np.ascontiguousarray(g), ws)[0]

    return {"max_pool_backward": max_pool_backward}
