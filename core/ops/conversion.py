"""Device and dtype conversion: ``to``, ``cpu``, ``cuda``, ``float``, ``new_*`` and friends."""
from __future__ import annotations

from .. import backend as _b
from .. import dtypes
from ..autograd.function import Op
from ..backend import device as _device_cls
from ..backend import resolve
from ..dispatch import cast
from ..tensor import Tensor, _wrap


__all__ = []


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
    ctx = ToDevice.__new__(ToDevice)
    out = ToDevice.forward(ctx, None, t._data, t._dev, dev, non_blocking)
    if t._rg:
        from ..autograd.grad_mode import STATE

        if STATE.enabled:
            from ..dispatch import record

            return record(ctx, out, dev, (t,))
    return _wrap(out, dev)


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


def to(self, *args, **kwargs):
    """A tensor on another device and/or of another dtype (``self`` when nothing changes).

    ``t.to("cuda")``, ``t.to(ember.float64)``, ``t.to(other)``, ``t.to(device, dtype, non_blocking=True)``.
    """
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    kwargs.pop("memory_format", None)
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
        t = t.clone()
    return t


def cpu(self, memory_format=None):
    """This tensor on the CPU (``self`` if it is there)."""
    return to(self, "cpu")


def cuda(self, device=None, non_blocking=False, memory_format=None):
    """This tensor on a CUDA device (the current one, or ``device``)."""
    if device is None:
        dev = "cuda"
    elif isinstance(device, int):
        dev = f"cuda:{device}"
    else:
        dev = device
    return to(self, dev, non_blocking=non_blocking)


def _caster(d):
    def method(self, memory_format=None):
        return cast(self, d)

    method.__name__ = d.name
    method.__doc__ = f"This tensor as {d}."
    return method


def type_as(self, other):
    return to(self, other.dtype)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    from .creation import tensor

    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def _new_filled(name):
    from . import creation

    fn = getattr(creation, name)

    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        return fn(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)

    method.__name__ = "new_" + name
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    from .creation import full

    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


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


def is_pinned(self, device=None):
    """Whether this host tensor lies in memory a registered backend pinned."""
    return self._dev.backend.host and any(b.is_pinned(self._data) for b in _b.BACKENDS.values() if b.is_available())


METHODS = {
    "to": to, "cpu": cpu, "cuda": cuda, "type_as": type_as, "new_tensor": new_tensor,
    "new_zeros": _new_filled("zeros"), "new_ones": _new_filled("ones"), "new_empty": _new_filled("empty"),
    "new_full": new_full, "pin_memory": pin_memory, "is_pinned": is_pinned,
    "float": _caster(dtypes.float32), "double": _caster(dtypes.float64), "half": _caster(dtypes.float16),
    "bfloat16": _caster(dtypes.bfloat16), "long": _caster(dtypes.int64), "int": _caster(dtypes.int32),
    "short": _caster(dtypes.int16), "char": _caster(dtypes.int8), "byte": _caster(dtypes.uint8),
    "bool": _caster(dtypes.bool), "cfloat": _caster(dtypes.complex64), "cdouble": _caster(dtypes.complex128),
}
