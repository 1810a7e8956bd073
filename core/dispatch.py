"""From an operator call to a kernel call, and the graph record around it: the hot path every op takes.

Check devices, promote dtypes only when they differ, look the kernel up in the device's dict, wrap the
result without argument parsing, and record a graph node only when grad mode is on and an input requires
grad.  Each way of applying an op (``unary``, ``binary``, ``apply``, ``view_op``) is a dispatch kind that
:mod:`ember.interception` routes to the open handlers; in-place writes and ``out=`` are in
:mod:`ember.writes`, the scalar rules beside promotion in :mod:`ember.dtypes`.  Nothing here imports from
``ember.ops``: an op that the policy itself needs (``Cast``) is looked up by name in ``OPS``.
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from . import dtypes
from .autograd.function import (OPS, SAVED_HOOKS, SAVED_ON, VOLATILE, anomaly_trace, grad_edge, named_node, pack_output,
                                pack_saved, saved_for)
from .autograd.grad_mode import STATE, enable_grad
from .dtypes import SCALAR_FIX, SCALARS, fix_scalar
from .interception import HANDLERS, PASS, dispatch_kind, intercepted
from .interception import intercept, observed, rebound, set_aside  # noqa: F401 - public here too (ember.dispatch.intercept)
from .state import ACTIVE, GRAD_OFF, INFERENCE_ON, is_grad_enabled, is_inference, modes
from .tensor import Tensor, _disabled_torch_function_impl, _vowner, _wrap

_new = object.__new__
_PY_SCALARS = (float, int, bool, complex)  # a NumPy scalar promotes as the Python scalar it holds, as in PyTorch
AUTOCAST = threading.local()  # this thread's autocast: .on = {device type: dtype} while enabled (see ember.amp)


def autocasting(t) -> bool:
    """Whether autocast is on in this thread for tensor ``t``'s device type.

    Ops that refuse operands of different dtypes accept them then: autocast casts them at dispatch.
    """
    on = getattr(AUTOCAST, "on", None)
    return bool(on) and t._dev.type in on


# --------------------------------------------------------------------------- errors
def op_name(Op):
    """The name an Op goes by in messages (``add`` for ``AddBackward0``; an overload's node class, its op's)."""
    n = type.__getattribute__(Op.__dict__.get("_overload_of", Op), "__name__")
    return n[:-9].lower() if n.endswith("Backward0") else n


def device_error(op, a, b):
    return RuntimeError(f"{op}: expected all tensors to be on the same device, but found at least two devices, "
                        f"{a._dev} and {b._dev}! (move one with .to(device); only copy_ and to() cross devices)")


def _cpu_scalar(t):
    return t._dev.type == "cpu" and t._data.ndim == 0


def scalar_to(t, dev):
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
    if msg is None and isinstance(exc, TypeError) and "not supported for the input types" in str(exc):
        # the array library has no loop for this dtype: PyTorch's refusal of a dtype its kernel has no code for
        # (NumPy dtypes only: another array library's dtype compared with NumPy's warns)
        d = next((dtypes.FROM_NP.get(o.dtype) for o in operands if isinstance(getattr(o, "dtype", None), np.dtype)),
                 None)
        if d is not None:
            name = getattr(Op, "kernel_name", None) or op_name(Op).lower()
            return NotImplementedError(f"\"{name}\" not implemented for '{dtypes.type_name(d)}' ({op_name(Op)}: "
                                       f"operands {desc})")
    text = f"{op_name(Op)}: {msg}" if msg else f"{op_name(Op)}: cannot compute on operands ({desc}): {exc}"
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
    elif rt.np is not None and isinstance(b, SCALARS):
        b = fix_scalar(b, rt)
    return a, b


# --------------------------------------------------------------------------- apply
@dispatch_kind
def unary(Op, a, *params):
    """Apply a one-tensor Op: ``Op.forward(ctx, kernels, array, *params)``."""
    if HANDLERS:
        r = intercepted(unary, Op, (a, *params))
        if r is not PASS:
            return r
    dev = a._dev
    ctx = _new(Op)
    try:
        # (no star call for none or one parameter, a view's shape: a star call costs ~60 ns more)
        if not params:
            out = Op.forward(ctx, dev.kernels, a._data)
        elif len(params) == 1:
            out = Op.forward(ctx, dev.kernels, a._data, params[0])
        else:
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


@dispatch_kind
def binary(Op, a, b, *params):
    """Apply a two-operand Op with broadcasting and type promotion (one operand may be a scalar)."""
    if HANDLERS:
        r = intercepted(binary, Op, (a, b, *params))
        if r is not PASS:
            return r
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            x, y, dev = a._data, b._data, a._dev
            if dev is not b._dev or x.dtype is not y.dtype:
                if dev is not b._dev:
                    dev = same_device(op_name(Op), (a, b))
                    if a._dev is not dev:
                        a = scalar_to(a, dev)
                    if b._dev is not dev:
                        b = scalar_to(b, dev)
                if a.dtype is not b.dtype:
                    a, b = promote(op_name(Op), a, b)
                x, y = a._data, b._data
            rg = a._rg or b._rg
        elif (type(b) is float or type(b) is int) and ((nd := a._data.dtype) is _F32 or nd is _F64):
            x, y, dev, rg = a._data, b, a._dev, a._rg  # what _with_scalar gives here: the number as it is
        elif isinstance(b, SCALARS):
            a, x, y = _with_scalar(a, b)
            if x is None:
                return _half_with_scalar(Op, a, b, params, True)
            dev, rg = a._dev, a._rg
        else:
            return NotImplemented
    elif (type(a) is float or type(a) is int) and isinstance(b, Tensor) and \
            ((nd := b._data.dtype) is _F32 or nd is _F64):
        x, y, dev, rg = a, b._data, b._dev, b._rg
    elif isinstance(a, SCALARS) and isinstance(b, Tensor):
        b, y, x = _with_scalar(b, a)
        if y is None:
            return _half_with_scalar(Op, b, a, params, False)
        dev, rg = b._dev, b._rg
    else:
        return NotImplemented
    ctx = _new(Op)
    try:
        out = Op.forward(ctx, dev.kernels, x, y, *params) if params else Op.forward(ctx, dev.kernels, x, y)
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


_PY_CATEGORY = {bool: dtypes.BOOL, int: dtypes.INT, float: dtypes.FLOAT, complex: dtypes.COMPLEX}
_NP_DTYPE = {n: (d, d.category, d in SCALAR_FIX) for n, d in dtypes.FROM_NP.items()}
# A Python float or int with an array of these dtypes is the common case of ``_with_scalar``: no cast, no fix
# (``binary`` tests for it first, by identity: NumPy's dtype objects of the native byte order are singletons)
_F32, _F64 = dtypes.float32.np, dtypes.float64.np


def _with_scalar(t, s):
    """``(t, array, scalar)`` for tensor ``t`` meeting scalar ``s`` in a binary op.

    A scalar of a higher category than ``t``'s dtype (a float with an integer tensor) casts ``t`` to that
    category's default dtype; otherwise the scalar is fixed for ``t``'s dtype (see ``fix_scalar``).
    A NumPy scalar promotes as the Python scalar it holds.
    """
    if type(s) not in _PY_SCALARS:
        s = s.item()
    arr = t._data
    nd = arr.dtype
    known = _NP_DTYPE.get(nd) if isinstance(nd, np.dtype) else None  # other libraries' dtypes must not meet NumPy's
    d, tcat, fix = known if known is not None else (t.dtype, t.dtype.category, t.dtype in SCALAR_FIX)
    cat = _PY_CATEGORY.get(type(s))
    if cat is None:
        cat = dtypes.scalar_category(s)  # raises for what is no scalar
    if cat > tcat:
        t = cast(t, dtypes.default_for_category(cat, d))
        return t, t._data, s
    if fix and d in dtypes.HALF_TYPES and not dtypes.holds(d, s):
        return t, None, s  # computed in float32 (see _half_with_scalar)
    return t, arr, fix_scalar(s, d) if fix else s


def _half_with_scalar(Op, t, s, params, tensor_first):
    """A float16 or bfloat16 tensor with a Python number the dtype cannot hold exactly, as PyTorch computes it.

    An Op that declares ``scalar_in_float32`` (mul, div) computes in float32 and rounds once to the tensor's
    dtype (``float16([1e-3]) * 1e5`` is 100.06, not inf); the others take the number rounded to the dtype.
    """
    if not getattr(Op, "scalar_in_float32", False):
        s = dtypes.rounded(t.dtype, s)  # now held exactly: the plain path
        return binary(Op, t, s, *params) if tensor_first else binary(Op, s, t, *params)
    wide = cast(t, dtypes.float32)
    r = binary(Op, wide, s, *params) if tensor_first else binary(Op, s, wide, *params)
    return cast(r, t.dtype) if isinstance(r, Tensor) and r.dtype is dtypes.float32 else r


@dispatch_kind
def apply(Op, *args):
    """Apply an Op whose Tensor arguments are already on one device and of agreeing dtypes.

    Tensors among ``args`` become arrays for ``Op.forward``; other arguments
    pass through.  A list or tuple of tensors (``cat``) becomes a list of arrays.
    """
    if HANDLERS:
        r = intercepted(apply, Op, args)
        if r is not PASS:
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
                raise device_error(op_name(Op), tensors[0], a)
            rg = rg or a._rg
            tensors.append(a)
            arrays.append(a._data)
        elif type(a) in (list, tuple) and a and isinstance(a[0], Tensor):
            arrays.append([t._data for t in a])
            if dev is None:
                dev = a[0]._dev
            for t in a:  # (cat of hundreds of small tensors: one test of each, the list extended once)
                if t._dev is not dev:
                    raise device_error(op_name(Op), tensors[0] if tensors else a[0], t)
                if t._rg:
                    rg = True
            tensors.extend(a)
        else:
            arrays.append(a)
    if dev is None:
        raise TypeError(f"{op_name(Op)}: expected at least one Tensor argument")
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


def on_arrays(*tensors) -> bool:
    """Whether a backward formula may compute on the arrays of ``tensors`` with kernels directly: no graph is
    being built (grad mode off: a backward pass without ``create_graph``), no handler sees ops (vmap,
    forward-mode AD, tracing, autocast, the profiler), and each tensor among them is a plain ``Tensor`` or of a
    subclass outside dispatch (``nn.Parameter``).  Values that are no tensors (None, numbers) are left to the
    formula."""
    if HANDLERS or (not GRAD_OFF or (m := modes()) is None or m.grad):
        return False
    for t in tensors:
        if type(t) is not Tensor and isinstance(t, Tensor) and \
                type(t).__torch_function__ is not _disabled_torch_function_impl:
            return False
    return True


_ZEROS = tuple((0,) * n for n in range(8))  # the output numbers of most nodes' edges, shared


def link(ctx, inputs):
    """Connect node ``ctx`` to the graph positions of ``inputs`` and save what its Op keeps (:func:`record` takes
    the common case itself: at most two inputs, each a leaf, a number or output 0 of its node).

    Returns whether an input is volatile (a deprecated ``Variable``).
    """
    if ACTIVE.inplace_recorded:  # a view whose base changed in place since takes the base's new history
        for t in inputs:
            if isinstance(t, Tensor):
                b = t._base
                if b is not None and t._vv != _vowner(b)._ver and (t._rg or b._rg) and not t._nograd_view:
                    refresh_view(t)
    volatile = False
    nodes = []  # the node each input's gradient goes to (the edges' output numbers: _nrs, mostly all zero)
    metas = []
    numbered = False
    for t in inputs:
        if isinstance(t, Tensor):
            fn = t._fn
            if fn is not None:
                if t._nr:
                    numbered = True
                if fn is VOLATILE:
                    volatile = True
            else:
                fn = t._acc  # a leaf seen before: its node, as grad_edge
                if fn is None or not t._rg or t._nograd_view:
                    fn = grad_edge(t)[0]
            nodes.append(fn)
            arr = t._data
            shape, dt = arr.shape, arr.dtype
            e = _METAS.get(shape)
            if e is None or e[0][1] is not dt and _other_dtype(e[0][1], dt):
                e = _meta(shape, dt)
            metas.append(e[0])
        else:
            nodes.append(None)
            metas.append(None)
    ctx._next = nodes = tuple(nodes)
    n = len(nodes)
    if not numbered:
        ctx._nrs = _ZEROS[n] if n < 8 else (0,) * n
    else:
        nrs = tuple(t._nr if isinstance(t, Tensor) and t._fn is not None else 0 for t in inputs)
        ctx._nrs = _VERS.get(nrs) or _shared_vers(nrs)
    if n == 1 and metas[0] is not None:  # (e: the last input's entry in _METAS)
        ctx._shapes = e[1]
    elif n == 2 and metas[0] is not None and (metas[1] is metas[0] or metas[1] is None):
        ctx._shapes = e[2] if metas[1] is not None else e[3]
    else:
        ctx._shapes = tuple(metas)
    if type(ctx).save_inputs:
        save_inputs(ctx, inputs, nodes)
    if STATE.anomaly:
        anomaly_trace(ctx)
    return volatile


def save_inputs(ctx, inputs, nodes):
    """Keep on node ``ctx`` the inputs its Op saves (those its needed gradients read) and their versions."""
    Op = type(ctx)
    uses = Op.save_for
    vers = None
    if uses is not None:  # keep only the inputs that the needed gradients read (PyTorch's rule)
        keepers = _KEEPERS.get(Op)
        if keepers is None:
            keepers = _KEEPERS[Op] = _KEEPERS.get(uses) or _KEEPERS.setdefault(uses, _keeper(uses))
        if len(inputs) == len(uses):
            if not SAVED_ON and not ACTIVE.inference_ever:  # no hooks to pack them, no inference tensor to refuse
                keepers[1](ctx, inputs, nodes)
                return
            inputs, vers = keepers[0](inputs, nodes)
        else:
            inputs = saved_for(uses, inputs, nodes)
    if SAVED_ON and SAVED_HOOKS.stack:
        pack_saved(ctx, inputs)
        return
    if ACTIVE.inference_ever:
        for t in inputs:
            if isinstance(t, Tensor) and t._inference:
                raise RuntimeError(_INFERENCE_SAVED)
    ctx._saved = inputs if type(inputs) is tuple else tuple(inputs)
    if vers is None:  # (a keeper gives the versions with the inputs)
        vers = []
        for t in inputs:
            if isinstance(t, Tensor):
                vers.append(_vowner(t)._ver)
            else:
                vers.append(None)
        vers = tuple(vers)
    ctx._vers = _VERS.get(vers) or _shared_vers(vers)


_KEEPERS: dict = {}  # Op.save_for, and each Op class that has one -> its keepers (see _keeper)

# One tuple per distinct value, shared by every node that keeps it: an input's ``(shape, dtype)`` (by shape: the
# last dtype seen with it, with the ``_shapes`` of a node of one such input, of two, and of one and a number)
# and the saved inputs' versions (mostly all zero).  A recorded graph is thousands of
# nodes that live until the backward, and every tuple they keep counts towards Python's next garbage collection
# and is traversed by it.
_METAS: dict = {}
_VERS: dict = {}


_OUT_METAS: dict = {}  # a multi-output node's ((shape, dtype, device), ...), shared the same way


def _shared_vers(vers):
    """``vers`` (a tuple of ints and None: saved versions, edge output numbers), kept as the one instance later
    nodes share (the table is emptied when it grows large)."""
    if len(_VERS) > 4096:
        _VERS.clear()
    return _VERS.setdefault(vers, vers)


def _shared_out_meta(meta):
    """``meta`` (a node's ``_out_meta``), kept as the one instance later nodes share."""
    if len(_OUT_METAS) > 4096:
        _OUT_METAS.clear()
    try:
        return _OUT_METAS.setdefault(meta, meta)
    except TypeError:  # an array library whose shapes are not hashable
        return meta


def _other_dtype(a, b) -> bool:
    """Whether dtype objects ``a`` and ``b`` (not the same object) differ: an array library may make equal ones
    per array; dtypes of two libraries are never compared (array-api-strict warns)."""
    return type(a) is not type(b) or a != b


def _meta(shape, dt):
    """The shared entry of ``(shape, dt)``: the tuple and the ``_shapes`` made of it (see ``link``)."""
    m = (shape, dt)
    e = (m, (m,), (m, m), (m, None))
    try:
        if len(_METAS) > 4096:
            _METAS.clear()
        _METAS[shape] = e
    except TypeError:  # an array library whose shapes are not hashable
        pass
    return e


def _keeper(uses):
    """``(keep, keep_into)``: ``keep(inputs, nodes)`` gives the inputs that save_for ``uses`` keeps, None for the
    others (``Op.save_for``), and their versions (None for what is no tensor); ``keep_into(ctx, inputs, nodes)``
    sets them on node ``ctx`` as its ``_saved`` and shared ``_vers``.

    Spelled out in source, one line per input (``a0 = inputs[0] if nodes[1] is not None else None``): a third of
    the cost of walking ``uses`` on every recorded op, and the versions without a loop.
    """
    lines, kept, vers = [], [], []
    for i, u in enumerate(uses):
        if u is None:
            value = f"inputs[{i}]"
        elif not u:
            value = "None"
        else:
            value = f"inputs[{i}] if {' or '.join(f'nodes[{int(j)}] is not None' for j in u)} else None"
        lines.append(f"    a{i} = {value}\n")
        kept.append(f"a{i}, ")
        vers.append(f"_vowner(a{i})._ver if isinstance(a{i}, Tensor) else None, ")
    kept, vers = "".join(kept), "".join(vers)
    src = (f"def keep(inputs, nodes):\n{''.join(lines)}    return ({kept}), ({vers})\n\n\n"
           f"def keep_into(ctx, inputs, nodes):\n{''.join(lines)}    ctx._saved = ({kept})\n    vers = ({vers})\n"
           f"    ctx._vers = _VERS.get(vers) or _shared_vers(vers)\n")
    ns = {"Tensor": Tensor, "_VERS": _VERS, "_shared_vers": _shared_vers, "_vowner": _vowner}
    exec(compile(src, f"<save_for {uses!r}>", "exec"), ns)  # noqa: S102 - source from integers only
    return ns["keep"], ns["keep_into"]


_INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                    "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
                    "normal tensor and use it in autograd, or use `ember.no_grad()` instead of "
                    "`ember.inference_mode()`.")


