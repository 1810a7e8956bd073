"""The fused recurrent layers: one LSTM, GRU or Elman RNN layer in one direction over a whole sequence,
each one op whose kernels live in ``ember.kernels.rnn`` (one recurrent GEMM plus the gate arithmetic per
step, and a backward through time that leaves the weight gradients to one GEMM each).

The layer's input projection of all time steps is an ordinary ``matmul`` outside the op; the Modules
(``ember.nn.LSTM`` and friends) apply these per layer and direction.  The cells (``LSTMCell`` ...) are
composed of ember ops and need no op of their own.
"""
from __future__ import annotations

from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from ..tensor import _wrap


def _no_double_backward(name):
    if STATE.enabled:
        raise RuntimeError(f"{name}: double backward through a fused recurrent layer is not supported; use the "
                           f"cells (RNNCell, LSTMCell, GRUCell) in a loop for higher-order gradients")


def _wrap_all(dev, *arrays):
    return tuple(None if a is None else _wrap(a, dev) for a in arrays)


class LSTMLayer(Op):
    """One LSTM layer in one direction over a whole sequence."""

    save_inputs = True
    backward_name = "LstmBackward0"

    @staticmethod
    def forward(ctx, k, xproj, h0, c0, w_hh, w_hr, mask, reverse):
        out, h, c, ctx.cache = k["lstm_forward"](xproj, h0, c0, w_hh, w_hr, mask, reverse)
        ctx.mask, ctx.reverse = mask, reverse
        return out, h, c

    @staticmethod
    def backward(ctx, dout, dh, dc):
        _no_double_backward("LSTM")
        saved = ctx.inputs  # xproj, h0, c0, w_hh and, with projections, w_hr
        w_hh, w_hr = saved[3], (saved[4] if len(saved) == 5 else None)
        r = dout._dev.kernels["lstm_backward"](dout._data, dh._data, dc._data, ctx.cache, w_hh._data,
                                               None if w_hr is None else w_hr._data, ctx.mask, ctx.reverse)
        return _wrap_all(dout._dev, *r)[:len(saved)]


class GRULayer(Op):
    """One GRU layer in one direction over a whole sequence."""

    save_inputs = True
    backward_name = "GruBackward0"

    @staticmethod
    def forward(ctx, k, xproj, h0, w_hh, b_hn, mask, reverse):
        out, h, ctx.cache = k["gru_forward"](xproj, h0, w_hh, b_hn, mask, reverse)
        ctx.mask, ctx.reverse = mask, reverse
        return out, h

    @staticmethod
    def backward(ctx, dout, dh):
        _no_double_backward("GRU")
        w_hh = ctx.inputs[2]
        dx, dh0, dw_hh, db_hn = dout._dev.kernels["gru_backward"](dout._data, dh._data, ctx.cache, w_hh._data,
                                                                  ctx.mask, ctx.reverse)
        return _wrap_all(dout._dev, dx, dh0, dw_hh, db_hn)


class RNNLayer(Op):
    """One Elman RNN layer (tanh or relu) in one direction over a whole sequence."""

    save_inputs = True
    backward_name = "RnnBackward0"

    @staticmethod
    def forward(ctx, k, xproj, h0, w_hh, relu, mask, reverse):
        out, h, ctx.cache = k["rnn_forward"](xproj, h0, w_hh, relu, mask, reverse)
        ctx.relu, ctx.mask, ctx.reverse = relu, mask, reverse
        return out, h

    @staticmethod
    def backward(ctx, dout, dh):
        _no_double_backward("RNN")
        w_hh = ctx.inputs[2]
        r = dout._dev.kernels["rnn_backward"](dout._data, dh._data, ctx.cache, w_hh._data, ctx.relu, ctx.mask,
                                              ctx.reverse)
        return _wrap_all(dout._dev, *r)
