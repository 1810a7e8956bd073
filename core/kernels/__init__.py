"""The shared kernel library: every kernel written once against ``xp``.

``library(xp)`` returns ``{op name: function}`` for any NumPy-compatible array
module.  A backend adopts the table and replaces only the entries it can do
better.  Kernels take and return arrays of ``xp``; they never see Tensors.
Non-view kernels return fresh arrays.

The table is assembled from the modules in ``MODULES``, one per op family of
``ember.ops`` (pointwise, reduction, shape, indexing, linalg, random, creation,
sorting, fft; the neural-network kernels by family: conv, pool, norm,
activation, resize), with the recurrent time loops (``rnn``), the CTC
recursions (``ctc``) and the optimizer updates (``optim``) in their own;
each ends in a ``kernels(xp, strategy=None) -> dict`` function that binds its
kernels for ``xp`` and the backend's strategy (:mod:`.strategy`: the
backend's allocator and block runner, which the kernels that allocate large
arrays or cut their work into blocks use; plain defaults when None).  A module's
``MUTATING`` maps its kernels that write into array arguments (``copy_``, the
optimizer updates, ...) to the positions of the arguments they write: a
backend that retries a failed kernel another way must not let a first
attempt's partial writes count twice.
"""
from __future__ import annotations

import contextvars
import inspect
import importlib

import numpy as _np

from .strategy import Strategy

MODULES = ["pointwise", "reduction", "shape", "indexing", "linalg", "conv", "pool", "norm", "activation", "resize",
           "rnn", "ctc", "random", "creation", "sorting", "optim", "fft"]


def _mutating() -> dict:
    table = {}
    for m in MODULES:
        table.update(getattr(importlib.import_module(f"{__name__}.{m}"), "MUTATING", {}))
    return table


def _ignoring_fp_errors():
    """``wrap(fn)``: ``fn`` run with NumPy's floating-point error reports off.

    Tensors follow IEEE arithmetic silently, as PyTorch's do (``1 / 0`` is inf, ``log(-1)`` NaN, no
    warning), whatever NumPy's error state is in the calling thread; the state itself (``np.seterr``)
    is left as the program set it.  Only the kernels a module lists in ``QUIET`` (those that meet
    zeros, negative arguments or overflow on ordinary inputs) are wrapped: the guard costs a
    fraction of a microsecond.
    """
    # NumPy's state is set whatever the array library is: libraries built on NumPy (array_api_strict) report
    # through it, and for the others (CuPy) it costs a context-variable swap
    state = _np.errstate
    if _NUMPY_QUIET is None:
        def wrap(fn):
            def guarded(*args, **kwargs):
                with state(all="ignore"):
                    return fn(*args, **kwargs)
            guarded.__wrapped__ = fn
            return guarded
        return wrap

    var, quiet = _NUMPY_QUIET
    set_, reset = var.set, var.reset
    # The kernel runs inside one context that holds the quiet state (entering it is a fraction of the cost of
    # setting and resetting the variable, and keeps add/mul cheap).  A context is entered by one caller at a
    # time: another thread, or a kernel nested in one, takes the slower path of setting the variable.
    run = _QUIET_CONTEXT.run

    def slow(fn, *args, **kwargs):
        token = set_(quiet)
        try:
            return fn(*args, **kwargs)
        finally:
            reset(token)

    def wrap(fn):
        def guarded(*args, **kwargs):
            try:
                return run(fn, *args, **kwargs)
            except RuntimeError as exc:
                if not _entered(exc):
                    raise
            return slow(fn, *args, **kwargs)

        # a ufunc's own signature spelled out: a third of the generic wrapper's cost, on the hottest kernels
        def guarded1(x, out=None):
            try:
                return run(fn, x) if out is None else run(fn, x, out=out)
            except RuntimeError as exc:
                if not _entered(exc):
                    raise
            return slow(fn, x) if out is None else slow(fn, x, out=out)

        def guarded2(x, y, out=None):
            try:
                return run(fn, x, y) if out is None else run(fn, x, y, out=out)
            except RuntimeError as exc:
                if not _entered(exc):
                    raise
            return slow(fn, x, y) if out is None else slow(fn, x, y, out=out)

        inputs = getattr(fn, "nin", None) if getattr(fn, "nout", None) == 1 else None
        g = {1: guarded1, 2: guarded2}.get(inputs) or _spelled(fn, run, slow) or guarded
        g.__name__ = getattr(fn, "__name__", "kernel")
        g.__wrapped__ = fn  # (a compiled replay calls it inside its own quiet region)
        return g
    return wrap


