"""Functional image transforms on PIL images and on ember tensors ``(..., C, H, W)``.

Each function validates its input, then runs the PIL or the tensor implementation; both give
the same pixels (up to rounding).

>>> import ember
>>> from ember_vision.transforms import functional as F
>>> F.hflip(ember.tensor([[[1, 2, 3]]])).tolist()
[[[3, 2, 1]]]
"""
from __future__ import annotations

import enum
import numbers
from collections.abc import Sequence

import numpy as np
from PIL import Image

import ember

from . import _pil, _tensor


class InterpolationMode(str, enum.Enum):
    """Resampling filters, as ``torchvision.transforms.InterpolationMode``."""

    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


def _impl(img, op: str, min_dim: int = 2):
    """The implementation module for ``img`` (PIL or tensor), or a TypeError naming ``op``."""
    if isinstance(img, Image.Image):
        return _pil
    if isinstance(img, ember.Tensor):
        if img.ndim < min_dim:
            raise TypeError(f"{op}: tensor is not a torch image: expected at least {min_dim} dimensions "
                            f"(..., C, H, W), got shape {tuple(img.shape)}")
        return _tensor
    raise TypeError(f"{op}: img should be PIL Image or Tensor. Got {type(img).__name__}")


def _mode(interpolation) -> str:
    return InterpolationMode(interpolation).value


def _channels_in(img, op: str, allowed) -> int:
    c = _impl(img, op).channels(img)
    if c not in allowed:
        raise TypeError(f"{op}: Input image tensor permitted channel values are {list(allowed)}, but found {c} "
                        f"(shape {tuple(getattr(img, 'shape', ()))})")
    return c


def get_image_size(img) -> list:
    """``[width, height]`` of a PIL image or tensor."""
    return _impl(img, "get_image_size").size(img)


def get_image_num_channels(img) -> int:
    return _impl(img, "get_image_num_channels").channels(img)


# -- conversions
def to_tensor(pic):
    """PIL image or HWC ``numpy.ndarray`` -> float32 ``(C, H, W)`` tensor in ``[0, 1]`` (integer inputs / 255).

    >>> import numpy as np
    >>> to_tensor(np.full((1, 2, 3), 255, np.uint8)).shape
    ember.Size([3, 1, 2])
    """
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"to_tensor: pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    elif isinstance(pic, Image.Image):
        arr = np.asarray(pic)
        arr = arr[:, :, None] if arr.ndim == 2 else arr
    else:
        raise TypeError(f"to_tensor: pic should be PIL Image or ndarray. Got {type(pic).__name__}")
    t = ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))
    if arr.dtype == np.uint8:
        return t.to(ember.float32) / 255.0
    return t if t.is_floating_point() else t.to(ember.float32)


def pil_to_tensor(pic):
    """PIL image -> ``(C, H, W)`` tensor of the image's own dtype (uint8 for RGB/L)."""
    if not isinstance(pic, Image.Image):
        raise TypeError(f"pil_to_tensor: pic should be PIL Image. Got {type(pic).__name__}")
    arr = np.asarray(pic)
    arr = arr[:, :, None] if arr.ndim == 2 else arr
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


_PIL_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def to_pil_image(pic, mode: str | None = None):
    """``(C, H, W)`` tensor or ``(H, W, C)`` ndarray -> PIL image; float values are scaled by 255."""
    if isinstance(pic, ember.Tensor):
        if pic.ndim not in (2, 3):
            raise ValueError(f"to_pil_image: pic should be 2/3 dimensional. Got {pic.ndim} dimensions "
                             f"(shape {tuple(pic.shape)}).")
        t = pic.unsqueeze(0) if pic.ndim == 2 else pic
        if t.is_floating_point():
            t = (t * 255).round().clamp(0, 255).to(ember.uint8)
        arr = t.detach().cpu().numpy().transpose(1, 2, 0)
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"to_pil_image: pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        raise TypeError(f"to_pil_image: pic should be Tensor or ndarray. Got {type(pic).__name__}")
    c = arr.shape[-1]
    if c not in _PIL_MODES:
        raise ValueError(f"to_pil_image: pic should not have > 4 channels. Got {c} channels.")
    if arr.dtype != np.uint8:
        raise TypeError(f"to_pil_image: expected uint8 or floating-point values, got {arr.dtype}")
    img = Image.fromarray(np.ascontiguousarray(arr[:, :, 0] if c == 1 else arr))
    return img if mode is None or mode == img.mode else img.convert(mode)


def normalize(tensor, mean, std, inplace: bool = False):
    """``(tensor - mean[c]) / std[c]`` per channel of a float ``(..., C, H, W)`` tensor."""
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"normalize: img should be Tensor. Got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"normalize: Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(f"normalize: Expected tensor to be a tensor image of size (..., C, H, W). "
                         f"Got tensor.size() = {tuple(tensor.shape)}")
    c = int(tensor.shape[-3])
    for name, v in (("mean", mean), ("std", std)):
        n = len(v) if isinstance(v, Sequence) else 1
        if n not in (1, c):
            raise ValueError(f"normalize: {name} has {n} values but the image has {c} channels "
                             f"(shape {tuple(tensor.shape)})")
    out = _tensor.normalize(tensor, mean, std)
    if inplace:
        tensor.copy_(out)
        return tensor
    return out


