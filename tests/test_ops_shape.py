"""Shape and movement ops against PyTorch: the SHAPE_ROWS of ember.testing.op_table_shape.

Each row runs on every backend in float32 and float64 (and int64 where marked): forward values and dtypes
against torch, gradients against torch, ``gradcheck`` and ``gradgradcheck`` in float64.
"""
import pytest

from ember.testing.op_table_shape import SHAPE_ROWS, cases, run_row

pytest.importorskip("torch")


@pytest.mark.parametrize("row,k", cases(SHAPE_ROWS))
def test_row(row, k, device):
    run_row(row, k, device)
