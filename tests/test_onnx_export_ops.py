"""ember.onnx.export of roll, advanced and boolean-mask indexing, max pooling indices, packed sequences and
LSTM projections: each file passes onnx.checker and onnxruntime reproduces ember at two batch sizes."""
import io

import numpy as np
import pytest
from export_models import Fn
from export_models import to_np as _np

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _flat(out):
    if isinstance(out, ember.Tensor):
        return [out]
    return [t for o in out for t in _flat(o)]


def _export(model, inputs, names, dynamic):
    buf = io.BytesIO()
    ember.onnx.export(model, inputs, buf, input_names=names, dynamic_axes=dynamic)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto)
    return proto, ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])


def _matches(sess, model, inputs, names):
    got = sess.run(None, {n: _np(t) for n, t in zip(names, inputs)})
    with ember.no_grad():
        want = _flat(model(*inputs))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape) and g.dtype == _np(w).dtype
        np.testing.assert_allclose(g, _np(w), rtol=1e-4, atol=1e-5)


def _two_batches(model, make, names, batch_inputs=(0,)):
    """Export at batch 3 with a dynamic batch axis on ``batch_inputs``, run at batches 3 and 5."""
    model = model.eval()
    dynamic = {names[i]: {0: "batch"} for i in batch_inputs}
    proto, sess = _export(model, make(3), names, dynamic)
    for i in batch_inputs:
        assert proto.graph.input[i].type.tensor_type.shape.dim[0].dim_param == "batch"
    for batch in (3, 5):
        _matches(sess, model, make(batch), names)
    return proto


def _ops(proto):
    return {n.op_type for n in proto.graph.node}


# ---------------------------------------------------------------------------- roll
ROLLS = {
    "one_dim": lambda x: x.roll(2, 1),
    "negative": lambda x: x.roll(-3, 2),
    "several_dims": lambda x: x.roll((1, -2), (0, 2)),
    "shift_past_size": lambda x: x.roll((7, -9), (1, 2)),
    "flattened": lambda x: x.roll(-5),
}


@pytest.mark.parametrize("name", sorted(ROLLS))
def test_roll(device, name):
    proto = _two_batches(Fn(ROLLS[name]), lambda b: (ember.randn(b, 3, 4, device=device),), ["x"])
    assert "Concat" in _ops(proto)


# ---------------------------------------------------------------------------- indexing
def _assign_mask(x):
    y = x.clone()
    y[y > 0.5] = -1.0
    return y


def _assign_rows(x, rows):
    y = x.clone()
    y[rows] = ember.arange(4.0, device=x.device)  # one row for every selected one
    return y


def _assign_pairs(x, i, j):
    y = x * 2
    y[i, j] = ember.tensor([10.0, 20.0, 30.0], device=x.device)
    y[:, j] = 0.5
    return y


def _ints(values, device):
    return ember.tensor(values, device=device)


