"""What ``ember.compile`` returns, and the decorators that steer compilation (``disable``, ``allow_in_graph``).

``ember.compile`` captures each call at the op level, guards it and replays it (see :mod:`.compiled`). The
wrappers keep PyTorch's shapes so that code handling compiled models works unchanged: a compiled Module is an
:class:`OptimizedModule` holding the original as ``_orig_mod`` (its ``state_dict`` keys gain the
``_orig_mod.`` prefix, as in PyTorch).
"""
from __future__ import annotations

import contextlib
import functools

from ..nn.modules.module import Module
from ..registry import export
from ..tensor import Tensor
from . import jit
from .compiled import STANCE as _STANCE
from .compiled import CompiledFunction, current_capture, note_break, reset_all

BACKENDS = ("inductor", "ember", "eager", "aot_eager")
MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")

ONLY_TORCH = ("torch",)


class OptimizedModule(Module):
    """A compiled Module: ``_orig_mod`` is the module given to ``ember.compile``; calls run its compiled
    variants, and attribute reads it lacks fall through to it.

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
        self.__dict__["_compiled"] = CompiledFunction(mod, mod, **(dynamo_ctx or {}))

    def forward(self, *args, **kwargs):
        return self.__dict__["_compiled"](*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def get_compiler_config(self):
        return None


FUSIONS = ("auto", "numba", "numpy")


def _fusion(options) -> str:
    """The ``"fusion"`` of ``compile``'s ``options``: how elementwise runs are fused on the CPU (``"auto"``:
    numba kernels where numba is installed and they pay, else NumPy ufunc calls)."""
    fusion = (options or {}).get("fusion", "auto")
    if fusion not in FUSIONS:
        raise RuntimeError(f"compile: invalid options['fusion'] {fusion!r}; expected one of {', '.join(FUSIONS)}")
    if fusion == "numba" and jit.numba_module() is None:
        raise RuntimeError("compile: options['fusion'] = 'numba' needs numba (pip install ember[jit])")
    return fusion


@export(to=ONLY_TORCH)
def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend=None, mode=None, options=None,
            name: str | None = None, disable: bool = False, recompile_limit: int | None = None,
            isolate_recompiles: bool = False, shapes_spec=None):
    """Compile ``model`` (a Module or a function): each new kind of call (shapes, dtypes, devices,
    ``requires_grad``, grad mode, training flags) is captured at the op level once, and later calls replay it
    with pre-resolved kernels, so the Python cost of each op is gone; results equal eager mode's. A call that
    cannot be captured whole (a graph break: ``.item()``, data-dependent control flow...) runs eagerly, or
    raises with ``fullgraph=True``. ``backend``: ``"inductor"`` (the default, None) or ``"ember"`` (raw-kernel
    replay), ``"eager"``/``"aot_eager"`` (the captured ops through dispatch); a callable backend is not called (the
    graph replays through dispatch). ``dynamic``: None (the default) captures static shapes first and, when
    a call's sizes differ from the last capture's, a graph with those sizes symbolic (automatic dynamic
    shapes, as PyTorch's); True makes every dim symbolic from the first call, False keeps every shape its own
    variant. ``options={"fusion": ...}``: runs of elementwise ops on the CPU become numba kernels (``"numba"``),
    NumPy ufunc calls (``"numpy"``), or numba kernels where numba is installed and the run is long or large
    enough to gain (``"auto"``, the default; see ``ember._dynamo.jit``). ``recompile_limit``: the variants this
    call may capture (None: ``ember._dynamo.config.recompile_limit``), past which calls run eagerly, or raise
    :class:`~ember._dynamo.exc.FailOnRecompileLimitHit` with ``fullgraph=True`` (past the global limit such calls
    run eagerly: ember keeps variants that PyTorch's symbolic shapes would merge). Each ``compile`` call keeps
    its own variants, so ``isolate_recompiles`` changes nothing; ``name`` names the compiled region in
    messages. ``shapes_spec`` (PyTorch's experimental per-dim specs) is not supported and must be None. A function
    comes back as a compiled function, a Module as an :class:`OptimizedModule` around it. Usable as
    ``ember.compile(m)``, ``@ember.compile`` and ``@ember.compile(mode=...)``.

    >>> import ember
    >>> f = ember.compile(lambda x: (x * 2).relu())
    >>> f(ember.tensor([-1.0, 3.0]))
    tensor([0., 6.])
    >>> ember.compile(ember.nn.ReLU())._orig_mod
    ReLU()
    """
    backend = "inductor" if backend is None else backend
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if shapes_spec is not None:
        raise NotImplementedError("compile: shapes_spec is not supported by ember.compile yet (use dynamic=)")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                                  isolate_recompiles=isolate_recompiles)
    if not callable(model):
        raise RuntimeError(f"compile: expected a callable (a Module or a function), got {type(model).__name__}")
    if mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(m for m in MODES if m)}")
    if isinstance(backend, str) and backend not in BACKENDS:
        raise RuntimeError(f"compile: invalid backend {backend!r}; the backends are {', '.join(BACKENDS)}")
    if disable or getattr(model, "_ember_disabled", False):
        return model
    settings = {"fullgraph": fullgraph, "backend": backend if isinstance(backend, str) else "eager",
                "dynamic": dynamic, "fusion": _fusion(options), "recompile_limit": recompile_limit, "name": name}
    if isinstance(model, Module):
        return OptimizedModule(model, settings)
    compiled = CompiledFunction(model, None, **settings)

    @functools.wraps(model)
    def compiled_call(*args, **kwargs):
        return compiled(*args, **kwargs)

    compiled_call._compiled = compiled  # (its variants, for inspection)
    compiled_call._torchdynamo_orig_callable = model
    return compiled_call


def is_compiling() -> bool:
    """Whether the code calling this runs under ``ember.compile``'s capture (in this thread)."""
    return current_capture() is not None


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run ``fn`` eagerly (a decorator, with or without arguments): ``ember.compile(fn)`` returns ``fn``, and a
    compiled function calling ``fn`` has a graph break there (its call runs eagerly)."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    name = getattr(fn, "__qualname__", type(fn).__name__)

    @functools.wraps(fn)
    def run_eagerly(*args, **kwargs):
        note_break(f"a call of {name}, marked ember.compiler.disable" + (f" ({reason})" if reason else ""))
        return fn(*args, **kwargs)

    run_eagerly._ember_disabled = True
    return run_eagerly


def allow_in_graph(fn):
    """Put ``fn`` in compiled graphs as one opaque call: returns ``fn`` (nothing is traced into yet)."""
    return fn


def mark_static_address(t, guard: bool = True) -> None:
    """Mark ``t``'s storage as fixed across calls (a hint for CUDA graphs); ember's eager runs need no hint."""
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a tensor but received {type(t).__name__}")


def reset() -> None:
    """Forget compiled code and guards: every compiled function captures its next call afresh."""
    reset_all()


def _check_tensor(name: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} expects a tensor but received {type(t).__name__}")


def _mark(t, index, attr):
    dims = t.__dict__.setdefault(attr, set())
    dims.update(index if isinstance(index, (list, tuple)) else (index,))


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None) -> None:  # noqa: A002
    """Mark dimension(s) ``index`` of ``t`` as varying between calls: a compiled function called with ``t``
    captures a graph in which those sizes are symbolic (where it does not specialise on them), guarded by
    size >= 2, and replays it for every such size.

    >>> import ember
    >>> x = ember.ones(4, 3)
    >>> ember._dynamo.mark_dynamic(x, 0)
    >>> f = ember.compile(lambda x: x.sum(0))
    >>> f(x).shape
    ember.Size([3])
    """
    _check_tensor("mark_dynamic", t)
    _mark(t, index, "_dynamo_dynamic_indices")


def maybe_mark_dynamic(t, index) -> None:
    """Like :func:`mark_dynamic`; a dim the function specialises on stays static without complaint."""
    _check_tensor("maybe_mark_dynamic", t)
    _mark(t, index, "_dynamo_dynamic_indices")


def mark_static(t, index=None) -> None:
    """Mark dimension(s) ``index`` of tensor ``t`` (all of them when None) as fixed between calls: automatic
    dynamic shapes leave them static.  On a module, a hint with no effect here."""
    if isinstance(t, Tensor):
        _mark(t, range(t.ndim) if index is None else index, "_dynamo_static_indices")


def graph_break() -> None:
    """End the captured graph here: under ``ember.compile`` the call runs eagerly (a graph break)."""
    note_break("graph_break() called")


def disallow_in_graph(fn):
    """Keep ``fn`` out of compiled graphs (a graph break at each call): eager already runs it as Python."""
    return fn


forbid_in_graph = disallow_in_graph


def optimize(*args, **kwargs):
    """The older spelling of ``ember.compile``'s decorator: ``optimize(backend)(fn)``."""
    backend = args[0] if args else kwargs.get("backend", "inductor")
    return lambda fn: compile(fn, backend=backend)


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The compiler backends ``ember.compile(backend=...)`` accepts by name."""
    return ["aot_eager", "eager", "ember", "inductor"]


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
