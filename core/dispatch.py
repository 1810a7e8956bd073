"""From an operator call to a kernel call, and the graph record around it; the policy every op shares.

The hot path of every op: check devices, promote dtypes only when they
differ, look the kernel up in the device's dict, wrap the result without
argument parsing, and record a graph node only when grad mode is on and an
input requires grad.  Around it, the policy that ops do not repeat: type
promotion, ``out=``, in-place writes and the history they rewrite, and the
one interception point (:func:`intercept`) where tracing, autocast and
profiling see every op.  Nothing here imports from ``ember.ops``: an op that
the policy itself needs (``Cast``) is looked up by name in ``OPS``.
"""
from __future__ import annotations

import threading
import warnings
import weakref
from functools import partial

import numpy as np

from . import dtypes
from .autograd.function import OPS, SAVED_HOOKS, VOLATILE, Node, anomaly_trace, grad_edge, pack_output, pack_saved
from .autograd.grad_mode import STATE, enable_grad
from .backend import resolve as resolve_device
from .state import ACTIVE, GRAD_OFF, INFERENCE_ON, is_grad_enabled, is_inference, modes
from .tensor import Tensor, _wrap

_new = object.__new__
_SCALARS = (int, float, bool, complex, np.number, np.bool_)
_PY_SCALARS = (float, int, bool, complex)  # a NumPy scalar promotes as the Python scalar it holds, as in PyTorch
_HANDLERS: list = []  # interception handlers, innermost last (see intercept)
_RUNNING = threading.local()  # per thread: the handlers running now, not called again for the ops inside them
_PASS = object()  # _intercepted's answer when every handler is running: compute the op itself
AUTOCAST = threading.local()  # this thread's autocast: .on = {device type: dtype} while enabled (see ember.amp)


def autocasting(t) -> bool:
    """Whether autocast is on in this thread for tensor ``t``'s device type.

    Ops that refuse operands of different dtypes accept them then: autocast casts them at dispatch.
    """
    on = getattr(AUTOCAST, "on", None)
    return bool(on) and t._dev.type in on


def _scalar_fixes():
    """Array dtypes whose Python-scalar operands need PyTorch's treatment before the kernel sees them:
    integers wrap into the range (``int8 * 1000`` computes with ``1000 - 1024``; NumPy would raise), and
    bfloat16 takes the scalar in its own type (its library would widen the result to float32)."""
    fixes = {}
    for d in dtypes.ALL:
        if d.np is None or d is dtypes.bool:
            continue
        nd = np.dtype(d.np)
        if d.category == dtypes.INT:
            info = np.iinfo(nd)
            fixes[d] = (int(info.min), int(info.max), None)
        elif d is dtypes.bfloat16:
            fixes[d] = (None, None, nd.type)
        elif d is dtypes.float16:  # beyond its range a number is +-inf (NumPy would warn while casting)
            fixes[d] = (None, None, _half_scalar)
    return fixes


def _half_scalar(v):
    if isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > 65504 and v == v:
        return float("inf") if v > 0 else float("-inf")
    return v


_SCALAR_FIX = _scalar_fixes()


def int_value(v, d: dtypes.dtype):
    """Python int ``v`` stored in integer dtype ``d`` as PyTorch stores it (``full``, ``where``, ``clamp``):
    refused when it overflows (an unsigned type also takes negatives down to ``-max``), else wrapped."""
    if type(v) is not int or d.category != dtypes.INT or d.np is None:
        return v
    info = np.iinfo(np.dtype(d.np))
    if not (-int(info.max) if info.min == 0 else int(info.min)) <= v <= int(info.max):
        raise RuntimeError(f"value cannot be converted to type {d.name} without overflow (got {v})")
    return fix_scalar(v, d)


def fix_scalar(v, d):
    """Python scalar ``v`` as an operand of a tensor of ember dtype ``d`` (see :func:`_scalar_fixes`)."""
    fix = _SCALAR_FIX.get(d)
    if fix is None:
        return v
    lo, hi, cast_to = fix
    if cast_to is not None:
        return cast_to(v) if isinstance(v, (int, float)) else v
    if type(v) is int and not lo <= v <= hi:
        return (v - lo) % (hi - lo + 1) + lo
    return v


# --------------------------------------------------------------------------- errors
def _op_name(Op):
    n = type.__getattribute__(Op, "__name__")
    return n[:-9].lower() if n.endswith("Backward0") else n


def device_error(op, a, b):
    return RuntimeError(f"{op}: expected all tensors to be on the same device, but found at least two devices, "
                        f"{a._dev} and {b._dev}! (move one with .to(device); only copy_ and to() cross devices)")


def _cpu_scalar(t):
    return t._dev.type == "cpu" and t._data.ndim == 0


def _scalar_to(t, dev):
    """Move a 0-dim CPU tensor to ``dev`` (PyTorch lets those mix with any device)."""
    return _wrap(dev.backend.from_numpy(t._dev.backend.to_numpy(t._data), dev.index), dev)


