"""The conformance kit: crosses ember's op tables with a backend.

A table is a list of rows (see :mod:`ember.testing.op_table_shape`): ``name``,
``op(m, *args)`` (one call that works for ``m = ember`` and ``m = torch``),
``samples`` (lists of marked arguments: ``F`` float, ``I`` int64 index, ``B``
bool mask, anything else passed as is) and the flags ``grad``, ``gradgrad``,
``ints``, ``rtol``, ``atol``, ``tags`` (``"contiguous_only"``: skip the
non-contiguous check).  :func:`cases` turns the tables into
``(row, sample, check)`` cases and :func:`run_case` runs one on a device:

* ``forward``: values, shapes and dtypes against PyTorch (or ember's ``cpu``
  backend where torch is not installed), outputs on the input's device,
  inputs left untouched; float32 and, for ``ints`` rows, int64;
* ``noncontiguous``: the same with every 2-d+ float input a transposed view;
* ``grad`` / ``gradgrad``: float64 finite differences on the device.

A failure raises :class:`KitFailure` naming the op, the sample, the check and
the device.

>>> from ember.testing import kit
>>> len(kit.cases()) > 0
True
"""
from __future__ import annotations

import importlib

import numpy as np

import ember
from ember.autograd import gradcheck, gradgradcheck

from . import assert_close, to_numpy

TABLES = ["ember.testing.op_table", "ember.testing.op_table_shape", "ember.testing.op_table_nn",
          "ember.testing.op_table_linalg2", "ember.testing.op_table_special", "ember.testing.op_table_fft",
          "ember.testing.op_table_breadth", "ember.testing.op_table_gapfill", "ember.testing.op_table_semantics",
          "ember.testing.op_table_func"]
CHECKS = ("forward", "noncontiguous", "grad", "gradgrad")


class KitFailure(AssertionError):
    """An op disagreed with the reference on a backend."""


def tables() -> list:
    """Every row of every op table module that exists."""
    rows = []
    for name in TABLES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        rows.extend(mod.ROWS)
    return rows


def _wants(row, sample, check) -> bool:
    floats = [a for a in sample if type(a).__name__ == "F"]
    return {
        "forward": True,
        "noncontiguous": "contiguous_only" not in getattr(row, "tags", ())
                         and any(np.ndim(a.data) >= 2 and not a.nc for a in floats),
        "grad": row.grad and any(a.grad for a in floats),
        "gradgrad": row.grad and row.gradgrad and any(a.grad for a in floats),
    }[check]


def cases(rows=None, checks=CHECKS) -> list:
    """``[(row, sample index, check)]`` for the rows (default: every table) and checks that apply."""
    rows = tables() if rows is None else rows
    return [(row, i, check) for row in rows for i, sample in enumerate(row.samples) for check in checks
            if _wants(row, sample, check)]


def case_id(case) -> str:
    row, i, check = case
    return f"{row.name}-{i}-{check}"


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
    "F": _float,
    "I": lambda lib, arg, dtype, device, nc: lib.tensor(np.asarray(arg.data, dtype=np.int64), device=device),
    "B": lambda lib, arg, dtype, device, nc: lib.tensor(np.asarray(arg.data, dtype=bool), device=device),
}


def build(lib, sample, dtype: str, device, nc: bool = False) -> list:
    """The arguments of one sample as tensors of ``lib`` (ember or torch) on ``device``."""
    out = []
    for arg in sample:
        b = BUILDERS.get(type(arg).__name__)
        out.append(arg if b is None else b(lib, arg, dtype, device, nc))
    return out


