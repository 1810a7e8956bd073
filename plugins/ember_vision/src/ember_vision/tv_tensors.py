"""torchvision.tv_tensors on ember: Tensor subclasses that tell v2 transforms what a tensor holds.

An operation on a TVTensor returns a plain Tensor (the result may no longer be an image or valid boxes),
except ``clone``, ``to``, ``detach`` and ``requires_grad_``, which keep the type and metadata, as in
torchvision. :func:`wrap` re-wraps a plain result like a given TVTensor.
"""
from __future__ import annotations

import enum

import ember
from ember import Tensor
from ember.tensor import DisableTorchFunctionSubclass

__all__ = ["TVTensor", "Image", "Video", "Mask", "BoundingBoxes", "BoundingBoxFormat", "KeyPoints", "wrap",
           "set_return_type", "is_rotated_bounding_format"]

_KEEP_TYPE = {"clone", "to", "detach", "requires_grad_", "pin_memory"}
_return_type = "Tensor"


class set_return_type:
    """Whether operations on TVTensors return plain Tensors (``"Tensor"``, the default) or keep their type
    (``"TVTensor"``); usable as a function or a context manager."""

    def __init__(self, return_type: str):
        global _return_type
        if return_type.lower() not in ("tensor", "tvtensor"):
            raise ValueError(f"return_type must be 'TVTensor' or 'Tensor', got {return_type}")
        self._previous, _return_type = _return_type, ("TVTensor" if return_type.lower() == "tvtensor" else "Tensor")

    def __enter__(self):
        return self

    def __exit__(self, *args):
        global _return_type
        _return_type = self._previous


def _to_tensor(data, dtype=None, device=None, requires_grad=None) -> Tensor:
    if requires_grad is None:
        requires_grad = data.requires_grad if isinstance(data, Tensor) else False
    return ember.as_tensor(data, dtype=dtype, device=device).requires_grad_(requires_grad)


class TVTensor(Tensor):
    """Base class of the tv_tensors."""

    @classmethod
    def _wrap(cls, tensor: Tensor, **metadata):
        out = tensor.as_subclass(cls)
        for k, v in metadata.items():
            setattr(out, k, v)
        return out

    def _metadata(self) -> dict:
        return {}

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with DisableTorchFunctionSubclass():
            output = func(*args, **(kwargs or {}))
        first = args[0] if args else None
        keep = getattr(func, "__name__", "") in _KEEP_TYPE and isinstance(first, TVTensor)
        if isinstance(output, Tensor) and not isinstance(output, TVTensor) and (keep or _return_type == "TVTensor"):
            like = first if isinstance(first, TVTensor) else next(
                (a for a in args if isinstance(a, TVTensor)), None)
            if like is not None:
                return wrap(output, like=like)
        return output

    def __repr__(self) -> str:
        with DisableTorchFunctionSubclass():
            body = Tensor.__repr__(self)
        extra = "".join(f", {k}={v}" for k, v in self._metadata().items())
        return f"{type(self).__name__}({body}{extra})"

    def __deepcopy__(self, memo):
        return wrap(Tensor.clone(self).as_subclass(Tensor).detach().requires_grad_(self.requires_grad), like=self)


class Image(TVTensor):
    """An image ``[..., C, H, W]`` (a ``[H, W]`` tensor gets a channel dimension; a PIL image is converted)."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        if not isinstance(data, Tensor) and hasattr(data, "getbands"):  # a PIL image
            from .transforms import _pil
            data = _pil.to_tensor(data)
        t = _to_tensor(data, dtype, device, requires_grad)
        if t.ndim < 2:
            raise ValueError(f"Image: expected a tensor of at least 2 dimensions [..., H, W], got {t.ndim}")
        return cls._wrap(t.unsqueeze(0) if t.ndim == 2 else t)


class Video(TVTensor):
    """A video ``[..., T, C, H, W]``."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        t = _to_tensor(data, dtype, device, requires_grad)
        if t.ndim < 4:
            raise ValueError(f"Video: expected a tensor of at least 4 dimensions [..., T, C, H, W], got {t.ndim}")
        return cls._wrap(t)


class Mask(TVTensor):
    """A segmentation or detection mask ``[..., H, W]``."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        if not isinstance(data, Tensor) and hasattr(data, "getbands"):
            from .transforms import _pil
            data = _pil.to_tensor(data)[0]
        return cls._wrap(_to_tensor(data, dtype, device, requires_grad))


class BoundingBoxFormat(enum.Enum):
    """Coordinate formats of :class:`BoundingBoxes`."""
    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"
    XYWHR = "XYWHR"
    CXCYWHR = "CXCYWHR"
    XYXYXYXY = "XYXYXYXY"


def is_rotated_bounding_format(format: BoundingBoxFormat) -> bool:
    """Whether ``format`` describes rotated boxes (XYWHR, CXCYWHR, XYXYXYXY)."""
    return format in (BoundingBoxFormat.XYWHR, BoundingBoxFormat.CXCYWHR, BoundingBoxFormat.XYXYXYXY)


class BoundingBoxes(TVTensor):
    """Boxes ``[N, K]`` in ``format`` on an image of ``canvas_size = (height, width)``."""

    format: BoundingBoxFormat
    canvas_size: tuple

    def __new__(cls, data, *, format, canvas_size, clamping_mode="soft", dtype=None, device=None,
                requires_grad=None):
        if isinstance(format, str):
            format = BoundingBoxFormat[format.upper()]
        t = _to_tensor(data, dtype, device, requires_grad)
        if t.ndim == 1:
            t = t.unsqueeze(0)
        elif t.ndim != 2:
            raise ValueError(f"Expected a 1D or 2D tensor, got {t.ndim}D")
        return cls._wrap(t, format=format, canvas_size=tuple(canvas_size), clamping_mode=clamping_mode)

    def _metadata(self) -> dict:
        return {"format": self.format, "canvas_size": self.canvas_size, "clamping_mode": self.clamping_mode}


class KeyPoints(TVTensor):
    """Points ``[..., 2]`` of (x, y) on an image of ``canvas_size = (height, width)``."""

    canvas_size: tuple

    def __new__(cls, data, *, canvas_size, dtype=None, device=None, requires_grad=None):
        t = _to_tensor(data, dtype, device, requires_grad)
        if t.ndim == 1:
            t = t.unsqueeze(0)
        if t.shape[-1] != 2:
            raise ValueError(f"Expected a tensor of shape (..., 2), not {tuple(t.shape)}")
        return cls._wrap(t, canvas_size=tuple(canvas_size))

    def _metadata(self) -> dict:
        return {"canvas_size": self.canvas_size}


def wrap(wrappee: Tensor, *, like: TVTensor, **kwargs) -> TVTensor:
    """``wrappee`` as a TVTensor of ``like``'s type and metadata (``kwargs`` override the metadata)."""
    if isinstance(wrappee, TVTensor):
        wrappee = wrappee.as_subclass(Tensor)
    return type(like)._wrap(wrappee, **{**like._metadata(), **kwargs})
