"""torchvision.io.image on Pillow: read, decode, encode and write images as uint8 tensors.

JPEG, PNG, GIF and WEBP (and AVIF/HEIC where the installed Pillow has the codec). Decoded images are
``(C, H, W)`` uint8 tensors (16-bit PNGs, grey or colour, at their full depth: int32 of values up to 65535,
where torchvision has uint16); encoded images are 1-D uint8 tensors of the file's bytes.

>>> ImageReadMode["RGB"].value
3
"""
from __future__ import annotations

import enum
import io as _io
import os

import numpy as np

import ember

__all__ = ["ImageReadMode", "decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png",
           "read_file", "read_image", "write_file", "write_jpeg", "write_png", "decode_gif", "decode_webp",
           "decode_avif", "decode_heic"]


class ImageReadMode(enum.Enum):
    """The channels a decoder converts to; a mode may also be given by name (``"RGB"``)."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


# ImageReadMode -> the Pillow mode to convert to
_PIL_MODES = {ImageReadMode.GRAY: "L", ImageReadMode.GRAY_ALPHA: "LA", ImageReadMode.RGB: "RGB",
              ImageReadMode.RGB_ALPHA: "RGBA"}


def _mode(mode) -> ImageReadMode:
    if isinstance(mode, str):
        try:
            return ImageReadMode[mode.upper()]
        except KeyError:
            raise ValueError(f"mode must be one of {[m.name for m in ImageReadMode]}, got {mode!r}") from None
    if not isinstance(mode, ImageReadMode):
        raise TypeError(f"mode must be an ImageReadMode or its name, got {type(mode).__name__}")
    return mode


def read_file(path) -> ember.Tensor:
    """The bytes of the file at ``path`` as a 1-D uint8 tensor."""
    with open(os.fspath(path), "rb") as f:
        return ember.from_numpy(np.frombuffer(f.read(), np.uint8).copy())


def write_file(filename, data) -> None:
    """Write a 1-D uint8 tensor's bytes to ``filename``."""
    _check_bytes(data, "write_file")
    with open(os.fspath(filename), "wb") as f:
        f.write(data.numpy().tobytes())


def _check_bytes(data, op: str) -> None:
    if not ember.is_tensor(data):
        raise TypeError(f"{op}: expected a 1-D uint8 tensor of encoded bytes, got {type(data).__name__}")
    if data.dtype != ember.uint8 or data.dim() != 1:
        raise RuntimeError(f"{op}: expected a 1-D uint8 tensor of encoded bytes, got {data.dim()}-D {data.dtype}")
    if data.device.type != "cpu":
        raise ValueError(f"{op}: input tensor must be a CPU tensor, got one on {data.device}")


def _open(data, op: str, formats=None):
    """The Pillow image of a 1-D uint8 tensor of encoded bytes, checked to be one of ``formats``."""
    from PIL import Image, UnidentifiedImageError

    _check_bytes(data, op)
    try:
        img = Image.open(_io.BytesIO(data.numpy().tobytes()))
        if formats is not None and img.format not in formats:
            raise RuntimeError(f"{op}: not a {'/'.join(formats)} image (it is {img.format})")
        img.load()
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise RuntimeError(f"{op}: could not decode the image: {e}") from e
    return img


def _decode(data, mode, apply_exif_orientation: bool, op: str, formats=None) -> ember.Tensor:
    from PIL import ImageOps

    mode = _mode(mode)
    if _is_png16(data) and (formats is None or "PNG" in formats):
        return _decode_png16(data, mode, op)
    img = _open(data, op, formats)
    return _to_tensor(ImageOps.exif_transpose(img) if apply_exif_orientation else img, mode)


def _is_png16(data) -> bool:
    """Whether a tensor of encoded bytes is a PNG of 16 bits per sample (its IHDR's bit depth)."""
    return (ember.is_tensor(data) and data.dim() == 1 and data.dtype == ember.uint8 and data.numel() > 24
            and bytes(data[:8].tolist()) == b"\x89PNG\r\n\x1a\n" and int(data[24]) == 16)


# libpng's default weights for its RGB -> grey conversion, in 1/32768 (torchvision converts with libpng)
_GREY_WEIGHTS = np.array([6968, 23434, 2366], np.int64)


