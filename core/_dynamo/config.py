"""``ember._dynamo.config`` (``torch._dynamo.config``): the compiler's settings, with PyTorch's names and defaults.

Most are recorded for code that reads or patches them; ``cache_size_limit``, ``automatic_dynamic_shapes``
and ``probe_int_args`` steer ``ember.compile``. :func:`patch` sets some for a ``with`` block or a decorated
function.

``probe_int_args`` (ember's own, default False): let ``ember.compile`` make Python int arguments that change
between calls graph inputs (one variant for every value of an int used as data, see ``ember._dynamo.ints``)
instead of guarding each value. The ints are found by tracing the call with ``int`` subclasses that notice
Python reading them; C code reads an int without being noticed (list or tuple indexing ``lst[k]``,
``range(k)``, a float on the left ``2.5 < k`` or ``0.5 * k``, ``k.real``), so a function that does may then
give a wrong result (the branch or element of the traced values for every later value). Turn it on only for
functions whose ints reach tensors through ops, comparisons and arithmetic in Python.

>>> from ember._dynamo import config
>>> with config.patch(cache_size_limit=16):
...     config.cache_size_limit
16
>>> config.cache_size_limit
8
"""
from __future__ import annotations

import contextlib
import sys
import types

recompile_limit = 8  # (``cache_size_limit`` is its old name: one setting, as in PyTorch)
accumulated_recompile_limit = 256  # (``accumulated_cache_size_limit``)
suppress_errors = False
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
optimize_ddp = True
automatic_dynamic_shapes = True
assume_static_by_default = True
inline_inbuilt_nn_modules = True
force_parameter_static_shapes = True
error_on_recompile = False
allow_unspec_int_on_nn_module = False
specialize_int = False
dynamic_shapes = True
guard_nn_modules = True
skip_nnmodule_hook_guards = True
allow_rnn = False
replay_record_enabled = False
raise_on_ctx_manager_usage = True
numpy_default_float = "float64"
probe_int_args = False  # (see the module docstring: C-level reads of an int go unseen)

_ALIASES = {"cache_size_limit": "recompile_limit", "accumulated_cache_size_limit": "accumulated_recompile_limit"}


class _ConfigModule(types.ModuleType):
    """This module, with each old name in ``_ALIASES`` reading and writing its new name's setting."""

    def __getattr__(self, name):
        if name in _ALIASES:
            return getattr(self, _ALIASES[name])
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __setattr__(self, name, value):
        super().__setattr__(_ALIASES.get(name, name), value)


sys.modules[__name__].__class__ = _ConfigModule
_SETTINGS = tuple(sorted({n for n in dir(sys.modules[__name__]) if not n.startswith("_") and n not in (
    "annotations", "contextlib", "sys", "types")} | set(_ALIASES)))


def get_config_copy() -> dict:
    """The settings as a dict of name -> value."""
    module = sys.modules[__name__]
    return {n: getattr(module, n) for n in _SETTINGS}


class _Patch(contextlib.ContextDecorator):
    def __init__(self, changes: dict):
        unknown = sorted(set(changes) - set(_SETTINGS))
        if unknown:
            raise AttributeError(f"{__name__}.{unknown[0]} does not exist")
        self.changes, self.saved = changes, []

    def __enter__(self):
        module = sys.modules[__name__]
        self.saved.append({n: getattr(module, n) for n in self.changes})
        for n, v in self.changes.items():
            setattr(module, n, v)
        return self

    def __exit__(self, *exc):
        module = sys.modules[__name__]
        for n, v in self.saved.pop().items():
            setattr(module, n, v)
        return False


def patch(arg1=None, arg2=None, **changes):
    """Set settings for a ``with`` block or a decorated function: ``patch("name", value)``,
    ``patch({"name": value})`` or ``patch(name=value)``."""
    if isinstance(arg1, str):
        changes[arg1] = arg2
    elif isinstance(arg1, dict):
        changes.update(arg1)
    elif arg1 is not None:
        raise TypeError(f"config.patch: expected a setting's name or a dict, got {type(arg1).__name__}")
    return _Patch(changes)
