"""``out=`` on the functions whose results are named tuples (sort, topk, kthvalue, mode, median, nanmedian,
max/min along a dim, cummax/cummin, aminmax), on ``where`` and on the predicates that have one (signbit, isneginf,
isposinf): the results are written into the given tensors
(resized as PyTorch resizes them), the same named tuple of those tensors comes back, and the values equal
PyTorch's.  A call PyTorch refuses (no ``out=`` on the all-elements overload) is refused the same way."""
from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

DATA = [[3.0, 1.0, 2.0, 7.0], [0.0, 5.0, 4.0, -1.0], [6.0, -2.0, 8.0, 9.0]]  # no ties in a row or column

# (function, positional arguments after the input, keyword arguments)
CALLS = [
    ("sort", (1,), {}), ("sort", (0, True), {}), ("sort", (), {"stable": True}),
    ("topk", (2,), {}), ("topk", (2, 0, False), {}), ("kthvalue", (2, 1), {}), ("kthvalue", (1, 0, True), {}),
    ("mode", (1,), {}), ("median", (1,), {}), ("median", (0, True), {}), ("nanmedian", (1,), {}),
    ("max", (1,), {}), ("min", (0, True), {}), ("cummax", (1,), {}), ("cummin", (0,), {}),
    ("aminmax", (), {"dim": 1}), ("aminmax", (), {}),
]


def _run(lib, name, args, kw, device=None):
    x = lib.tensor(DATA) if device is None else lib.tensor(DATA, device=device)
    expected = getattr(lib, name)(x, *args, **kw)
    out = tuple(lib.empty(0, dtype=t.dtype, device=t.device) for t in expected)
    got = getattr(lib, name)(x, *args, **kw, out=out)
    return got, out


@pytest.mark.parametrize("name,args,kw", CALLS, ids=lambda v: repr(v))
def test_named_tuple_out_as_pytorch(name, args, kw, device):
    t_got, t_out = _run(torch, name, args, kw)
    got, out = _run(ember, name, args, kw, device)
    assert type(got).__name__ == type(t_got).__name__.removesuffix("_out")  # (PyTorch's out types add _out)
    assert all(getattr(got, f) is out[i] and hasattr(t_got, f) for i, f in enumerate(got._fields))
    assert all(g is o for g, o in zip(got, out)), "the results are not the out tensors"
    for o, t in zip(out, t_out):
        assert str(o.dtype).rpartition(".")[2] == str(t.dtype).rpartition(".")[2]
        assert o.cpu().tolist() == t.tolist()


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_all_elements_overload_has_no_out(name):
    for lib in (torch, ember):
        x = lib.tensor(DATA)
        with pytest.raises(TypeError):
            getattr(lib, name)(x, out=lib.empty(0))


def test_out_must_be_a_pair():
    x = ember.tensor(DATA)
    with pytest.raises(TypeError, match="tuple of 2"):
        ember.sort(x, out=ember.empty(0))
    with pytest.raises(TypeError):
        torch.sort(torch.tensor(DATA), out=torch.empty(0))


def test_where_out(device):
    for lib in (torch, ember):
        x = lib.tensor(DATA) if lib is torch else lib.tensor(DATA, device=device)
        out = lib.empty(0, device=x.device)
        r = lib.where(x > 2, x, lib.zeros(1, device=x.device), out=out)
        assert r is out
        assert out.cpu().tolist() == [[v if v > 2 else 0.0 for v in row] for row in DATA]


@pytest.mark.parametrize("name", ["signbit", "isneginf", "isposinf"])
def test_predicate_out(name, device):
    values = [-1.0, float("inf"), -float("inf"), 0.0, -0.0, float("nan")]
    got = []
    for lib in (torch, ember):
        x = lib.tensor(values) if lib is torch else lib.tensor(values, device=device)
        out = lib.empty(0, dtype=lib.bool, device=x.device)
        assert getattr(lib, name)(x, out=out) is out
        got.append(out.cpu().tolist())
    assert got[0] == got[1]
