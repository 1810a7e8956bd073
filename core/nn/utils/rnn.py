"""Packed sequences: batches of sequences of different lengths for the recurrent layers.

A :class:`PackedSequence` holds the time-major concatenation of the valid
steps of every sequence (longest first), as PyTorch lays it out, so
``packed.data`` and ``packed.batch_sizes`` equal PyTorch's.

>>> import ember
>>> from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
>>> x = ember.tensor([[1, 2, 3], [4, 5, 0]])
>>> p = pack_padded_sequence(x, [3, 2], batch_first=True)
>>> p.data, p.batch_sizes
(tensor([1, 4, 2, 5, 3]), tensor([2, 2, 1]))
>>> pad_packed_sequence(p, batch_first=True)[0]
tensor([[1, 2, 3],
        [4, 5, 0]])
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ... import dtypes
from ...ops.creation import from_numpy, full
from ...ops.nn_recurrent import packed_layout
from ...ops.shape import cat
from ...state import ONNX_EXPORTING
from ...tensor import Tensor


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Packed steps of a batch of sequences (see the module doc)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        idx = {k: (None if v is None else v.to(data.device)) for k, v in
               (("sorted_indices", self.sorted_indices), ("unsorted_indices", self.unsorted_indices))}
        return type(self)(data, self.batch_sizes, idx["sorted_indices"], idx["unsorted_indices"])

    def cpu(self):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self.to("cuda")

    def float(self):
        return self.to(dtypes.float32)

    def double(self):
        return self.to(dtypes.float64)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def _invert(perm):
    arr = np.empty(len(perm), dtype=np.int64)
    arr[perm.cpu().numpy()] = np.arange(len(perm))
    return from_numpy(arr).to(perm.device)


def _lengths_array(lengths, batch, op):
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"{op}: lengths must be a 1D tensor, got {lengths.dim()}D")
        arr = np.asarray(lengths.cpu().numpy(), dtype=np.int64)
    else:
        arr = np.asarray(list(lengths), dtype=np.int64)
    if arr.shape[0] != batch:
        raise RuntimeError(f"{op}: expected {batch} lengths (one per sequence in the batch), got {arr.shape[0]}")
    return arr


def _layout(lengths):
    """Time and batch indices of every packed element, in packed order, and batch_sizes."""
    T = int(lengths.max()) if lengths.size else 0
    batch_sizes = np.array([(lengths > t).sum() for t in range(T)], dtype=np.int64)
    t_idx = np.repeat(np.arange(T), batch_sizes)
    b_idx = np.concatenate([np.arange(n) for n in batch_sizes]) if T else np.zeros(0, np.int64)
    return T, batch_sizes, t_idx, b_idx


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """Pack a padded batch (``T x B x *``, or ``B x T x *`` with ``batch_first``) given each sequence's length."""
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    arr = _lengths_array(lengths, B, "pack_padded_sequence")
    if (arr <= 0).any():
        raise RuntimeError(f"pack_padded_sequence: all lengths must be positive, got {arr.tolist()} "
                           f"(sequences of length 0 cannot be packed)")
    if arr.max() > T:
        raise RuntimeError(f"pack_padded_sequence: a length ({int(arr.max())}) is longer than the padded sequence "
                           f"(size {T} along the time dimension)")
    unsorted = bool((np.diff(arr) > 0).any())
    # an export traces a dynamic batch once more with its first sequence repeated last, so unsorted: the
    # exported graph does not depend on the order (see below), and the lengths are sorted as without
    # enforce_sorted in every trace (so that the traces record the same ops)
    exporting = ONNX_EXPORTING[0]
    if enforce_sorted and unsorted and not exporting:
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                           "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if enforce_sorted and not exporting:
        sorted_idx = None
        order = np.arange(B)
    else:
        order = np.argsort(-arr, kind="stable")
        sorted_idx = from_numpy(order.astype(np.int64)).to(input.device)
    _, batch_sizes, t_idx, b_idx = _layout(arr[order])
    tt = from_numpy(t_idx).to(input.device)
    bb = from_numpy(order[b_idx]).to(input.device)
    data = input[tt, bb]
    packed = PackedSequence(data, from_numpy(batch_sizes), sorted_idx,
                            None if sorted_idx is None else _invert(sorted_idx))
    if exporting:
        # an exported graph follows the lengths (a graph input), not the layout packed here: the recurrent
        # layers read the padded batch and a step mask made from the lengths by ops (ONNX's sequence_lens)
        lengths_t = lengths if isinstance(lengths, Tensor) else from_numpy(arr)
        packed._padded = (input, lengths_t.to(input.device), None)
    return packed


def _packed_layout(sequence):
    T, B, t_idx, b_idx, lengths_sorted = packed_layout(sequence.batch_sizes)
    order = sequence.sorted_indices.cpu().numpy() if sequence.sorted_indices is not None else np.arange(B)
    return T, B, t_idx, b_idx, order, lengths_sorted


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo :func:`pack_padded_sequence`: the padded batch and each sequence's length (in the original order)."""
    T, B, t_idx, b_idx, order, lengths_sorted = _packed_layout(sequence)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {T}")
        T = total_length
    padded = getattr(sequence, "_padded", None)
    if padded is not None:
        return _pad_exported(padded, T, batch_first, padding_value)
    data = sequence.data
    out = full((T, B) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    tt = from_numpy(t_idx).to(data.device)
    bb = from_numpy(order[b_idx]).to(data.device)
    out[tt, bb] = data
    lengths = np.empty(B, dtype=np.int64)
    lengths[order] = lengths_sorted
    if batch_first:
        out = out.transpose(0, 1)
    return out, from_numpy(lengths)


def _pad_exported(padded, T, batch_first, padding_value):
    """:func:`pad_packed_sequence` of a recurrent layer's padded output during an export (see
    :func:`pack_padded_sequence`): the padded steps get ``padding_value``, the time axis ``T`` steps."""
    out, lengths, mask = padded
    if padding_value != 0:
        out = out.masked_fill(mask == 0, padding_value)
    if T < out.shape[0]:
        out = out[:T]
    elif T > out.shape[0]:
        extra = full((T - out.shape[0],) + tuple(out.shape[1:]), padding_value, dtype=out.dtype, device=out.device)
        out = cat([out, extra], 0)
    if batch_first:
        out = out.transpose(0, 1)
    return out, lengths.to(dtypes.int64)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of different lengths into one padded tensor (``T x B x *`` or ``B x T x *``)."""
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    T = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: all sequences must have the same trailing shape {list(trailing)}, "
                               f"got {list(s.shape[1:])}")
    out = full((len(sequences), T) + trailing, padding_value, dtype=sequences[0].dtype,
                     device=sequences[0].device)
    for i, s in enumerate(sequences):
        n = s.shape[0]
        if padding_side == "right":
            out[i, :n] = s
        else:
            out[i, T - n:] = s
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded sequences of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    arr = _lengths_array(lengths, padded_sequences.shape[0], "unpad_sequence")
    return [padded_sequences[i, :int(n)] for i, n in enumerate(arr)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences of different lengths."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences in a PackedSequence (original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def invert_permutation(permutation):
    return None if permutation is None else _invert(permutation)
