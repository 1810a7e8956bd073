"""Op table: neural-network ops (``nn.functional`` and the fused ops of :mod:`ember.ops.nn`, ``nn_conv``,
``nn_loss`` and ``nn_recurrent``).  Row format and checks: :mod:`ember.testing.row`.

Every fused op is here once, with its gradient and, where it has one, its double backward (which brings in the
ops its backward is made of: the transposed convolutions, the max-pooling gradient, the flat scatter and
gather).  The random ops take their draws as inputs (``_random_samples``) or run in eval mode, so both
libraries compute the same thing.  Batch normalisation runs through a per-channel scale and shift, in training
(batch statistics) and in inference (running statistics, as PyTorch's CPU kernel: ``x * alpha + beta``);
running statistics are constant inputs (PyTorch gives them no gradient), and their update in training mutates
them, so it is tested on the module (``tests/test_speed_paths.py``).  ``F.linear_cross_entropy`` runs
on its reference path and chunked over the batch (``LinearCrossEntropyOptions``: class indices without label
smoothing, as PyTorch's chunked path); the chunked path computes its gradients in forward, as PyTorch's does,
so it has no second derivative (``gradgrad=False``), like PyTorch's.
"""
from __future__ import annotations

import numpy as np

from .row import F, I, Row, Sampler

_S = Sampler(6789)
r = _S.r
_RNG = _S.rng


def _f(m):
    return m.nn.functional


def _layer(kind):
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


def _u(*shape):
    """Uniform [0, 1) draws, not differentiated (fractional pooling's samples)."""
    return F(_RNG.rand(*shape), grad=False)


def _grid(*shape, span=2.4):
    """Sampling positions spread over ``[-span/2, span/2]`` (outside [-1, 1] too, to exercise padding)."""
    return F((_RNG.rand(*shape) - 0.5) * span)


def _theta2():
    return F(np.array([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]], [[1.0, 0.1, 0.0], [-0.1, 0.8, 0.3]]]))


def _theta3():
    return F(np.array([[[0.9, -0.2, 0.1, 0.0], [0.3, 1.1, -0.2, 0.1], [0.0, 0.1, 0.9, -0.1]]]))


def _sample(mode, padding, align):
    def op(m, x, g):
        return _f(m).grid_sample(x, g, mode, padding, align)
    return op


def _grid_rows():
    rows = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                rows.append(Row(f"grid_sample_{mode}_{padding}_{int(align)}", _sample(mode, padding, align),
                                [[r(2, 2, 4, 5), _grid(2, 3, 4, 2)]], rtol=1e-5, atol=1e-6))
    for padding in ("zeros", "border", "reflection"):
        rows.append(Row(f"grid_sample_3d_bilinear_{padding}", _sample("bilinear", padding, False),
                        [[r(1, 2, 3, 4, 3), _grid(1, 2, 3, 2, 3)]], rtol=1e-5, atol=1e-6))
    rows.append(Row("grid_sample_3d_nearest", _sample("nearest", "zeros", True),
                    [[r(1, 2, 3, 4, 3), _grid(1, 2, 3, 2, 3)]]))
    return rows


def _inplace_activations(m, x):
    f = _f(m)
    return (f.elu_(x * 1, 0.5), f.leaky_relu_(x * 1, 0.2), f.hardtanh_(x * 1, -0.3, 0.2), f.relu_(x * 1),
            f.celu_(x * 1, 0.7), f.selu_(x * 1), f.threshold_(x * 1, 0.1, -1.0), f.rrelu_(x * 1, 0.1, 0.3))


def _mha(m, q, k, v, w_in, b_in, w_out, b_out):
    return _f(m).multi_head_attention_forward(q, k, v, 4, 2, w_in, b_in, None, None, False, 0.0, w_out, b_out,
                                              training=False)


def _mha_separate(m, q, k, v, wq, wk, wv, w_out):
    return _f(m).multi_head_attention_forward(q, k, v, 4, 2, None, None, None, None, True, 0.0, w_out, None,
                                              training=False, use_separate_proj_weight=True, q_proj_weight=wq,
                                              k_proj_weight=wk, v_proj_weight=wv, average_attn_weights=False)


def _flat_params(kind, layers, dirs, n_in, hidden, bias=True):
    g = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}[kind] * hidden
    ps = []
    for layer in range(layers):
        size_in = n_in if layer == 0 else hidden * dirs
        for _ in range(dirs):
            ps += [r(g, size_in), r(g, hidden)] + ([r(g), r(g)] if bias else [])
    return ps


