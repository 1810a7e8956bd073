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
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    # PIL's filters (PIL images only, as in torchvision)
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


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


def _interpolation_modes_from_int(i: int) -> InterpolationMode:
    """The mode of a Pillow resampling constant (0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming)."""
    modes = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
             4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}
    return modes[i]


def _mode(interpolation) -> str:
    """An InterpolationMode, its value, or a Pillow integer constant, as the mode's value."""
    if isinstance(interpolation, int) and not isinstance(interpolation, bool):
        return _interpolation_modes_from_int(interpolation).value
    if not isinstance(interpolation, str):
        raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer "
                        f"constant, got {type(interpolation).__name__}")
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
    return _pil.to_tensor(pic)


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

    PIL images resize with PIL (always antialiased); tensors as torchvision's tensor kernel does, through
    ``interpolate`` (bilinear and bicubic antialiased unless ``antialias`` is False; NEAREST is PyTorch's
    nearest, NEAREST_EXACT samples the pixel centres as PIL).
    """
    impl = _impl(img, "resize")
    hw = _output_size(img, size, max_size)
    if min(hw) <= 0:
        raise ValueError(f"resize: output size {hw} must be positive (input size {get_image_size(img)} as [w, h])")
    if impl is _pil:
        return _pil.resize(img, hw, _mode(interpolation))
    if list(hw) == [int(img.shape[-2]), int(img.shape[-1])]:
        return img
    return _tensor.resize(img, hw, _mode(interpolation), bool(antialias))


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
    """``crop`` then ``resize`` to ``size``."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


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
    """Rotate counter-clockwise by ``angle`` degrees about ``center`` (pixel coordinates; the image centre by
    default); ``expand`` enlarges the output to hold the whole rotated image; ``fill`` is the value (one, or one
    per channel) of pixels whose source lies outside.  PIL images rotate with ``PIL.Image.rotate``, tensors by
    torchvision's sampling grid (NEAREST or BILINEAR)."""
    impl = _impl(img, "rotate")
    if not isinstance(angle, (int, float)):
        raise TypeError(f"rotate: Argument angle should be int or float, got {type(angle).__name__}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError(f"rotate: Argument center should be a sequence, got {type(center).__name__}")
    if impl is _pil:
        return _pil.rotate(img, float(angle), _mode(interpolation), expand, center, 0 if fill is None else fill)
    mode = _grid_mode(img, interpolation, "rotate")
    w, h = get_image_size(img)
    c = [0.0, 0.0] if center is None else [center[0] - w * 0.5, center[1] - h * 0.5]
    matrix = _tensor.affine_matrix(c, -float(angle), [0.0, 0.0], 1.0, [0.0, 0.0], inverted=True)
    out_size = _affine_output_size(matrix, w, h) if expand else None
    return _tensor.affine(img, matrix, mode, _fill_list(img, fill), out_size)


def _affine_output_size(matrix, w: int, h: int) -> tuple:
    """``(height, width)`` holding the whole image under ``matrix``: the corners' bounding box, in float32 and
    with values within 1e-4 of an integer taken as it (torchvision's rule, so sizes agree with it)."""
    corners = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                        [0.5 * w, -0.5 * h, 1.0]], np.float32)
    moved = corners @ np.asarray(matrix, np.float32).reshape(2, 3).T
    centre = np.array([w * 0.5, h * 0.5], np.float32)
    tol = np.float32(1e-4)
    high = np.ceil(np.trunc((moved.max(0) + centre) / tol) * tol)
    low = np.floor(np.trunc((moved.min(0) + centre) / tol) * tol)
    width, height = (high - low).astype(int)
    return int(height), int(width)


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


def get_dimensions(img) -> list:
    """``[channels, height, width]`` of a PIL image or tensor."""
    w, h = get_image_size(img)
    return [get_image_num_channels(img), h, w]


def invert(img):
    """Each value subtracted from the maximum (255 for uint8, 1.0 for float)."""
    _channels_in(img, "invert", (1, 3))
    return _impl(img, "invert", 3).invert(img)