def _decode_png16(data, mode: ImageReadMode, op: str) -> ember.Tensor:
    """A 16-bit PNG at its full depth, read with pypng (Pillow keeps only 8 bits of 16-bit colour), converted
    to ``mode``'s channels: a ``(C, H, W)`` int32 tensor of values in ``[0, 65535]`` (torchvision's is uint16,
    which ember tensors cannot hold yet)."""
    import png

    _check_bytes(data, op)
    try:
        width, height, rows, info = png.Reader(bytes=data.numpy().tobytes()).asDirect()
        pixels = np.vstack([np.asarray(r, np.int64) for r in rows]).reshape(height, width, info["planes"])
    except png.Error as e:
        raise RuntimeError(f"{op}: could not decode the image: {e}") from e
    colour, alpha = pixels[..., :pixels.shape[2] - info["alpha"]], pixels[..., pixels.shape[2] - info["alpha"]:]
    if mode in (ImageReadMode.GRAY, ImageReadMode.GRAY_ALPHA) and colour.shape[2] == 3:
        colour = (colour @ _GREY_WEIGHTS + 16384)[..., None] >> 15
    elif mode in (ImageReadMode.RGB, ImageReadMode.RGB_ALPHA) and colour.shape[2] == 1:
        colour = np.repeat(colour, 3, axis=2)
    if mode in (ImageReadMode.GRAY, ImageReadMode.RGB):
        alpha = alpha[..., :0]
    elif mode in (ImageReadMode.GRAY_ALPHA, ImageReadMode.RGB_ALPHA) and not alpha.shape[2]:
        alpha = np.full(colour.shape[:2] + (1,), 65535, np.int64)
    out = np.concatenate([colour, alpha], axis=2).astype(np.int32)
    return ember.from_numpy(np.ascontiguousarray(out.transpose(2, 0, 1)))


def _to_tensor(img, mode: ImageReadMode) -> ember.Tensor:
    """A Pillow image as a ``(C, H, W)`` tensor, converted to ``mode``'s channels."""
    if mode is not ImageReadMode.UNCHANGED:
        img = img.convert(_PIL_MODES[mode])
    elif img.mode in ("P", "1", "CMYK", "YCbCr"):
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
    elif img.mode == "PA":
        img = img.convert("RGBA")
    array = np.asarray(img)
    if array.dtype != np.uint8:  # 16-bit PNGs: torchvision gives uint16, which ember tensors cannot hold yet
        array = array.astype(np.int32)
    if array.ndim == 2:
        array = array[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False) -> ember.Tensor:  # noqa: A002
    """Decode a 1-D uint8 tensor of an image file's bytes (or read the file at a path) to ``(C, H, W)`` uint8."""
    if not ember.is_tensor(input):
        input = read_file(input)  # noqa: A001
    return _decode(input, mode, apply_exif_orientation, "decode_image")


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False) -> ember.Tensor:
    """Read and decode the image file at ``path`` (``decode_image`` of ``read_file``)."""
    return decode_image(read_file(path), mode, apply_exif_orientation)


def decode_png(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation: bool = False) -> ember.Tensor:  # noqa: A002
    """Decode PNG bytes to a ``(C, H, W)`` uint8 tensor (16-bit PNGs: int32 of their full 16-bit values)."""
    return _decode(input, mode, apply_exif_orientation, "decode_png", ("PNG",))


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, device="cpu", apply_exif_orientation: bool = False):  # noqa: A002
    """Decode JPEG bytes (or a list of them) to ``(C, H, W)`` uint8 tensors on ``device``."""
    if isinstance(input, (list, tuple)):
        if not input:
            raise ValueError("Input list must contain at least one element")
        if not all(ember.is_tensor(t) for t in input):
            raise ValueError("All elements of the input list must be tensors.")
        return [decode_jpeg(t, mode, device, apply_exif_orientation) for t in input]
    return _decode(input, mode, apply_exif_orientation, "decode_jpeg", ("JPEG", "MPO")).to(device)


