"""The solves, factorizations and legacy names of ember.ops.linalg_solve: the rows of
ember.testing.op_table_linalg2 against PyTorch on every backend (float64 values and gradients; float32 and
non-contiguous forward, gradcheck and gradgradcheck through the conformance kit), then what rows cannot say:
namespaces, invariants of decompositions that are unique only up to signs, errors and ``out=``."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close, kit, to_numpy
from ember.testing.op_table_linalg2 import ROWS
from ember.testing.op_table_shape import bad_input_test, row_test

# PyTorch warns once per process on its deprecated forms; the rows call them on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated:UserWarning")

test_row = row_test(ROWS)


@pytest.mark.parametrize("case", kit.cases(ROWS), ids=kit.case_id)
def test_kit(case, device):
    pytest.importorskip("torch")
    kit.run_case(case, device)
