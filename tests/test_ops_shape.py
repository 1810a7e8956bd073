"""Shape, movement, indexing and linear-algebra ops against PyTorch: the rows of ember.testing.op_table_shape.

Each row runs on every backend in float32 and float64 (and int64 where marked): forward values and dtypes
against torch, gradients against torch, ``gradcheck`` and ``gradgradcheck`` in float64.
"""
import numpy as np
import pytest

import ember
from ember.testing import assert_close
from ember.testing.op_table_shape import INDEX_ROWS, LINALG_ROWS, SHAPE_ROWS, build, leaves, outputs

torch = pytest.importorskip("torch")


def _cases(rows):
    return [pytest.param(row, k, id=f"{row.name}-{k}") for row in rows for k in range(len(row.samples))]


def check_forward(row, k, device, dtype):
    sample = row.samples[k]
    ea = [build(ember, a, dtype, device) for a in sample]
    ta = [build(torch, a, dtype, "cpu") for a in sample]
    re, rt = outputs(row.op(ember, *ea)), outputs(row.op(torch, *ta))
    assert len(re) == len(rt)
    for e, t in zip(re, rt):
        tol = {} if row.rtol is None else {"rtol": row.rtol, "atol": row.atol}
        assert_close(e, t, msg=f"{row.name}[{k}] {dtype}", **tol)
    return ea, ta, re, rt


def check_backward(row, k, device, dtype):
    ea, ta, re, rt = check_forward(row, k, device, dtype)
    rng = np.random.RandomState(k)
    ws = [np.asarray(rng.rand(*tuple(t.shape)), dtype=dtype) for t in rt]
    le, lt = leaves(ea), leaves(ta)
    ge = ember.autograd.grad([e for e in re if e.requires_grad],
                             le, [ember.tensor(w, device=device) for w, e in zip(ws, re) if e.requires_grad])
    gt = torch.autograd.grad([t for t in rt if t.requires_grad], lt,
                             [torch.tensor(w) for w, t in zip(ws, rt) if t.requires_grad])
    for a, b in zip(ge, gt):
        assert_close(a, b, rtol=1e-4 if dtype == "float32" else 1e-7, atol=1e-5 if dtype == "float32" else 1e-7,
                     msg=f"{row.name}[{k}] grad")


def check_gradcheck(row, k, device):
    sample = row.samples[k]
    args = [build(ember, a, "float64", device) for a in sample]
    idx = [i for i, a in enumerate(args) if getattr(a, "requires_grad", False)]

    def fn(*xs):
        full = list(args)
        for i, x in zip(idx, xs):
            full[i] = x
        return tuple(o for o in outputs(row.op(ember, *full)) if o.requires_grad)

    xs = tuple(args[i] for i in idx)
    assert ember.autograd.gradcheck(fn, xs)
    if row.gradgrad:
        assert ember.autograd.gradgradcheck(fn, xs)


def run_row(row, k, device):
    for dtype in ("float32", "float64"):
        if row.grad:
            check_backward(row, k, device, dtype)
        else:
            check_forward(row, k, device, dtype)
    if row.ints:
        check_forward(row, k, device, "int64")
    if row.grad:
        check_gradcheck(row, k, device)


@pytest.mark.parametrize("row,k", _cases(SHAPE_ROWS))
def test_shape_row(row, k, device):
    run_row(row, k, device)


@pytest.mark.parametrize("row,k", _cases(INDEX_ROWS))
def test_index_row(row, k, device):
    run_row(row, k, device)


@pytest.mark.parametrize("row,k", _cases(LINALG_ROWS))
def test_linalg_row(row, k, device):
    run_row(row, k, device)
