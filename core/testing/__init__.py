"""ember.testing: helpers for testing ember, its backends and plugins.

The pytest plugin (:mod:`ember.testing.pytest_plugin`, entry point ``pytest11``)
adds ``--ember-backend NAME`` (alias ``--backend``) and the ``device`` fixture
that runs a test once per available backend; with ``--ember-backend`` it also
runs the conformance kit (:mod:`ember.testing.kit`) on that backend.
:func:`check_op` checks one plugin op (like PyTorch's ``opcheck``).
"""
from __future__ import annotations

from .compare import SESSION_BACKENDS, assert_close, available_backends, to_numpy  # noqa: F401
from .compare import has_dtype  # noqa: F401
from .opcheck import OpCheckError, check_op  # noqa: F401