def _spelled(fn, run, slow):
    """The quiet wrapper of a Python kernel ``fn`` with ``fn``'s own parameters spelled out (``def guarded(x, axis=None,
    keepdims=False)``), which passes them on without packing them into ``*args`` and ``**kwargs`` (~0.2 us of a
    4x4 sum's 1.5); None for a kernel of another kind (a builtin, ``*args``, ``**kwargs``, positional-only
    parameters), which takes the generic wrapper."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_posonlyargcount:
        return None
    try:
        params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.name.startswith("_q_") for p in params):  # (the wrapper's own names)
        return None
    heads, passes, defaults = [], [], {}
    star = False
    for i, p in enumerate(params):
        if p.kind is p.KEYWORD_ONLY and not star:
            heads.append("*")
            star = True
        if p.default is p.empty:
            heads.append(p.name)
        else:
            defaults[f"_q_d{i}"] = p.default
            heads.append(f"{p.name}=_q_d{i}")
        passes.append(p.name if p.kind is p.POSITIONAL_OR_KEYWORD else f"{p.name}={p.name}")
    head, call = ", ".join(heads), ", ".join(["_q_fn"] + passes)
    src = (f"def guarded({head}):\n"
           f"    try:\n"
           f"        return _q_run({call})\n"
           f"    except RuntimeError as _q_exc:\n"
           f"        if not _q_entered(_q_exc):\n"
           f"            raise\n"
           f"    return _q_slow({call})\n")
    ns = {"_q_fn": fn, "_q_run": run, "_q_slow": slow, "_q_entered": _entered, **defaults}
    exec(compile(src, f"<quiet {getattr(fn, '__qualname__', 'kernel')}>", "exec"), ns)  # noqa: S102 - names from a signature
    return ns["guarded"]


def _entered(exc) -> bool:
    """Whether ``exc`` is the quiet context refusing a second entry (another thread in it, or a nested kernel)."""
    return str(exc).startswith("cannot enter context")


def _numpy_quiet():
    try:
        from numpy._core.umath import _extobj_contextvar as var, _make_extobj
        quiet = _make_extobj(all="ignore")
    except (ImportError, AttributeError, TypeError):
        return None
    return var, quiet


_NUMPY_QUIET = _numpy_quiet()
_QUIET_CONTEXT = contextvars.Context()
if _NUMPY_QUIET is not None:
    _QUIET_CONTEXT.run(_NUMPY_QUIET[0].set, _NUMPY_QUIET[1])


def fp_quiet_begin():
    """Turn NumPy's floating-point error reports off in this thread until :func:`fp_quiet_end` (a backward
    pass does: its formulas meet ``inf * 0`` on the way to PyTorch's results).  Returns the token to end."""
    if _NUMPY_QUIET is None:
        state = _np.errstate(all="ignore")
        state.__enter__()
        return state
    var, quiet = _NUMPY_QUIET
    return var.set(quiet) if var.get() is not quiet else None


def fp_quiet_end(token) -> None:
    if token is None:
        return
    if _NUMPY_QUIET is None:
        token.__exit__(None, None, None)
    else:
        _NUMPY_QUIET[0].reset(token)


def quiet_names() -> frozenset:
    """The kernel names that run with NumPy's floating-point reports off: every module's ``QUIET``."""
    return frozenset().union(*(getattr(importlib.import_module(f"{__name__}.{m}"), "QUIET", ()) for m in MODULES))


def quieted(table: dict) -> dict:
    """``table`` (a backend's own kernels) with those named in :func:`quiet_names` run quietly, as the shared
    library runs its own: a backend's faster ``astype`` must not report an overflow that the shared one hides."""
    wrap = _ignoring_fp_errors()
    names = quiet_names()
    return {op: wrap(fn) if op in names and fn is not None else fn for op, fn in table.items()}


def quiet(fn):
    """``fn`` run with NumPy's floating-point reports off, as the quiet kernels run: for host-side conversions
    (a tensor built from Python numbers beyond its dtype's range holds +-inf, silently, as in PyTorch)."""
    return _ignoring_fp_errors()(fn)


def _keeping_low_precision(fn):
    """``fn`` whose float16/bfloat16 first argument gets a result of its own dtype: the array library computes
    some functions only in float32/float64, and PyTorch rounds the result back to the input's precision.  A
    module lists such kernels in ``LOW_PRECISION``."""
    def kept(x, *args, **kwargs):
        out = fn(x, *args, **kwargs)
        dt = getattr(x, "dtype", None)
        if dt is not None and dt.itemsize == 2 and dt.kind in "fV" and out.dtype != dt and out.dtype.kind == "f":
            return out.astype(dt)
        return out

    kept.__name__ = getattr(fn, "__name__", "kernel")
    kept.__wrapped__ = fn
    return kept


def library(xp, allocate=None, run_blocks=None) -> dict:
    """The kernel table for array module ``xp``, with a backend's two hooks (``ember.backend.Backend.allocate``
    and ``run_blocks``; None: ``xp.empty`` and one call, see :mod:`.strategy`)."""
    table = {}
    wrap = _ignoring_fp_errors()
    strategy = Strategy(xp, allocate, run_blocks)
    for name in MODULES:
        mod = importlib.import_module(f"{__name__}.{name}")
        quiet, low = getattr(mod, "QUIET", ()), getattr(mod, "LOW_PRECISION", ())
        for op, fn in mod.kernels(xp, strategy).items():
            if op in table:
                raise RuntimeError(f"kernel {op!r} defined twice (in ember.kernels.{name} and an earlier module)")
            table[op] = wrap(fn) if op in quiet and fn is not None else fn
            if op in low and fn is not None:
                table[op] = _keeping_low_precision(table[op])
    return table


MUTATING = _mutating()


def copied_views(xp) -> frozenset:
    """The view kernels of :func:`library` that return copies for ``xp`` (:func:`.shape.copied_views`)."""
    return importlib.import_module(f"{__name__}.shape").copied_views(xp)
