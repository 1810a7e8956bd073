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


# --------------------------------------------------------------------------- NumPy-style keyword names
def _x(lib):
    g = np.random.default_rng(0)
    return lib.tensor(g.standard_normal((3, 4)))


# (call, with the library as ``lib`` and a 3x4 float64 tensor as ``x``): each spelled with the NumPy names
KEYWORD_CALLS = [
    "x.sum(axis=1)", "x.sum(axis=1, keepdims=True)", "lib.sum(x, axis=0)", "lib.sum(x=x)", "lib.sum(a=x, axis=1)",
    "lib.mean(x, axis=(0, 1))", "x.mean(axis=0, keepdims=True)", "lib.amax(x, axis=1)", "x.argmax(axis=1)",
    "lib.max(x, axis=1).values", "lib.std(x, axis=1)", "lib.var(x, axis=0, keepdims=True)",
    "lib.logsumexp(x, axis=1)", "lib.cumsum(x, axis=1)", "lib.softmax(x, axis=1)", "x.squeeze(axis=0)",
    "lib.cat([x, x], axis=0)", "lib.stack([x, x], axis=1)", "lib.flatten(x=x)", "lib.prod(x, axis=1)",
    "lib.add(x1=x, x2=x)", "lib.add(x, x2=x, alpha=2)", "x.add(x2=x)", "lib.mul(x1=x, x2=2.0)",
    "lib.lt(x1=x, x2=x.t().t())", "lib.matmul(x1=x, x2=x.t())", "lib.where(x > 0, x=x, other=-x)",
    "lib.exp(x=x)", "lib.exp(a=x)", "lib.abs(x1=x)", "lib.linalg.vector_norm(x=x, axis=1)",
    "lib.linalg.norm(x, axis=0)", "lib.special.expit(x=x)", "lib.fft.fft(x=x, axis=1).real",
    "lib.nn.functional.linear(x=x, weight=x)", "lib.nn.functional.softplus(x=x)",
    "lib.relu_(x=x.clone())", "lib.nn.functional.elu_(x=x.clone())", "lib.nn.functional.relu_(input=x.clone())",
    "lib.nn.functional.relu_()",
    # refused as PyTorch refuses: an alias and its name together, a name PyTorch's Python function lacks
    "lib.sum(x, 0, axis=0)", "x.sum(dim=0, axis=0)", "lib.add(x, x, x2=x)", "lib.sum()",
    "lib.nn.functional.softmax(x, axis=0)", "lib.norm(x, axis=0)", "x.sum(x=x)",
]


@pytest.mark.parametrize("call", KEYWORD_CALLS)
def test_numpy_keyword_names_as_pytorch(call, device):
    def run(lib, x):
        try:
            r = eval(call, {"lib": lib, "x": x})  # noqa: S307 - the calls of the table above
        except Exception as exc:  # noqa: BLE001 - the exception's type is the outcome compared
            return type(exc)
        return r.detach().cpu().numpy() if hasattr(r, "detach") else r

    expected, got = run(torch, _x(torch)), run(ember, _x(ember).to(device))
    if isinstance(expected, type):
        assert got is expected
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def _c_bound(obj) -> bool:
    return type(obj).__name__ in ("builtin_function_or_method", "method_descriptor")


def test_alias_tables_match_pytorch():
    """Every ember function with a parameter that has NumPy names takes them exactly where PyTorch's does."""
    import inspect
    import types

    from ember import arguments
    from ember.registry import NAMESPACES

    owners = {"torch": torch, "Tensor": torch.Tensor, "linalg": torch.linalg, "special": torch.special,
              "fft": torch.fft, "nn.functional": torch.nn.functional}
    wrong = []
    for ns, owner in owners.items():
        for name, fn in NAMESPACES[ns].items():
            theirs = getattr(owner, name, None)
            if name.startswith("_") or theirs is None or type(fn) is not types.FunctionType:
                continue
            params = inspect.signature(fn).parameters
            names = [a for p in params if not (ns == "Tensor" and p == next(iter(params)))
                     for a in arguments.NUMPY_NAMES.get(p, ()) if a not in params]
            if not names or (fn.__module__ or "").partition(".")[0] != "ember":
                continue
            if arguments.takes_numpy_names(ns, name) != _c_bound(theirs):
                wrong.append(f"{ns}.{name}: table says {arguments.takes_numpy_names(ns, name)}")
            elif _c_bound(theirs) and id(fn) not in arguments._TAKING:
                wrong.append(f"{ns}.{name}: takes none of {names}")
    assert not wrong, "\n".join(wrong)


def test_aliases_cost_no_wrapper():
    """The functions themselves take the aliases: the method and the namespace show one function."""
    from ember.registry import NAMESPACES

    fn = NAMESPACES["Tensor"]["sum"]  # (what Tensor shows until a dispatching subclass arms its methods)
    assert __import__("inspect").unwrap(ember.Tensor.sum) is fn and "__wrapped__" not in vars(fn)
    assert NAMESPACES["torch"]["sum"] is fn and fn.__code__.co_flags & __import__("inspect").CO_VARKEYWORDS
    shown = str(__import__("inspect").signature(ember.Tensor.sum))
    assert shown == "(input, dim=None, keepdim=False, *, dtype=None, out=None)"


FACTORY_CALLS = [
    "lib.empty(size=(2, 3)).shape", "lib.zeros(size=(2, 3))", "lib.ones(size=[4])", "lib.zeros(size=lib.Size([2]))",
    "lib.full(size=(2,), fill_value=3)", "lib.full(size=(2,), fill_value=1.5)", "lib.rand(size=(2, 3)).shape",
    "lib.randn(size=(3,)).shape", "lib.randint(3, size=(2,)).shape", "lib.randint(1, 5, size=(4,)).shape",
    "lib.ones(2).new_zeros(size=(2, 3))", "lib.ones(2).new_ones(size=(3,))", "lib.ones(2).new_empty(size=(2,)).shape",
    "lib.ones(size=2)", "lib.zeros(2, size=(2,))",
]


@pytest.mark.parametrize("call", FACTORY_CALLS)
def test_factory_size_keyword_as_pytorch(call):
    def run(lib):
        try:
            r = eval(call, {"lib": lib})  # noqa: S307 - the calls of the table above
        except Exception as exc:  # noqa: BLE001 - the exception's type is the outcome compared
            return type(exc)
        return tuple(r) if isinstance(r, tuple) else (str(r.dtype).split(".")[-1], r.tolist())

    assert run(ember) == run(torch)
