"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells.

Per layer and direction the input projection of all time steps is one GEMM
(an ordinary differentiable ``matmul``); the time loop runs in one fused op
(:class:`ember.ops.nn_recurrent.LSTMLayer` and friends) whose kernels live in ``ember.kernels.rnn``:
one recurrent GEMM plus the gate arithmetic per step, and a backward through
time that leaves the weight gradients to one GEMM each.  Parameter names,
shapes and initialisation are PyTorch's, so state dicts load across.
"""
from __future__ import annotations

import math
import warnings

from ...autograd.grad_mode import no_grad
from ...ops.creation import arange, empty, from_numpy, zeros
from ...ops.nn import dropout
from ...ops.nn_recurrent import gru_cell, lstm_cell, pad_packed, rnn_relu_cell, rnn_tanh_cell, run_direction, \
    unpad_packed
from ...ops.shape import cat, stack
from ..parameter import Parameter
from ..utils.rnn import PackedSequence, _packed_layout
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """The shared machinery of :class:`RNN`, :class:`LSTM` and :class:`GRU`."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size}")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers}")
        if not 0 <= float(dropout) <= 1:
            raise ValueError(f"dropout should be a number in range [0, 1] representing the probability of an "
                             f"element being zeroed, got {dropout}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=3)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gates = _GATES[mode] * hidden_size
        real_h = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for d in range(2 if bidirectional else 1):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                in_size = input_size if layer == 0 else real_h * (2 if bidirectional else 1)
                params = [("weight_ih" + sfx, (gates, in_size)), ("weight_hh" + sfx, (gates, real_h))]
                if bias:
                    params += [("bias_ih" + sfx, (gates,)), ("bias_hh" + sfx, (gates,))]
                if proj_size > 0:
                    params.append(("weight_hr" + sfx, (proj_size, hidden_size)))
                for name, shape in params:
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialisation: every weight and bias uniform on +-1/sqrt(hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with no_grad():
            for name in self._flat_weights_names:
                getattr(self, name).uniform_(-stdv, stdv)

    def flatten_parameters(self) -> None:
        """PyTorch packs the weights into one cuDNN buffer here; ember's recurrent kernels read each weight where
        it is, so there is nothing to pack (as PyTorch on the CPU, where this does nothing either).

        >>> import ember
        >>> ember.nn.LSTM(2, 3).flatten_parameters()
        """

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in self._flat_weights_names if n.endswith(f"_l{layer}" + s)]
                for layer in range(self.num_layers) for s in (("", "_reverse") if self.bidirectional else ("",))]

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + self._changed(
            ("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0),
            ("bidirectional", False))

    # ------------------------------------------------------------------ forward
    def _check_input(self, x):
        name = type(self).__name__
        if x.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {x.dim()}D instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")
        if not x.is_floating_point():
            raise TypeError(f"{name}: expected a floating point input, got {x.dtype}")

    def _check_hidden(self, h, expected, what="hidden"):
        if tuple(h.shape) != tuple(expected):
            raise RuntimeError(f"{type(self).__name__}: Expected {what} size {tuple(expected)}, got {list(h.shape)}")

    def forward(self, input, hx=None):  # noqa: A002
        packed = isinstance(input, PackedSequence)
        mask = None
        exported = getattr(input, "_padded", None) if packed else None
        if exported is not None:  # an ONNX export: the padded batch in its own order, masked by its lengths
            x, mask_t = self._padded(exported)
            mask = mask_t._data
            B, unsort, packed, batched = x.shape[1], None, False, True
        elif packed:
            x, mask, rows = pad_packed(input.data, input.batch_sizes, type(self).__name__)
            B, unsort = x.shape[1], input.unsorted_indices
            batched = True
        else:
            self._check_input(input)
            batched = input.dim() == 3
            x = input if batched else input.unsqueeze(1)
            if batched and self.batch_first:
                x = x.transpose(0, 1).contiguous()  # (a time-major copy, as PyTorch's: the layers keep it)
            B = x.shape[1]
        D = 2 if self.bidirectional else 1
        real_h = self.proj_size if self.proj_size > 0 else self.hidden_size
        h_shape = (self.num_layers * D, B, real_h)
        c_shape = (self.num_layers * D, B, self.hidden_size)
        if hx is None:  # one zero state that every layer and direction reads (the kernels copy it in)
            zero_h = zeros(h_shape[1:], dtype=x.dtype, device=x.device)
            zero_c = zero_h if c_shape == h_shape else zeros(c_shape[1:], dtype=x.dtype, device=x.device)
            h0, c0 = [zero_h] * h_shape[0], ([zero_c] * c_shape[0] if self.mode == "LSTM" else None)
        else:
            if self.mode == "LSTM":
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise RuntimeError("LSTM: hx must be a tuple (h_0, c_0)")
                h0, c0 = hx
            else:
                h0, c0 = hx, None
            if not batched:
                if h0.dim() != 2:
                    raise RuntimeError(f"{type(self).__name__}: For unbatched 2-D input, hx should also be 2-D but "
                                       f"got {h0.dim()}-D tensor")
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if packed and input.sorted_indices is not None:
                h0 = h0.index_select(1, input.sorted_indices)
                c0 = c0.index_select(1, input.sorted_indices) if c0 is not None else None
            self._check_hidden(h0, h_shape)
            if c0 is not None:
                self._check_hidden(c0, c_shape, "cell")
        hs, cs = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(D):
                idx = layer * D + d
                out, h, c = self._run_direction(layer_in, layer, d, h0[idx], None if c0 is None else c0[idx], mask)
                outs.append(out)
                hs.append(h)
                cs.append(c)
            layer_in = outs[0] if D == 1 else _cat_last(outs)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_in = dropout(layer_in, self.dropout, True)
        h_n = stack(hs, 0)
        c_n = stack(cs, 0) if self.mode == "LSTM" else None
        output = layer_in
        if exported is not None:
            output = self._repack_exported(output, input, mask_t)
        elif packed:
            output = PackedSequence(unpad_packed(output, rows), input.batch_sizes, input.sorted_indices,
                                    input.unsorted_indices)
            if unsort is not None:
                h_n = h_n.index_select(1, unsort)
                c_n = c_n.index_select(1, unsort) if c_n is not None else None
        else:
            if not batched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return output, ((h_n, c_n) if self.mode == "LSTM" else h_n)

    def _run_direction(self, x, layer, d, h0, c0, mask):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        w = [getattr(self, n + sfx) for n in ("weight_ih", "weight_hh")]
        b = [getattr(self, n + sfx) for n in ("bias_ih", "bias_hh")] if self.bias else [None, None]
        w_hr = getattr(self, "weight_hr" + sfx) if self.proj_size > 0 else None
        return run_direction(self.mode, x, h0, c0, *w, *b, w_hr, mask, bool(d))

    @staticmethod
    def _padded(exported):
        """The padded time-major batch and its step mask ``(T, B, 1)``, computed from the lengths by ops."""
        x, lengths, _ = exported
        steps = arange(x.shape[0], device=x.device).unsqueeze(1)
        return x, (steps < lengths.unsqueeze(0)).to(x.dtype).unsqueeze(2)

    @staticmethod
    def _repack_exported(out, like, mask):
        T, B, t_idx, b_idx, order, _ = _packed_layout(like)
        data = out[from_numpy(t_idx).to(out.device), from_numpy(order[b_idx]).to(out.device)]
        packed = PackedSequence(data, like.batch_sizes, like.sorted_indices, like.unsorted_indices)
        packed._padded = (out, like._padded[1], mask)
        return packed


def _cat_last(outs):
    return cat(outs, outs[0].dim() - 1)  # (the last dim, counted as PyTorch's kernel does)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, device=device, dtype=dtype, **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o as in PyTorch), with optional projections (``proj_size``)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n as in PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


# --------------------------------------------------------------------------- cells (composed of ops: any order of
# gradient works)
class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        with no_grad():
            for p in self.parameters():
                p.uniform_(-stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prep(self, x, hx, n_states):
        name = type(self).__name__
        if x.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {x.dim()}D instead")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}: input has inconsistent input_size: got {x.shape[-1]} expected "
                               f"{self.input_size}")
        batched = x.dim() == 2
        if not batched:
            x = x.unsqueeze(0)

        if hx is None:
            hx = tuple(zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device) for _ in range(n_states))
        else:
            hx = hx if isinstance(hx, (tuple, list)) else (hx,)
            hx = tuple(h if batched else h.unsqueeze(0) for h in hx)
            for h in hx:
                if tuple(h.shape) != (x.shape[0], self.hidden_size):
                    raise RuntimeError(f"{name}: Expected hidden size {(x.shape[0], self.hidden_size)}, got "
                                       f"{list(h.shape)}")
        return x, hx, batched


class RNNCell(RNNCellBase):
    """One Elman RNN step."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, (h,), batched = self._prep(input, hx, 1)
        cell = rnn_relu_cell if self.nonlinearity == "relu" else rnn_tanh_cell
        out = cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; returns ``(h', c')``."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, (h, c), batched = self._prep(input, hx, 2)
        h2, c2 = lstm_cell(x, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h2, c2) if batched else (h2.squeeze(0), c2.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):  # noqa: A002
        x, (h,), batched = self._prep(input, hx, 1)
        out = gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)

