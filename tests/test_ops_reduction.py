"""Reductions against PyTorch: the REDUCTION_ROWS of ember.testing.op_table on every backend."""
import pytest

import ember
from ember.testing.op_table import REDUCTION_ROWS
from ember.testing.op_table_shape import cases, run_row

pytest.importorskip("torch")


@pytest.mark.parametrize("row,k", cases(REDUCTION_ROWS))
def test_row(row, k, device):
    run_row(row, k, device)


def test_max_returns_named_tuple(device):
    x = ember.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], device=device)
    r = x.max(1)
    assert r.values.tolist() == [5.0, 7.0] and r.indices.tolist() == [1, 0]
    v, i = ember.min(x, 0, keepdim=True)
    assert v.tolist() == [[1.0, 0.0, 2.0]] and i.tolist() == [[0, 1, 0]]
    assert ember.max(x, ember.full_like(x, 4.0)).tolist() == [[4.0, 5.0, 4.0], [7.0, 4.0, 4.0]]


def test_reduction_errors(device):
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2, 3, device=device).sum(2)
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ember.ones(2, dtype=ember.int64, device=device).mean()
    with pytest.raises(IndexError, match="numel\\(\\) == 0"):
        ember.ones(0, device=device).amax()