def same_device(op, tensors):
    """The common device of ``tensors``; 0-dim CPU tensors may join any device."""
    main = next((t for t in tensors if not _cpu_scalar(t)), tensors[0])
    for t in tensors:
        if t._dev is not main._dev and not _cpu_scalar(t):
            raise device_error(op, main, t)
    return main._dev


def broadcast_error(shapes):
    """PyTorch's message for shapes that do not broadcast, or None if they do."""
    n = max(len(s) for s in shapes)
    padded = [(1,) * (n - len(s)) + tuple(s) for s in shapes]
    for d in range(n):
        sizes = {p[d] for p in padded if p[d] != 1}
        if len(sizes) > 1:
            a, b = [p[d] for p in padded if p[d] != 1][:2]
            return (f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                    f"dimension {d}")
    return None


def kernel_error(Op, exc, operands):
    """A clear error for a kernel that refused its operands: the op, the shapes and dtypes."""
    shapes = [tuple(getattr(o, "shape", ())) for o in operands]
    msg = broadcast_error([s for s in shapes]) if len(shapes) > 1 else None
    desc = ", ".join(f"{list(getattr(o, 'shape', ()))} {getattr(o, 'dtype', type(o).__name__)}" for o in operands)
    text = f"{_op_name(Op)}: {msg}" if msg else f"{_op_name(Op)}: cannot compute on operands ({desc}): {exc}"
    return RuntimeError(text)


# --------------------------------------------------------------------------- promotion
def result_type(*operands) -> dtypes.dtype:
    """PyTorch's result dtype of an operation over tensors and scalars.

    >>> import ember
    >>> ember.result_type(ember.tensor([1, 2]), 1.0)
    ember.float32
    """
    dims, zero, scalars = [], [], []
    for o in operands:
        if isinstance(o, Tensor):
            (dims if o._data.ndim else zero).append(o.dtype)
        elif isinstance(o, dtypes.dtype):
            dims.append(o)
        else:
            scalars.append(o)
    return dtypes.result_type_of(dims, zero, scalars)


def cast(t: Tensor, d: dtypes.dtype) -> Tensor:
    """``t`` converted to dtype ``d`` (differentiably), or ``t`` itself if it already is."""
    if t.dtype is d:
        return t
    if t._rg and d.category < dtypes.FLOAT:  # integer and bool results carry no gradient
        t = t.detach()
    return apply(OPS["Cast"], t, t._dev.backend.array_dtype(d))


def promote(op, a, b):
    """Bring two operands (tensors or scalars) to PyTorch's common dtype.

    Returns ``(a, b)`` with tensors cast; scalars are left for the kernel when
    their category does not exceed the result's.
    """
    rt = result_type(a, b)
    if isinstance(a, Tensor):
        a = cast(a, rt)
    elif dtypes.scalar_category(a) > rt.category:
        a = rt.np.type(a) if rt.np is not None else a
    elif rt.np is not None:
        a = fix_scalar(a, rt)
    if isinstance(b, Tensor):
        b = cast(b, rt)
    elif rt.np is not None and isinstance(b, _SCALARS):
        b = fix_scalar(b, rt)
    return a, b


# --------------------------------------------------------------------------- apply
def unary(Op, a, *params):
    """Apply a one-tensor Op: ``Op.forward(ctx, kernels, array, *params)``."""
    if _HANDLERS:
        r = _intercepted(unary, Op, (a, *params))
        if r is not _PASS:
            return r
    dev = a._dev
    ctx = _new(Op)
    try:
        out = Op.forward(ctx, dev.kernels, a._data, *params)
    except (ValueError, TypeError) as exc:
        raise kernel_error(Op, exc, (a._data,)) from None
    if a._rg and (not GRAD_OFF or (m := modes()) is None or m.grad):
        return record(ctx, out, dev, (a,))
    if type(out) is tuple:
        return tuple(_wrap(o, dev) for o in out)
    t = _new(Tensor)  # _wrap(out, dev), inline: the result of every op not recorded
    t._data = out if type(out) is dev.atype else dev.backend.as_array(out)
    t._dev, t._rg, t._fn = dev, False, None
    if INFERENCE_ON and is_inference():
        t._inference = True
    return t


