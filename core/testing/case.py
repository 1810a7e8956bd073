"""A :class:`Case` of PyTorch's semantics in the corners, and the one way a case is checked.

The tables of cases sit beside the op tables, by subject: ``ember.testing.cases_autograd`` (autograd
safety), ``cases_dtype`` (dtypes and promotion), ``cases_shape`` (indexing and shapes) and
``cases_errors`` (errors of PyTorch's type, state untouched).  Each case is a program ``fn(m, dev)``
written once for ``m`` = ``ember`` and ``m`` = ``torch`` (``dev`` is the device: the backend under test for
ember, ``"cpu"`` for PyTorch).  :func:`check_case` runs it with both libraries and asserts that they agree:
the same exception type when PyTorch raises (and the state the case inspects after the failure), else the
same results (tensors by dtype, shape and values; other values by equality).  :func:`case_test` turns a
table into a pytest test over the ``device`` fixture, so every backend inherits the tables.  Adding a corner
is adding a case.  :func:`bad_input_test` does the same for tables of calls that must raise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import ember

from .compare import assert_close, has_dtype, to_numpy


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable
    rtol: float | None = None
    atol: float | None = None
    check_dtype: bool = True
    needs_strides: bool = False  # the case inspects memory overlap, which only strided arrays can show


def T(m, dev, data, dtype="float64", rg=False):  # noqa: N802
    """A tensor of library ``m`` on ``dev`` from host data (``rg``: a leaf requiring grad)."""
    t = m.tensor(np.asarray(data).tolist(), dtype=getattr(m, dtype), device=dev)
    return t.requires_grad_() if rg else t


_RNG = np.random.RandomState(17)
DATA = {  # fixed sample data (the same values for both libraries)
    "v": _RNG.randn(6),
    "m": _RNG.randn(3, 4),
    "c": _RNG.randn(2, 3, 4),
    "w": _RNG.randn(6),
}


def _is_tensor(x):
    return hasattr(x, "dtype") and hasattr(x, "shape") and hasattr(x, "detach")


def _compare(a, e, case, path="result"):
    if _is_tensor(e):
        assert _is_tensor(a), f"{case.name}: {path}: expected a tensor, got {a!r}"
        assert_close(a, e, rtol=case.rtol, atol=case.atol, check_dtype=case.check_dtype, msg=f"{case.name}: {path}")
    elif isinstance(e, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(e), f"{case.name}: {path}: {a!r} != {e!r}"
        for i, (x, y) in enumerate(zip(a, e)):
            _compare(x, y, case, f"{path}[{i}]")
    elif isinstance(e, float) and math.isnan(e):
        assert isinstance(a, float) and math.isnan(a), f"{case.name}: {path}: {a!r} != nan"
    elif isinstance(e, str):
        assert str(a).replace("ember.", "torch.") == e, f"{case.name}: {path}: {a!r} != {e!r}"
    elif e is None or isinstance(e, (bool, int, float, complex)):
        close = isinstance(a, float) and isinstance(e, float) and np.isclose(a, e, rtol=case.rtol or 1e-5,
                                                                              atol=case.atol or 1e-8)
        assert a == e or close, \
            f"{case.name}: {path}: {a!r} != {e!r}"
    else:
        np.testing.assert_allclose(to_numpy(a), to_numpy(e), err_msg=f"{case.name}: {path}")


class Raised:
    """What a case produced when it raised: the exception type (compared by name) and the message."""

    def __init__(self, exc):
        self.type, self.message = type(exc).__name__, str(exc)

    def __repr__(self):
        return f"{self.type}({self.message[:200]!r})"


def run(case: Case, m, dev) -> Any:
    try:
        return case.fn(m, dev)
    except Exception as exc:  # noqa: BLE001 - a raised exception is a result to compare
        return Raised(exc)


def _lacks(device) -> list:
    """The dtypes of :data:`DTYPES` that ``device``'s backend cannot hold (array_api_strict has no float16)."""
    return [d for d in DTYPES if not has_dtype(device, getattr(ember, d))]


