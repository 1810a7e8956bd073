"""Comparing ember results with references, and the backends a test session runs on."""
from __future__ import annotations

import numpy as np

from ..backend import BACKENDS


SESSION_BACKENDS: list = []  # the backends ``--ember-backend`` selected in this pytest session


def available_backends(explicit: bool = False) -> list:
    """Device types of the registered backends that can run here.

    Backends with ``test_by_default = False`` (a second CPU backend kept for strict
    conformance runs, say) are left out unless ``explicit``; name them with
    ``--ember-backend``.
    """
    return [name for name, b in BACKENDS.items()
            if b.is_available() and (explicit or getattr(b, "test_by_default", True))]


def has_dtype(device, dtype) -> bool:
    """Whether the backend of ``device`` (``"cpu"``, ``"cuda:0"``, a device) can hold ``dtype``.

    Some array libraries lack a dtype (the strict array-API library has no float16);
    a test that needs one skips on such a backend rather than failing there.
    """
    backend = BACKENDS[str(device).split(":")[0]]
    try:
        backend.array_dtype(dtype)
    except TypeError:
        return False
    return True


def to_numpy(x) -> np.ndarray:
    """Host copy of an ember tensor, a torch tensor, or array-like."""
    if hasattr(x, "_dev") and hasattr(x, "_data"):
        return np.asarray(x._dev.backend.to_numpy(x.detach()._data))
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        return x.detach().cpu().resolve_conj().resolve_neg().numpy()  # PyTorch's lazy conjugate/negative bits
    return np.asarray(x)


def assert_close(actual, expected, rtol=None, atol=None, check_dtype=True, msg=""):
    """Assert two tensors/arrays agree in shape, dtype name and values (PyTorch's default tolerances)."""
    a, e = to_numpy(actual), to_numpy(expected)
    if check_dtype:
        assert str(a.dtype) == str(e.dtype).replace("torch.", ""), f"{msg} dtype {a.dtype} != {e.dtype}"
    assert a.shape == e.shape, f"{msg} shape {a.shape} != {e.shape}"
    if rtol is None:
        rtol, atol = {"float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5)}.get(str(a.dtype), (1e-7, 1e-7))
        atol = atol if a.dtype.kind in "fc" else 0
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, e.astype(a.dtype), rtol=rtol, atol=atol, err_msg=msg)
    else:
        np.testing.assert_array_equal(a, e, err_msg=msg)
