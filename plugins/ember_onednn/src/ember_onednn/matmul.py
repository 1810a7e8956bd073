"""float32 matrix products on oneDNN's matmul primitive: 2-D, a stack times a matrix (one GEMM over the
flattened stack) and equal stacks, the operands read in place through their strides (a transposed view
needs no copy).  Products below :data:`MIN_WORK` multiply-adds, other dtypes and other shapes run the kernel
this plugin replaced.  Running the products of a step on oneDNN's OpenMP threads, as its convolutions, also
keeps a second thread pool (the BLAS's, whose idle workers spin for a while after each call) from taking
the cores while oneDNN works."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import dnnl
from .dnnl import ARG_BIAS, DST, SRC, WEIGHTS, Desc, DnnlError, Primitive, f32, lib

MIN_WORK = 1 << 21
"""Multiply-adds below which a product runs on the replaced kernel (the call into oneDNN costs a few
microseconds)."""


def _strides(a):
    st = a.strides
    if any(s <= 0 or s % 4 for s in st):
        return None
    return tuple(s // 4 for s in st)


@lru_cache(maxsize=1024)
def primitive(a_shape, a_strides, b_shape, b_strides, bias=False):
    """The product of ``a`` and ``b`` (shapes and strides in elements); ``bias``: plus a row of ``b``'s columns,
    added in the GEMM's epilogue (a third argument)."""
    out_shape = a_shape[:-1] + b_shape[-1:]
    try:
        a, b, y = Desc(a_shape, strides=a_strides), Desc(b_shape, strides=b_strides), Desc(out_shape)
        c = Desc((1, b_shape[-1])) if bias else None
        pd = dnnl.handle(lib.dnnl_matmul_primitive_desc_create, dnnl.ENGINE, a.h, b.h, c and c.h, y.h, None,
                         what="matmul primitive_desc_create")
        return Primitive(pd, [(SRC, a), (WEIGHTS, b)], [(DST, y)], raw_ins=[(ARG_BIAS, c)] if bias else ())
    except DnnlError:
        return None


def kernels(replaced):
    below = None   # the replaced kernel, looked up on the first call (the backend may register after the plugin)

    def matmul(a, b):
        nonlocal below
        if below is None:
            below = replaced("matmul")
        if a.size * b.shape[-1] < MIN_WORK:
            return below(a, b)
        if a.dtype == np.float32 and b.dtype == np.float32 and b.ndim == 2 and 2 <= a.ndim and \
                a.shape[-1] == b.shape[0]:
            lead = a.shape[:-1]
            a2 = a.reshape(-1, a.shape[-1]) if a.ndim > 2 else a
            sa, sb = _strides(a2), _strides(b)
            p = sa is not None and sb is not None and primitive(a2.shape, sa, b.shape, sb)
            if p:
                return p(a2, b)[0].reshape(lead + (b.shape[1],))
        elif a.dtype == np.float32 and b.dtype == np.float32 and a.ndim == b.ndim == 3 and \
                a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1]:
            sa, sb = _strides(a), _strides(b)
            p = sa is not None and sb is not None and primitive(a.shape, sa, b.shape, sb)
            if p:
                return p(a, b)[0]
        return below(a, b)

    def linear(x, w, b):
        # nn.Linear's x @ w.T + b with the bias added by the GEMM (one pass over the output fewer)
        if b is not None and 2 <= x.ndim and x.size * w.shape[0] >= MIN_WORK and f32(x, w, b) and b.ndim == 1 and \
                w.ndim == 2 and x.shape[-1] == w.shape[1]:
            x2 = x.reshape(-1, x.shape[-1]) if x.ndim > 2 else x
            wt = w.T
            sa, sb = _strides(x2), _strides(wt)
            p = sa is not None and sb is not None and primitive(x2.shape, sa, wt.shape, sb, True)
            if p:
                return p(x2, wt, np.ascontiguousarray(b))[0].reshape(x.shape[:-1] + (w.shape[0],))
        y = matmul(x, w.T)
        if b is not None:
            y += b
        return y

    return {"matmul": matmul, "linear": linear}