INDEXING = {
    # name: (fn, make(batch, device) -> inputs, input names, inputs with a batch axis)
    "mask_of_values": (lambda x: x[x > 0] * 2,
                       lambda b, d: (ember.randn(b, 4, device=d),), ["x"], (0,)),
    "mask_input_on_columns": (lambda x, m: x[:, m],
                              lambda b, d: (ember.randn(b, 5, device=d),
                                            ember.tensor([True, False, True, True, False], device=d)),
                              ["x", "m"], (0,)),
    "mask_input_on_rows": (lambda x, m: x[m].sum(0),
                           lambda b, d: (ember.randn(b, 4, device=d), ember.arange(b, device=d) % 2 == 0),
                           ["x", "m"], (0, 1)),
    "mask_assign_scalar": (_assign_mask, lambda b, d: (ember.randn(b, 4, device=d),), ["x"], (0,)),
    "mask_assign_rows": (_assign_rows,
                         lambda b, d: (ember.randn(b, 4, device=d), ember.arange(b, device=d) % 2 == 1),
                         ["x", "rows"], (0, 1)),
    "one_index": (lambda x, i: x[i],
                  lambda b, d: (ember.randn(b, 4, device=d), _ints([0, -1, 1, -2], d)), ["x", "i"], (0,)),
    "columns": (lambda x, j: x[:, j],
                lambda b, d: (ember.randn(b, 4, device=d), _ints([3, -1, 0], d)), ["x", "j"], (0,)),
    "two_indices": (lambda x, i, j: x[i, j],
                    lambda b, d: (ember.randn(b, 4, device=d), _ints([0, -1, 1], d), _ints([2, -4, 3], d)),
                    ["x", "i", "j"], (0,)),
    "adjacent_broadcast": (lambda x, i, j: x[:, i, j],
                           lambda b, d: (ember.randn(b, 3, 4, device=d), _ints([[0, -1], [2, 1]], d),
                                         _ints([-1, 2], d)),
                           ["x", "i", "j"], (0,)),
    "separated": (lambda x, i, j: x[i, :, j],
                  lambda b, d: (ember.randn(b, 3, 4, device=d), _ints([1, -1], d), _ints([0, -2], d)),
                  ["x", "i", "j"], (0,)),
    "assign_pairs": (_assign_pairs,
                     lambda b, d: (ember.randn(b, 4, device=d), _ints([0, -1, 1], d), _ints([2, -4, 3], d)),
                     ["x", "i", "j"], (0,)),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing(device, name):
    fn, make, names, batch_inputs = INDEXING[name]
    _two_batches(Fn(fn), lambda b: make(b, device), names, batch_inputs)


def test_mask_indexing_exports_nonzero_and_leaves_output_sizes_open(device):
    proto = _two_batches(Fn(lambda x: x[x > 0]), lambda b: (ember.randn(b, 4, device=device),), ["x"])
    assert {"NonZero", "GatherND"} <= _ops(proto)
    assert all(d.dim_param for d in proto.graph.output[0].type.tensor_type.shape.dim)


def test_mask_assignment_is_a_where(device):
    proto = _two_batches(Fn(_assign_mask), lambda b: (ember.randn(b, 4, device=device),), ["x"])
    assert "Where" in _ops(proto) and "ScatterND" not in _ops(proto)


# ---------------------------------------------------------------------------- max pooling with indices
class PoolUnpool(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2)

    def forward(self, x):
        y, idx = self.pool(x)
        return self.unpool(y, idx), idx


POOLS = {
    "max_pool1d": (Fn(lambda x: F.max_pool1d(x, 3, 2, return_indices=True)), (3, 11)),
    "max_pool2d": (Fn(lambda x: F.max_pool2d(x, 2, return_indices=True)), (3, 6, 6)),
    "max_pool2d_padded": (Fn(lambda x: F.max_pool2d(x, 3, 2, padding=1, return_indices=True)), (2, 7, 5)),
    "max_pool2d_ceil_dilated": (Fn(lambda x: F.max_pool2d(x, 2, 2, dilation=2, ceil_mode=True,
                                                          return_indices=True)), (2, 7, 7)),
    "unpool": (PoolUnpool(), (3, 6, 4)),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_max_pool_indices(device, name):
    model, shape = POOLS[name]
    proto = _two_batches(model.to(device), lambda b: (ember.randn(b, *shape, device=device),), ["x"])
    assert "MaxPool" in _ops(proto)


# ---------------------------------------------------------------------------- packed sequences
class Packed(nn.Module):
    """A recurrent encoder of a padded batch and its lengths, as real models write it."""

    def __init__(self, rnn, batch_first=True):
        super().__init__()
        self.rnn = rnn
        self.batch_first = batch_first

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=self.batch_first, enforce_sorted=False)
        out, state = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=self.batch_first)
        return out, state


RNNS = {
    "lstm": lambda: nn.LSTM(3, 5, batch_first=True),
    "gru": lambda: nn.GRU(3, 5, batch_first=True),
    "rnn": lambda: nn.RNN(3, 5, batch_first=True, nonlinearity="relu"),
    "bilstm_two_layers": lambda: nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True),
    "bigru": lambda: nn.GRU(3, 4, batch_first=True, bidirectional=True),
    "lstm_proj": lambda: nn.LSTM(3, 6, batch_first=True, proj_size=2, bidirectional=True),
}
_LENGTHS = {3: [6, 2, 4], 5: [1, 6, 3, 6, 5]}


def _padded_batch(batch, device):
    return ember.randn(batch, 6, 3, device=device), ember.tensor(_LENGTHS[batch], device=device)


@pytest.mark.parametrize("name", sorted(RNNS))
def test_packed_sequences(device, name):
    ember.manual_seed(0)
    model = Packed(RNNS[name]()).to(device)
    proto = _two_batches(model, lambda b: _padded_batch(b, device), ["x", "lengths"], (0, 1))
    rnn = [n for n in proto.graph.node if n.op_type in ("LSTM", "GRU", "RNN", "Scan")]
    assert rnn and all(len(n.input) > 4 and n.input[4] for n in rnn if n.op_type != "Scan")


