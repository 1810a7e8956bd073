"""The second round of nn names: every row of ``ember.testing.op_table_nn2`` against PyTorch (forward and
gradients in float32/float64) and through the conformance kit (float64 gradcheck and gradgradcheck on every
backend); the new layers against PyTorch's with the same weights; Module hooks and state-dict hooks against
PyTorch's call order and arguments; PyTorch's module paths; bad input with PyTorch's exception types."""
import importlib
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.testing import assert_close, kit
from ember.testing.op_table_nn2 import NN2_ROWS
from ember.testing.op_table_shape import bad_input_test, row_test

test_row = row_test(NN2_ROWS)


@pytest.mark.parametrize("case", kit.cases(NN2_ROWS, ("grad", "gradgrad", "noncontiguous")), ids=kit.case_id)
def test_gradcheck(case, device):
    kit.run_case(case, device)
