"""Writes into existing tensors: in-place ops, ``out=``, and the history they rewrite.

An in-place op (``a.add_(b)``, ``a[i] = v``) checks first what PyTorch refuses (a leaf that requires grad,
a view made under ``no_grad``, elements that share memory), computes with the Op's kernel, stores the
result into ``a``'s memory and makes the Op's node ``a``'s history; on a view, the base's history is
rewritten with :class:`CopySlices`.  ``out=`` arguments are written by :func:`copy_into_out`.  Below the
ops and above :mod:`ember.dispatch`, whose casts, links and view replays it uses.
"""
from __future__ import annotations

import warnings
import weakref

import numpy as np

from . import dtypes
from .autograd.function import OPS, SAVED_HOOKS, Node, grad_edge, pack_output
from .backend import resolve as resolve_device
from .dispatch import (cast, device_error, kernel_error, link, op_name, refresh_view, regenerate_view, replay_view,
                       scalar_to)
from .dtypes import SCALAR_FIX, SCALARS, fix_scalar
from .interception import HANDLERS, PASS, dispatch_kind, intercepted
from .state import ACTIVE, is_grad_enabled, is_inference
from .storage import _addressable, _ptr
from .tensor import Tensor, _vowner, _wrap

_new = object.__new__

NOGRAD_VIEW_ERROR = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
                     "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
                     "moving both the view and the inplace either both inside the no_grad block (if you don't want "
                     "the inplace to be tracked) or both outside (if you want the inplace to be tracked).")
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


PARTIAL_OVERLAP_ERROR = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to "
                         "a single memory location. Please clone() the tensor before performing the operation.")


def _dense_span(arr):
    """``(first byte, end byte, strides)`` of a dense array (C or Fortran order), else None."""
    flags = getattr(arr, "flags", None)
    if flags is None or not (flags.c_contiguous or flags.f_contiguous) or not _addressable(arr):
        return None
    start = _ptr(arr)
    return start, start + arr.nbytes, arr.strides


def check_partial_overlap(a: Tensor, x: Tensor) -> None:
    """PyTorch's error when operand ``x`` of a write into ``a`` shares some but not all of ``a``'s memory
    (``x[1:].add_(x[:-1])``).  The same elements (``x.add_(x)``), disjoint ones, and layouts that are not dense
    (too hard to tell, as PyTorch says) pass."""
    if a._base is None and x._base is None and a._vo is None and x._vo is None:
        return  # only views and detached tensors share part of another tensor's memory
    if _vowner(a) is not _vowner(x):
        return
    sa, sx = _dense_span(a._data), _dense_span(x._data)
    if sa is None or sx is None or sa == sx:
        return
    if sa[0] < sx[1] and sx[0] < sa[1]:
        raise RuntimeError(PARTIAL_OVERLAP_ERROR)


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
    if t._nograd_view and is_grad_enabled() and (recording or t._rg or t._base._rg):
        raise RuntimeError(NOGRAD_VIEW_ERROR)
    if internal_overlap(t):
        overlapped = _overlap_policy(op)
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


