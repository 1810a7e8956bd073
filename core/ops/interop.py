"""Zero-copy exchange with other array libraries: DLPack both ways.

``ember.from_dlpack(x)`` wraps any object with ``__dlpack__`` (NumPy, PyTorch, CuPy, JAX arrays)
without copying; ``Tensor.__dlpack__`` lets them wrap an ember tensor.  Writes through either side
show in the other.

>>> import numpy as np, ember
>>> a = np.zeros(3, dtype=np.float32)
>>> t = ember.from_dlpack(a)
>>> t[0] = 1.0
>>> a
array([1., 0., 0.], dtype=float32)
"""
from __future__ import annotations

from ..backend import resolve
from ..registry import export
from ..tensor import Tensor, _wrap

# DLPack device codes -> ember device types (kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged)
DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cpu", 13: "cuda"}


class _Capsule:
    """A legacy DLPack capsule presented through the ``__dlpack__`` protocol (assumed host memory)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


@export(to=("torch",))
def from_dlpack(ext_tensor, *, device=None, copy=None) -> Tensor:
    """A tensor sharing memory with ``ext_tensor`` (anything with ``__dlpack__``, or a DLPack capsule); on
    ``device`` (a copy where that is another device), and always a copy with ``copy=True``."""
    t = _imported(ext_tensor)
    out = t if device is None else t.to(device)
    return out.clone() if copy and out is t else out


def _imported(ext_tensor) -> Tensor:
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        if type(ext_tensor).__name__ != "PyCapsule":
            raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
                            f"{type(ext_tensor).__name__}")
        ext_tensor = _Capsule(ext_tensor)
    code, index = ext_tensor.__dlpack_device__()
    name = DLPACK_DEVICES.get(int(code))
    if name is None:
        raise RuntimeError(f"from_dlpack: unsupported DLPack device type {int(code)}")
    dev = resolve(name if name == "cpu" else f"{name}:{int(index)}")
    try:
        arr = dev.backend.xp.from_dlpack(ext_tensor)
    except (BufferError, TypeError, ValueError) as e:
        raise RuntimeError(f"from_dlpack: cannot import a {type(ext_tensor).__name__} on {dev}: {e}") from None
    return _wrap(arr, dev)


@export(to=("Tensor",))
def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of this tensor's memory (no copy)."""
    if self._rg:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    kwargs = {k: v for k, v in (("stream", stream), ("max_version", max_version), ("dl_device", dl_device),
                                ("copy", copy)) if v is not None}
    return self._data.__dlpack__(**kwargs)


@export(to=("Tensor",))
def __dlpack_device__(self) -> tuple:
    """``(DLPack device code, index)`` of this tensor's memory."""
    return self._data.__dlpack_device__()


@export(to=("torch",))
def to_dlpack(tensor) -> object:
    """A legacy DLPack capsule (``"dltensor"``) of ``tensor``'s memory, no copy; ``ember.from_dlpack`` and other
    libraries' ``from_dlpack`` take it.  As PyTorch's, it exports the data of a tensor that requires grad.

    >>> import ember
    >>> ember.from_dlpack(ember.to_dlpack(ember.arange(3.)))
    tensor([0., 1., 2.])
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'data' (position 1) must be Tensor, not {type(tensor).__name__}")
    return tensor._data.__dlpack__()