def check_case(case: Case, device: str) -> None:
    """Run ``case`` with ember on ``device`` and with PyTorch on the CPU; assert that they agree.

    The dtype sweeps cover the dtypes the backend has (both libraries run the same list); a single case that
    needs a dtype the backend lacks, or reinterpreting bytes (``view(dtype)``) where its arrays cannot, is
    skipped."""
    import pytest  # optional: only the test builders need pytest
    import torch  # optional: the reference

    lacks = _lacks(device)
    if any(d in case.name for d in lacks):
        pytest.skip(f"the {device} backend has no {', '.join(d for d in lacks if d in case.name)}")
    if case.needs_strides and not _has_strides(device):
        pytest.skip(f"the {device} backend's arrays report no strides (memory overlap is invisible)")
    if case.name.startswith("view") and not _views_dtypes(device):
        pytest.skip(f"the {device} backend's arrays cannot be reinterpreted as another dtype")
    ACTIVE[0] = [d for d in DTYPES if d not in lacks]
    try:
        expected = run(case, torch, "cpu")
        actual = run(case, ember, device)
    finally:
        ACTIVE[0] = DTYPES
    if isinstance(expected, Raised):
        assert isinstance(actual, Raised), f"{case.name}: PyTorch raises {expected!r}; ember returned {actual!r}"
        assert actual.type == expected.type, f"{case.name}: PyTorch raises {expected!r}; ember raises {actual!r}"
        return
    assert not isinstance(actual, Raised), f"{case.name}: ember raises {actual!r}; PyTorch returns {expected!r}"
    _compare(actual, expected, case)


def case_test(cases):
    """A pytest test running every case of ``cases`` on the ``device`` fixture."""
    import pytest  # optional: only the test builders need pytest

    pytest.importorskip("torch")

    @pytest.mark.parametrize("case", cases, ids=[c.name for c in cases])
    def test_case(case, device):
        check_case(case, device)

    return test_case


# --------------------------------------------------------------------------- dtypes a case sweeps
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
_SAMPLE = {  # values every dtype holds exactly (bool: 0/1; unsigned: non-negative)
    "bool": [True, False, True, True],
    "uint8": [3, 0, 7, 250],
    "float": [1.5, -2.25, 0.0, 3.0],
    "int": [3, -2, 0, 7],
}


def sample(m, dev, dtype, shape=(4,)):
    """A tensor of ``dtype`` with fixed values (the same for both libraries)."""
    kind = "bool" if dtype == "bool" else "uint8" if dtype == "uint8" else "float" if "float" in dtype else "int"
    data = np.array(_SAMPLE[kind]).reshape(shape) if shape != () else np.array(_SAMPLE[kind][0])
    return m.tensor(data.tolist(), dtype=getattr(m, dtype), device=dev)


def outcome(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a raised exception is a result to compare
        return Raised(exc)


def _has_strides(device) -> bool:
    return ember.zeros(2, 3, device=device).t().stride() == (1, 3)


def _views_dtypes(device) -> bool:
    try:
        ember.zeros(2, device=device).view(ember.int32)
    except RuntimeError:
        return False
    return True


ACTIVE = [DTYPES]  # the dtypes the current case sweeps (those the backend under test has)


def bad_input_test(table):
    """A pytest test over ``[(name, call(m, device), exception, pattern)]``: ember raises ``exception`` with a
    message matching ``pattern``, and torch raises the same exception type (assign it to ``test_bad_input``)."""
    import pytest  # optional: only the test builders need pytest

    pytest.importorskip("torch")

    @pytest.mark.parametrize("name,call,exc,pattern", table, ids=[b[0] for b in table])
    def test_bad_input(name, call, exc, pattern, device):
        import torch  # optional: the reference

        with pytest.raises(exc, match=pattern):
            call(ember, device)
        with pytest.raises(exc):
            call(torch, device)

    return test_bad_input


def grad_of(make, op):
    def fn(m, dev):
        x = make(m, dev)
        y = op(m, x)
        y.sum().backward()
        return y.detach(), x.grad + 0  # + 0: PyTorch's gradient of sgn is a lazy zero tensor
    return fn