def test_packed_sequences_time_major_with_padding_value(device):
    class TimeMajor(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 4)

        def forward(self, x, lengths):
            out, h = self.rnn(pack_padded_sequence(x, lengths))
            return pad_packed_sequence(out, padding_value=-1.0)[0], h

    model = TimeMajor().to(device).eval()
    names = ["x", "lengths"]
    proto, sess = _export(model, (ember.randn(6, 3, 3, device=device), ember.tensor([6, 4, 2], device=device)), names,
                          {"x": {1: "batch"}, "lengths": {0: "batch"}})
    for lengths in ([6, 4, 2], [6, 6, 5, 3, 1]):
        x = ember.randn(6, len(lengths), 3, device=device)
        _matches(sess, model, (x, ember.tensor(lengths, device=device)), names)


# ---------------------------------------------------------------------------- LSTM projections
@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bidirectional": True}], ids=["one_layer", "bidirectional"])
def test_lstm_with_projection(device, kw):
    ember.manual_seed(0)
    model = nn.LSTM(4, 6, proj_size=3, batch_first=True, **kw).to(device)
    proto = _two_batches(model, lambda b: (ember.randn(b, 5, 4, device=device),), ["x"])
    assert "Scan" in _ops(proto) and "LSTM" not in _ops(proto)


def test_lstm_with_projection_and_initial_state_on_a_dynamic_time_axis(device):
    model = nn.LSTM(4, 6, proj_size=2).to(device).eval()
    h0, c0 = ember.randn(1, 2, 2, device=device), ember.randn(1, 2, 6, device=device)
    names = ["x", "h0", "c0"]
    _, sess = _export(model, (ember.randn(5, 2, 4, device=device), (h0, c0)), names, {"x": {0: "time"}})
    for steps in (5, 9):
        x = ember.randn(steps, 2, 4, device=device)
        got = sess.run(None, {"x": _np(x), "h0": _np(h0), "c0": _np(c0)})
        with ember.no_grad():
            want = _flat(model(x, (h0, c0)))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, _np(w), rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- writes through views
def _write_slice(x):
    y = x * 1
    y[0, :2] = 5.0  # a basic index: an in-place copy into a view of y
    y[:, -1] += 1.0
    return y


def _write_select_then_mask(x, m):
    y = x.clone()
    y[1, m] = 0.0  # PyTorch applies the integer first: a mask assignment into the view y[1]
    return y


def _write_aliases(x):
    y = x * 1
    row = y[1]
    tail = row[1:]
    y.add_(1.0)  # row and tail see it
    tail.mul_(2.0)  # y and row see it
    tail[0] = 7.0
    return y, row, tail


VIEW_WRITES = {
    "slice": (_write_slice, lambda b, d: (ember.randn(b, 3, device=d),), ["x"]),
    "select_then_mask": (_write_select_then_mask,
                         lambda b, d: (ember.randn(b, 4, device=d),
                                       ember.tensor([True, False, True, False], device=d)), ["x", "m"]),
    "aliases": (_write_aliases, lambda b, d: (ember.randn(b, 3, device=d),), ["x"]),
}


@pytest.mark.parametrize("name", sorted(VIEW_WRITES))
def test_writes_through_views_reach_the_tensor_they_view(device, name):
    fn, make, names = VIEW_WRITES[name]
    _two_batches(Fn(fn), lambda b: make(b, device), names)


def test_pack_sequence_of_a_list(device):
    class FromList(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 4)

        def forward(self, a, b):
            out, h = self.rnn(nn.utils.rnn.pack_sequence([a, b]))
            return pad_packed_sequence(out)[0], h

    model = FromList().to(device).eval()
    xs = (ember.randn(5, 3, device=device), ember.randn(3, 3, device=device))
    _, sess = _export(model, xs, ["a", "b"], None)
    _matches(sess, model, xs, ["a", "b"])


# ---------------------------------------------------------------------------- what still has no mapping
def test_an_op_with_no_mapping_names_op_and_module(device, tmp_path):
    model = Fn(lambda inner, x: inner(x), Fn(lambda x: x.cummax(1)[0] + 1)).to(device)
    path = tmp_path / "bad.onnx"
    with pytest.raises(ember.onnx.UnsupportedOperatorError, match=r"op 'CumExtreme'.*in module '0'"):
        ember.onnx.export(model, (ember.randn(3, 4, device=device),), path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- adaptive max pooling with indices
ADAPTIVE_POOLS = {
    # name: (model, input shape without the batch axis)
    "module_1d": (nn.AdaptiveMaxPool1d(4, return_indices=True), (3, 9)),
    "module_2d": (nn.AdaptiveMaxPool2d((3, 4), return_indices=True), (2, 7, 10)),
    "functional_2d": (Fn(lambda x: F.adaptive_max_pool2d(x, (4, 3), return_indices=True)), (3, 9, 5)),
    "functional_2d_divisor": (Fn(lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True)), (2, 6, 9)),
    "module_2d_one": (nn.AdaptiveMaxPool2d(1, return_indices=True), (3, 5, 4)),
    # ties: the first maximum in row-major order within each window, as PyTorch picks
    "ties": (Fn(lambda x: F.adaptive_max_pool2d(x.round(), (3, 2), return_indices=True)), (2, 5, 5)),
}


