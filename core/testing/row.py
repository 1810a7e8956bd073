"""A row of an op table, and the one way a row is checked.

A table (``ember.testing.rows_<family>``, named by op family) is a list ``ROWS`` of :class:`Row`: a name,
a call ``op(m, *args)`` written once for ``m = ember`` and ``m = torch``, and samples (lists of arguments)
built from host data: :class:`F` marks a floating input (differentiated and checked), :class:`I` an int64
(index) tensor, :class:`B` a bool mask; anything else is passed as is.  :func:`check` runs one
``(row, sample index, check)`` case on a device, against PyTorch (or ember's ``cpu`` backend where PyTorch
is not installed):

* ``forward``: values, shapes and dtypes in float32 (and int64 for ``ints`` rows), outputs on the input's
  device, inputs left untouched; an error where the reference raises;
* ``noncontiguous``: the same with every 2-d+ float input a transposed view;
* ``backward``: the float64 forward, and for ``grad`` rows the gradients themselves (random output
  weights) in float32 and float64;
* ``grad`` / ``gradgrad``: float64 finite differences (``gradcheck``, ``gradgradcheck``) on the device.

A row that cannot run on a backend says so in ``skips`` (``{device type: reason}``); the case is then
skipped with that reason, never dropped.  Adding an op is adding a row.

>>> from ember.testing.row import Row, Sampler, cases
>>> r = Sampler(0).r
>>> [c[2] for c in cases([Row("exp", lambda m, x: m.exp(x), [[r(2, 3)]])])]
['forward', 'noncontiguous', 'backward', 'grad', 'gradgrad']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import ember
from ember.autograd import gradcheck, gradgradcheck

from .compare import assert_close, to_numpy

CHECKS = ("forward", "noncontiguous", "backward", "grad", "gradgrad")


# --------------------------------------------------------------------------- rows and their arguments
@dataclass(frozen=True)
class F:
    """A floating-point input; ``nc`` builds it non-contiguous (a transposed copy, transposed back)."""

    data: Any
    nc: bool = False
    grad: bool = True


@dataclass(frozen=True)
class I:  # noqa: E742
    """An int64 tensor (indices)."""

    data: Any


@dataclass(frozen=True)
class B:
    """A bool tensor (mask)."""

    data: Any


@dataclass
class Row:
    """One op of a table: ``op(m, *args)`` on each sample of ``samples``; see the module docstring."""

    name: str
    op: Callable
    samples: list
    grad: bool = True
    gradgrad: bool = True
    ints: bool = False          # also run the forward on int64 data
    rtol: float | None = None
    atol: float | None = None
    tags: tuple = field(default=())  # "contiguous_only": no non-contiguous check
    skips: dict = field(default_factory=dict)  # {device type: why the row cannot run there}


class Sampler:
    """Random sample data from a table's own seeded generator, so that a table's data never depends on
    which tables were imported before it."""

    def __init__(self, seed: int):
        self.rng = np.random.RandomState(seed)

    def r(self, *shape, nc=False, positive=False, grad=True) -> F:
        """Random float data of ``shape``, in [-0.5, 0.5) or (``positive``) [0.5, 1.5)."""
        return F(self.rng.rand(*shape) + (0.5 if positive else -0.5), nc, grad)

    def well(self, n, batch=()) -> F:
        """A well-conditioned square matrix (batch)."""
        return F(self.rng.rand(*batch, n, n) - 0.5 + 2 * np.eye(n))


def distinct(*shape, seed=9) -> F:
    """Values without ties and away from 0 (max/min/sort gradients are unique; abs/relu kinks avoided)."""
    n = int(np.prod(shape)) if shape else 1
    return F((np.random.RandomState(seed).permutation(n).reshape(shape) - n / 2.0 + 0.25) / 3.0)


# --------------------------------------------------------------------------- cases
class RowFailure(AssertionError):
    """An op disagreed with the reference on a backend."""


def wants(row: Row, sample, check: str) -> bool:
    """Whether ``check`` applies to ``sample`` of ``row``."""
    floats = [a for a in sample if isinstance(a, F)]
    return {
        "forward": True,
        "noncontiguous": "contiguous_only" not in row.tags and any(np.ndim(a.data) >= 2 and not a.nc for a in floats),
        "backward": True,
        "grad": row.grad and any(a.grad for a in floats),
        "gradgrad": row.grad and row.gradgrad and any(a.grad for a in floats),
    }[check]


def cases(rows, checks=CHECKS) -> list:
    """``[(row, sample index, check)]`` for the checks that apply to each sample of ``rows``."""
    return [(row, i, check) for row in rows for i, sample in enumerate(row.samples) for check in checks
            if wants(row, sample, check)]


def case_id(case) -> str:
    row, i, check = case
    return f"{row.name}-{i}-{check}"


def skip_reason(case, device: str) -> str | None:
    """Why ``case`` does not run on ``device`` (the row's own reason), or None."""
    reason = case[0].skips.get(str(device).split(":")[0])
    return f"{case[0].name} on {device}: {reason}" if reason else None


# --------------------------------------------------------------------------- building inputs
def _float(lib, arg, dtype, device, nc):
    a = np.asarray(arg.data, dtype=dtype)
    nc = (arg.nc or nc) and a.ndim >= 2
    t = lib.tensor(np.ascontiguousarray(np.swapaxes(a, 0, 1)) if nc else a, device=device)
    if nc:
        t = t.transpose(0, 1)
    if arg.grad and a.dtype.kind == "f":
        t.requires_grad_(True)
    return t


BUILDERS = {
    F: _float,
    I: lambda lib, arg, dtype, device, nc: lib.tensor(np.asarray(arg.data, dtype=np.int64), device=device),
    B: lambda lib, arg, dtype, device, nc: lib.tensor(np.asarray(arg.data, dtype=bool), device=device),
}


def build(lib, sample, dtype: str, device, nc: bool = False) -> list:
    """The arguments of one sample as tensors of ``lib`` (ember or torch) on ``device``."""
    out = []
    for arg in sample:
        b = BUILDERS.get(type(arg))
        out.append(arg if b is None else b(lib, arg, dtype, device, nc))
    return out


def outputs(r) -> tuple:
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def reference():
    """PyTorch where installed, else ember (evaluated on the ``cpu`` backend)."""
    try:
        import torch  # optional: PyTorch is the reference where installed

        return torch, "cpu"
    except ImportError:
        return ember, "cpu"


# --------------------------------------------------------------------------- the checks
def _fail(row, i, check, device, detail) -> RowFailure:
    return RowFailure(f"op {row.name!r}, sample {i}, check {check!r}, on device {device!r}: {detail}")


def _refuses(row, sample, dtype) -> bool:
    """Whether the reference raises on this (contiguous) sample: an error case, not a value case."""
    lib, ref_dev = reference()
    try:
        row.op(lib, *build(lib, sample, dtype, ref_dev))
    except Exception:  # noqa: BLE001
        return True
    return False


def _forward(row, i, check, device, dtype, nc):
    lib, ref_dev = reference()
    sample = row.samples[i]
    refused = None
    try:
        want = outputs(row.op(lib, *build(lib, sample, dtype, ref_dev, nc)))
    except Exception as ref_exc:  # noqa: BLE001 - the reference refuses: ember must refuse too
        # (on non-contiguous inputs ember may instead succeed with the contiguous result)
        refused = want = ref_exc
        if nc and not _refuses(row, sample, dtype):
            want = outputs(row.op(lib, *build(lib, sample, dtype, ref_dev)))
    args = build(ember, sample, dtype, device, nc)
    before = [to_numpy(a).copy() if isinstance(a, ember.Tensor) else None for a in args]
    has_tensors = any(b is not None for b in before)  # rows that build their own tensors use the default device
    try:
        got = outputs(row.op(ember, *args))
    except Exception as exc:  # noqa: BLE001 - report any failure with the case
        if refused is not None and isinstance(exc, (type(refused), RuntimeError, ValueError, IndexError)):
            return
        raise _fail(row, i, check, device, f"raised {type(exc).__name__}: {exc}") from exc
    if isinstance(want, Exception):
        raise _fail(row, i, check, device, f"returned a result where the reference raised {want!r}")
    if len(got) != len(want):
        raise _fail(row, i, check, device, f"{len(got)} outputs, expected {len(want)}")
    for k, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, ember.Tensor):
            if g != w and not (hasattr(w, "tolist") and list(g) == w.tolist()):
                raise _fail(row, i, check, device, f"output {k} is {g!r}, expected {w!r}")
            continue
        if g.device.type != device and has_tensors:
            raise _fail(row, i, check, device, f"output {k} is on {g.device}, expected the input's device")
        try:
            assert_close(g, w, rtol=row.rtol, atol=row.atol if row.rtol is not None else None)
        except AssertionError as exc:
            raise _fail(row, i, check, device, f"output {k} differs from the reference: {exc}") from None
    for a, b in zip(args, before):
        if b is not None and not np.array_equal(to_numpy(a), b, equal_nan=True):
            raise _fail(row, i, check, device, "an input was modified by an out-of-place op")