def posterize(img, bits: int):
    """Keep the ``bits`` (0-8) most significant bits of each uint8 value."""
    if not 0 <= bits <= 8:
        raise ValueError(f"posterize: The number if bits should be between 0 and 8. Got {bits}")
    impl = _impl(img, "posterize", 3)
    if impl is _tensor and img.dtype != ember.uint8:
        raise TypeError(f"posterize: Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _channels_in(img, "posterize", (1, 3))
    return impl.posterize(img, int(bits))


def solarize(img, threshold: float):
    """Invert the values at or above ``threshold``."""
    impl = _impl(img, "solarize", 3)
    _channels_in(img, "solarize", (1, 3))
    if impl is _tensor and threshold > _tensor.bound(img):
        raise TypeError("solarize: Threshold should be less than bound of img.")
    return impl.solarize(img, threshold)


def autocontrast(img):
    """Rescale each channel so that its darkest value becomes 0 and its lightest the maximum."""
    _channels_in(img, "autocontrast", (1, 3))
    return _impl(img, "autocontrast", 3).autocontrast(img)


def equalize(img):
    """Histogram equalisation of each channel (uint8 tensors of 3 or 4 dimensions, or PIL images)."""
    impl = _impl(img, "equalize", 3)
    if impl is _tensor:
        if img.ndim > 4:
            raise TypeError(f"equalize: Input image tensor should have 3 or 4 dimensions, but found {img.ndim}")
        if img.dtype != ember.uint8:
            raise TypeError(f"equalize: Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _channels_in(img, "equalize", (1, 3))
    return impl.equalize(img)


def adjust_sharpness(img, sharpness_factor: float):
    """Blend with a smoothed copy: 0 smooth, 1 unchanged, 2 twice as sharp."""
    impl = _impl(img, "adjust_sharpness")
    _channels_in(img, "adjust_sharpness", (1, 3))
    return impl.adjust_sharpness(img, _factor("adjust_sharpness", sharpness_factor))


def _fill_list(img, fill):
    """A tensor's fill as one float per channel (None stays None)."""
    if fill is None or not isinstance(img, ember.Tensor):
        return fill
    values = [float(fill)] if isinstance(fill, numbers.Number) else [float(v) for v in fill]
    c = _tensor.channels(img)
    if len(values) not in (1, c):
        raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number of channels of "
                         f"the image ({len(values)} != {c})")
    return values


def _grid_mode(img, interpolation, op: str) -> str:
    mode = _mode(interpolation)
    if isinstance(img, ember.Tensor) and mode not in ("nearest", "bilinear"):
        raise ValueError(f"{op}: Interpolation mode '{mode}' is unsupported with Tensor input")
    return mode


def affine(img, angle: float, translate, scale: float, shear, interpolation=InterpolationMode.NEAREST, fill=None,
           center=None):
    """Rotate by ``angle`` degrees (clockwise), translate by ``translate`` pixels, scale and shear (degrees,
    one value or ``(x, y)``) about ``center`` (the image centre), keeping the size."""
    impl = _impl(img, "affine")
    if not isinstance(translate, (list, tuple)) or len(translate) != 2:
        raise TypeError("affine: Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("affine: Argument scale should be positive")
    shear = [float(shear), 0.0] if isinstance(shear, numbers.Number) else [float(v) for v in shear] + [0.0] * (
        2 - len(shear))
    w, h = get_image_size(img)
    if impl is _pil:  # PIL's pixel grid has its origin at the top-left corner
        c = [w * 0.5, h * 0.5] if center is None else list(center)
    else:
        c = [0.0, 0.0] if center is None else [center[0] - w * 0.5, center[1] - h * 0.5]
    matrix = _tensor.affine_matrix(c, float(angle), [float(t) for t in translate], float(scale), shear, inverted=True)
    return impl.affine(img, matrix, _grid_mode(img, interpolation, "affine"), _fill_list(img, fill))


def _get_perspective_coeffs(startpoints, endpoints) -> list:
    """The 8 coefficients mapping ``endpoints`` (output corners) back to ``startpoints`` (input corners), by
    least squares in double precision."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} startpoints and "
                         f"{len(endpoints)} endpoints.")
    rows = []
    for (ex, ey), (sx, sy) in zip(endpoints, startpoints):
        rows.append([ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey])
        rows.append([0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey])
    b = np.asarray(startpoints, dtype=np.float64).reshape(8)
    solution = np.linalg.lstsq(np.asarray(rows, dtype=np.float64), b, rcond=None)[0]
    return solution.astype(np.float32).tolist()


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """The perspective transform taking the four ``startpoints`` corners ``[top-left, top-right, bottom-right,
    bottom-left]`` to ``endpoints``."""
    impl = _impl(img, "perspective")
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    return impl.perspective(img, coeffs, _grid_mode(img, interpolation, "perspective"), _fill_list(img, fill))


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Move each pixel by ``displacement`` ([1, H, W, 2], in the [-1, 1] units of ``grid_sample``); PIL images
    go through a tensor and back."""
    if not isinstance(displacement, ember.Tensor) or tuple(displacement.shape[-1:]) != (2,) \
            or displacement.ndim != 4 or displacement.shape[0] != 1:
        raise ValueError(f"elastic_transform: displacement should be a [1, H, W, 2] tensor, got "
                         f"{getattr(displacement, 'shape', type(displacement).__name__)}")
    if isinstance(img, Image.Image):
        return to_pil_image(elastic_transform(pil_to_tensor(img), displacement, interpolation, fill), mode=img.mode)
    _impl(img, "elastic_transform", 3)
    if tuple(displacement.shape[1:3]) != tuple(img.shape[-2:]):
        raise ValueError(f"elastic_transform: displacement of shape {tuple(displacement.shape)} does not match the "
                         f"image's size {tuple(img.shape[-2:])}")
    return _tensor.elastic(img, displacement, _grid_mode(img, interpolation, "elastic_transform"),
                           _fill_list(img, fill))


def gaussian_blur(img, kernel_size, sigma=None):
    """Blur with a Gaussian of odd ``kernel_size`` (int or ``(kx, ky)``) and ``sigma`` (default
    ``0.3 * ((k - 1) * 0.5 - 1) + 0.8``); PIL images go through a tensor and back."""
    kernel_size = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    if any(k % 2 == 0 or k < 0 for k in kernel_size):
        raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in kernel_size]
    sigma = [float(sigma)] * 2 if isinstance(sigma, (int, float)) else [float(s) for s in sigma] * (
        2 if len(sigma) == 1 else 1)
    if any(s <= 0 for s in sigma):
        raise ValueError(f"sigma should have positive values. Got {sigma}")
    if isinstance(img, Image.Image):
        return to_pil_image(gaussian_blur(pil_to_tensor(img), kernel_size, sigma), mode=img.mode)
    _impl(img, "gaussian_blur", 3)
    return _tensor.gaussian_blur(img, kernel_size, sigma)


def adjust_gamma(img, gamma: float, gain: float = 1.0):
    """``gain * img ** gamma`` on values scaled to ``[0, 1]`` (PIL images through a 256-entry table).

    >>> import ember
    >>> adjust_gamma(ember.tensor([[[0.25, 1.0]]]), 0.5).tolist()
    [[[0.5, 1.0]]]
    """
    if gamma < 0:
        raise ValueError(f"adjust_gamma: Gamma should be a non-negative real number, got {gamma}")
    _channels_in(img, "adjust_gamma", (1, 3))
    if isinstance(img, Image.Image):
        table = [int((255 + 1 - 1e-3) * gain * pow(v / 255.0, gamma)) for v in range(256)] * 3
        return img.convert("RGB").point(table).convert(img.mode)
    x = img if img.is_floating_point() else convert_image_dtype(img, ember.float32)
    return convert_image_dtype((gain * x ** gamma).clamp(0, 1), img.dtype)


def convert_image_dtype(image, dtype=ember.float32):
    """A tensor image in ``dtype``, values rescaled between integer ranges and ``[0, 1]`` for floats.

    >>> import ember
    >>> convert_image_dtype(ember.tensor([0, 255], dtype=ember.uint8)).tolist()
    [0.0, 1.0]
    """
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"convert_image_dtype: Input img should be Tensor Image, got {type(image).__name__}")
    if image.is_floating_point() and not dtype.is_floating_point and (
            (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64))
            or (image.dtype == ember.float64 and dtype == ember.int64)):
        raise RuntimeError(f"convert_image_dtype: The cast from {image.dtype} to {dtype} cannot be performed safely.")
    return image if image.dtype == dtype else _tensor.rescale(image, dtype)


def _crop_size(size) -> tuple:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return int(size[0]), int(size[0])
    if not isinstance(size, Sequence) or len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for size, got {size!r}")
    return int(size[0]), int(size[1])


def five_crop(img, size):
    """The four corner crops and the central crop of ``size``: ``(top_left, top_right, bottom_left,
    bottom_right, center)``.

    >>> import ember
    >>> [c.tolist() for c in five_crop(ember.arange(9).reshape(1, 3, 3), 1)][:2]
    [[[[0]]], [[[2]]]]
    """
    ch, cw = _crop_size(size)
    w, h = get_image_size(img)
    if cw > w or ch > h:
        raise ValueError(f"five_crop: Requested crop size {(ch, cw)} is bigger than input size {(h, w)}")
    corners = [crop(img, top, left, ch, cw) for top, left in ((0, 0), (0, w - cw), (h - ch, 0), (h - ch, w - cw))]
    return (*corners, center_crop(img, [ch, cw]))


def ten_crop(img, size, vertical_flip: bool = False):
    """:func:`five_crop` of the image, then of its mirror (left-right, or top-bottom with ``vertical_flip``)."""
    size = _crop_size(size)
    return five_crop(img, size) + five_crop(vflip(img) if vertical_flip else hflip(img), size)