def binary(Op, a, b, *params):
    """Apply a two-operand Op with broadcasting and type promotion (one operand may be a scalar)."""
    if _HANDLERS:
        r = _intercepted(binary, Op, (a, b, *params))
        if r is not _PASS:
            return r
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            x, y, dev = a._data, b._data, a._dev
            if dev is not b._dev or x.dtype is not y.dtype:
                if dev is not b._dev:
                    dev = same_device(_op_name(Op), (a, b))
                    if a._dev is not dev:
                        a = _scalar_to(a, dev)
                    if b._dev is not dev:
                        b = _scalar_to(b, dev)
                if a.dtype is not b.dtype:
                    a, b = promote(_op_name(Op), a, b)
                x, y = a._data, b._data
            rg = a._rg or b._rg
        elif isinstance(b, _SCALARS):
            if type(b) not in _PY_SCALARS:
                b = b.item()
            x, y, dev = a._data, b, a._dev
            cat = dtypes.scalar_category(b)
            if cat > _category(x, dev):
                a = cast(a, dtypes.default_for_category(cat, a.dtype))
                x = a._data
            elif (d := a.dtype) in _SCALAR_FIX:  # ember dtypes: other libraries' must not meet NumPy's
                y = fix_scalar(y, d)
            rg = a._rg
        else:
            return NotImplemented
    elif isinstance(a, _SCALARS) and isinstance(b, Tensor):
        if type(a) not in _PY_SCALARS:
            a = a.item()
        x, y, dev = a, b._data, b._dev
        cat = dtypes.scalar_category(a)
        if cat > _category(y, dev):
            b = cast(b, dtypes.default_for_category(cat, b.dtype))
            y = b._data
        elif (d := b.dtype) in _SCALAR_FIX:
            x = fix_scalar(x, d)
        rg = b._rg
    else:
        return NotImplemented
    ctx = _new(Op)
    try:
        out = Op.forward(ctx, dev.kernels, x, y, *params)
    except (ValueError, TypeError, IndexError) as exc:
        raise kernel_error(Op, exc, (x, y)) from None
    if rg and (not GRAD_OFF or (m := modes()) is None or m.grad):
        return record(ctx, out, dev, (a, b))
    t = _new(Tensor)  # as in unary
    t._data = out if type(out) is dev.atype else dev.backend.as_array(out)
    t._dev, t._rg, t._fn = dev, False, None
    if INFERENCE_ON and is_inference():
        t._inference = True
    return t


def _category(arr, dev):
    d = arr.dtype
    if isinstance(d, np.dtype):  # other libraries' dtypes must not be compared with NumPy's
        return dtypes.FROM_NP[d].category
    return dev.backend.dtype_of(arr).category


def apply(Op, *args):
    """Apply an Op whose Tensor arguments are already on one device and of agreeing dtypes.

    Tensors among ``args`` become arrays for ``Op.forward``; other arguments
    pass through.  A list or tuple of tensors (``cat``) becomes a list of arrays.
    """
    if _HANDLERS:
        r = _intercepted(apply, Op, args)
        if r is not _PASS:
            return r
    dev = None
    rg = False
    tensors = []
    arrays = []
    for a in args:
        if isinstance(a, Tensor):
            if dev is None:
                dev = a._dev
            elif a._dev is not dev:
                raise device_error(_op_name(Op), tensors[0], a)
            rg = rg or a._rg
            tensors.append(a)
            arrays.append(a._data)
        elif type(a) in (list, tuple) and a and isinstance(a[0], Tensor):
            for t in a:
                if dev is None:
                    dev = t._dev
                elif t._dev is not dev:
                    raise device_error(_op_name(Op), tensors[0] if tensors else a[0], t)
                rg = rg or t._rg
                tensors.append(t)
            arrays.append([t._data for t in a])
        else:
            arrays.append(a)
    if dev is None:
        raise TypeError(f"{_op_name(Op)}: expected at least one Tensor argument")
    ctx = _new(Op)
    try:
        out = Op.forward(ctx, dev.kernels, *arrays)
    except (ValueError, TypeError) as exc:
        raise kernel_error(Op, exc, arrays) from None
    if rg and (not GRAD_OFF or (m := modes()) is None or m.grad):
        return record(ctx, out, dev, tensors)
    if type(out) is tuple or type(out) is list:
        return tuple(_wrap(o, dev) for o in out)
    return _wrap(out, dev)


def link(ctx, inputs):
    """Connect node ``ctx`` to the graph positions of ``inputs`` and save what its Op keeps.

    Returns whether an input is volatile (a deprecated ``Variable``).
    """
    if ACTIVE.inplace_recorded:  # a view whose base changed in place since takes the base's new history
        for t in inputs:
            if isinstance(t, Tensor):
                b = t._base
                if b is not None and t._vv != b._ver and (t._rg or b._rg) and not t._nograd_view:
                    refresh_view(t)
    edges = []
    metas = []
    volatile = False
    for t in inputs:
        if isinstance(t, Tensor):
            fn = t._fn
            if fn is not None:
                edges.append((fn, t._nr))
                volatile = volatile or fn is VOLATILE
            else:
                edges.append(grad_edge(t))
            arr = t._data
            metas.append((arr.shape, arr.dtype))
        else:
            edges.append((None, 0))
            metas.append(None)
    ctx.next_functions = tuple(edges)
    ctx._shapes = tuple(metas)
    if type(ctx).save_inputs:
        if SAVED_HOOKS.stack:
            pack_saved(ctx, inputs)
            return _link_end(ctx, volatile)
        ctx._saved = tuple(inputs)
        vers = []
        for t in inputs:
            if isinstance(t, Tensor):
                if ACTIVE.inference_ever and t._inference:
                    raise RuntimeError(_INFERENCE_SAVED)
                b = t._base
                vers.append(t._ver if b is None else b._ver)
            else:
                vers.append(None)
        ctx._vers = tuple(vers)
    if STATE.anomaly:
        anomaly_trace(ctx)
    return volatile


_INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                    "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
                    "normal tensor and use it in autograd, or use `ember.no_grad()` instead of "
                    "`ember.inference_mode()`.")


def refresh_view(v):
    """Give view ``v`` the history of its base's current value (the base was changed in place since)."""
    base = v._base
    if v._view is not None and (base._rg or base._fn is not None):
        with enable_grad():
            fresh = replay_view(v._view, base)
        v._fn, v._nr, v._rg = fresh._fn, fresh._nr, True
    v._vv = base._ver


def _link_end(ctx, volatile):
    if STATE.anomaly:
        anomaly_trace(ctx)
    return volatile


def record(ctx, out, dev, inputs):
    """Wrap forward's result(s) as outputs of graph node ``ctx`` over ``inputs``."""
    if link(ctx, inputs):
        return _volatile(out, dev)
    Op = type(ctx)
    if type(out) is tuple or type(out) is list:
        ctx.n_outputs = len(out)
        ctx._plain = False
        backend = dev.backend
        ctx._out_meta = tuple((o.shape, backend.dtype_of(o), dev) for o in out)
        res = []
        for i, o in enumerate(out):
            t = _wrap(o, dev)
            if i not in Op.nondiff_outputs:
                t._rg = True
                t._fn = ctx
                t._nr = i
            res.append(t)
        return tuple(res)
    t = _new(Tensor)  # _wrap's work, inline on the hottest path
    t._data = out if type(out) is dev.atype else dev.backend.as_array(out)
    t._dev = dev
    t._rg = True
    t._fn = ctx
    if INFERENCE_ON and is_inference():
        t._inference = True
    if Op.save_output:
        if SAVED_HOOKS.stack:
            pack_output(ctx, t)
        else:
            ctx._out = (t._data, dev, weakref.ref(t), 0)
    return t


def _volatile(out, dev):
    outs = out if type(out) in (tuple, list) else (out,)
    res = []
    for o in outs:
        t = _wrap(o, dev)
        t._rg, t._fn, t._volatile = True, VOLATILE, True
        res.append(t)
    return res[0] if len(res) == 1 and type(out) not in (tuple, list) else tuple(res)


# --------------------------------------------------------------------------- in-place
OVERLAP_ERROR = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.")
# The writes PyTorch lets through into a tensor some of whose elements share memory: fill_ with a number (each
# element gets the one value), the triangles, and, with a deprecation warning, the indexed writes (the example its
# warning gives)
OVERLAP_ALLOWED = {"fill_": None, "tril_": None, "triu_": None, "index_put_": "tensor[indices] = tensor",
                   "index_fill_": "tensor[mask] = scalar", "masked_fill_": "tensor[mask] = scalar"}


def internal_overlap(t: Tensor) -> bool:
    """Whether some elements of ``t`` share one memory location (PyTorch's internal overlap: a dimension of size
    > 1 and stride 0, as in an expanded tensor).  For arrays without strides, the strides are those the chain of
    views that made ``t`` gives a strided host array of its base's shape."""
    strides = getattr(t._data, "strides", None)
    if strides is not None:
        if 0 not in strides:  # (the common case, on every in-place write)
            return False
    elif t._view is None:
        return False
    else:
        steps = []
        chain = t._view
        while chain is not None:
            steps.append(chain[1:])
            chain = chain[0]
        if not any(getattr(Op, "zero_strides", False) for Op, _ in steps):
            return False
        k = resolve_device("cpu").kernels
        probe = np.empty(t._base._data.shape, t._base.dtype.np or np.uint16)
        try:
            for Op, params in reversed(steps):
                probe = Op.forward(_new(Op), k, probe, *params)
        except (ValueError, TypeError, RuntimeError):  # a view the strided array cannot express: none found
            return False
        strides = probe.strides
    shape = t._data.shape
    return 0 not in shape and any(st == 0 and n > 1 for st, n in zip(strides, shape))


def check_overlap(t: Tensor) -> None:
    """PyTorch's error for a write into a tensor some of whose elements share memory."""
    if internal_overlap(t):
        raise RuntimeError(OVERLAP_ERROR)


def _overlap_policy(op):
    if op not in OVERLAP_ALLOWED:
        raise RuntimeError(OVERLAP_ERROR)
    example = OVERLAP_ALLOWED[op]
    if example is not None:
        warnings.warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before performing "
                      f"this operation. This also applies to advanced indexing e.g. {example}", UserWarning,
                      stacklevel=4)
    return True


