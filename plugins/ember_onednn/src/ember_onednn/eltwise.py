"""gelu and its gradient as oneDNN eltwise primitives (``gelu_erf``, ``gelu_tanh``): one pass of JIT code over
the array where the CPU backend's float32 forms take some twenty to thirty NumPy passes (0.13 ms against 0.8
for the forward of 2^18 elements on one thread, 0.4 against 1.3 for the gradient).  Its results are PyTorch's
CPU kernels' within an ulp or two.  Non-finite values: the gradient at +-inf is NaN in both; oneDNN's (and
PyTorch's float32) ``gelu(inf)`` is NaN where the formula, PyTorch's float64 kernel and the replaced ones give
inf, so a forward whose result is not all finite is computed again by the replaced kernel.  The arrays are
taken flat, so one primitive serves every shape of a size.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np

from . import dnnl
from .dnnl import DIFF_DST, DIFF_SRC, DST, SRC, Desc, Primitive, lib

GELU_TANH, GELU_ERF = 43, 49   # dnnl_eltwise_gelu_tanh, dnnl_eltwise_gelu_erf

MIN_SIZE = 1 << 13
"""Elements below which the replaced kernels run (a call into oneDNN costs ~10 us however small)."""

_ZERO = ctypes.c_float(0.0)


@lru_cache(maxsize=64)
def gelu(approximate, n):
    """``(forward, backward)`` primitives of gelu over ``n`` float32 elements: ``forward(x)`` and
    ``backward(x, g)`` each return a one-array list."""
    alg = GELU_TANH if approximate == "tanh" else GELU_ERF
    flat = Desc((n,))
    fpd = dnnl.handle(lib.dnnl_eltwise_forward_primitive_desc_create, dnnl.ENGINE, dnnl.FORWARD_TRAINING, alg,
                      flat.h, flat.h, _ZERO, _ZERO, None, what="eltwise forward primitive_desc_create")
    bpd = dnnl.handle(lib.dnnl_eltwise_backward_primitive_desc_create, dnnl.ENGINE, alg, flat.h, flat.h, flat.h,
                      _ZERO, _ZERO, fpd, None, what="eltwise backward primitive_desc_create")
    return (Primitive(fpd, [(SRC, flat)], [(DST, flat)]),
            Primitive(bpd, [(SRC, flat), (DIFF_DST, flat)], [(DIFF_SRC, flat)]))


def _served(*arrays) -> bool:
    return arrays[0].size >= MIN_SIZE and dnnl.f32(*arrays)


def _flat(a):
    return np.ascontiguousarray(a).reshape(-1)


def kernels(replaced):
    """``nn_gelu`` and ``nn_gelu_backward``; ``replaced(op)`` is the kernel each falls back on."""

    def nn_gelu(x, approximate):
        if not _served(x):
            return replaced("nn_gelu")(x, approximate)
        y = gelu(approximate, x.size)[0](_flat(x))[0]
        with np.errstate(over="ignore", invalid="ignore"):  # (a huge y overflows the check: quietly)
            finite = np.isfinite(np.dot(y, y))  # (a BLAS pass, twice as fast as a sum; a huge y falls back too)
        if not finite:
            return replaced("nn_gelu")(x, approximate)
        return y.reshape(x.shape)

    def nn_gelu_backward(g, x, approximate):
        if g.shape != x.shape or not _served(x, g):
            return replaced("nn_gelu_backward")(g, x, approximate)
        return gelu(approximate, x.size)[1](_flat(x), _flat(g))[0].reshape(x.shape)

    return {"nn_gelu": nn_gelu, "nn_gelu_backward": nn_gelu_backward}
