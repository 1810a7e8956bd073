"""The fused recurrent layers: one LSTM, GRU or Elman RNN layer in one direction over a whole sequence,
each one op whose kernels live in ``ember.kernels.rnn``: the input projection of all time steps in one GEMM,
then one recurrent GEMM plus the gate arithmetic per step; the backward through time collects the gate
gradients of every step, which leaves the weight and input gradients to one GEMM each and the bias
gradients to one sum.

The Modules (``ember.nn.LSTM`` and friends) apply these per layer and direction.  The cells
(``LSTMCell`` ...) are composed of ember ops and need no op of their own.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import dtypes
from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from ..dispatch import apply
from ..registry import export
from ..tensor import Tensor, _wrap
from .creation import from_numpy, zeros
from .nn import CompileCapture, _kernel_grads, dropout
from .shape import cat, stack


def _no_double_backward(name):
    if STATE.enabled:
        raise RuntimeError(f"{name}: double backward through a fused recurrent layer is not supported; use the "
                           f"cells (RNNCell, LSTMCell, GRUCell) in a loop for higher-order gradients")


# the biases' positions among a layer's inputs: kept, but no formula reads them, and PyTorch's nodes do not save them
# (an in-place change of a bias after the forward leaves the backward as it is)
_BIASES = (3, 4)


def _wrap_all(dev, *arrays):
    return tuple(None if a is None else _wrap(a, dev) for a in arrays)


def _lstm_grads(grads, bias, proj):
    """The gradients of an LSTM layer's tensor inputs ``x, w_ih, w_hh, (b_ih, b_hh), h0, c0, (w_hr)`` from the
    ``lstm_backward`` kernel's ``(dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0, dw_hr)``."""
    dx, dw_ih, dw_hh, db_ih, db_hh, dh0, dc0, dw_hr = grads
    return [dx, dw_ih, dw_hh] + ([db_ih, db_hh] if bias else []) + [dh0, dc0] + ([dw_hr] if proj else [])


class LSTMLayer(Op):
    """One LSTM layer in one direction over a whole sequence, its input projection included."""

    save_inputs = True
    backward_name = "LstmBackward0"
    keeps = False  # (LSTMLayerKept: a token after the layer's own tensors)

    @staticmethod
    def forward(ctx, k, x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse):
        out, h, c, ctx.cache = k["lstm_forward"](x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse)
        ctx.mask, ctx.reverse, ctx.bias, ctx.proj = mask, reverse, b_ih is not None, w_hr is not None
        return out, h, c

    @staticmethod
    def backward(ctx, dout, dh, dc):
        # (ember.compile's capture of a training step, whose layers keep their caches: one op, never differentiated)
        recorded = ctx.keeps and _kernel_grads()
        if not recorded:
            _no_double_backward("LSTM")
        ctx._check_released()  # (a second backward: PyTorch's error, before the saved values are read)
        # (PyTorch's CPU LSTM keeps the biases where it runs as its oneDNN layer, below double precision)
        double = not ctx._packed and ctx._saved[0].dtype is dtypes.float64
        saved = ctx.inputs_except(_BIASES if ctx.bias and double else ())  # x, w_ih, w_hh, (b_ih, b_hh), h0, c0, (w_hr)
        x, w_ih, w_hh = saved[:3]
        first_state = 5 if ctx.bias else 3
        w_hr = saved[first_state + 2] if ctx.proj else None
        needs = tuple(ctx.next_functions[i][0] is not None for i in (0, first_state, first_state + 1))
        tail = (None,) if ctx.keeps else ()
        if recorded:
            b_ih, b_hh = saved[3:5] if ctx.bias else (None, None)
            made = iter(apply(LSTMLayerGrad, dout, dh, dc, saved[-1], x, w_ih, w_hh, b_ih, b_hh,
                              saved[first_state], saved[first_state + 1], w_hr, ctx.mask, ctx.reverse, needs))
            slots = _lstm_grads((needs[0], 1, 1, 1, 1, needs[1], needs[2], 1), ctx.bias, ctx.proj)
            return tuple(next(made) if wanted else None for wanted in slots) + tail
        grads = dout._dev.kernels["lstm_backward"](
            dout._data, dh._data, dc._data, ctx.cache, x._data, w_ih._data, w_hh._data,
            None if w_hr is None else w_hr._data, ctx.mask, ctx.reverse, needs)
        return _wrap_all(dout._dev, *_lstm_grads(grads, ctx.bias, ctx.proj)) + tail


