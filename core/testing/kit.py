"""The conformance kit: crosses every op table of ember with a backend.

The tables are the ``ROWS`` of the modules in :data:`TABLES` (one per op family, see
:mod:`ember.testing.row` for the row format and what each check means); :func:`cases` turns them into
``(row, sample, check)`` cases and :func:`run_case` runs one on a device, raising :class:`KitFailure`
naming the op, the sample, the check and the device.  ``pytest --ember-backend NAME`` runs them all
(:mod:`ember.testing.conformance`), with the in-place checks below.

>>> from ember.testing import kit
>>> len(kit.cases()) > 0
True
"""
from __future__ import annotations

import importlib

import numpy as np

import ember

from . import assert_close
from .row import CHECKS, RowFailure, build, case_id, check, outputs, skip_reason  # noqa: F401 - the kit's interface
from .row import cases as _row_cases

FAMILIES = ("pointwise", "reduction", "shape", "indexing", "creation", "linalg", "special", "fft", "complex",
            "nn", "func")
TABLES = [f"ember.testing.rows_{family}" for family in FAMILIES]

KitFailure = RowFailure


def tables() -> list:
    """Every row of every op table."""
    return [row for name in TABLES for row in importlib.import_module(name).ROWS]


def cases(rows=None, checks=CHECKS) -> list:
    """``[(row, sample index, check)]`` for the rows (default: every table) and checks that apply."""
    return _row_cases(tables() if rows is None else rows, checks)


def run_case(case, device: str) -> None:
    """Run one ``(row, sample index, check)`` case on backend ``device``; raise :class:`KitFailure` if it fails."""
    check(case, device)


def run(rows, device: str, checks=CHECKS) -> list:
    """Run every case of ``rows`` on ``device`` (except those a row skips there); the failure messages."""
    failures = []
    for case in cases(rows, checks):
        if skip_reason(case, device):
            continue
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