def write_changed(a: Tensor, out) -> None:
    """Write into ``a``, some of whose elements share memory, the elements of ``out`` that differ from ``a``'s (a
    NaN staying NaN is no change): an indexed write changes one of several aliases, and the others must not write
    their old value back over it."""
    k = a._dev.kernels
    old = k["copy"](a._data)
    same_nan = k["logical_and"](k["ne"](out, out), k["ne"](old, old))
    changed = k["logical_and"](k["ne"](out, old), k["logical_not"](same_nan))
    k["setitem"](a._data, changed, k["getitem"](out, changed))


def check_inplace(t: Tensor, op: str, recording=False) -> bool:
    """Refuse an in-place change autograd cannot track (``recording``: an operand other than ``t`` needs grad).
    True when the write goes on into a tensor some of whose elements share memory (see :func:`internal_overlap`)."""
    overlapped = False
    if t._inference and not is_inference():
        raise RuntimeError(f"{op}: Inplace update to inference tensor outside InferenceMode is not allowed. You can "
                           f"make a clone to get a normal tensor before doing inplace update.")
    if internal_overlap(t):
        overlapped = _overlap_policy(op)
    if t._nograd_view and is_grad_enabled() and (recording or t._rg or t._base._rg):
        raise RuntimeError(f"{op}: A view was created in no_grad mode and is being modified inplace with grad mode "
                           f"enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You "
                           f"can clarify your code by moving both the view and the inplace either both inside the "
                           f"no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
                           f"want the inplace to be tracked).")
    if is_grad_enabled() and t._rg and t._fn is None and (t._base is None or t._base._rg):
        raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an in-place operation.")
    if t._base is not None and is_grad_enabled() and t._base._rg and t._base._fn is None and t._rg:
        raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being used in an in-place "
                           f"operation.")
    if is_grad_enabled() and t._base is not None and getattr(t._fn, "multi_view", False):
        raise RuntimeError(f"{op}: Output {t._nr} of {type(t._fn).__name__[:-9]} is a view and is being modified "
                           f"inplace. This view is the output of a function that returns multiple views. Such "
                           f"functions do not allow the output views to be modified inplace. You should replace "
                           f"the inplace operation by an out-of-place one.")
    return overlapped


def inplace(Op, a: Tensor, *args):
    """Apply ``Op`` and write its result into ``a``; ``a`` takes the Op's node as its history.

    Tensor arguments in ``args`` must share ``a``'s device; they are cast to
    ``a``'s dtype (PyTorch refuses casts that lose the category).
    """
    if _HANDLERS:
        r = _intercepted(inplace, Op, (a, *args))
        if r is not _PASS:
            return r
    name = getattr(Op, "inplace_name", None) or _op_name(Op) + "_"
    overlapped = check_inplace(a, name, is_grad_enabled() and any(isinstance(x, Tensor) and x._rg for x in args))
    dt = a.dtype
    conv = []
    for x in args:
        if isinstance(x, Tensor):
            if x._dev is not a._dev and not (x._dev.type == "cpu" and x._data.ndim == 0):
                raise device_error(name, a, x)
            if x._dev is not a._dev:
                x = _scalar_to(x, a._dev)
            if x.dtype is not dt:
                if x.dtype.category > dt.category:
                    raise RuntimeError(f"{name}: result type {x.dtype} can't be cast to the desired output type {dt}")
                x = cast(x, dt)
        elif isinstance(x, _SCALARS) and not isinstance(x, (bool, np.bool_)) \
                and dtypes.scalar_category(x) > dt.category:
            raise RuntimeError(f"{name}: result type {dtypes.default_for_category(dtypes.scalar_category(x))} "
                               f"can't be cast to the desired output type {dt}")
        elif isinstance(x, _SCALARS) and (d := a.dtype) in _SCALAR_FIX:
            x = fix_scalar(x, d)
        conv.append(x)
    recording = is_grad_enabled() and (a._rg or any(isinstance(x, Tensor) and x._rg for x in conv))
    old = a
    if recording and Op.save_inputs:
        old = snapshot(a)  # the backward needs a's value before the write
    ctx = _new(Op)
    arrays = [x._data if isinstance(x, Tensor) else x for x in conv]
    kn = Op.__dict__.get("kernel_name")
    if kn is not None and not overlapped and kn in a._dev.backend.writes_into:
        # the kernel writes straight into a's memory (one pass, no temporary); it checks shapes and casts
        # before writing, and on an error nothing is written: the general path below then reports it
        if a._fn is not None:
            _pin_saved_output(a)
        try:
            a._dev.kernels[kn](a._data, *arrays, out=a._data)
        except (ValueError, TypeError):
            pass
        else:
            return write_inplace(a, None, ctx if recording else None, (old, *conv))
    try:
        out = Op.forward(ctx, a._dev.kernels, a._data, *arrays)
    except (ValueError, TypeError) as exc:  # operands that do not broadcast: PyTorch's RuntimeError
        raise kernel_error(Op, exc, [a._data] + [x for x in arrays if hasattr(x, "shape")]) from None
    if type(out) is not a._dev.atype:  # (a NumPy scalar, or a 0-d result some array libraries give as another type)
        out = a._dev.backend.as_array(out)
    if out.shape != a._data.shape:
        raise RuntimeError(f"{name}: output with shape {list(a.shape)} doesn't match the broadcast shape "
                           f"{list(out.shape)}")
    return write_inplace(a, out, ctx if recording else None, (old, *conv), overlapped)