_KEPT: dict = {}
"""``id(token) -> (weak reference to token, cache)``: the caches of the LSTM layers of compiled training calls'
forwards (:class:`LSTMLayerKept`), each for as long as its token array lives (the compiled call keeps it for its
backward)."""


class LSTMLayerKept(LSTMLayer):
    """:class:`LSTMLayer` as ``ember.compile`` captures it: it also takes a token, a fresh empty array of each call
    (``x[:0]``), and keeps its cache under it in :data:`_KEPT`, where the compiled backward's
    :class:`LSTMLayerGrad`, given the same token, reads it instead of running the forward kernel again."""

    keeps = True

    @staticmethod
    def forward(ctx, k, x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, token, mask, reverse):
        out = LSTMLayer.forward(ctx, k, x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse)
        key = id(token)
        try:
            _KEPT[key] = (weakref.ref(token, lambda _, key=key: _KEPT.pop(key, None)), ctx.cache)
        except TypeError:  # (an array type without weak references: the backward runs the forward kernel again)
            pass
        return out


class LSTMLayerGrad(Op):
    """:class:`LSTMLayer`'s gradients by its kernels, for a backward that is recorded but never differentiated
    (``ember.compile``'s capture of a training step, see ``ops.nn._kernel_grads``): the backward kernel on the
    cache that the forward kept under ``token`` (:class:`LSTMLayerKept`), or else on the forward kernel's cache
    run again (the same kernel on the same values); the gradients of the layer's tensor inputs that ``needs``
    (x, h0, c0) and the weights ask for, in order."""

    backward_name = "LstmBackwardBackward0"
    fresh_outputs = True  # (the backward kernel's gradients are arrays of their own, never views of its inputs)

    @staticmethod
    def forward(ctx, k, dout, dh, dc, token, x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse, needs):
        kept = None if token is None else _KEPT.get(id(token))
        if kept is not None and kept[0]() is token:
            cache = kept[1]
        else:
            cache = k["lstm_forward"](x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse)[3]
        grads = k["lstm_backward"](dout, dh, dc, cache, x, w_ih, w_hh, w_hr, mask, reverse, needs)
        return tuple(g for g in _lstm_grads(grads, b_ih is not None, w_hr is not None) if g is not None)


class GRULayer(Op):
    """One GRU layer in one direction over a whole sequence, its input projection included."""

    save_inputs = True
    backward_name = "GruBackward0"
    once_differentiable = True  # (its backward is a kernel: ember.compile replays this op through dispatch)

    @staticmethod
    def forward(ctx, k, x, w_ih, w_hh, b_ih, b_hh, h0, mask, reverse):
        out, h, ctx.cache = k["gru_forward"](x, w_ih, w_hh, b_ih, b_hh, h0, mask, reverse)
        ctx.mask, ctx.reverse, ctx.bias = mask, reverse, b_ih is not None
        return out, h

    @staticmethod
    def backward(ctx, dout, dh):
        _no_double_backward("GRU")
        x, w_ih, w_hh = ctx.inputs_except(_BIASES if ctx.bias else ())[:3]
        r = dout._dev.kernels["gru_backward"](dout._data, dh._data, ctx.cache, x._data, w_ih._data, w_hh._data,
                                              ctx.mask, ctx.reverse, _needs(ctx))
        return _wrap_all(dout._dev, *_present(r, ctx.bias))


