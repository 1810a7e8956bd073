"""Op table rows for the neural-network ops of :mod:`ember.ops.nn`, ``nn_conv``, ``nn_loss`` and
``nn_recurrent`` (same row format as :mod:`ember.testing.op_table_shape`): every fused op once, with its
gradient and, where it has one, its double backward (which brings in the ops its backward is made of:
the transposed convolutions, the max-pooling gradient, the flat scatter and gather)."""
from __future__ import annotations

from .op_table_shape import I, Row, r


def _f(m):
    return m.nn.functional


def _recurrent(kind):
    """One ``nn.<kind>`` layer (bias, one direction) applied with the sample's weights; ``(output, *h_n)``."""
    def op(m, x, w_ih, w_hh, b_ih, b_hh):
        mod = getattr(m.nn, kind)(x.shape[-1], w_hh.shape[1])
        for name, w in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), (w_ih, w_hh, b_ih, b_hh)):
            delattr(mod, name)
            setattr(mod, name, w)
        out, h = mod(x)
        return (out, *h) if isinstance(h, tuple) else (out, h)
    return op


def _vjp(fn):
    """The vector-Jacobian product of ``fn`` at ``x`` with ``g``, itself differentiable: a row of the ops a
    backward is made of (``fn(m, x, *rest)``; the rows' other arguments follow ``g``)."""
    def op(m, x, g, *rest):
        with m.enable_grad():  # the finite differences of gradcheck run under no_grad
            return m.autograd.grad(fn(m, x, *rest), x, g, create_graph=True)[0]
    return op


def _gates(kind, n_in=3, hidden=2):
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind] * hidden
    return [r(4, 2, n_in), r(g, n_in), r(g, hidden), r(g), r(g)]


NN_ROWS = [
    Row("linear", lambda m, x, w, b: _f(m).linear(x, w, b), [[r(2, 3), r(4, 3), r(4)], [r(2, 2, 3), r(4, 3), None]]),
    Row("softmax", lambda m, x: m.softmax(x, 1), [[r(2, 3)], [r(2, 3, 2, nc=True)]]),
    Row("log_softmax", lambda m, x: x.log_softmax(0), [[r(3, 2)], [r(4)]]),
    Row("softplus", lambda m, x: _f(m).softplus(x * 3, 2.0, 1.5), [[r(2, 3)]]),
    Row("hardtanh", lambda m, x: _f(m).hardtanh(x, -0.3, 0.2), [[r(3, 4)]]),
    Row("pad_constant", lambda m, x: _f(m).pad(x, (1, 2, 0, 1), value=0.5), [[r(2, 3)], [r(1, 2, 3)]]),
    Row("conv2d", lambda m, x, w, b: m.conv2d(x, w, b, 1, 1), [[r(1, 2, 4, 4), r(3, 2, 3, 3), r(3)]]),
    Row("conv_transpose1d", lambda m, x, w: m.conv_transpose1d(x, w, None, 2), [[r(1, 2, 3), r(2, 3, 2)]]),
    Row("max_pool2d_indices", lambda m, x: _f(m).max_pool2d(x, 2, 1, return_indices=True), [[r(1, 2, 4, 4)]]),
    Row("adaptive_max_pool2d", lambda m, x: _f(m).adaptive_max_pool2d(x, (2, 3), return_indices=True),
        [[r(1, 2, 5, 5)]]),
    Row("max_unpool2d", lambda m, x: _f(m).max_unpool2d(*_f(m).max_pool2d(x, 2, return_indices=True), 2),
        [[r(1, 2, 4, 4)]]),
    Row("max_pool2d_backward", _vjp(lambda m, x: _f(m).max_pool2d(x, 2, 1)), [[r(1, 2, 4, 4), r(1, 2, 3, 3)]]),
    Row("max_unpool2d_backward", _vjp(lambda m, v, idx: _f(m).max_unpool2d(v, idx, 2)),
        [[r(1, 2, 2, 2), r(1, 2, 4, 4), I([[[[0, 3], [9, 14]], [[5, 2], [8, 15]]]])]]),
    # training-mode batch norm is one node; its double backward recomputes the statistics from the input
    Row("batch_norm_training", lambda m, x, w, b: _f(m).batch_norm(x, None, None, w, b, True),
        [[r(4, 3, 2), r(3), r(3)], [r(5, 2), None, None], [r(2, 3, 2, 2, nc=True), r(3), None]]),
    # layer norm is one node too (the statistics recomputed by differentiable ops for the double backward)
    Row("layer_norm", lambda m, x, w, b: _f(m).layer_norm(x, x.shape[-1:], w, b),
        [[r(4, 3, 5), r(5), r(5)], [r(2, 6), None, None], [r(3, 4, nc=True), r(4), None], [r(7), None, r(7)]]),
    Row("layer_norm_2d", lambda m, x, w, b: _f(m).layer_norm(x, x.shape[-2:], w, b, 1e-3),
        [[r(2, 3, 4), r(3, 4), r(3, 4)]]),
    Row("cross_entropy_index", lambda m, x, t: _f(m).cross_entropy(x, t), [[r(3, 4), I([0, 3, 1])]]),
    Row("ctc_loss", lambda m, x, t: m.ctc_loss(x.log_softmax(2), t, [6, 5], [2, 3], 0, 2),
        [[r(6, 2, 4), I([[1, 2, 0], [3, 1, 2]])]], gradgrad=False, rtol=1e-4, atol=1e-5),
    # the fused recurrent layers have no double backward (as in PyTorch)
    Row("lstm", _recurrent("LSTM"), [_gates("LSTM")], gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("gru", _recurrent("GRU"), [_gates("GRU")], gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("rnn", _recurrent("RNN"), [_gates("RNN")], gradgrad=False, rtol=1e-4, atol=1e-5),
]

ROWS = NN_ROWS