def _recurrent(kind, layers, dirs, bias, batch_first):
    def op(m, x, h0, *rest):
        if kind == "lstm":
            c0, params = rest[0], list(rest[1:])
            return m.lstm(x, (h0, c0), params, bias, layers, 0.0, False, dirs == 2, batch_first)
        return getattr(m, kind)(x, h0, list(rest), bias, layers, 0.0, False, dirs == 2, batch_first)
    return op


def _recurrent_samples(kind, layers, dirs, bias, batch_first):
    x = r(2, 5, 3) if batch_first else r(5, 2, 3)
    states = [r(layers * dirs, 2, 4)] * (2 if kind == "lstm" else 1)
    return [[x, *states, *_flat_params(kind, layers, dirs, 3, 4, bias)]]


def _bn(m, x, rm, rv, w=None, b=None, training=False):
    return m.nn.functional.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5)


def _probs(n, c):
    p = _RNG.rand(n, c) + 0.1
    return F(p / p.sum(1, keepdims=True), grad=False)


def _lce(chunk=None, **kw):
    def op(m, x, w, t, *rest):
        opts = None if chunk is None else m.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk, chunking_method=None)
        extra = dict(kw)
        if rest:
            extra["linear_bias"] = rest[0]
        if len(rest) > 1:
            extra["weight"] = rest[1]
        return m.nn.functional.linear_cross_entropy(x, w, t, options=opts, **extra)
    return op


_IDX = I([0, 4, 2, -100, 1, 3, 4])
_CW = F(_RNG.rand(5) + 0.5, grad=False)


_P = np.array([[0.05, 0.5, 0.93], [0.3, 0.71, 0.12]])
_Q = np.array([[0.1, 0.9, 0.4], [0.8, 0.25, 0.05]])  # inside (0, 1): finite differences move them