class RNNLayer(Op):
    """One Elman RNN layer (tanh or relu) in one direction over a whole sequence, its input projection
    included."""

    save_inputs = True
    backward_name = "RnnBackward0"
    once_differentiable = True  # (its backward is a kernel: ember.compile replays this op through dispatch)

    @staticmethod
    def forward(ctx, k, x, w_ih, w_hh, b_ih, b_hh, h0, relu, mask, reverse):
        out, h, ctx.cache = k["rnn_forward"](x, w_ih, w_hh, b_ih, b_hh, h0, relu, mask, reverse)
        ctx.relu, ctx.mask, ctx.reverse, ctx.bias = relu, mask, reverse, b_ih is not None
        return out, h

    @staticmethod
    def backward(ctx, dout, dh):
        _no_double_backward("RNN")
        x, w_ih, w_hh = ctx.inputs_except(_BIASES if ctx.bias else ())[:3]
        r = dout._dev.kernels["rnn_backward"](dout._data, dh._data, ctx.cache, x._data, w_ih._data, w_hh._data,
                                              ctx.relu, ctx.mask, ctx.reverse, _needs(ctx))
        return _wrap_all(dout._dev, *_present(r, ctx.bias))


def _needs(ctx):
    """Whether ``x`` and ``h0`` (inputs 0 and 3 or, with biases, 5) want gradients."""
    return ctx.next_functions[0][0] is not None, ctx.next_functions[5 if ctx.bias else 3][0] is not None


def _present(grads, bias):
    """``(dx, dw_ih, dw_hh, db_ih, db_hh, dh0)`` less the biases' where the layer has none."""
    return grads if bias else grads[:3] + grads[5:]


# --------------------------------------------------------------------------- one direction of one layer
def run_direction(mode: str, x, h0, c0, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, mask=None, reverse=False):
    """One layer of ``mode`` ("LSTM", "GRU", "RNN_TANH", "RNN_RELU") over time-major ``x`` ``(T, B, in)`` in
    one direction, one fused op (input projection and time loop); ``(out, h, c)``
    (``c`` None but for LSTM).  ``mask`` ``(T, B, 1)`` (an array) marks the steps of packed sequences."""
    if mode == "LSTM":
        if CompileCapture.native and STATE.enabled:  # (ember.compile's training capture: the cache kept for backward)
            return apply(LSTMLayerKept, x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, x[:0], mask, reverse)
        return apply(LSTMLayer, x, w_ih, w_hh, b_ih, b_hh, h0, c0, w_hr, mask, reverse)
    if mode == "GRU":
        out, h = apply(GRULayer, x, w_ih, w_hh, b_ih, b_hh, h0, mask, reverse)
    else:
        out, h = apply(RNNLayer, x, w_ih, w_hh, b_ih, b_hh, h0, mode == "RNN_RELU", mask, reverse)
    return out, h, None


# --------------------------------------------------------------------------- packed sequences
def packed_layout(batch_sizes, name="packed sequence"):
    """Where the rows of packed sequences sit in their padded time-major batch ``(T, B, *)``: ``(T, B, t_idx,
    b_idx, lengths)`` from ``batch_sizes`` (how many sequences are still running at each step, longest first;
    host integers, as PyTorch keeps them): the time and batch index of each packed row (NumPy) and each
    sequence's length."""
    if isinstance(batch_sizes, Tensor):
        if batch_sizes.dtype is not dtypes.int64:
            raise RuntimeError(f"{name}: expected batch_sizes of scalar type Long but found {batch_sizes.dtype}")
        batch_sizes = batch_sizes.cpu().numpy()
    bs = np.asarray(batch_sizes, dtype=np.int64).reshape(-1)
    if bs.size and (bs[-1] <= 0 or (np.diff(bs) > 0).any()):
        raise RuntimeError(f"{name}: batch_sizes must be positive and non-increasing (sequences sorted by "
                           f"decreasing length), got {bs.tolist()}")
    T, B = bs.size, int(bs[0]) if bs.size else 0
    t_idx = np.repeat(np.arange(T), bs)
    b_idx = np.arange(t_idx.size) - np.repeat(np.cumsum(bs) - bs, bs)
    lengths = (bs[None, :] > np.arange(B)[:, None]).sum(1)
    return T, B, t_idx, b_idx, lengths