@pytest.mark.parametrize("name", sorted(ADAPTIVE_POOLS))
def test_adaptive_max_pool_values_and_indices(device, name):
    model, shape = ADAPTIVE_POOLS[name]
    proto = _two_batches(model.to(device), lambda b: (ember.randn(b, *shape, device=device),), ["x"])
    assert proto.graph.output[1].type.tensor_type.elem_type == onnx.TensorProto.INT64


def test_adaptive_max_pool_indices_feed_max_unpool(device):
    class Roundtrip(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = nn.AdaptiveMaxPool2d((2, 2), return_indices=True)
            self.unpool = nn.MaxUnpool2d(3)

        def forward(self, x):
            y, idx = self.pool(x)
            return self.unpool(y, idx, output_size=x.shape[-2:])

    _two_batches(Roundtrip().to(device), lambda b: (ember.randn(b, 2, 6, 6, device=device),), ["x"])


# ---------------------------------------------------------------------------- index assignment mixing slices
def _slice_and_index_tensor(x, i):
    y = x.clone()
    y[1:, i] = 0.0
    return y


def _slice_and_int(x, v):
    y = x * 1
    y[:, 2] = v
    y[1:, 0] = -v[1:]
    return y


def _stepped_slice_and_index_tensor(x, i, v):
    y = x + 0
    y[::2, i] = v  # v broadcasts over the selected rows
    y[:, 1:4][:, i[1:]] = 9.0  # into a view of y
    return y


SLICE_ASSIGNMENTS = {
    "slice_and_index_tensor": (_slice_and_index_tensor,
                               lambda b, d: (ember.randn(b, 4, device=d), _ints([0, -2], d)), ["x", "i"], (0,)),
    "slice_and_int": (_slice_and_int, lambda b, d: (ember.randn(b, 4, device=d), ember.randn(b, device=d)),
                      ["x", "v"], (0, 1)),
    "stepped_slice_and_index_tensor": (_stepped_slice_and_index_tensor,
                                       lambda b, d: (ember.randn(b, 5, device=d), _ints([3, 1], d),
                                                     ember.randn(2, device=d)), ["x", "i", "v"], (0,)),
}


@pytest.mark.parametrize("name", sorted(SLICE_ASSIGNMENTS))
def test_index_assignment_mixing_slices_and_indices(device, name):
    fn, make, names, batch_inputs = SLICE_ASSIGNMENTS[name]
    _two_batches(Fn(fn), lambda b: make(b, device), names, batch_inputs)


# ---------------------------------------------------------------------------- writes through a diagonal
def _diag_fill(x):
    y = x.clone()
    y.diagonal().fill_(0)
    return y


def _diag_copy(x, v):
    y = x * 1
    y.diagonal().copy_(v)
    return y


def _diag_mul(x):
    y = x * 1
    ember.diagonal(y, dim1=1, dim2=2).mul_(2)
    d = y.diagonal(offset=-1, dim1=2, dim2=1)
    d += 1.0
    return y, d


DIAGONAL_WRITES = {
    "fill": (_diag_fill, lambda b, d: (ember.randn(b, b, device=d),), ["x"], None),
    "copy": (_diag_copy, lambda b, d: (ember.randn(b, b, device=d), ember.randn(b, device=d)), ["x", "v"], None),
    "mul_batched_offset": (_diag_mul, lambda b, d: (ember.randn(b, 3, 4, device=d),), ["x"], (0,)),
    "read": (lambda x: x.diagonal(1, 0, 2) * 2, lambda b, d: (ember.randn(3, b, 5, device=d),), ["x"], None),
}


@pytest.mark.parametrize("name", sorted(DIAGONAL_WRITES))
def test_writes_through_a_diagonal(device, name):
    fn, make, names, batch_inputs = DIAGONAL_WRITES[name]
    model = Fn(fn).eval()
    if batch_inputs is not None:
        _two_batches(model, lambda b: make(b, device), names, batch_inputs)
        return
    for b in (3, 5):  # a square input's diagonal length follows its size: one export per size
        inputs = make(b, device)
        _, sess = _export(model, inputs, names, None)
        _matches(sess, model, inputs, names)