def snapshot(a: Tensor) -> Tensor:
    """A copy of ``a``'s value at ``a``'s graph position (what a backward saves before ``a`` is overwritten)."""
    b = a._base
    if b is not None and a._vv != b._ver and (a._rg or b._rg) and not a._nograd_view:
        refresh_view(a)
    old = _wrap(a._dev.kernels["copy"](a._data), a._dev)
    old._rg, old._fn, old._nr = a._rg, a._fn, a._nr
    return old


def inplace_result(a: Tensor, compute, name: str, recording: bool = False):
    """``a`` overwritten with ``compute(a)``, an out-of-place computation of the same shape.

    PyTorch's in-place form of a composite op (``F.relu6(x, inplace=True)``,
    ``x.igamma_(y)``): under autograd ``compute`` runs on a snapshot of ``a``
    (its backward may save the input, which is about to change) and ``a``
    takes the result's history (``HardtanhBackward0``; ``CopySlices`` on the
    base of a view).  ``recording``: another operand of ``compute`` needs a gradient.
    """
    recording = is_grad_enabled() and (recording or a._rg)
    overlapped = check_inplace(a, name, recording)
    if overlapped and recording:
        raise RuntimeError(OVERLAP_ERROR)  # (PyTorch's deprecated write into shared memory: not under autograd)
    r = compute(snapshot(a) if recording else a)
    if r.dtype.category > a.dtype.category:
        raise RuntimeError(f"{name}: result type {r.dtype} can't be cast to the desired output type {a.dtype}")
    if overlapped:
        return write_inplace(a, r.to(a.dtype)._data, None, (), True)
    if not (is_grad_enabled() and r._rg and r._fn is not None) or a._base is not None or _HANDLERS or \
            r._data.shape != a._data.shape or r.dtype is not a.dtype:
        return _copy_into(a, r)  # (with interception on, the write is an op the handlers see)
    _pin_saved_output(a)
    a._dev.kernels["copy_"](a._data, r._data)
    a._bump()
    ACTIVE.inplace_recorded = True
    a._fn, a._nr, a._rg = r._fn, r._nr, True
    return a


def _copy_into(a, r):
    if r._dev is not a._dev or r.dtype is not a.dtype:
        r = r.to(a.device, a.dtype)
    return inplace(OPS["Copy"], a, r)


class _Pinned:
    """What a node's saved output check needs of an output that was overwritten and may since be freed."""

    def __init__(self, t):
        self.ver, self.shape, self._nr, self._fn, self._type = t._version, t.shape, t._nr, t._fn, t.type()

    def __call__(self):
        return self

    @property
    def _version(self):
        return self.ver + 1

    def type(self):
        return self._type


def _pin_saved_output(a):
    """Before ``a`` is overwritten: if its node saved ``a`` as its output, keep the check alive past ``a``'s life."""
    fn = a._fn
    out = fn._out if fn is not None else None
    if out is not None and type(out[2]) is weakref.ref and out[2]() is a:
        fn._out = (out[0], out[1], _Pinned(a), out[3])


class CopySlices(Node):
    """History of a base tensor after an in-place op on one of its views."""

    def __init__(self, base, chain, fn):
        self.next_functions = (grad_edge(base),) + fn.next_functions[1:]
        self._shapes = ((base._data.shape, base._data.dtype),) + fn._shapes[1:]
        self.chain, self.fn = chain, fn

    @staticmethod
    def backward(ctx, g):
        result = g.clone()
        region = replay_view(ctx.chain, result)
        res = type(ctx.fn).backward(ctx.fn, region.clone())
        res = res if isinstance(res, tuple) else (res,)
        if res[0] is None:
            region.zero_()
        else:
            region.copy_(res[0])
        return (result, *res[1:])

    def release(self):
        self.fn.release()
        super().release()


