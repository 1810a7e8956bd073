"""What ``ember.compile`` returns, and the decorators that steer compilation (``disable``, ``allow_in_graph``).

Compilation is eager today: a compiled function or module computes exactly what the original does, on the same
code path. The wrappers keep PyTorch's shapes so that code handling compiled models works unchanged: a compiled
Module is an :class:`OptimizedModule` holding the original as ``_orig_mod`` (its ``state_dict`` keys gain the
``_orig_mod.`` prefix, as in PyTorch).
"""
from __future__ import annotations

import contextlib

from ..nn.modules.module import Module
from ..registry import export
from ..tensor import Tensor

ONLY_TORCH = ("torch",)


class OptimizedModule(Module):
    """A compiled Module: ``_orig_mod`` is the module given to ``ember.compile``; calls run it (eagerly), and
    attribute reads it lacks fall through to it.

    >>> import ember
    >>> m = ember.compile(ember.nn.Linear(2, 3))
    >>> type(m).__name__, list(m.state_dict())
    ('OptimizedModule', ['_orig_mod.weight', '_orig_mod.bias'])
    """

    def __init__(self, mod: Module, dynamo_ctx=None):
        super().__init__()
        self._orig_mod = mod
        self.dynamo_ctx = dynamo_ctx
        self.training = mod.training

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def get_compiler_config(self):
        return None


@export(to=ONLY_TORCH)
def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None, options=None,
            disable: bool = False):
    """Compile ``model`` (a Module or a function). ember runs the result eagerly, so its results equal eager
    mode (PyTorch's contract for ``torch.compile``): a function comes back as it is, a Module as an
    :class:`OptimizedModule` around it. Usable as ``ember.compile(m)``, ``@ember.compile`` and
    ``@ember.compile(mode=...)``.

    >>> import ember
    >>> ember.compile(ember.nn.ReLU())._orig_mod
    ReLU()
    """
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)
    if not callable(model):
        raise RuntimeError(f"compile: expected a callable (a Module or a function), got {type(model).__name__}")
    if isinstance(model, Module) and not disable:
        return OptimizedModule(model)
    return model


def is_compiling() -> bool:
    """Whether the code calling this is being traced by the compiler: never, as ember compiles eagerly."""
    return False


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run ``fn`` eagerly even inside a compiled region (a decorator, with or without arguments): ember's
    compiled code runs eagerly already, so ``fn`` is returned as it is."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    """Put ``fn`` in compiled graphs as one opaque call: returns ``fn`` (nothing is traced into yet)."""
    return fn


def mark_static_address(t, guard: bool = True) -> None:
    """Mark ``t``'s storage as fixed across calls (a hint for CUDA graphs); ember's eager runs need no hint."""
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t).__name__}")


def reset() -> None:
    """Forget compiled code and guards: nothing is cached while compilation is eager."""


def _check_tensor(name: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} expects a tensor but received {type(t).__name__}")


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None) -> None:  # noqa: A002
    """Mark dimension(s) ``index`` of ``t`` as varying between calls (a guard hint): eager runs need none."""
    _check_tensor("mark_dynamic", t)


def maybe_mark_dynamic(t, index) -> None:
    """Like :func:`mark_dynamic`, without insisting: a hint eager runs need not."""
    _check_tensor("maybe_mark_dynamic", t)


def mark_static(t, index=None) -> None:
    """Mark dimension(s) of ``t`` (or a module) as fixed between calls: a hint eager runs need not."""


def graph_break() -> None:
    """End the captured graph here: eager code has no graph to end."""


def disallow_in_graph(fn):
    """Keep ``fn`` out of compiled graphs (a graph break at each call): eager already runs it as Python."""
    return fn


forbid_in_graph = disallow_in_graph


def optimize(*args, **kwargs):
    """The older spelling of ``ember.compile``'s decorator: ``optimize(backend)(fn)``."""
    return lambda fn: compile(fn)


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The compiler backends ``ember.compile(backend=...)`` accepts by name."""
    return ["inductor"]


_STANCE = ["default"]


class _Stance(contextlib.ContextDecorator):
    """The stance set, and the one before it, restored at the end of a ``with`` block or decorated call."""

    def __init__(self, stance: str, prior: str):
        self.stance, self.prior = stance, prior

    def __enter__(self):
        _STANCE[0] = self.stance
        return self

    def __exit__(self, *exc):
        _STANCE[0] = self.prior
        return False


def set_stance(stance: str = "default", *, skip_guard_eval_unsafe: bool = False, force_backend=None):
    """Set how compiled code behaves ("default", "force_eager", "eager_on_recompile", "fail_on_recompile"):
    for the rest of the program, or for a ``with`` block or a decorated function. Compiled code runs eagerly
    under every stance today."""
    prior, _STANCE[0] = _STANCE[0], stance
    return _Stance(stance, prior)