def pad_packed(data, batch_sizes, name="packed sequence"):
    """Packed ``data`` ``(N, *)`` as a zero-padded time-major batch ``(T, B, *)``, with the step mask ``(T, B,
    1)`` (an array of ``data``'s dtype, 1 where a sequence runs) that the fused layers take, and the layout's
    index tensors ``(t_idx, b_idx)`` that :func:`unpad_packed` reads back with."""
    T, B, t_idx, b_idx, lengths = packed_layout(batch_sizes, name)
    if data.shape[0] != t_idx.size:
        raise RuntimeError(f"{name}: batch_sizes {np.asarray(batch_sizes).tolist()} sum to {t_idx.size} rows, but "
                           f"the data has {data.shape[0]} (shape {list(data.shape)})")
    idx = (from_numpy(t_idx).to(data.device), from_numpy(b_idx).to(data.device))
    x = zeros((T, B) + tuple(data.shape[1:]), dtype=data.dtype, device=data.device)
    x[idx] = data
    steps = from_numpy(np.arange(T)[:, None, None]).to(data.device)
    mask = (steps < from_numpy(lengths[None, :, None]).to(data.device)).to(data.dtype)
    return x, mask._data, idx


def unpad_packed(x, idx):
    """The packed rows of padded time-major ``x`` ``(T, B, *)`` at ``idx`` (from :func:`pad_packed`)."""
    return x[idx]


def _layers(mode, name, input, hx, params, has_biases, num_layers, dropout_p, train, bidirectional,  # noqa: A002
            batch_first, batch_sizes=None):
    mask = None
    if batch_sizes is not None:  # packed sequences: the padded batch, masked past each sequence's end
        x, mask, idx = pad_packed(input, batch_sizes, name)
    else:
        x = input.transpose(0, 1).contiguous() if batch_first else input  # (time-major copy, as PyTorch's)
    h0, c0 = (hx[0], hx[1]) if mode == "LSTM" else (hx, None)
    dirs = 2 if bidirectional else 1
    per = (4 if has_biases else 2)
    proj = mode == "LSTM" and len(params) == num_layers * dirs * (per + 1)
    per += int(proj)
    if len(params) != num_layers * dirs * per:
        raise RuntimeError(f"{name}: expected {num_layers * dirs * per} weights for num_layers={num_layers}, "
                           f"bidirectional={bidirectional} and has_biases={has_biases}, got {len(params)}")
    hs, cs = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            i = layer * dirs + d
            w = list(params[i * per:(i + 1) * per])
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[-1] if proj else None
            out, h, c = run_direction(mode, x, h0[i], None if c0 is None else c0[i], w_ih, w_hh, b_ih, b_hh, w_hr,
                                      mask, bool(d))
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = outs[0] if dirs == 1 else cat(outs, outs[0].dim() - 1)  # (the last dim, counted as PyTorch's kernel does)
        if dropout_p > 0 and train and layer < num_layers - 1:
            x = dropout(x, dropout_p, True)
    if batch_sizes is not None:
        out = unpad_packed(x, idx)
    else:
        out = x.transpose(0, 1) if batch_first else x
    return out, stack(hs, 0), (stack(cs, 0) if mode == "LSTM" else None)


_PADDED = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional", "batch_first")
_PACKED = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional")


def _overload(name, args, kwargs):
    """The arguments of PyTorch's two overloads by name: padded ``(input, hx, params, has_biases, ...,
    batch_first)`` or packed ``(data, batch_sizes, hx, params, has_biases, ..., bidirectional)``, told apart as
    PyTorch's binding does: the packed form has the weight list fourth, where the padded one has a flag."""
    packed = "data" in kwargs or "batch_sizes" in kwargs or (len(args) > 3 and isinstance(args[3], (list, tuple)))
    names = _PACKED if packed else _PADDED
    if len(args) > len(names):
        raise TypeError(f"{name}() takes {len(names)} positional arguments but {len(args)} were given")
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise TypeError(f"{name}() got an unexpected or repeated keyword argument '{k}'")
        bound[k] = v
    missing = [n for n in names if n not in bound]
    if missing:
        raise TypeError(f"{name}() missing required arguments: {', '.join(missing)}")
    if packed:
        bound["input"] = bound.pop("data")
        bound["batch_first"] = False
    else:
        bound["batch_sizes"] = None
    return bound


