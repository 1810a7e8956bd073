"""ember-array-api through ember's public API and the conformance kit."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close, kit

pytest.importorskip("array_api_strict")


def test_registered_as_array_api_device():
    from ember.plugins import REGISTRY

    backend = REGISTRY.backends["array_api"]
    assert backend.is_available(), backend.unavailable_reason()
    x = ember.ones(2, 3, device="array_api")
    assert x.device.type == "array_api"
    assert type(x._data).__module__.startswith(backend.library)


def test_values_and_gradients_match_cpu():
    a = np.random.RandomState(0).rand(3, 4)
    x = ember.tensor(a, device="array_api", requires_grad=True)
    c = ember.tensor(a, requires_grad=True)
    for t in (x, c):
        ((t * 2 + 1).exp() / (t + 1)).mean().backward()
    assert_close(x.grad.cpu(), c.grad)


def test_kit_rows_pass():
    rows = [r for r in kit.tables() if r.name in ("permute", "reshape", "expand", "matmul", "cat")]
    assert rows
    assert kit.run(rows, "array_api") == []


def test_cross_device_refused():
    with pytest.raises(RuntimeError, match="array_api"):
        ember.ones(2, device="array_api") + ember.ones(2)


@pytest.mark.parametrize("op,numpy_name,make", [
    ("acos", "arccos", lambda d: (ember.tensor([0.1, -0.5], device=d),)),
    ("atan2", "arctan2", lambda d: (ember.tensor([0.1, -0.5], device=d), ember.tensor([2.0, 1.0], device=d))),
    ("bitwise_not", "invert", lambda d: (ember.tensor([1, 6], device=d),)),
    ("bitwise_left_shift", "left_shift", lambda d: (ember.tensor([1, 6], device=d), ember.tensor([2, 1], device=d))),
])
def test_renamed_functions_run_on_the_library(op, numpy_name, make):
    from ember_array_api import compat

    compat.BRIDGED.discard(numpy_name)
    got = getattr(ember, op)(*make("array_api"))
    assert numpy_name not in compat.BRIDGED  # the standard's function ran, not NumPy's through DLPack
    assert_close(got.cpu(), getattr(ember, op)(*make("cpu")))


@pytest.mark.parametrize("op,numpy_name", [("cumsum", "cumsum"), ("cumprod", "cumprod"), ("var", "var")])
def test_reductions_run_on_the_library(op, numpy_name):
    from ember_array_api import compat

    a = np.random.RandomState(1).rand(3, 4)
    compat.BRIDGED.discard(numpy_name)
    got = getattr(ember.tensor(a, device="array_api"), op)(1)
    assert numpy_name not in compat.BRIDGED  # the standard's function ran, not NumPy's through DLPack
    assert_close(got.cpu(), getattr(ember.tensor(a), op)(1))


@pytest.mark.parametrize("writes, expected", [((0,), [2.0, 3.0]), ((), [3.0, 4.0])])
def test_fallback_of_a_mutating_kernel_writes_once(writes, expected):
    # a kernel that writes, then needs something the standard lacks: the fallback must not add twice
    import array_api_strict as xp

    from ember_array_api import compat

    def on_library(dst, src):
        dst += src
        raise TypeError("needs a NumPy-only function")

    def on_numpy(dst, src):
        dst += src

    k = compat.with_fallback(xp, type(xp.asarray(0)), on_library, on_numpy, "acc_", writes=writes)
    a = xp.asarray([1.0, 2.0])
    src = xp.broadcast_to(xp.asarray(1.0), (2,))  # read-only: only the written argument is copied back
    k(a, src)
    assert np.asarray(a).tolist() == expected


def test_mutating_kernels_are_declared():
    from ember_array_api.backend import ArrayAPIBackend

    names = ember.kernels.MUTATING
    assert {"copy_", "setitem", "adam_update", "add_into"} <= set(names)
    assert set(names) <= set(ember.kernels.library(np))  # no stale names
    assert names["adam_update"] == (0, 2, 3, 4)  # the parameter and its state, not the gradient
    b = ArrayAPIBackend()
    own = b.overrides()
    assert all(b.kernels[n].__code__.co_name == "mutating_kernel" for n in names if n not in own)
