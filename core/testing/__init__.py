"""ember.testing: helpers for testing ember, its backends and plugins.

The pytest plugin (:mod:`ember.testing.pytest_plugin`, entry point ``pytest11``)
adds ``--ember-backend NAME`` (alias ``--backend``) and the ``device`` fixture
that runs a test once per available backend; with ``--ember-backend`` it also
runs the conformance kit (:mod:`ember.testing.kit`) on that backend.
:func:`check_op` checks one plugin op (like PyTorch's ``opcheck``).
"""
from __future__ import annotations

import contextlib

from ..backend import get_backend
from ..plugins import REGISTRY
from .compare import SESSION_BACKENDS, assert_close, available_backends, to_numpy  # noqa: F401
from .compare import has_dtype  # noqa: F401
from .opcheck import OpCheckError, check_op  # noqa: F401


@contextlib.contextmanager
def builtin_kernels(device_type: str, *ops: str):
    """Run ``ops`` on backend ``device_type``'s own kernels (those it was built with) inside the block, undoing
    any plugin's replacement: for tests of a backend's kernels while faster plugin kernels are installed."""
    backend = get_backend(device_type)
    before = {op: backend.kernels[op] for op in ops}
    for op in ops:
        stack = REGISTRY.replaced.get((device_type, op))
        if stack:
            backend.kernels[op] = stack[0][0]
    backend.kernels_changed()
    try:
        yield
    finally:
        backend.kernels.update(before)
        backend.kernels_changed()