def _run(mode, name, args, kwargs):
    b = _overload(name, args, kwargs)
    return _layers(mode, name, b["input"], b["hx"], b["params"], b["has_biases"], b["num_layers"], b["dropout"],
                   b["train"], b["bidirectional"], b["batch_first"], b["batch_sizes"])


@export(to=("torch",))
def lstm(*args, **kwargs):
    """``torch.lstm``: a multi-layer LSTM from a flat list of weights (per layer and direction: ``w_ih``,
    ``w_hh``, then ``b_ih``, ``b_hh`` with biases, then ``w_hr`` with projections); ``(output, h_n, c_n)``.

    Padded: ``lstm(input, (h0, c0), params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)``.  Packed sequences: ``lstm(data, batch_sizes, (h0, c0), params, has_biases, num_layers,
    dropout, train, bidirectional)`` with ``data`` and ``batch_sizes`` those of a ``PackedSequence`` (the
    output is packed the same way; ``h0``/``c0`` follow the sorted order).

    >>> w = [ember.randn(8, 3), ember.randn(8, 2)]
    >>> h = ember.zeros(1, 2, 2)
    >>> [tuple(t.shape) for t in ember.lstm(ember.randn(3, 3), ember.tensor([2, 1]), (h, h), w, False, 1, 0.0,
    ...                                      False, False)]
    [(3, 2), (1, 2, 2), (1, 2, 2)]
    """
    return _run("LSTM", "lstm", args, kwargs)


def _single_state(mode, name):
    def fn(*args, **kwargs):
        out, h, _ = _run(mode, name, args, kwargs)
        return out, h

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``torch.{name}``: as :func:`lstm` with one hidden state, padded ``(input, hx, params, "
                  f"has_biases, num_layers, dropout, train, bidirectional, batch_first)`` or packed ``(data, "
                  f"batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``; "
                  f"``(output, h_n)``.")
    return export(fn, to=("torch",))


gru = _single_state("GRU", "gru")
rnn_tanh = _single_state("RNN_TANH", "rnn_tanh")
rnn_relu = _single_state("RNN_RELU", "rnn_relu")


# --------------------------------------------------------------------------- cells (composed of ops)
def _gates(op, input, h, w_ih, w_hh, b_ih, b_hh):
    # PyTorch's argument check of the cells: every argument a Tensor (the biases may be None)
    for pos, (name, v) in enumerate((("input", input), ("hx", h), ("w_ih", w_ih), ("w_hh", w_hh), ("b_ih", b_ih),
                                     ("b_hh", b_hh)), 1):
        if not isinstance(v, Tensor) and (v is not None or pos < 5):
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(v).__name__}")
    gi = input.matmul(w_ih.t())
    gh = h.matmul(w_hh.t())
    if b_ih is not None:
        gi = gi + b_ih
    if b_hh is not None:
        gh = gh + b_hh
    return gi, gh


@export(to=("torch",))
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One LSTM step: ``hx = (h, c)``; returns ``(h', c')`` (gates i, f, g, o)."""
    h, c = hx
    gi, gh = _gates("lstm_cell", input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, -1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


@export(to=("torch",))
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One GRU step (gates r, z, n); returns ``h'``."""
    gi, gh = _gates("gru_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    ir, iz, in_ = gi.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (1 - z) * n + z * hx


@export(to=("torch",))
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One Elman step ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    gi, gh = _gates("rnn_tanh_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


@export(to=("torch",))
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):  # noqa: A002
    """One Elman step with relu."""
    gi, gh = _gates("rnn_relu_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()
