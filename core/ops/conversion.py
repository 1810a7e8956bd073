"""Device and dtype conversion: ``to``, ``cpu``, ``cuda``, ``float``, ``new_*`` and friends."""
from __future__ import annotations

from .. import backend as _b
from .. import dtypes
from ..autograd.function import Op
from ..autograd.grad_mode import STATE
from ..backend import device as _device_cls
from ..backend import resolve
from ..dispatch import cast, record
from ..interception import HANDLERS, PASS, dispatch_kind, intercepted
from ..arguments import sequence_arg
from ..registry import export
from ..layouts import check_memory_format, preserve_format
from ..tensor import Tensor, _wrap
from . import creation
from .creation import full, tensor

TENSOR = ("Tensor",)


class ToDevice(Op):
    backward_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, k, x, src, dst, non_blocking):
        ctx.src = src
        host = src.backend.to_numpy(x)
        # as in PyTorch, only a copy from pinned memory is asynchronous
        non_blocking = non_blocking and src.backend.host and dst.backend.is_pinned(host)
        return dst.backend.from_numpy(host, dst.index, copy=src.backend is dst.backend or src.backend.host and
                                      dst.backend.host, non_blocking=non_blocking)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.src)


def _to_device(t, dev, non_blocking=False, copy=False):
    if t._dev is dev:
        return t.clone() if copy else t
    if HANDLERS:  # a move is an op like any other for tracing and profiling (kind: this function's twin)
        r = intercepted(move, ToDevice, (t, dev, non_blocking, copy))
        if r is not PASS:
            return r
    ctx = ToDevice.__new__(ToDevice)
    out = ToDevice.forward(ctx, None, t._data, t._dev, dev, non_blocking)
    if t._rg and STATE.enabled:
        return record(ctx, out, dev, (t,))
    return _wrap(out, dev)


@dispatch_kind
def move(Op, t, dev, non_blocking, copy):
    """The dispatch kind of a move between devices (``Op`` is :class:`ToDevice`): ``t`` on ``dev``."""
    return _to_device(t, dev, non_blocking, copy)


def _parse_to(args, kwargs):
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    other = None
    for a in args:
        if isinstance(a, Tensor):
            other = a
        elif isinstance(a, dtypes.dtype):
            dt = a
        elif isinstance(a, (str, _device_cls, int)) and not isinstance(a, bool):
            dev = a
        elif a is None:
            continue
        else:
            try:
                dt = dtypes.as_dtype(a)
            except TypeError:
                raise TypeError(f"to() received an invalid combination of arguments: {args}") from None
    if other is not None:
        dev, dt = other.device, other.dtype
    return dev, dt


@export(to=TENSOR)
def to(self, *args, **kwargs):
    """A tensor on another device and/or of another dtype (``self`` when nothing changes).

    ``t.to("cuda")``, ``t.to(ember.float64)``, ``t.to(other)``, ``t.to(device, dtype, non_blocking=True)``.
    """
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    fmt = kwargs.pop("memory_format", None)
    check_memory_format(fmt, self.ndim, "to")
    dev, dt = _parse_to(args, kwargs)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    t = self
    if dt is not None:
        dt = dtypes.as_dtype(dt)
        if dt is not t.dtype:
            t = cast(t, dt)
            copy = False
    if dev is not None:
        d = resolve(dev)
        if d is not t._dev:
            t = _to_device(t, d, non_blocking)
            copy = False
    if copy:
        t = t.clone(memory_format=fmt)
    elif fmt is not None and fmt is not preserve_format:
        t = t.contiguous(memory_format=fmt)
    return t


@export(to=TENSOR)
def cpu(self, memory_format=None):
    """This tensor on the CPU (``self`` if it is there)."""
    return to(self, "cpu")


@export(to=TENSOR)
def cuda(self, device=None, non_blocking=False, memory_format=None):
    """This tensor on a CUDA device (the current one, or ``device``)."""
    if device is None:
        dev = "cuda"
    elif isinstance(device, int):
        dev = f"cuda:{device}"
    else:
        dev = device
    return to(self, dev, non_blocking=non_blocking)


def _caster(name, d):
    def method(self, memory_format=None):
        return cast(self, d)

    method.__name__ = name
    method.__doc__ = f"This tensor as {d}."
    return export(method, to=TENSOR)


@export(to=TENSOR)
def type_as(self, other):
    return to(self, other.dtype)


@export(to=TENSOR)
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_filled(name):
    fn = getattr(creation, name)

    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False, **kw):
        if kw or not size:
            size = sequence_arg(size, kw, "new_" + name, "size")
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    method.__name__ = "new_" + name
    return export(method, to=TENSOR)


@export(to=TENSOR)
def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


@export(to=TENSOR)
def pin_memory(self, device=None):
    """A copy in page-locked host memory of the accelerator in use (or of ``device``'s backend);
    the tensor itself where that backend has no pinned memory, or where there is no accelerator."""
    if not self._dev.backend.host:
        raise RuntimeError(f"cannot pin '{self.type()}': only dense CPU tensors can be pinned")
    b = _b.accelerator_backend() if device is None else _b.get_backend(_device_cls(device).type)
    pinned = self._data if b is None else b.pin_memory(self._data)
    if pinned is self._data:
        return self
    t = _wrap(pinned, self._dev)
    t._rg = False
    return t


@export(to=TENSOR)
def is_pinned(self, device=None):
    """Whether this host tensor lies in memory a registered backend pinned."""
    return self._dev.backend.host and any(b.is_pinned(self._data) for b in _b.BACKENDS.values() if b.is_available())


for _name in ("zeros", "ones", "empty"):
    _new_filled(_name)
for _name, _d in (("float", dtypes.float32), ("double", dtypes.float64), ("half", dtypes.float16),
                  ("bfloat16", dtypes.bfloat16), ("long", dtypes.int64), ("int", dtypes.int32),
                  ("short", dtypes.int16), ("char", dtypes.int8), ("byte", dtypes.uint8), ("bool", dtypes.bool),
                  ("cfloat", dtypes.complex64), ("cdouble", dtypes.complex128)):
    _caster(_name, _d)
