"""LSTM layers on oneDNN: one layer in one direction over a whole sequence, forward and backward, for float32.

oneDNN's LSTM has PyTorch's gates in PyTorch's order (input, forget, cell, output) and one bias (PyTorch's
two are summed).  The weights are read as they are: oneDNN's ``ldgoi`` layout is PyTorch's ``(4H, in)``
row-major matrix.  The training forward leaves the gates of every step in a workspace that the backward
reads; the kernel keeps it in the cache it hands the backward.  Packed sequences (a mask), projections
(``proj_size``), other dtypes and work below :data:`MIN_WORK` run on the kernels this plugin replaced.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import dnnl
from .dnnl import ANY, ARG_WORKSPACE, ENGINE, FORWARD_TRAINING, Desc, DnnlError, Primitive, lib

BACKWARD = 128
LEFT2RIGHT, RIGHT2LEFT = 1, 2
LDGOI = 31                                # weights (layers, directions, in, gates, out) stored as (.., gates, out, in)
DIFF_WEIGHTS_OVERWRITE = 1                # dnnl_rnn_flags_diff_weights_overwrite: the backward writes, not adds
SRC_LAYER, SRC_ITER, SRC_ITER_C, WEIGHTS_LAYER, WEIGHTS_ITER, BIAS, DST_LAYER, DST_ITER, DST_ITER_C = \
    1, 2, 3, 33, 34, 41, 17, 18, 19
DIFF = 128                                # DNNL_ARG_DIFF_* = DNNL_ARG_* + 128

MIN_WORK = 1 << 22
"""Multiply-adds of a layer's forward below which it runs on the replaced kernels, on more than one thread (on
one thread oneDNN's primitive is the faster down to the smallest layers: a 20-step layer of 8 units at batch 1
in about half the time of the replaced kernels' per-step NumPy calls)."""


class Layer:
    """One LSTM layer's shapes and direction, with its forward and backward primitives."""

    def __init__(self, T, B, I, H, reverse):
        d = RIGHT2LEFT if reverse else LEFT2RIGHT
        self.x, self.state, self.out = Desc((T, B, I)), Desc((1, 1, B, H)), Desc((T, B, H))
        self.w_ih, self.w_hh = Desc((1, 1, I, 4, H), LDGOI), Desc((1, 1, H, 4, H), LDGOI)
        self.bias = Desc((1, 1, 4, H))
        w_any = [Desc(w.shape, ANY) for w in (self.w_ih, self.w_hh)]
        x, s, w, y = self.x.h, self.state.h, (w_any[0].h, w_any[1].h, None, None, self.bias.h), self.out.h
        fwd = dnnl.handle(lib.dnnl_lstm_forward_primitive_desc_create, ENGINE, FORWARD_TRAINING, d, x, s, s, *w,
                          y, s, s, 0, None, what="lstm forward primitive_desc_create")
        bwd = dnnl.handle(lib.dnnl_lstm_backward_primitive_desc_create, ENGINE, BACKWARD, d, x, s, s, *w, y, s, s,
                          x, s, s, *w, y, s, s, DIFF_WEIGHTS_OVERWRITE, fwd, None,
                          what="lstm backward primitive_desc_create")
        ws = dnnl.query_md(fwd, ARG_WORKSPACE)
        ins = [(SRC_LAYER, self.x), (SRC_ITER, self.state), (SRC_ITER_C, self.state),
               (WEIGHTS_LAYER, self.w_ih), (WEIGHTS_ITER, self.w_hh), (BIAS, self.bias)]
        outs = [(DST_LAYER, self.out), (DST_ITER, self.state), (DST_ITER_C, self.state)]
        self.forward = Primitive(fwd, ins, outs, raw_outs=[(ARG_WORKSPACE, ws)])
        # the backward reads the forward's arguments and the gradients of its outputs, and writes the
        # gradients of its inputs
        self.backward = Primitive(bwd, ins + outs + [(DIFF + a, m) for a, m in outs],
                                  [(DIFF + a, m) for a, m in ins], raw_ins=[(ARG_WORKSPACE, ws)])


@lru_cache(maxsize=64)
def layer(T, B, I, H, reverse, threaded=True):
    """The :class:`Layer` of these shapes, or None where the layer runs on the replaced kernels."""
    if min(T, B, I, H) <= 0 or (threaded and T * B * 4 * H * (I + H) < MIN_WORK):
        return None
    try:
        return Layer(T, B, I, H, reverse)
    except DnnlError:
        return None


class Saved(tuple):
    """What the forward keeps for the backward: ``(layer, x, h0, c0, w_ih, w_hh, bias, out, h, c, workspace)``
    (a class of its own: the backward tells it from the replaced kernel's cache)."""


def _c(a):
    return np.ascontiguousarray(a, np.float32)


def kernels(replaced):
    """``lstm_forward`` and ``lstm_backward``; ``replaced(op)`` is the kernel each falls back on."""

    def lstm_forward(x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse):
        T, B, I = x.shape
        H = w_hh.shape[1]
        lay = w_hr is None and mask is None and dnnl.f32(x, w_ih, w_hh, b_ih, b_hh, h0, c0) and \
            layer(T, B, I, H, bool(reverse), dnnl._threads() > 1)
        if not lay:
            return replaced("lstm_forward")(x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse)
        bias = np.zeros(4 * H, np.float32) if b_ih is None else _c(b_ih + b_hh)
        ins = (_c(x), _c(h0), _c(c0), _c(w_ih), _c(w_hh), bias)
        out, h, c, ws = lay.forward(*ins)
        h, c = h.reshape(B, H), c.reshape(B, H)
        return out, h, c, Saved((lay,) + ins + (out, h, c, ws))

    def lstm_backward(dout, dhT, dcT, cache, x, w_ih, w_hh, w_hr, mask, reverse, needs):
        if not isinstance(cache, Saved) or dout.dtype != np.float32:
            return replaced("lstm_backward")(dout, dhT, dcT, cache, x, w_ih, w_hh, w_hr, mask, reverse, needs)
        lay, *ins, out, h, c, ws = cache
        dx, dh0, dc0, dw_ih, dw_hh, db = lay.backward(*ins, out, h, c, _c(dout), _c(dhT), _c(dcT), ws)
        B, H = h.shape
        # the weight gradients come back in the weights' own layout, PyTorch's (4H, in) rows
        dw_ih, dw_hh, db = dw_ih.reshape(4 * H, -1), dw_hh.reshape(4 * H, H), db.reshape(4 * H)
        return (dx if needs[0] else None, dw_ih, dw_hh, db, db.copy(), dh0.reshape(B, H) if needs[1] else None,
                dc0.reshape(B, H) if needs[2] else None, None)

    return {"lstm_forward": lstm_forward, "lstm_backward": lstm_backward}
