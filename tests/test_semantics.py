"""PyTorch's semantics in the corners, differential against PyTorch on every backend (tables in
``ember.testing.op_table_semantics``)."""
import pytest

import ember
from ember.testing import op_table_semantics as sem

test_autograd_corners = sem.case_test(sem.AUTOGRAD_CASES)
test_dtype_corners = sem.case_test(sem.DTYPE_CASES)
test_shape_corners = sem.case_test(sem.SHAPE_CASES)
test_error_corners = sem.case_test(sem.ERROR_CASES)


@pytest.mark.parametrize("wrong", ["param", "grad"])
@pytest.mark.parametrize("name", sorted(sem.OPTIMIZERS))
def test_failed_optimizer_step_changes_nothing(device, torch, name, wrong):
    raised, unchanged = sem.failed_step(ember, name, device, wrong)
    assert raised == "RuntimeError", f"{name}: a wrong-shape gradient gave {raised}"
    assert unchanged, f"{name}: a failed step changed the parameters or the optimizer's state"
    if hasattr(torch.optim, name):
        assert sem.failed_step(torch, name, "cpu", "param")[0] == raised


def test_every_optimizer_is_swept():
    names = {n for n in dir(ember.optim) if isinstance(getattr(ember.optim, n), type)
             and issubclass(getattr(ember.optim, n), ember.optim.Optimizer) and n != "Optimizer"}
    assert names <= set(sem.OPTIMIZERS), names - set(sem.OPTIMIZERS)
