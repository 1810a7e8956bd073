"""The same image operations on PIL images, through Pillow's own functions."""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

RESAMPLE = {"nearest": Image.NEAREST, "nearest-exact": Image.NEAREST, "bilinear": Image.BILINEAR,
            "bicubic": Image.BICUBIC, "box": Image.BOX, "hamming": Image.HAMMING, "lanczos": Image.LANCZOS}


def to_tensor(img):
    """The image as a ``(C, H, W)`` tensor of its own dtype (uint8 for RGB/L)."""
    import ember

    arr = np.asarray(img)
    arr = arr[:, :, None] if arr.ndim == 2 else arr
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def size(img):
    return list(img.size)


def channels(img) -> int:
    return len(img.getbands())


def resize(img, hw, mode: str):
    return img.resize((hw[1], hw[0]), RESAMPLE[mode])


def crop(img, top: int, left: int, height: int, width: int):
    return img.crop((left, top, left + width, top + height))


def _fill(img, fill):
    """A number means that value in every band (as torchvision); a sequence gives one per band."""
    if isinstance(fill, (int, float)):
        return int(fill) if channels(img) == 1 else (int(fill),) * channels(img)
    return tuple(int(v) for v in fill)


def pad(img, padding, fill, mode: str):
    left, right, top, bottom = padding
    if mode == "constant":
        return ImageOps.expand(img, border=(left, top, right, bottom), fill=_fill(img, fill))
    arr = np.asarray(img)
    widths = [(top, bottom), (left, right)] + [(0, 0)] * (arr.ndim - 2)
    out = Image.fromarray(np.pad(arr, widths, mode=mode))
    if img.mode == "P":
        out.putpalette(img.getpalette())
    return out


def hflip(img):
    return img.transpose(Image.FLIP_LEFT_RIGHT)


def vflip(img):
    return img.transpose(Image.FLIP_TOP_BOTTOM)


def rgb_to_grayscale(img, num_output_channels: int):
    gray = img.convert("L")
    return Image.merge("RGB", [gray] * 3) if num_output_channels == 3 else gray


def adjust_brightness(img, factor: float):
    return ImageEnhance.Brightness(img).enhance(factor)


def adjust_contrast(img, factor: float):
    return ImageEnhance.Contrast(img).enhance(factor)


def adjust_saturation(img, factor: float):
    return ImageEnhance.Color(img).enhance(factor)


def adjust_hue(img, factor: float):
    if img.mode in ("L", "1", "I", "F"):
        return img
    h, s, v = img.convert("HSV").split()
    shifted = (np.asarray(h, dtype=np.int64) + int(factor * 255)) % 256
    h = Image.fromarray(shifted.astype(np.uint8), "L")
    return Image.merge("HSV", (h, s, v)).convert(img.mode)


def rotate(img, angle: float, mode: str, expand: bool, center, fill):
    return img.rotate(angle, RESAMPLE[mode], expand=expand, center=center, fillcolor=_fill(img, fill))


def invert(img):
    return ImageOps.invert(img)


def posterize(img, bits: int):
    return ImageOps.posterize(img, bits)


def solarize(img, threshold: float):
    return ImageOps.solarize(img, threshold)


def autocontrast(img):
    return ImageOps.autocontrast(img)


def equalize(img):
    return ImageOps.equalize(img)


def adjust_sharpness(img, factor: float):
    return ImageEnhance.Sharpness(img).enhance(factor)


def _transform_fill(img, fill):
    """torchvision's fill for PIL's ``transform``: 0 by default, one value for every band."""
    fill = 0 if fill is None else fill
    if isinstance(fill, (list, tuple)) and len(fill) == 1:
        fill = fill[0]
    return {"fillcolor": _fill(img, fill)}


def affine(img, matrix, mode: str, fill):
    return img.transform(img.size, Image.AFFINE, matrix, RESAMPLE[mode], **_transform_fill(img, fill))


def perspective(img, coeffs, mode: str, fill):
    return img.transform(img.size, Image.PERSPECTIVE, coeffs, RESAMPLE[mode], **_transform_fill(img, fill))