ROWS = [
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
    # embedding is one node (a padding row that no index reads: where one does, its gradient is 0 by definition)
    Row("embedding", lambda m, w, i: _f(m).embedding(i, w), [[r(5, 3), I([[0, 4], [4, 1]])], [r(4, 2), I([3, 3])]]),
    Row("embedding_padding", lambda m, w, i: _f(m).embedding(i, w, padding_idx=2), [[r(5, 3), I([[0, 4], [4, 1]])]]),
    # the pointwise losses are one node each where input and target share a dtype
    Row("mse_loss", lambda m, x, t: (_f(m).mse_loss(x, t), _f(m).mse_loss(x, t, reduction="none")),
        [[r(3, 4), r(3, 4)], [r(5), r(5)]]),
    Row("smooth_l1_loss", lambda m, x, t: (_f(m).smooth_l1_loss(x, t, beta=0.5),
                                           _f(m).smooth_l1_loss(x, t, reduction="sum", beta=2.0)),
        [[r(3, 4), r(3, 4)], [r(5), r(5)]]),
    Row("ctc_loss", lambda m, x, t: m.ctc_loss(x.log_softmax(2), t, [6, 5], [2, 3], 0, 2),
        [[r(6, 2, 4), I([[1, 2, 0], [3, 1, 2]])]], gradgrad=False, rtol=1e-4, atol=1e-5),
    # the fused recurrent layers have no double backward (as in PyTorch)
    Row("lstm", _layer("LSTM"), [_gates("LSTM")], gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("gru", _layer("GRU"), [_gates("GRU")], gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("rnn", _layer("RNN"), [_gates("RNN")], gradgrad=False, rtol=1e-4, atol=1e-5),
    # grid sampling, pooling variants, margin losses, normalisations, attention, recurrent functions and cells
    *_grid_rows(),
    Row("affine_grid_2d", lambda m, t: _f(m).affine_grid(t, (2, 3, 4, 5), False), [[_theta2()]]),
    Row("affine_grid_2d_align", lambda m, t: _f(m).affine_grid(t, (2, 1, 3, 2), True), [[_theta2()]]),
    Row("affine_grid_3d", lambda m, t: _f(m).affine_grid(t, (1, 1, 2, 3, 4), False), [[_theta3()]]),
    Row("affine_grid_generator", lambda m, t: m.affine_grid_generator(t, (2, 3, 4, 5), True), [[_theta2()]]),
    Row("grid_sampler", lambda m, x, g: m.grid_sampler(x, g, 0, 2, False), [[r(2, 2, 4, 5), _grid(2, 3, 4, 2)]]),
    # pooling
    Row("max_pool2d_with_indices", lambda m, x: _f(m).max_pool2d_with_indices(x, 2, 1), [[r(1, 2, 4, 4)]]),
    Row("max_pool1d_with_indices_torch", lambda m, x: m.max_pool1d_with_indices(x, 3, 2, 1), [[r(2, 3, 7)]]),
    Row("max_pool3d_with_indices", lambda m, x: _f(m).max_pool3d_with_indices(x, 2), [[r(1, 2, 4, 4, 4)]]),
    Row("adaptive_max_pool3d", lambda m, x: _f(m).adaptive_max_pool3d(x, (2, 3, 2), True), [[r(1, 2, 5, 6, 4)]]),
    Row("adaptive_max_pool1d_with_indices", lambda m, x: _f(m).adaptive_max_pool1d_with_indices(x, 3),
        [[r(2, 2, 7)]]),
    Row("adaptive_max_pool2d_with_indices", lambda m, x: _f(m).adaptive_max_pool2d_with_indices(x, (2, 3)),
        [[r(2, 5, 7)]]),
    Row("max_unpool3d", lambda m, x: _f(m).max_unpool3d(*_f(m).max_pool3d(x, 2, return_indices=True), 2),
        [[r(1, 2, 4, 4, 4)]]),
    Row("lp_pool1d", lambda m, x: _f(m).lp_pool1d(x, 2, 3, 2), [[r(2, 3, 8, positive=True)]]),
    Row("lp_pool2d", lambda m, x: _f(m).lp_pool2d(x, 1.5, (2, 3), 1, True), [[r(1, 2, 5, 6, positive=True)]]),
    Row("lp_pool3d", lambda m, x: _f(m).lp_pool3d(x, 3, 2), [[r(1, 2, 4, 4, 4, positive=True)]]),
    Row("fractional_max_pool2d", lambda m, x, u: _f(m).fractional_max_pool2d(x, 2, (3, 4), return_indices=True,
                                                                              _random_samples=u),
        [[r(2, 3, 7, 8), _u(2, 3, 2)]]),
    Row("fractional_max_pool2d_ratio", lambda m, x, u: _f(m).fractional_max_pool2d(x, (3, 2), output_ratio=(0.5, 0.5),
                                                                                    _random_samples=u),
        [[r(3, 9, 8), _u(1, 3, 2)]]),
    Row("fractional_max_pool3d", lambda m, x, u: _f(m).fractional_max_pool3d_with_indices(
        x, 2, (3, 2, 3), _random_samples=u), [[r(1, 2, 6, 5, 6), _u(1, 2, 3)]]),
    # losses
    Row("multi_margin_loss", lambda m, x, t: _f(m).multi_margin_loss(x, t), [[r(4, 5), I([0, 3, 4, 1])]]),
    Row("multi_margin_loss_p2_weight", lambda m, x, t, w: _f(m).multi_margin_loss(x, t, 2, 0.7, w,
                                                                                 reduction="none"),
        [[r(4, 5), I([0, 3, 4, 1]), r(5, positive=True, grad=False)]]),
    Row("multi_margin_loss_1d", lambda m, x, t: _f(m).multi_margin_loss(x, t, reduction="sum"), [[r(5), I(2)]]),
    Row("multilabel_margin_loss", lambda m, x, t: _f(m).multilabel_margin_loss(x, t, reduction="none"),
        [[r(3, 4), I([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3]])]]),
    Row("multilabel_margin_loss_1d", lambda m, x, t: _f(m).multilabel_margin_loss(x, t), [[r(4), I([2, 0, -1, 1])]]),
    Row("multilabel_soft_margin_loss", lambda m, x, t, w: _f(m).multilabel_soft_margin_loss(x, t, w),
        [[r(3, 4), F(np.array([[1., 0, 1, 0], [0, 0, 1, 1], [1, 1, 1, 0]]), grad=False), r(4, positive=True)]]),
    Row("soft_margin_loss", lambda m, x, y: _f(m).soft_margin_loss(x, y, reduction="sum"),
        [[r(3, 4), F(np.sign(_RNG.rand(3, 4) - 0.5), grad=False)]]),
    Row("triplet_margin_with_distance_loss", lambda m, a, p, n: _f(m).triplet_margin_with_distance_loss(
        a, p, n, margin=0.5, swap=True, reduction="none"), [[r(3, 4), r(3, 4), r(3, 4)]]),
    Row("triplet_margin_with_distance_loss_fn", lambda m, a, p, n: _f(m).triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1 - _f(m).cosine_similarity(u, v)), [[r(3, 4), r(3, 4), r(3, 4)]]),
    # activations, normalisation, shuffles, distances
    Row("rrelu_eval", lambda m, x: _f(m).rrelu(x, 0.1, 0.3), [[r(3, 4)]]),
    Row("rrelu_torch", lambda m, x: m.rrelu(x, 0.2, 0.4, False), [[r(3, 4)]]),
    Row("inplace_activations", _inplace_activations, [[r(3, 4)]]),
    Row("rms_norm", lambda m, x, w: _f(m).rms_norm(x, [3, 4], w, 1e-5), [[r(2, 3, 4), r(3, 4)]]),
    Row("rms_norm_default_eps", lambda m, x: m.rms_norm(x, (4,)), [[r(2, 3, 4)]]),
    Row("channel_shuffle", lambda m, x: _f(m).channel_shuffle(x, 2), [[r(2, 4, 3, 2)]], ints=True),
    # PyTorch has no derivative for native_channel_shuffle
    Row("native_channel_shuffle", lambda m, x: m.native_channel_shuffle(x, 3), [[r(1, 6, 2)]], grad=False),
    Row("pdist_default", lambda m, x: m.pdist(x), [[r(5, 3)]]),
    Row("pdist_p", lambda m, x: _f(m).pdist(x, 1.5), [[r(4, 3)]]),
    Row("pdist_inf", lambda m, x: m.pdist(x, float("inf")), [[r(4, 3)]], gradgrad=False),
    Row("pdist_one", lambda m, x: m.pdist(x, 1), [[r(4, 3)]], gradgrad=False),
    Row("feature_alpha_dropout_eval", lambda m, x: _f(m).feature_alpha_dropout(x, 0.3), [[r(2, 3, 4)]]),
    Row("native_layer_norm", lambda m, x, w, b: m.native_layer_norm(x, [4], w, b, 1e-5),
        [[r(2, 3, 4), r(4), r(4)]], grad=False),
    Row("native_group_norm", lambda m, x, w, b: m.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5),
        [[r(2, 4, 3), r(4), r(4)]], grad=False),
    Row("native_batch_norm", lambda m, x, w, b: m.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5),
        [[r(4, 3, 2), r(3), r(3)]], grad=False),
    Row("constant_pad_nd", lambda m, x: m.constant_pad_nd(x, [1, 0, 2, 1], 0.5), [[r(2, 3)]]),
    # convolution forms
    Row("conv_tbc", lambda m, x, w, b: _f(m).conv_tbc(x, w, b, 1), [[r(5, 2, 3), r(3, 3, 4), r(4)]]),
    Row("convolution", lambda m, x, w, b: m.convolution(x, w, b, [2], [1], [1], False, [0], 1),
        [[r(2, 2, 7), r(3, 2, 3), r(3)]]),
    Row("convolution_transposed", lambda m, x, w: m.convolution(x, w, None, [2, 1], [1, 0], [1, 1], True, [1, 0], 2),
        [[r(1, 4, 3, 3), r(4, 1, 2, 2)]]),
    # nn.grad: a convolution's gradients as functions
    Row("conv1d_input", lambda m, w, g: m.nn.grad.conv1d_input((2, 4, 9), w, g, 2, 1, 1, 2),
        [[r(6, 2, 3), r(2, 6, 5)]]),
    Row("conv2d_input", lambda m, w, g: m.nn.grad.conv2d_input((1, 2, 6, 5), w, g, 1, (1, 0), 2),
        [[r(3, 2, 3, 2), r(1, 3, 4, 3)]]),
    Row("conv2d_weight", lambda m, x, g: m.nn.grad.conv2d_weight(x, (6, 2, 3, 2), g, 2, 1, 2, 2),
        [[r(2, 4, 7, 6), r(2, 6, 3, 3)]]),
    Row("conv3d_weight", lambda m, x, g: m.nn.grad.conv3d_weight(x, (2, 1, 2, 2, 2), g),
        [[r(1, 1, 3, 3, 3), r(1, 2, 2, 2, 2)]]),
    Row("conv3d_input", lambda m, w, g: m.nn.grad.conv3d_input((1, 1, 3, 3, 3), w, g),
        [[r(2, 1, 2, 2, 2), r(1, 2, 2, 2, 2)]]),
    # attention
    Row("multi_head_attention_forward", _mha, [[r(3, 2, 4), r(5, 2, 4), r(5, 2, 4), r(12, 4), r(12), r(4, 4),
                                                r(4)]], rtol=1e-5, atol=1e-6),
    Row("multi_head_attention_forward_separate", _mha_separate,
        [[r(3, 4), r(5, 4), r(5, 4), r(4, 4), r(4, 4), r(4, 4), r(4, 4)]], rtol=1e-5, atol=1e-6),
    # the recurrent functions of torch.* (their fused layers have no double backward, as PyTorch's)
    Row("lstm_fn", _recurrent("lstm", 2, 2, True, False), _recurrent_samples("lstm", 2, 2, True, False),
        gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("gru_fn", _recurrent("gru", 1, 1, True, True), _recurrent_samples("gru", 1, 1, True, True),
        gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("rnn_tanh_fn", _recurrent("rnn_tanh", 2, 1, False, False), _recurrent_samples("rnn_tanh", 2, 1, False, False),
        gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("rnn_relu_fn", _recurrent("rnn_relu", 1, 2, True, False), _recurrent_samples("rnn_relu", 1, 2, True, False),
        gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("lstm_cell", lambda m, x, h, c, wi, wh, bi, bh: m.lstm_cell(x, (h, c), wi, wh, bi, bh),
        [[r(2, 3), r(2, 4), r(2, 4), r(16, 3), r(16, 4), r(16), r(16)]]),
    Row("gru_cell", lambda m, x, h, wi, wh, bi, bh: m.gru_cell(x, h, wi, wh, bi, bh),
        [[r(2, 3), r(2, 4), r(12, 3), r(12, 4), r(12), r(12)]]),
    Row("rnn_tanh_cell", lambda m, x, h, wi, wh: m.rnn_tanh_cell(x, h, wi, wh), [[r(2, 3), r(2, 4), r(4, 3), r(4, 4)]]),
    Row("rnn_relu_cell", lambda m, x, h, wi, wh, bi, bh: m.rnn_relu_cell(x, h, wi, wh, bi, bh),
        [[r(2, 3), r(2, 4), r(4, 3), r(4, 4), r(4), r(4)]]),
    # batch normalisation through a per-channel scale and shift
    Row("batch_norm_eval_affine", lambda m, x, rm, rv, w, b: _bn(m, x, rm, rv, w, b),
        [[r(3, 4, 5, 2), r(4, grad=False), r(4, positive=True, grad=False), r(4), r(4)]]),
    Row("batch_norm_eval_plain", lambda m, x, rm, rv: _bn(m, x, rm, rv),
        [[r(3, 4, 5), r(4, grad=False), r(4, positive=True, grad=False)]]),
    Row("batch_norm_eval_nc", lambda m, x, rm, rv, w: _bn(m, x, rm, rv, w),
        [[r(2, 3, 4, 4, nc=True), r(3, grad=False), r(3, positive=True, grad=False), r(3)]]),
    Row("batch_norm_train_affine", lambda m, x, w, b: _bn(m, x, None, None, w, b, True),
        [[r(4, 3, 3, 2), r(3), r(3)]]),
    Row("batch_norm_train_plain", lambda m, x: _bn(m, x, None, None, training=True), [[r(5, 3, 4)]]),
    # F.linear_cross_entropy, on its reference path and chunked
    Row("linear_cross_entropy", _lce(), [[r(7, 3), r(5, 3), I([0, 4, 2, 1, 1, 3, 4])]]),
    Row("linear_cross_entropy_kdim", _lce(), [[r(2, 3), r(5, 2, 3), I([[0, 4], [2, 1]])]]),
    Row("linear_cross_entropy_chunked_mean", _lce(2), [[r(7, 3), r(5, 3), _IDX, r(5), _CW]], gradgrad=False),
    Row("linear_cross_entropy_smooth_probs", _lce(label_smoothing=0.1), [[r(7, 3), r(5, 3), _probs(7, 5), r(5), _CW]]),
    Row("linear_cross_entropy_smooth_none", _lce(reduction="none", label_smoothing=0.2),
        [[r(7, 3), r(5, 3), _IDX, r(5), _CW]]),
    Row("linear_cross_entropy_chunked_sum", _lce(3, reduction="sum"), [[r(7, 3), r(5, 3), _IDX, r(5)]],
        gradgrad=False),
    Row("linear_cross_entropy_chunked_none", _lce(2, reduction="none"), [[r(7, 3), r(5, 3), _IDX, r(5), _CW]],
        gradgrad=False),
    Row("linear_cross_entropy_chunked_nobias", _lce(4), [[r(7, 3), r(5, 3), _IDX]], gradgrad=False),
    Row("binary_cross_entropy", lambda m, p, t: m.nn.functional.binary_cross_entropy(p, t),
        [[F(_P), F(_Q)], [F(_P), F(_Q, grad=False)]]),
    Row("binary_cross_entropy none", lambda m, p, t: m.nn.functional.binary_cross_entropy(p, t, reduction="none"),
        [[F(_P), F(_Q)]]),
]
