"""PyTorch's semantics in the corners, differential against PyTorch on every backend (the case tables
``ember.testing.cases_*``, by subject)."""
import pytest

import ember
from ember.testing import cases_autograd, cases_dtype, cases_errors, cases_shape
from ember.testing import cases_optim as optim_cases
from ember.testing.case import case_test

test_autograd_corners = case_test(cases_autograd.AUTOGRAD_CASES)
test_dtype_corners = case_test(cases_dtype.DTYPE_CASES)
test_shape_corners = case_test(cases_shape.SHAPE_CASES)
test_error_corners = case_test(cases_errors.ERROR_CASES)


@pytest.mark.parametrize("wrong", ["param", "grad"])
@pytest.mark.parametrize("name", sorted(optim_cases.OPTIMIZERS))
def test_failed_optimizer_step_changes_nothing(device, torch, name, wrong):
    raised, unchanged = optim_cases.failed_step(ember, name, device, wrong)
    assert raised == "RuntimeError", f"{name}: a wrong-shape gradient gave {raised}"
    assert unchanged, f"{name}: a failed step changed the parameters or the optimizer's state"
    if hasattr(torch.optim, name):
        assert optim_cases.failed_step(torch, name, "cpu", "param")[0] == raised


def test_every_optimizer_is_swept():
    names = {n for n in dir(ember.optim) if isinstance(getattr(ember.optim, n), type)
             and issubclass(getattr(ember.optim, n), ember.optim.Optimizer) and n != "Optimizer"}
    assert names <= set(optim_cases.OPTIMIZERS), names - set(optim_cases.OPTIMIZERS)