def _image_array(input, op: str) -> np.ndarray:  # noqa: A002
    """A ``(C, H, W)`` uint8 tensor as an ``(H, W)`` or ``(H, W, C)`` array for Pillow."""
    if not ember.is_tensor(input) or input.dtype != ember.uint8 or input.dim() != 3:
        raise RuntimeError(f"{op}: expected a 3-D (C, H, W) uint8 tensor, got "
                           f"{f'{input.dim()}-D {input.dtype}' if ember.is_tensor(input) else type(input).__name__}")
    c = input.shape[0]
    if c not in (1, 3) + ((2, 4) if op.endswith("png") else ()):
        allowed = "1, 2, 3 or 4" if op.endswith("png") else "1 or 3"
        raise RuntimeError(f"{op}: the number of channels must be {allowed}, "
                           f"got {c}")
    array = input.detach().cpu().numpy().transpose(1, 2, 0)
    return np.ascontiguousarray(array[:, :, 0] if c == 1 else array)


def _encode(array: np.ndarray, fmt: str, **options) -> ember.Tensor:
    from PIL import Image

    buf = _io.BytesIO()
    Image.fromarray(array).save(buf, format=fmt, **options)
    return ember.from_numpy(np.frombuffer(buf.getvalue(), np.uint8).copy())


def encode_png(input, compression_level: int = 6) -> ember.Tensor:  # noqa: A002
    """PNG-encode a ``(C, H, W)`` uint8 tensor (C = 1, 2, 3 or 4) into a 1-D uint8 tensor of the file's bytes."""
    if not 0 <= compression_level <= 9:
        raise ValueError(f"encode_png: compression_level must be between 0 and 9, got {compression_level}")
    return _encode(_image_array(input, "encode_png"), "PNG", compress_level=compression_level)


def encode_jpeg(input, quality: int = 75):  # noqa: A002
    """JPEG-encode a ``(C, H, W)`` uint8 tensor (C = 1 or 3), or a list of them, into 1-D uint8 tensors."""
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if isinstance(input, (list, tuple)):
        if not input:
            raise ValueError("encode_jpeg requires at least one input tensor when a list is passed")
        return [encode_jpeg(t, quality) for t in input]
    return _encode(_image_array(input, "encode_jpeg"), "JPEG", quality=quality)


def write_png(input, filename, compression_level: int = 6) -> None:  # noqa: A002
    """Encode ``input`` as PNG and write it to ``filename``."""
    write_file(filename, encode_png(input, compression_level))


def write_jpeg(input, filename, quality: int = 75) -> None:  # noqa: A002
    """Encode ``input`` as JPEG and write it to ``filename``."""
    write_file(filename, encode_jpeg(input, quality))




def decode_gif(input) -> ember.Tensor:  # noqa: A002
    """Decode GIF bytes to RGB uint8: ``(C, H, W)`` for one frame, ``(N, C, H, W)`` for an animation of N."""
    from PIL import ImageSequence

    img = _open(input, "decode_gif", ("GIF",))
    frames = [_to_tensor(frame.convert("RGB"), ImageReadMode.UNCHANGED) for frame in ImageSequence.Iterator(img)]
    return frames[0] if len(frames) == 1 else ember.stack(frames)


def decode_webp(input, mode=ImageReadMode.UNCHANGED) -> ember.Tensor:  # noqa: A002
    """Decode WEBP bytes to a ``(C, H, W)`` uint8 tensor (RGB, or RGBA where the image has alpha)."""
    return _decode_codec(input, mode, "decode_webp", "WEBP", "a Pillow built with libwebp")


def decode_avif(input, mode=ImageReadMode.UNCHANGED) -> ember.Tensor:  # noqa: A002
    """Decode AVIF bytes to a ``(C, H, W)`` uint8 tensor, where the installed Pillow has the AVIF codec."""
    return _decode_codec(input, mode, "decode_avif", "AVIF", "Pillow >= 11.2 built with libavif")


def decode_heic(input, mode=ImageReadMode.UNCHANGED) -> ember.Tensor:  # noqa: A002
    """Decode HEIC bytes to a ``(C, H, W)`` uint8 tensor, where Pillow has an HEIC plugin (pillow-heif)."""
    return _decode_codec(input, mode, "decode_heic", "HEIF", "pillow-heif and register its opener")


def _decode_codec(data, mode, op: str, fmt: str, plugin: str) -> ember.Tensor:
    """Decode through Pillow's codec for ``fmt``, or raise RuntimeError naming what to install."""
    from PIL import Image

    Image.init()
    if fmt not in Image.OPEN:
        raise RuntimeError(f"{op}: the installed Pillow has no {fmt} decoder; install {plugin}")
    return _decode(data, mode, False, op, (fmt,))