def write_back(a: Tensor) -> None:
    """Carry the values just written into view ``a`` to its base where the backend made a step of the view a
    copy (``Backend.copied_views``: a diagonal of arrays without strides).  The view's chain is re-derived from
    the base (the other steps are the library's views, sharing memory), ``a``'s values are copied into its
    place there, and each copying step's ``scatter_back`` writes them into the array it was taken from."""
    copied = a._dev.backend.copied_views
    steps = []
    chain = a._view
    while chain is not None:
        steps.append(chain[1:])
        chain = chain[0]
    if not any(getattr(Op, "view_kernel", None) in copied for Op, _ in steps):
        return
    steps.reverse()
    k = a._dev.kernels
    arrays = [a._base._data]  # arrays[i]: the view after i steps
    for Op, params in steps[:-1]:
        arrays.append(Op.forward(_new(Op), k, arrays[-1], *params))
    value = a._data
    for i in range(len(steps) - 1, -1, -1):
        Op, params = steps[i]
        if getattr(Op, "view_kernel", None) in copied:
            Op.scatter_back(k, arrays[i], value, *params)
        else:  # a shared view: writing into it writes arrays[i]
            if i + 1 == len(steps) or value is not arrays[i + 1]:
                k["copy_"](Op.forward(_new(Op), k, arrays[i], *params), value)
        value = arrays[i]


def write_inplace(a: Tensor, out, ctx, inputs, overlapped=False):
    """Store array ``out`` into ``a``; with ``ctx``, make it ``a``'s history.

    When ``a`` is a view, the base's history is rewritten with a
    :class:`CopySlices` node, as PyTorch does.  ``overlapped``: some elements of ``a`` share memory and
    only the changed ones are written (:func:`write_changed`).  ``out`` None: the kernel already wrote
    into ``a``'s memory.
    """
    if out is not None:
        if a._fn is not None:
            _pin_saved_output(a)
        if overlapped:
            write_changed(a, out)
        else:
            a._dev.kernels["copy_"](a._data, out)
    a._bump()
    if a._base is not None and a._dev.backend.copied_views:
        write_back(a)
    if ctx is None:
        return a
    ACTIVE.inplace_recorded = True
    if getattr(ctx, "tensor_args", False):
        inputs = tuple(x for x in inputs if isinstance(x, Tensor))
    link(ctx, inputs)
    chain, base = a._view, a._base
    if base is None or chain is None:
        a._fn, a._nr, a._rg = ctx, 0, True
        if type(ctx).save_output:  # the node's output is a itself, as written (a later write fails its check)
            if SAVED_HOOKS.stack:
                pack_output(ctx, a)
            else:
                ctx._out = (a._data, a._dev, weakref.ref(a), a._version)
        return a
    cs = CopySlices(base, chain, ctx)
    base._fn, base._nr, base._rg = cs, 0, True
    with enable_grad():
        fresh = replay_view(chain, base)
    a._fn, a._nr, a._rg = fresh._fn, fresh._nr, True
    a._vv = base._ver
    return a