@dispatch_kind
def inplace(Op, a: Tensor, *args):
    """Apply ``Op`` and write its result into ``a``; ``a`` takes the Op's node as its history.

    Tensor arguments in ``args`` must share ``a``'s device; they are cast to
    ``a``'s dtype (PyTorch refuses casts that lose the category).
    """
    if HANDLERS:
        r = intercepted(inplace, Op, (a, *args))
        if r is not PASS:
            return r
    name = getattr(Op, "inplace_name", None) or op_name(Op) + "_"
    overlapped = check_inplace(a, name, is_grad_enabled() and any(isinstance(x, Tensor) and x._rg for x in args))
    dt = a.dtype
    conv = []
    for x in args:
        if isinstance(x, Tensor):
            if x._dev is not a._dev and not (x._dev.type == "cpu" and x._data.ndim == 0):
                raise device_error(name, a, x)
            check_partial_overlap(a, x)
            if x._dev is not a._dev:
                x = scalar_to(x, a._dev)
            if x.dtype is not dt:
                dtypes.check_out_cast(name, x.dtype, dt)
                x = cast(x, dt)
        elif isinstance(x, SCALARS) and not isinstance(x, (bool, np.bool_)) \
                and dtypes.scalar_category(x) > dt.category:
            dtypes.check_out_cast(name, dtypes.default_for_category(dtypes.scalar_category(x)), dt)
        elif isinstance(x, SCALARS) and (d := a.dtype) in SCALAR_FIX:
            if d in dtypes.HALF_TYPES and getattr(Op, "scalar_in_float32", False) and not dtypes.holds(d, x):
                with np.errstate(over="ignore"):  # computed in float32, rounded once into a, as in PyTorch
                    x = np.float32(x)
            else:
                x = fix_scalar(x, d)
        conv.append(x)
    recording = is_grad_enabled() and (a._rg or any(isinstance(x, Tensor) and x._rg for x in conv))
    old = a
    if recording and Op.save_inputs and _keeps_target(Op, a, conv):
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


def _keeps_target(Op, a, operands) -> bool:
    """Whether ``Op`` keeps its first input (the written tensor's old value) for the gradients needed
    (``Op.save_for``): ``x.mul_(2)`` reads only the 2, and copies nothing."""
    uses = Op.save_for
    if uses is None or uses[0] is None:
        return True
    args = (a, *operands)
    return any(i < len(args) and isinstance(args[i], Tensor) and args[i]._rg for i in uses[0])


def snapshot(a: Tensor) -> Tensor:
    """A copy of ``a``'s value at ``a``'s graph position (what a backward saves before ``a`` is overwritten)."""
    b = a._base
    if b is not None and a._vv != _vowner(b)._ver and (a._rg or b._rg) and not a._nograd_view:
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
    if r.dtype is not a.dtype:
        dtypes.check_out_cast(name, r.dtype, a.dtype)
    if overlapped:
        return write_inplace(a, r.to(a.dtype)._data, None, (), True)
    if not (is_grad_enabled() and r._rg and r._fn is not None) or a._base is not None or HANDLERS or \
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

    def name(self) -> str:
        return "torch::autograd::CopySlices"  # (PyTorch's name() of the node; its class is CopySlices)

    def __init__(self, base, chain, fn):
        self.next_functions = (grad_edge(base),) + fn.next_functions[1:]
        self._shapes = ((base._data.shape, base._data.dtype),) + fn._shapes[1:]
        self.chain, self.fn = chain, fn

    @staticmethod
    def backward(ctx, g):
        if g is None:  # an undefined gradient (gradcheck's check_undefined_grad): none for every input
            return (None,) * len(ctx.next_functions)
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
    fresh = regenerate_view(chain, base)
    a._fn, a._nr, a._rg = fresh._fn, fresh._nr, True
    a._vv = _vowner(base)._ver
    return a


def _grad_fn(self):
    """The node that made this tensor (None for a leaf); a view whose base was changed in place since takes the
    base's new history first, as PyTorch regenerates it on access (``AsStridedBackward0``)."""
    if self._volatile:
        return None
    b = self._base
    if b is not None and ACTIVE.inplace_recorded and self._vv != _vowner(b)._ver and (self._rg or b._rg) and \
            not self._nograd_view:
        refresh_view(self)
    return self._fn


Tensor.grad_fn = property(_grad_fn)  # (the tensor is a floor below the view replays)


# --------------------------------------------------------------------------- out=
def copy_into_out(out: Tensor, r: Tensor) -> Tensor:
    """Implement an ``out=`` argument: write ``r`` into ``out`` (resizing it when empty or of another shape)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if is_grad_enabled() and (r._rg or out._rg):
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one "
                           "of the arguments requires grad.")
    if r.dtype is not out.dtype:
        dtypes.check_out_cast("", r.dtype, out.dtype)
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
