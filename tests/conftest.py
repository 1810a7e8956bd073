import numpy as np
import pytest

import ember


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running checks, run only when selected with -m slow")


def pytest_collection_modifyitems(config, items):
    """Leave out the tests marked slow unless the run's -m expression names them."""
    if "slow" in (config.option.markexpr or ""):
        return
    slow = [i for i in items if i.get_closest_marker("slow")]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [i for i in items if not i.get_closest_marker("slow")]


@pytest.fixture(autouse=True)
def _seed():
    ember.manual_seed(0)
    np.random.seed(0)
    yield


@pytest.fixture(autouse=True)
def _no_tf32_on_cuda(request, monkeypatch):
    """Tests on a CUDA device compare float32 at float32 tolerances, so cuDNN may not round convolution
    inputs to TF32 there (as PyTorch's own suite does); elsewhere the switch keeps its default."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if str(params.get("device", "")).startswith("cuda"):
        monkeypatch.setattr(ember.backends.cudnn, "allow_tf32", False)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")
