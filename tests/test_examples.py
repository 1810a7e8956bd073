"""The example programs run and do what they claim (short budgets)."""
import importlib.util
import os

import pytest


EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")


def _example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_custom_function():
    out = _example("custom_function").main()
    assert out["gradcheck"] is True
    assert out["output"] == pytest.approx(out["reference"], rel=1e-12)
    assert out["bias_grad"] == [5.0, 5.0, 5.0, 5.0]