def refresh_view(v):
    """Give view ``v`` the history of its base's current value (the base was changed in place since)."""
    base = v._base
    if v._view is not None and (base._rg or base._fn is not None):
        fresh = regenerate_view(v._view, base)
        v._fn, v._nr, v._rg = fresh._fn, fresh._nr, True
    v._vv = _vowner(base)._ver


def record(ctx, out, dev, inputs):
    """Wrap forward's result(s) as outputs of graph node ``ctx`` over ``inputs``.

    A tensor and at most one more input (a number or a tensor), each a leaf or output 0 of its node (unary and
    binary ops, views), are linked here without :func:`link`'s lists and loop (~0.15 us of a 2 us op)."""
    n = len(inputs)
    fast = 0 < n <= 2 and not ACTIVE.inplace_recorded
    if fast:
        t = inputs[0]
        if isinstance(t, Tensor):
            fn = t._fn
            if fn is None:
                fn = t._acc  # a leaf seen before: its node, as grad_edge
                if fn is None or not t._rg or t._nograd_view:
                    fn = grad_edge(t)[0]
            elif t._nr or fn is VOLATILE:
                fast = False
        else:
            fast = False
    if fast and n == 2:
        u = inputs[1]
        if isinstance(u, Tensor):
            fu = u._fn
            if fu is None:
                fu = u._acc
                if fu is None or not u._rg or u._nograd_view:
                    fu = grad_edge(u)[0]
            elif u._nr or fu is VOLATILE:
                fast = False
        else:
            fu = u = None  # a number: no edge
    if fast:
        arr = t._data
        shape, dt = arr.shape, arr.dtype
        e = _METAS.get(shape)
        if e is None or e[0][1] is not dt and _other_dtype(e[0][1], dt):
            e = _meta(shape, dt)
        if n == 1:
            ctx._next = nodes = (fn,)
            ctx._shapes = e[1]
        elif u is None:
            ctx._next = nodes = (fn, None)
            ctx._shapes = e[3]
        else:
            ctx._next = nodes = (fn, fu)
            arr = u._data
            if arr.shape == shape and (arr.dtype is dt or not _other_dtype(arr.dtype, dt)):
                ctx._shapes = e[2]  # (an array library's equal dtypes need not be one object)
            else:
                shape, dt = arr.shape, arr.dtype
                m = _METAS.get(shape)
                if m is None or m[0][1] is not dt and _other_dtype(m[0][1], dt):
                    m = _meta(shape, dt)
                ctx._shapes = (e[0], m[0])
        ctx._nrs = _ZEROS[n]
        Op = type(ctx)
        if Op.save_inputs:
            save_inputs(ctx, inputs, nodes)
        if STATE.anomaly:
            anomaly_trace(ctx)
    elif link(ctx, inputs):
        return _volatile(out, dev)
    else:
        Op = type(ctx)
    if type(out) is tuple or type(out) is list:
        ctx.n_outputs = len(out)
        ctx._plain = False
        backend = dev.backend
        meta = tuple((o.shape, backend.dtype_of(o), dev) for o in out)
        ctx._out_meta = _shared_out_meta(meta)
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
        if SAVED_ON and SAVED_HOOKS.stack:
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


