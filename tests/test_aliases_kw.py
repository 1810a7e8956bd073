"""Argument forms PyTorch accepts: every sequence type ``tensor``/``as_tensor`` read by PyTorch's sequence
protocol (with PyTorch's exceptions for the rest), and the NumPy-style keyword names its argument parser takes
(``axis``/``keepdims``/``x``/``x1``/``x2``) and the factories' ``size=``.  Each case runs in ember and in
PyTorch, and the outcome (dtype, shape and values, or the exception type) must agree."""
from __future__ import annotations

import array
import collections

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


class _Seq:
    """A sequence by protocol only: ``__len__`` and ``__getitem__``."""

    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i >= 3:
            raise IndexError(i)
        return i * 1.5


class _LenOnly:
    def __len__(self):
        return 2


class _ArrayOnly:
    def __array__(self, dtype=None, copy=None):
        return np.array([1.0, 2.0])


# data built by a function of the library (``lib`` is ember or torch), so tensors inside lists are the library's
DATA = {
    "deque": lambda lib: collections.deque([1, 2, 3]),
    "range": lambda lib: range(4),
    "tuple_nest": lambda lib: ((1, 2), (3, 4)),
    "mixed_nest": lambda lib: [(1, 2), [3, 4]],
    "range_rows": lambda lib: [range(2), range(2)],
    "array_f": lambda lib: array.array("f", [1, 2]),
    "array_i": lambda lib: array.array("i", [1, 2]),
    "bytearray": lambda lib: bytearray(b"ab"),
    "memoryview": lambda lib: memoryview(b"ab"),
    "userlist": lambda lib: collections.UserList([1.0, 2.0]),
    "protocol": lambda lib: _Seq(),
    "protocol_rows": lambda lib: [_Seq(), _Seq()],
    "size": lambda lib: lib.Size([2, 3]),
    "scalars_of_tensors": lambda lib: [lib.tensor(1.0), lib.tensor(2.0)],
    "one_element_tensors": lambda lib: [lib.tensor([[1.0]]), lib.tensor([[2.0]])],
    "int32_tensor_and_float": lambda lib: [lib.tensor(1, dtype=lib.int32), 2.5],
    "tensor_in_row": lambda lib: [[lib.tensor(1), 2]],
    "numpy_rows": lambda lib: [np.array([1, 2]), np.array([3, 4])],
    "numpy_scalars": lambda lib: [np.float32(1), 2],
    "numpy_int32": lambda lib: [np.int32(1), np.int32(2)],
    "empty": lambda lib: [],
    "empty_rows": lambda lib: [[], []],
    "bools_and_ints": lambda lib: [True, 1],
    "complex": lambda lib: [1 + 2j, 1],
    # refused, each with PyTorch's exception type
    "multi_element_tensors": lambda lib: [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
    "set": lambda lib: {1, 2},
    "frozenset": lambda lib: frozenset([1]),
    "dict": lambda lib: {1: 2},
    "str": lambda lib: "ab",
    "bytes": lambda lib: b"ab",
    "str_in_list": lambda lib: ["a"],
    "str_after_number": lambda lib: [1, "a"],
    "none": lambda lib: None,
    "none_in_list": lambda lib: [1, None],
    "iterator": lambda lib: iter([1, 2]),
    "generator": lambda lib: (x for x in [1]),
    "object": lambda lib: object(),
    "len_only": lambda lib: _LenOnly(),
    "array_protocol_only": lambda lib: _ArrayOnly(),
    "ragged_longer": lambda lib: [[1], [2, 3]],
    "ragged_shorter": lambda lib: [[1, 2], [3]],
    "number_then_list": lambda lib: [1, [2]],
    "list_then_number": lambda lib: [[1, 2], 3],
    "set_in_rows": lambda lib: [[1], {1}],
}


def _outcome(lib, fn_name, data, **kw):
    try:
        t = getattr(lib, fn_name)(data, **kw)
    except Exception as exc:  # noqa: BLE001 - the exception's type is the outcome compared
        return type(exc)
    return str(t.dtype).split(".")[-1], tuple(t.shape), t.tolist()


@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")
@pytest.mark.parametrize("fn_name", ["tensor", "as_tensor"])
@pytest.mark.parametrize("case", sorted(DATA))
def test_sequence_data_as_pytorch(case, fn_name, device):
    expected = _outcome(torch, fn_name, DATA[case](torch))
    got = _outcome(ember, fn_name, DATA[case](ember), device=device)
    assert got == expected


def test_sequence_data_with_dtype(device):
    for data in (collections.deque([1, 2]), range(3), _Seq()):
        t = ember.tensor(data, dtype=ember.float64, device=device)
        assert t.dtype is ember.float64
        np.testing.assert_array_equal(t.cpu().numpy(), torch.tensor(data, dtype=torch.float64).numpy())


def test_refused_data_names_the_op():
    with pytest.raises(ValueError, match=r"tensor\(\): expected sequence of length 1 at dim 1 \(got 2\)"):
        ember.tensor([[1], [2, 3]])
    with pytest.raises(RuntimeError, match=r"tensor\(\): Could not infer dtype of set"):
        ember.tensor({1})
