"""Elementwise kernels as oneDNN binary primitives (one pass of JIT code on oneDNN's threads): relu's
gradient and the SGD update.  The arrays are taken flat, so one primitive serves every shape of a size.

**relu's gradient** compares the output with 0 (``out != 0``: 1 where it is positive or nan, 0 where it is
0) and multiplies the comparison by ``g`` in a post-op.  relu's output is never negative, so this is
PyTorch's ``threshold_backward`` (``out <= 0 ? 0 : g``), a nan output passing its gradient on.  relu itself
stays on the backend: oneDNN's relu maps nan to 0.

**SGD** (momentum, dampening, ``maximize``; no weight decay or Nesterov) is two scaled additions, each in
place: ``buf = momentum * buf + (1 - dampening) * (+-g)``, then ``p = p + (-lr) * buf``.  Each product is
rounded before the sum, as in the update it replaces (``buf *= momentum; buf += g; p -= lr * buf``), so the
results are the same bit for bit.  Running the update on the threads that just ran the backward's
convolutions matters as much as the single pass: oneDNN's OpenMP workers spin for a while after each
primitive, and a NumPy update split over ember's own pool shares the second core with them.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import dnnl
from .dnnl import DST, Desc, Primitive, lib

BINARY_ADD, BINARY_MUL, BINARY_NE = 0x1fff0, 0x1fff1, 0x1fffb
SRC_0, SRC_1 = 1, 2
POST_OP_SRC_1 = (1 << 15) | SRC_1    # DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1
SCALES = 1 << 12                     # DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC_*: a runtime scale of that source

MIN_SIZE = 1 << 16
"""Elements below which relu's gradient runs on the replaced kernel: a call costs ~10 us however small (12 us
against NumPy's 13 at 2^16 elements, 18 against 29 at 2^17, 11.6 against 7 at 2^15)."""

MIN_UPDATE = 1 << 17
"""Parameter elements below which the SGD update runs on the replaced kernel (two calls cost ~20 us however
small: 24 us against NumPy's 14 at 2^16 elements, 41 against 100 at 2^18)."""

_ZERO = np.zeros(1, np.float32)


def _attr(setup):
    """A primitive attribute made by ``setup(attr)`` (the caller destroys it: ``lib.dnnl_primitive_attr_destroy``)."""
    attr = dnnl.handle(lib.dnnl_primitive_attr_create, what="primitive_attr_create")
    try:
        setup(attr)
    except BaseException:
        lib.dnnl_primitive_attr_destroy(attr)
        raise
    return attr


@lru_cache(maxsize=64)
def gradient(n):
    """The primitive computing ``(out != 0) * g`` over ``n`` float32 elements."""
    flat, one = Desc((n,)), Desc((1,))
    post = dnnl.handle(lib.dnnl_post_ops_create, what="post_ops_create")
    try:
        def setup(attr):
            dnnl.check(lib.dnnl_post_ops_append_binary(post, BINARY_MUL, flat.h), "post_ops_append_binary")
            dnnl.check(lib.dnnl_primitive_attr_set_post_ops(attr, post), "primitive_attr_set_post_ops")
        attr = _attr(setup)
    finally:
        lib.dnnl_post_ops_destroy(post)
    try:
        pd = dnnl.handle(lib.dnnl_binary_primitive_desc_create, dnnl.ENGINE, BINARY_NE, flat.h, one.h, flat.h,
                         attr, what="binary primitive_desc_create")
    finally:
        lib.dnnl_primitive_attr_destroy(attr)
    return Primitive(pd, [(SRC_0, flat), (SRC_1, one), (POST_OP_SRC_1, flat)], [(DST, flat)])


@lru_cache(maxsize=256)
def scaled_sum(n):
    """The primitive computing ``a * x + b * y`` over ``n`` float32 elements, ``a`` and ``b`` given at each call
    (calls: ``(x, y, a, b)`` with ``a``, ``b`` one-element arrays)."""
    flat, one = Desc((n,)), Desc((1,))

    def setup(attr):
        for arg in (SRC_0, SRC_1):
            dnnl.check(lib.dnnl_primitive_attr_set_scales_mask(attr, arg, 0), "primitive_attr_set_scales_mask")

    attr = _attr(setup)
    try:
        pd = dnnl.handle(lib.dnnl_binary_primitive_desc_create, dnnl.ENGINE, BINARY_ADD, flat.h, flat.h, flat.h,
                         attr, what="binary primitive_desc_create")
    finally:
        lib.dnnl_primitive_attr_destroy(attr)
    return Primitive(pd, [(SRC_0, flat), (SRC_1, flat)], [(DST, flat)],
                     raw_ins=[(SCALES | SRC_0, one), (SCALES | SRC_1, one)])


def _scalar(v):
    return np.array([v], np.float32)


_ONE = _scalar(1.0)


def kernels(replaced):
    """``relu_backward`` and ``sgd_update``; ``replaced(op)`` is the kernel each falls back on."""

    def relu_backward(g, out):
        if g.size < MIN_SIZE or g.shape != out.shape or not dnnl.f32(g, out):
            return replaced("relu_backward")(g, out)
        flat = gradient(g.size)(np.ascontiguousarray(out).reshape(-1), _ZERO, np.ascontiguousarray(g).reshape(-1))
        return flat[0].reshape(g.shape)

    def sgd_update(p, g, buf, lr, weight_decay, momentum, dampening, nesterov, maximize):
        first = momentum != 0 and buf is None
        if first or weight_decay != 0 or nesterov or p.size < MIN_UPDATE or not dnnl.f32(p, g, buf) or \
                g.shape != p.shape or not p.flags.c_contiguous or not g.flags.c_contiguous or \
                (buf is not None and (buf.shape != p.shape or not buf.flags.c_contiguous)):
            return replaced("sgd_update")(p, g, buf, lr, weight_decay, momentum, dampening, nesterov, maximize)
        step = scaled_sum(p.size)
        pf, gf = p.reshape(-1), g.reshape(-1)
        sign = -1.0 if maximize else 1.0
        if momentum != 0:
            bf = buf.reshape(-1)
            step(bf, gf, _scalar(momentum), _scalar(sign * (1 - dampening)), out=[bf])
            step(pf, bf, _ONE, _scalar(-lr), out=[pf])
        else:
            step(pf, gf, _ONE, _scalar(-lr * sign), out=[pf])
        return buf

    return {"relu_backward": relu_backward, "sgd_update": sgd_update}
