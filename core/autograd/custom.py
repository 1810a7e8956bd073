"""Running a user ``autograd.Function``: forward without recording, then one node for the call."""
from __future__ import annotations

from ..tensor import Tensor
from .function import grad_edge
from .grad_mode import STATE, no_grad


def apply_function(cls, args, kwargs):
    ctx = cls._backward_cls.__new__(cls._backward_cls)
    tensors = [a for a in args if isinstance(a, Tensor)]
    recording = STATE.enabled and any(t._rg for t in tensors)
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
    has_setup = cls.setup_context is not _base_setup_context()
    with no_grad():
        if has_setup:
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    dirty = set(map(id, ctx.dirty_tensors))
    non_diff = set(map(id, ctx.non_differentiable))
    if not recording:
        return out
    from ..dispatch import _version

    ctx.next_functions = tuple(grad_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args)
    ctx._shapes = tuple((a._data.shape, a._data.dtype) if isinstance(a, Tensor) else None for a in args)
    ctx.n_outputs = len(outs)
    ctx._out_meta = tuple((o._data.shape, o.dtype, o._dev) if isinstance(o, Tensor) else ((), None, None)
                          for o in outs)
    if STATE.anomaly:
        from .function import anomaly_trace

        anomaly_trace(ctx)
    results = []
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            results.append(o)
            continue
        if id(o) in dirty:
            o._bump()
            t = o
        elif any(o is a for a in tensors) or o._fn is not None or o._base is not None:
            t = _alias(o)
        else:
            t = o
        if id(o) not in non_diff and t.dtype.category >= 2:
            t._rg, t._fn, t._nr = True, ctx, i
        results.append(t)
    saved = ctx.to_save
    if saved:
        ctx._saved = tuple(saved)
        ctx._vers = tuple(_version(t) if isinstance(t, Tensor) else None for t in saved)
    return results[0] if single else tuple(results)


def _alias(o):
    """A new tensor object sharing ``o``'s data (an output that is an input must be a new node's output)."""
    from ..tensor import _wrap

    t = _wrap(o._data, o._dev)
    b = o._base
    t._base = o if b is None else b
    return t


def _base_setup_context():
    from .function import Function

    return Function.setup_context