# --------------------------------------------------------------------------- out=
def copy_into_out(out: Tensor, r: Tensor) -> Tensor:
    """Implement an ``out=`` argument: write ``r`` into ``out`` (resizing it when empty or of another shape)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if is_grad_enabled() and (r._rg or out._rg):
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    if r.dtype.category > out.dtype.category:
        raise RuntimeError(f"result type {r.dtype} can't be cast to the desired output type {out.dtype}")
    if out._dev is not r._dev:
        raise device_error("out=", r, out)
    if out._data.shape != r._data.shape:
        out._data = out._dev.kernels["astype"](r._data, out._data.dtype)
    else:
        check_overlap(out)
        out._dev.kernels["copy_"](out._data, r._data if r.dtype is out.dtype else
                                  out._dev.kernels["astype"](r._data, out._data.dtype))
    out._bump()
    if out._base is not None and out._dev.backend.copied_views:
        write_back(out)
    return out


def out_or(r, out):
    """``r``, written into ``out`` when one is given."""
    return r if out is None else copy_into_out(out, r)


def outs_or(r, out):
    """``r``, a named tuple of results, each written into its tensor of ``out`` when one is given (then the same
    named tuple of ``out``'s tensors)."""
    if out is None:
        return r
    if not isinstance(out, (tuple, list)) or len(out) != len(r):
        raise TypeError(f"argument 'out' must be a tuple of {len(r)} Tensors, not {type(out).__name__}"
                        f"{'' if not isinstance(out, (tuple, list)) else f' of length {len(out)}'}")
    for o, v in zip(out, r):
        copy_into_out(o, v)
    return type(r)(*out)


# --------------------------------------------------------------------------- views
def view_op(Op, a, *params):
    """Apply an Op whose output shares ``a``'s storage (and so its version counter)."""
    if _HANDLERS:
        r = _intercepted(view_op, Op, (a, *params))
        if r is not _PASS:
            return r
    out = unary(Op, a, *params)
    b = a._base
    if b is None:
        b = a
    out._base = b
    out._view = (a._view, Op, params)
    if b._ver:
        out._vv = b._ver
    if not is_grad_enabled() and (a._nograd_view or not is_inference()):
        out._nograd_view = True
    return out


def replay_view(chain, base):
    """Re-derive a view from ``base`` by the chain of view ops recorded when it was made."""
    steps = []
    while chain is not None:
        steps.append(chain)
        chain = chain[0]
    t = base
    for _, Op, params in reversed(steps):
        t = view_op(Op, t, *params)
    return t


# --------------------------------------------------------------------------- interception
class intercept:
    """Route every op through ``handler(kind, Op, args, run)`` while the context is open.

    ``kind`` is the dispatch function (``unary``, ``binary``, ``apply``,
    ``view_op``, ``inplace``; for a factory such as ``zeros`` or ``randn``
    it is ``ember.ops.creation._create`` and ``Op`` the factory's name; for a
    move between devices ``ember.ops.conversion._moved``), ``args`` the op's
    arguments as given, and
    ``run(*args)`` computes the op (the handler may pass changed arguments:
    autocast casts them; a tracer records them; a profiler times ``run``).
    Handlers nest; inside ``run`` the current handler is not called again.
    Unlike the grad mode (a thread's own), interception is process-wide: a handler sees the ops
    of every thread while it is open.

    >>> import ember
    >>> from ember.dispatch import intercept
    >>> seen = []
    >>> with intercept(lambda kind, Op, args, run: seen.append(Op.__name__) or run(*args)):
    ...     _ = ember.ones(2) * 3
    >>> seen
    ['MulBackward0']
    """

    def __init__(self, handler, rebind=None):
        self.handler = handler
        self.rebind = rebind  # rebind(t, source): see :func:`rebound`

    def __enter__(self):
        _HANDLERS.append(self.handler)
        if self.rebind is not None:
            _REBINDERS[self.handler] = self.rebind
        return self

    def __exit__(self, *exc):
        _HANDLERS.remove(self.handler)
        if self.rebind is not None and self.handler not in _HANDLERS:
            _REBINDERS.pop(self.handler, None)


_REBINDERS: dict = {}  # handler -> its rebind callback (handlers that track tensors by identity)


def rebound(t: Tensor, source: Tensor) -> None:
    """Tell the open handlers that ``t`` now holds ``source``'s value: an in-place view op
    (``x.unsqueeze_(0)``) gives ``x`` the array and history of the view it computed.  A handler that keeps
    tensors by identity (a tracer) passes ``rebind=`` to :class:`intercept` to hear of it."""
    for h in tuple(_HANDLERS):
        f = _REBINDERS.get(h)
        if f is not None:
            f(t, source)


class set_aside:
    """Skip ``handlers`` (entered :class:`intercept` handlers) for the ops this thread runs inside the
    context, as while they run (vmap sets its levels aside for a backward pass over unbatched tensors)."""

    def __init__(self, handlers):
        self.handlers = handlers

    def __enter__(self):
        _RUNNING.__dict__.setdefault("handlers", []).extend(self.handlers)
        return self

    def __exit__(self, *exc):
        running = _RUNNING.handlers
        del running[len(running) - len(self.handlers):]


def observed() -> bool:
    """Whether an interception handler sees the ops this thread runs now (one neither running nor set aside):
    a backward formula may compute with kernels directly, unseen, when none does."""
    if not _HANDLERS:
        return False
    running = getattr(_RUNNING, "handlers", None)
    return not running or _not_running(running) is not None


def _not_running(running):
    """The innermost handler that is not in ``running`` (this thread's running handlers, not empty), or None."""
    hs = tuple(_HANDLERS)
    if len(hs) == 1 and hs[0] is running[-1]:  # (the usual case, one handler running: none)
        return None
    for h in reversed(hs):
        for r in running:
            if r is h:
                break
        else:
            return h
    return None


def _intercepted(kind, Op, args):
    """Call the innermost handler not already running on this thread; ``_PASS`` when there is none.

    Which handlers are running is kept per thread, so an op of one thread never
    skips a handler because another thread is inside it.
    """
    try:
        running = _RUNNING.handlers
    except AttributeError:
        running = _RUNNING.handlers = []
    if running:  # inside a handler's run: the next handler out, if any
        handler = _not_running(running)
    else:
        try:
            handler = _HANDLERS[-1]
        except IndexError:  # closed by another thread meanwhile
            handler = None
    if handler is None:
        return _PASS if kind in _OWN_KINDS else _unhandled(kind, Op, args)
    running.append(handler)
    try:
        return handler(kind, Op, args, partial(kind, Op))  # run(*a) is kind(Op, *a)
    finally:
        running.pop()


def _unhandled(kind, Op, args):
    # the factory and move kinds of ember.ops know no _PASS: they run with the handlers set aside
    saved = _HANDLERS[:]
    _HANDLERS.clear()
    try:
        return kind(Op, *args)
    finally:
        _HANDLERS[:0] = saved


_OWN_KINDS = (unary, binary, apply, view_op, inplace)