# -- geometry
def _output_size(img, size, max_size):
    w, h = get_image_size(img)
    if isinstance(size, numbers.Number) or len(size) == 1:
        s = int(size if isinstance(size, numbers.Number) else size[0])
        short, long = (w, h) if w <= h else (h, w)
        new_short, new_long = s, int(s * long / short)
        if max_size is not None and new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
        return (new_long, new_short) if w <= h else (new_short, new_long)
    if max_size is not None:
        raise ValueError("resize: max_size should only be passed if size specifies the length of the smaller edge")
    return int(size[0]), int(size[1])


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size`` ``(h, w)``, or the smaller edge to ``size`` (an int) keeping the aspect ratio.

    Bilinear and bicubic are antialiased when shrinking on both paths, as PIL does (``antialias`` is
    accepted for compatibility); tensors give PIL's pixels up to rounding.
    """
    impl = _impl(img, "resize")
    hw = _output_size(img, size, max_size)
    if min(hw) <= 0:
        raise ValueError(f"resize: output size {hw} must be positive (input size {get_image_size(img)} as [w, h])")
    return impl.resize(img, hw, _mode(interpolation))


def crop(img, top: int, left: int, height: int, width: int):
    """The ``height x width`` region at ``(top, left)``; outside the image is zero padding."""
    return _impl(img, "crop").crop(img, int(top), int(left), int(height), int(width))


def center_crop(img, output_size):
    """The centred ``output_size`` ``(h, w)`` (or square int) region."""
    if isinstance(output_size, numbers.Number):
        output_size = (output_size, output_size)
    th, tw = (int(output_size[0]), int(output_size[-1]))
    w, h = get_image_size(img)
    return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    return resize(crop(img, top, left, height, width), size, interpolation)


_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad each border: ``padding`` an int, ``(left/right, top/bottom)`` or ``(left, top, right, bottom)``."""
    impl = _impl(img, "pad")
    if padding_mode not in _PAD_MODES:
        raise ValueError(f"pad: padding_mode should be one of {list(_PAD_MODES)}, got {padding_mode!r}")
    p = [padding] if isinstance(padding, numbers.Number) else list(padding)
    if len(p) not in (1, 2, 4):
        raise ValueError(f"pad: padding must be an int or a 1, 2 or 4 element sequence, got {len(p)} elements")
    left, top, right, bottom = (p * 4)[:4] if len(p) == 1 else (p * 2 if len(p) == 2 else p)
    return impl.pad(img, [int(left), int(right), int(top), int(bottom)], fill, padding_mode)


def hflip(img):
    """Mirror left-right."""
    return _impl(img, "hflip").hflip(img)


def vflip(img):
    """Mirror top-bottom."""
    return _impl(img, "vflip").vflip(img)


def rotate(img, angle: float, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None, fill=None):
    """Rotate counter-clockwise by ``angle`` degrees about ``center`` (the image centre), like ``PIL.Image.rotate``."""
    impl = _impl(img, "rotate")
    mode = _mode(interpolation)
    if mode == "bicubic" and impl is _tensor:
        raise ValueError("rotate: tensor images support NEAREST and BILINEAR interpolation, got BICUBIC")
    fill = 0 if fill is None else fill
    return impl.rotate(img, float(angle), mode, expand, center, fill)


# -- colour
def rgb_to_grayscale(img, num_output_channels: int = 1):
    """ITU-R 601-2 luma ``0.299 R + 0.587 G + 0.114 B``, repeated to ``num_output_channels`` (1 or 3)."""
    if num_output_channels not in (1, 3):
        raise ValueError(f"rgb_to_grayscale: num_output_channels should be either 1 or 3, got {num_output_channels}")
    _channels_in(img, "rgb_to_grayscale", (3,))
    return _impl(img, "rgb_to_grayscale", 3).rgb_to_grayscale(img, num_output_channels)


to_grayscale = rgb_to_grayscale


def _factor(op: str, f: float) -> float:
    if f < 0:
        raise ValueError(f"{op}: factor ({f}) is not non-negative.")
    return float(f)


def adjust_brightness(img, brightness_factor: float):
    """Multiply by ``brightness_factor`` (0 black, 1 unchanged)."""
    impl = _impl(img, "adjust_brightness")
    _channels_in(img, "adjust_brightness", (1, 3))
    return impl.adjust_brightness(img, _factor("adjust_brightness", brightness_factor))


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean grey level (0 flat grey, 1 unchanged)."""
    impl = _impl(img, "adjust_contrast")
    _channels_in(img, "adjust_contrast", (1, 3))
    return impl.adjust_contrast(img, _factor("adjust_contrast", contrast_factor))


def adjust_saturation(img, saturation_factor: float):
    """Blend with the greyscale image (0 grey, 1 unchanged)."""
    impl = _impl(img, "adjust_saturation")
    _channels_in(img, "adjust_saturation", (1, 3))
    return impl.adjust_saturation(img, _factor("adjust_saturation", saturation_factor))


def adjust_hue(img, hue_factor: float):
    """Shift the hue by ``hue_factor`` turns, in ``[-0.5, 0.5]``."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"adjust_hue: hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    impl = _impl(img, "adjust_hue")
    _channels_in(img, "adjust_hue", (1, 3))
    return impl.adjust_hue(img, float(hue_factor))


def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    """Set the ``h x w`` region at ``(i, j)`` of a tensor image to ``v``."""
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"erase: img should be Tensor Image. Got {type(img).__name__}")
    if inplace:
        img[..., i:i + h, j:j + w] = v
        return img
    return _tensor.erase(img, i, j, h, w, v)