def _gradients(row, i, device, dtype):
    """The forward in ``dtype`` and, for ``grad`` rows, the gradients (random output weights) against the
    reference's."""
    lib, ref_dev = reference()
    ea, ta = build(ember, row.samples[i], dtype, device), build(lib, row.samples[i], dtype, ref_dev)
    re, rt = outputs(row.op(ember, *ea)), outputs(row.op(lib, *ta))
    assert len(re) == len(rt), f"{len(re)} outputs, expected {len(rt)}"
    tol = {} if row.rtol is None else {"rtol": row.rtol, "atol": row.atol}
    for e, t in zip(re, rt):
        assert_close(e, t, msg=f"{row.name}[{i}] {dtype}", **tol)
    if not row.grad:
        return
    ws = [np.asarray(np.random.RandomState(i).rand(*tuple(t.shape)), dtype=dtype) for t in rt]
    le = [a for a in ea if getattr(a, "requires_grad", False)]
    lt = [a for a in ta if getattr(a, "requires_grad", False)]
    # an input the outputs do not reach (a gradient's gradient through pooling indices) has a zero gradient
    ge = ember.autograd.grad([e for e in re if e.requires_grad], le,
                             [ember.tensor(w, device=device) for w, e in zip(ws, re) if e.requires_grad],
                             allow_unused=True, materialize_grads=True)
    gt = lib.autograd.grad([t for t in rt if t.requires_grad], lt,
                           [lib.tensor(w, device=ref_dev) for w, t in zip(ws, rt) if t.requires_grad],
                           allow_unused=True, materialize_grads=True)
    close = {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-7, "atol": 1e-7}
    for a, b in zip(ge, gt):
        assert_close(a, b, msg=f"{row.name}[{i}] grad", **close)


