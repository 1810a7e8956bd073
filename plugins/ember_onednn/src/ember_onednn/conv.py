"""Convolution kernels on oneDNN: forward, the input gradient (the transposed convolution) and the weight
gradient, for float32 convolutions of 1 to 3 spatial dimensions with any stride, padding, dilation and groups.

Each geometry builds its three primitives once (on first use) and keeps them; the tensors stay row-major
(``NC...``) outside the kernel and are reordered into the blocked layouts oneDNN picks, as PyTorch does.  A
convolution below :data:`MIN_WORK` multiply-adds, another dtype, or a geometry oneDNN refuses runs the kernel
this plugin replaced (NumPy's).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .dnnl import ANY, ARG_BIAS, CONVOLUTION_DIRECT, DIFF_DST, DIFF_SRC, DIFF_WEIGHTS, DST, ENGINE, FORWARD_TRAINING, \
    SRC, WEIGHTS, Desc, DnnlError, Primitive, dims, f32, handle, lib

WHAT = "convolution primitive_desc_create"

MIN_WORK = 1 << 21
"""Multiply-adds below which a convolution runs on the replaced kernel: there, the reorders and the calls
into oneDNN cost more than they save."""


class Geometry:
    """One convolution's shapes and parameters, with its oneDNN primitives (each built on first use)."""

    def __init__(self, x_shape, w_shape, stride, padding, dilation, groups, y_shape):
        self.x, self.y = Desc(x_shape), Desc(y_shape)
        self.w = Desc(((groups, w_shape[0] // groups) + tuple(w_shape[1:])) if groups > 1 else w_shape)
        self.params = (dims(stride), dims([d - 1 for d in dilation]), dims([lo for lo, _ in padding]),
                       dims([hi for _, hi in padding]))
        self.any = [Desc(d.shape, ANY) for d in (self.x, self.w, self.y)]
        self.hint = self._forward_pd(None)   # the forward without bias; the gradients' primitives are built on it
        self._fwd, self._data, self._weights = {}, None, None

    def _forward_pd(self, b_any):
        return handle(lib.dnnl_convolution_forward_primitive_desc_create, ENGINE, FORWARD_TRAINING,
                      CONVOLUTION_DIRECT, self.any[0].h, self.any[1].h, None if b_any is None else b_any.h,
                      self.any[2].h, *self.params, None, what=WHAT)

    def forward(self, bias):
        """The forward primitive, with a bias argument or without."""
        p = self._fwd.get(bias)
        if p is None:
            b = Desc(self.y.shape[1:2])
            pd = self._forward_pd(Desc(b.shape, ANY)) if bias else self.hint
            p = self._fwd[bias] = Primitive(pd, [(SRC, self.x), (WEIGHTS, self.w)], [(DST, self.y)],
                                            raw_ins=[(ARG_BIAS, b)] if bias else ())
        return p

    def input_grad(self):
        if self._data is None:
            pd = handle(lib.dnnl_convolution_backward_data_primitive_desc_create, ENGINE, CONVOLUTION_DIRECT,
                        self.any[0].h, self.any[1].h, self.any[2].h, *self.params, self.hint, None, what=WHAT)
            self._data = Primitive(pd, [(DIFF_DST, self.y), (WEIGHTS, self.w)], [(DIFF_SRC, self.x)])
        return self._data

    def weight_grad(self):
        if self._weights is None:
            pd = handle(lib.dnnl_convolution_backward_weights_primitive_desc_create, ENGINE, CONVOLUTION_DIRECT,
                        self.any[0].h, self.any[1].h, None, self.any[2].h, *self.params, self.hint, None, what=WHAT)
            self._weights = Primitive(pd, [(SRC, self.x), (DIFF_DST, self.y)], [(DIFF_WEIGHTS, self.w)])
        return self._weights


@lru_cache(maxsize=512)
def geometry(x_shape, w_shape, stride, padding, dilation, groups):
    """The :class:`Geometry` of a convolution, or None where it runs on the replaced kernel."""
    d = len(x_shape) - 2
    if not 1 <= d <= 3 or len(w_shape) != d + 2 or groups < 1 or x_shape[1] != w_shape[1] * groups or \
            w_shape[0] % groups or any(lo < 0 or hi < 0 for lo, hi in padding):
        return None
    osp = tuple((s + lo + hi - dl * (k - 1) - 1) // st + 1
                for s, (lo, hi), dl, k, st in zip(x_shape[2:], padding, dilation, w_shape[2:], stride))
    y_shape = (x_shape[0], w_shape[0]) + osp
    if min(x_shape + w_shape + osp) <= 0 or math.prod(y_shape) * math.prod(w_shape[1:]) < MIN_WORK:
        return None
    try:
        return Geometry(x_shape, w_shape, stride, padding, dilation, groups, y_shape)
    except DnnlError:
        return None


def _c(a):
    return np.ascontiguousarray(a)


def kernels(replaced):
    """The three kernels; ``replaced(op)`` is the kernel each one falls back on."""

    def conv_forward(x, w, b, stride, padding, dilation, groups):
        g = f32(x, w, b) and \
            geometry(x.shape, w.shape, stride, padding, dilation, groups)
        if not g:
            return replaced("conv_forward")(x, w, b, stride, padding, dilation, groups)
        args = (_c(x), _c(w)) + ((_c(b),) if b is not None else ())
        return g.forward(b is not None)(*args)[0], None

    def conv_input_grad(gy, w, x_shape, stride, padding, dilation, groups):
        g = f32(gy, w) and geometry(tuple(x_shape), w.shape, stride, padding, dilation, groups)
        if not g or g.y.shape != gy.shape:
            return replaced("conv_input_grad")(gy, w, x_shape, stride, padding, dilation, groups)
        return g.input_grad()(_c(gy), _c(w))[0]

    def conv_weight_grad(x, gy, w_shape, stride, padding, dilation, groups, cols=None):
        g = cols is None and f32(x, gy) and geometry(x.shape, tuple(w_shape), stride, padding, dilation, groups)
        if not g or g.y.shape != gy.shape:
            return replaced("conv_weight_grad")(x, gy, w_shape, stride, padding, dilation, groups, cols)
        return g.weight_grad()(_c(x), _c(gy))[0].reshape(w_shape)

    return {"conv_forward": conv_forward, "conv_input_grad": conv_input_grad, "conv_weight_grad": conv_weight_grad}
