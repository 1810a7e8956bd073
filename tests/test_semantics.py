"""PyTorch's semantics in the corners, differential against PyTorch on every backend (tables in
``ember.testing.op_table_semantics``)."""
from ember.testing import op_table_semantics as sem

test_autograd_corners = sem.case_test(sem.AUTOGRAD_CASES)
test_dtype_corners = sem.case_test(sem.DTYPE_CASES)
test_shape_corners = sem.case_test(sem.SHAPE_CASES)