def _outputs(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _reference():
    """PyTorch where installed, else ember (evaluated on the ``cpu`` backend)."""
    try:
        import torch  # optional: PyTorch is the reference where installed

        return torch, "cpu"
    except ImportError:
        return ember, "cpu"


# --------------------------------------------------------------------------- checks
def _fail(row, i, check, device, detail) -> KitFailure:
    return KitFailure(f"op {row.name!r}, sample {i}, check {check!r}, on device {device!r}: {detail}")


def _refuses(row, sample, dtype) -> bool:
    """Whether the reference raises on this (contiguous) sample: an error case, not a value case."""
    lib, ref_dev = _reference()
    try:
        row.op(lib, *build(lib, sample, dtype, ref_dev))
    except Exception:  # noqa: BLE001
        return True
    return False


def _forward(row, i, check, device, dtype, nc):
    lib, ref_dev = _reference()
    sample = row.samples[i]
    refused = None
    try:
        want = _outputs(row.op(lib, *build(lib, sample, dtype, ref_dev, nc)))
    except Exception as ref_exc:  # noqa: BLE001 - the reference refuses: ember must refuse too
        # (on non-contiguous inputs ember may instead succeed with the contiguous result)
        refused = want = ref_exc
        if nc and not _refuses(row, sample, dtype):
            want = _outputs(row.op(lib, *build(lib, sample, dtype, ref_dev)))
    args = build(ember, sample, dtype, device, nc)
    before = [to_numpy(a).copy() if isinstance(a, ember.Tensor) else None for a in args]
    has_tensors = any(b is not None for b in before)  # rows that build their own tensors use the default device
    try:
        got = _outputs(row.op(ember, *args))
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


def _gradcheck(row, i, check, device):
    args = build(ember, row.samples[i], "float64", device)
    pos = [k for k, a in enumerate(args) if isinstance(a, ember.Tensor) and a.requires_grad]

    def fn(*leaves):
        full = list(args)
        for k, t in zip(pos, leaves):
            full[k] = t
        # by dtype, not requires_grad: the finite differences run under no_grad
        return tuple(o for o in _outputs(row.op(ember, *full)) if isinstance(o, ember.Tensor) and o.is_floating_point())

    leaves = tuple(args[k] for k in pos)
    checker = gradcheck if check == "grad" else gradgradcheck
    try:
        checker(fn, leaves)
    except Exception as exc:  # noqa: BLE001 - report any failure with the case
        if _refuses(row, row.samples[i], "float64"):
            return
        raise _fail(row, i, check, device, f"{type(exc).__name__}: {exc}") from exc


def run_case(case, device: str) -> None:
    """Run one ``(row, sample index, check)`` case on backend ``device``; raise :class:`KitFailure` if it fails."""
    row, i, check = case
    if check in ("grad", "gradgrad"):
        _gradcheck(row, i, check, device)
        return
    _forward(row, i, check, device, "float32", check == "noncontiguous")
    if check == "forward" and getattr(row, "ints", False):
        _forward(row, i, "forward[int64]", device, "int64", False)


def run(rows, device: str, checks=CHECKS) -> list:
    """Run every case of ``rows`` on ``device``; the list of failure messages (empty when all pass)."""
    failures = []
    for case in cases(rows, checks):
        try:
            run_case(case, device)
        except KitFailure as exc:
            failures.append(str(exc))
    return failures


# --------------------------------------------------------------------------- in-place semantics
INPLACE = [
    # (name, in-place call, out-of-place call, argument shapes)
    ("add_", lambda x, y: x.add_(y), lambda x, y: x + y, [(2, 3), (3,)]),
    ("sub_", lambda x, y: x.sub_(y), lambda x, y: x - y, [(2, 3), (2, 3)]),
    ("mul_", lambda x, y: x.mul_(y), lambda x, y: x * y, [(2, 3), (1, 3)]),
    ("div_", lambda x, y: x.div_(y), lambda x, y: x / y, [(2, 3), (2, 1)]),
    ("iadd", lambda x, y: x.__iadd__(y), lambda x, y: x + y, [(2, 3), (2, 3)]),
    ("copy_", lambda x, y: x.copy_(y), lambda x, y: y.expand(x.shape), [(2, 3), (3,)]),
    ("fill_", lambda x, y: x.fill_(2.5), lambda x, y: x * 0 + 2.5, [(2, 3), (1,)]),
]


def run_inplace(entry, device: str) -> None:
    """An in-place op returns its input, matches the out-of-place op, bumps the version and shows through views."""
    name, inplace, outplace, shapes = entry
    rng = np.random.RandomState(0)
    x, y = (ember.tensor(rng.rand(*s).astype(np.float32) + 0.5, device=device) for s in shapes)
    want = outplace(x, y)
    base = x.clone()
    view = base[0]
    version = base._version
    res = inplace(base, y)
    if res is not base:
        raise KitFailure(f"in-place op {name!r} on device {device!r}: did not return its input")
    if base._version == version:
        raise KitFailure(f"in-place op {name!r} on device {device!r}: the version counter did not change")
    try:
        assert_close(base, want)
        assert_close(view, want[0])
    except AssertionError as exc:
        raise KitFailure(f"in-place op {name!r} on device {device!r}: {exc}") from None
    leaf = x.clone().requires_grad_(True)
    try:
        inplace(leaf, y)
    except RuntimeError:
        return
    raise KitFailure(f"in-place op {name!r} on device {device!r}: a leaf that requires grad was modified in place")