# --------------------------------------------------------------------------- views
@dispatch_kind
def view_op(Op, a, *params):
    """Apply an Op whose output shares ``a``'s storage (and so its version counter)."""
    if HANDLERS:
        r = intercepted(view_op, Op, (a, *params))
        if r is not PASS:
            return r
    out = unary(Op, a, params[0]) if len(params) == 1 else unary(Op, a, *params)  # (see unary)
    b = a._base
    if b is None:
        b = a
    out._base = b
    out._view = (a._view, Op, params)
    v = b._ver if b._vo is None else b._vo._ver  # (_vowner(b) by hand: the call costs ~3% of a view op's time)
    if v:
        out._vv = v
    if GRAD_OFF and not is_grad_enabled() and (a._nograd_view or not is_inference()):  # (GRAD_OFF: see state)
        out._nograd_view = True
        if a._rg:  # PyTorch's view of a tensor that requires grad: requires grad too, a leaf no gradient reaches
            out._rg = True
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


def regenerate_view(chain, base):
    """A view's new history after its base changed in place: replayed from ``base`` under grad, its node named as
    PyTorch's regenerated view, ``AsStridedBackward0`` (PyTorch re-derives it by as_strided; a last step that
    changes the dtype, ``view_as_real``/``view_as_complex``, it replays by that op, under that op's name)."""
    with enable_grad():
        t = replay_view(chain, base)
    fn = t._fn
    if fn is not None and fn._op:
        cls = type(fn)
        twin = _REGENERATED.get(cls)
        if twin is None:
            twin = _REGENERATED[cls] = cls if cls.op_name in ("ViewAsReal", "ViewAsComplex") else \
                named_node(cls, "AsStridedBackward0", None, True)
        fn.__class__ = twin
    return t


_REGENERATED: dict = {}  # a view's node class -> its class as a regenerated view's