def _backward(row, i, check, device):
    try:
        for dtype in ("float32", "float64") if row.grad else ("float64",):
            _gradients(row, i, device, dtype)
    except Exception as exc:  # noqa: BLE001 - report any failure with the case
        raise _fail(row, i, check, device, f"{type(exc).__name__}: {exc}") from exc


def _gradcheck(row, i, check, device):
    args = build(ember, row.samples[i], "float64", device)
    pos = [k for k, a in enumerate(args) if isinstance(a, ember.Tensor) and a.requires_grad]

    def fn(*leaves):
        full = list(args)
        for k, t in zip(pos, leaves):
            full[k] = t
        # by dtype, not requires_grad: the finite differences run under no_grad
        return tuple(o for o in outputs(row.op(ember, *full)) if isinstance(o, ember.Tensor) and o.is_floating_point())

    leaves = tuple(args[k] for k in pos)
    checker = gradcheck if check == "grad" else gradgradcheck
    try:
        checker(fn, leaves)
    except Exception as exc:  # noqa: BLE001 - report any failure with the case
        if _refuses(row, row.samples[i], "float64"):
            return
        raise _fail(row, i, check, device, f"{type(exc).__name__}: {exc}") from exc


def check(case, device: str) -> None:
    """Run one ``(row, sample index, check)`` case on backend ``device``; raise :class:`RowFailure` if it fails.

    A case the row skips on ``device`` (see :func:`skip_reason`) is the caller's to skip."""
    row, i, name = case
    if name in ("grad", "gradgrad"):
        _gradcheck(row, i, name, device)
    elif name == "backward":
        _backward(row, i, name, device)
    else:
        _forward(row, i, name, device, "float32", name == "noncontiguous")
        if name == "forward" and row.ints:
            _forward(row, i, "forward[int64]", device, "int64", False)
