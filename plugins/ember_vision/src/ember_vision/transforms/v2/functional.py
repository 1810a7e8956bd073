"""transforms.v2.functional: each op on images, videos, masks, bounding boxes and key points alike.

Images and videos go through the v1 tensor kernels (any leading batch dimensions); masks use nearest
interpolation; boxes and points have their coordinates mapped, their canvas size updated, and boxes are
clamped to the canvas after a crop, as in torchvision. A TVTensor in gives the same TVTensor type out.
"""
from __future__ import annotations

import functools
import inspect
import numbers

import ember
from ember import Tensor

from ... import tv_tensors
from ...ops.boxes import box_convert
from .. import _tensor
from .. import functional as F1
from ..functional import InterpolationMode

_FMT = {tv_tensors.BoundingBoxFormat.XYXY: "xyxy", tv_tensors.BoundingBoxFormat.XYWH: "xywh",
        tv_tensors.BoundingBoxFormat.CXCYWH: "cxcywh"}


def _plain(t: Tensor) -> Tensor:
    return t.as_subclass(Tensor) if isinstance(t, tv_tensors.TVTensor) else t


def _rewrap(out: Tensor, like, **metadata):
    return tv_tensors.wrap(out, like=like, **metadata) if isinstance(like, tv_tensors.TVTensor) else out


def get_size(inpt) -> list[int]:
    """``[height, width]`` of an image, video or mask, or the canvas size of boxes and key points."""
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
        return list(inpt.canvas_size)
    if isinstance(inpt, Tensor):
        return list(inpt.shape[-2:])
    w, h = inpt.size  # PIL
    return [h, w]


def _on_image(inpt, fn, mask_fn=None):
    """Apply ``fn`` to an image/video/plain tensor/PIL image (``mask_fn`` to a mask), keeping its type."""
    if isinstance(inpt, tv_tensors.Mask):
        t = _plain(inpt)
        flat = t.reshape(-1, 1, *t.shape[-2:])
        out = (mask_fn or fn)(flat)
        return _rewrap(out.reshape(*t.shape[:-2], *out.shape[-2:]), inpt)
    if isinstance(inpt, Tensor):
        t = _plain(inpt)
        flat = t.reshape(-1, *t.shape[-3:]) if t.ndim > 4 else t
        out = fn(flat)
        return _rewrap(out.reshape(*t.shape[:-3], *out.shape[-3:]) if t.ndim > 4 else out, inpt)
    return fn(inpt)


def _on_boxes(boxes: "tv_tensors.BoundingBoxes", fn, canvas_size, clamp: bool = False):
    """Map xyxy coordinates through ``fn`` in the boxes' own format; ``canvas_size`` is the new canvas."""
    fmt = _FMT[boxes.format]
    xyxy = box_convert(_plain(boxes).to(ember.float64 if boxes.dtype == ember.float64 else ember.float32), fmt,
                       "xyxy")
    xyxy = fn(xyxy)
    if clamp and getattr(boxes, "clamping_mode", "soft") is not None:
        h, w = canvas_size
        xyxy = ember.stack([xyxy[:, 0].clamp(0, w), xyxy[:, 1].clamp(0, h), xyxy[:, 2].clamp(0, w),
                            xyxy[:, 3].clamp(0, h)], 1)
    out = box_convert(xyxy, "xyxy", fmt)
    out = out.round().to(boxes.dtype) if not boxes.dtype.is_floating_point else out.to(boxes.dtype)
    return tv_tensors.wrap(out, like=boxes, canvas_size=tuple(canvas_size))


def _box_format(fmt):
    return tv_tensors.BoundingBoxFormat[fmt.upper()] if isinstance(fmt, str) else fmt


def clamp_bounding_boxes(inpt, format=None, canvas_size=None, clamping_mode="auto"):
    """Boxes clamped to their canvas (``clamping_mode=None`` leaves them as they are; ``"auto"`` takes the
    boxes' own mode). A plain tensor needs ``format``, ``canvas_size`` and a mode other than ``"auto"``."""
    if clamping_mode not in (None, "soft", "hard", "auto"):
        raise ValueError(f"clamping_mode must be soft, hard, auto or None, got {clamping_mode}")
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError("For bounding box tv_tensor inputs, `format` and `canvas_size` must not be passed.")
        mode = inpt.clamping_mode if clamping_mode == "auto" else clamping_mode
        boxes = tv_tensors.wrap(_plain(inpt), like=inpt, clamping_mode=mode)
        return tv_tensors.wrap(_plain(_on_boxes(boxes, lambda b: b, inpt.canvas_size, clamp=True)), like=inpt)
    if not is_pure_tensor(inpt):
        raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but got {type(inpt)} "
                        "instead.")
    if format is None or canvas_size is None or clamping_mode == "auto":
        raise ValueError("For pure tensor inputs, `format`, `canvas_size` and `clamping_mode` have to be passed.")
    boxes = tv_tensors.BoundingBoxes(inpt, format=_box_format(format), canvas_size=canvas_size,
                                     clamping_mode=clamping_mode)
    return _plain(_on_boxes(boxes, lambda b: b, canvas_size, clamp=True))


def clamp_keypoints(inpt, canvas_size=None):
    """Key points clamped to ``[0, width - 1] x [0, height - 1]`` of their canvas (a plain tensor needs
    ``canvas_size``)."""
    if isinstance(inpt, tv_tensors.KeyPoints):
        if canvas_size is not None:
            raise ValueError("For keypoints tv_tensor inputs, `canvas_size` must not be passed.")
        return tv_tensors.wrap(clamp_keypoints(_plain(inpt), inpt.canvas_size), like=inpt)
    if not is_pure_tensor(inpt):
        raise TypeError(f"Input can either be a plain tensor or a keypoints tv_tensor, but got {type(inpt)} instead.")
    if canvas_size is None:
        raise ValueError("For pure tensor inputs, `canvas_size` has to be passed.")
    p = inpt.float() if not inpt.is_floating_point() else inpt
    out = ember.stack([p[..., 0].clamp(0, canvas_size[1] - 1), p[..., 1].clamp(0, canvas_size[0] - 1)], -1)
    return out.to(inpt.dtype)


def convert_bounding_box_format(inpt, old_format=None, new_format=None, inplace: bool = False):
    """Boxes converted between the XYXY, XYWH and CXCYWH formats (a plain tensor needs ``old_format``)."""
    if new_format is None:
        raise TypeError("convert_bounding_box_format() missing 1 required argument: 'new_format'")
    old_format, new_format = _box_format(old_format), _box_format(new_format)
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if old_format is not None:
            raise ValueError("For bounding box tv_tensor inputs, `old_format` must not be passed.")
        out = convert_bounding_box_format(_plain(inpt), inpt.format, new_format, inplace)
        return tv_tensors.wrap(out, like=inpt, format=new_format)
    if not is_pure_tensor(inpt):
        raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but got {type(inpt)} "
                        "instead.")
    if old_format is None:
        raise ValueError("For pure tensor inputs, `old_format` has to be passed.")
    if old_format not in _FMT or new_format not in _FMT:
        raise NotImplementedError("convert_bounding_box_format: ember-vision converts XYXY, XYWH and CXCYWH only")
    if old_format == new_format:
        return inpt if inplace else inpt.clone()
    x = inpt if inpt.is_floating_point() else inpt.float()
    out = box_convert(x, _FMT[old_format], _FMT[new_format])
    out = out if inpt.is_floating_point() else out.round().to(inpt.dtype)
    return inpt.copy_(out) if inplace else out


def is_pure_tensor(inpt) -> bool:
    """Whether ``inpt`` is a Tensor and not a TVTensor."""
    return isinstance(inpt, Tensor) and not isinstance(inpt, tv_tensors.TVTensor)


def sanitize_bounding_boxes(bounding_boxes, format=None, canvas_size=None, min_size: float = 1.0,
                            min_area: float = 1.0):
    """``(kept boxes, validity mask)``: boxes at least ``min_size`` per side and ``min_area`` in area that lie
    within their canvas (a plain tensor needs ``format`` and ``canvas_size``)."""
    if isinstance(bounding_boxes, tv_tensors.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError("format and canvas_size must be None when bounding_boxes is a tv_tensors.BoundingBoxes")
        format, canvas_size = bounding_boxes.format, bounding_boxes.canvas_size
    elif format is None or canvas_size is None:
        raise ValueError("format and canvas_size cannot be None if bounding_boxes is a pure tensor")
    format = _box_format(format)
    xyxy = box_convert(_plain(bounding_boxes).float(), _FMT[format], "xyxy")
    ws, hs = xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1]
    h, w = canvas_size
    valid = (ws >= min_size) & (hs >= min_size) & (ws * hs >= min_area) & (xyxy >= 0).all(-1)
    valid = valid & (xyxy[:, 0] <= w) & (xyxy[:, 2] <= w) & (xyxy[:, 1] <= h) & (xyxy[:, 3] <= h)
    return _rewrap(_plain(bounding_boxes)[valid], bounding_boxes), valid


def sanitize_keypoints(key_points, canvas_size=None):
    """``(kept key points, validity mask)``: the points (or groups of points along the first dimension) that
    lie wholly inside their canvas (a plain tensor needs ``canvas_size``)."""
    if isinstance(key_points, tv_tensors.KeyPoints):
        if canvas_size is not None:
            raise ValueError("canvas_size must be None when key_points is a tv_tensors.KeyPoints")
        canvas_size = key_points.canvas_size
    elif canvas_size is None:
        raise ValueError("canvas_size cannot be None if key_points is a pure tensor")
    h, w = canvas_size
    p = _plain(key_points)
    valid = (p[..., 0] >= 0) & (p[..., 0] < w) & (p[..., 1] >= 0) & (p[..., 1] < h)
    valid = valid.flatten(1).all(1) if valid.ndim > 1 else valid
    return _rewrap(p[valid], key_points), valid


def _points(inpt, fn, canvas_size):
    return tv_tensors.wrap(fn(_plain(inpt)), like=inpt, canvas_size=tuple(canvas_size))


def horizontal_flip(inpt):
    """Mirror left-right."""
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        w = inpt.canvas_size[1]
        return _on_boxes(inpt, lambda b: ember.stack([w - b[:, 2], b[:, 1], w - b[:, 0], b[:, 3]], 1),
                         inpt.canvas_size)
    if isinstance(inpt, tv_tensors.KeyPoints):
        w = inpt.canvas_size[1]
        return _points(inpt, lambda p: ember.stack([w - 1 - p[..., 0], p[..., 1]], -1), inpt.canvas_size)
    return _on_image(inpt, F1.hflip)


def vertical_flip(inpt):
    """Mirror top-bottom."""
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        h = inpt.canvas_size[0]
        return _on_boxes(inpt, lambda b: ember.stack([b[:, 0], h - b[:, 3], b[:, 2], h - b[:, 1]], 1),
                         inpt.canvas_size)
    if isinstance(inpt, tv_tensors.KeyPoints):
        h = inpt.canvas_size[0]
        return _points(inpt, lambda p: ember.stack([p[..., 0], h - 1 - p[..., 1]], -1), inpt.canvas_size)
    return _on_image(inpt, F1.vflip)


def _scale(inpt, old, new):
    sy, sx = new[0] / old[0], new[1] / old[1]
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        return _on_boxes(inpt, lambda b: b * ember.tensor([sx, sy, sx, sy], dtype=b.dtype, device=b.device), new)
    return _points(inpt, lambda p: p * ember.tensor([sx, sy], dtype=p.dtype if p.dtype.is_floating_point
                                                    else ember.float32, device=p.device), new)


def _resize_tensor(t: Tensor, hw, interpolation, antialias: bool) -> Tensor:
    return _tensor.resize(t, list(hw), F1._mode(interpolation), bool(antialias))


def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias: bool = True):
    """Resize to ``size`` ``[h, w]``, or the smaller edge to ``size`` keeping the aspect ratio (at most
    ``max_size``); boxes and points are scaled, masks use nearest interpolation. ``antialias=False`` gives
    plain bilinear/bicubic interpolation on tensors (PIL images are always antialiased)."""
    old = get_size(inpt)
    if isinstance(size, numbers.Number):
        size = [size]
    new = list(F1._output_size(ember.empty(1, *old), list(size) if len(size) > 1 else size[0], max_size))
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
        return _scale(inpt, old, new)
    return _on_image(inpt, lambda t: _resize_tensor(t, new, interpolation, antialias)
                     if isinstance(t, Tensor) else F1.resize(t, new, interpolation),
                     lambda m: _resize_tensor(m, new, InterpolationMode.NEAREST, False))


def crop(inpt, top: int, left: int, height: int, width: int):
    """The ``height x width`` window at ``(top, left)`` (zero-padded outside); boxes are shifted and
    clamped to the new canvas."""
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        return _on_boxes(inpt, lambda b: b - ember.tensor([left, top, left, top], dtype=b.dtype, device=b.device),
                         (height, width), clamp=True)
    if isinstance(inpt, tv_tensors.KeyPoints):
        return _points(inpt, lambda p: p - ember.tensor([left, top], dtype=p.dtype, device=p.device),
                       (height, width))
    return _on_image(inpt, lambda t: F1.crop(t, top, left, height, width))


def _pair(size) -> tuple:
    """``(height, width)`` of an int, a one-element or a two-element size."""
    return (size, size) if isinstance(size, int) else ((size[0], size[0]) if len(size) == 1 else tuple(size))


def center_crop(inpt, output_size):
    """The centred ``output_size`` window (padded with zeros when larger than the input)."""
    oh, ow = _pair(output_size)
    h, w = get_size(inpt)
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
        # torchvision shifts coordinates by the rounded (possibly negative) anchor, without the image's padding
        return crop(inpt, int(round((h - oh) / 2.0)), int(round((w - ow) / 2.0)), oh, ow)
    if oh > h or ow > w:
        pads = [(ow - w) // 2 if ow > w else 0, (oh - h) // 2 if oh > h else 0,
                (ow - w + 1) // 2 if ow > w else 0, (oh - h + 1) // 2 if oh > h else 0]
        inpt = pad(inpt, pads)
        h, w = get_size(inpt)
        if oh == h and ow == w:
            return inpt
    return crop(inpt, int(round((h - oh) / 2.0)), int(round((w - ow) / 2.0)), oh, ow)


def resized_crop(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias: bool = True):
    """:func:`crop` then :func:`resize`."""
    return resize(crop(inpt, top, left, height, width), size, interpolation, antialias=antialias)


def _pad_sides(padding):
    p = [padding] if isinstance(padding, numbers.Number) else list(padding)
    if len(p) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element of tuple or list, got {len(p)} elements")
    return (p * 4)[:4] if len(p) == 1 else (p * 2 if len(p) == 2 else p)


def pad(inpt, padding, fill=0, padding_mode: str = "constant"):
    """Pad the borders (``padding`` an int, (left/right, top/bottom) or (left, top, right, bottom)); boxes and
    points move with the top-left corner."""
    left, top, right, bottom = _pad_sides(padding)
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
        h, w = inpt.canvas_size
        new = (h + top + bottom, w + left + right)
        if isinstance(inpt, tv_tensors.KeyPoints):
            return _points(inpt, lambda p: p + ember.tensor([left, top], dtype=p.dtype, device=p.device), new)
        return _on_boxes(inpt, lambda b: b + ember.tensor([left, top, left, top], dtype=b.dtype, device=b.device),
                         new)
    return _on_image(inpt, lambda t: F1.pad(t, [left, top, right, bottom], fill if fill is not None else 0,
                                            padding_mode))


def normalize(inpt, mean, std, inplace: bool = False):
    """``(image - mean) / std`` per channel, on float images (other types pass through)."""
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask)):
        return inpt
    return _on_image(inpt, lambda t: F1.normalize(t, mean, std, inplace))




def to_dtype(inpt, dtype=ember.float32, scale: bool = False):
    """Convert ``inpt`` to ``dtype``; with ``scale=True`` images' values are rescaled between integer ranges and
    [0, 1] for floats, as torchvision does (other types are only cast)."""
    t = _plain(inpt)
    if not scale or isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask)) \
            or t.dtype == dtype:
        return _rewrap(t.to(dtype), inpt)
    return _rewrap(_tensor.rescale(t, dtype), inpt)


def rgb_to_grayscale(inpt, num_output_channels: int = 1):
    """Luma of an RGB image (1 or 3 output channels); other types pass through."""
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask)):
        return inpt
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")
    return _on_image(inpt, lambda t: _luma(t, num_output_channels) if isinstance(t, Tensor)
                     else F1.rgb_to_grayscale(t, num_output_channels))


def _luma(t: Tensor, num_output_channels: int) -> Tensor:
    """torchvision v2's tensor grayscale: ITU-R 601 weights, truncated back to an integer dtype."""
    if t.shape[-3] == 1:
        return t.clone() if num_output_channels == 1 else t.expand(*t.shape[:-3], 3, *t.shape[-2:]).clone()
    x = t if t.is_floating_point() else t.float()
    luma = (x[..., 0:1, :, :] * 0.2989 + x[..., 1:2, :, :] * 0.587 + x[..., 2:3, :, :] * 0.114).to(t.dtype)
    return luma if num_output_channels == 1 else luma.expand(t.shape).clone()


to_grayscale = rgb_to_grayscale


def rotate(inpt, angle: float, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None,
           fill=0):
    """Rotate counter-clockwise by ``angle`` degrees about ``center`` (the image centre); without ``expand``
    this is :func:`affine` by ``-angle``, so boxes follow their corners (``expand`` supports images and masks
    only)."""
    if not expand:
        return affine(inpt, -angle, [0.0, 0.0], 1.0, [0.0, 0.0], interpolation, fill, center)
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
        raise NotImplementedError("rotate: ember-vision's v2 rotate does not transform bounding boxes or key "
                                  "points with expand=True yet")
    return _on_image(inpt, lambda t: F1.rotate(t, angle, interpolation, expand, center, fill),
                     lambda m: F1.rotate(m, angle, InterpolationMode.NEAREST, expand, center, fill))


def _affine_tensor(t: Tensor, matrix, interpolation, fill) -> Tensor:
    """Sample ``t`` (``[..., C, H, W]``) at the inverse-affine positions of its own grid (zeros outside)."""
    h, w = t.shape[-2:]
    x = (t if t.is_floating_point() else t.float()).reshape(-1, *t.shape[-3:])
    theta = ember.tensor(matrix, dtype=x.dtype, device=x.device).reshape(1, 2, 3)
    xs = ember.linspace(-w * 0.5 + 0.5, w * 0.5 - 0.5, w, dtype=x.dtype, device=x.device)
    ys = ember.linspace(-h * 0.5 + 0.5, h * 0.5 - 0.5, h, dtype=x.dtype, device=x.device)
    base = ember.stack([xs[None, :].expand(h, w), ys[:, None].expand(h, w), ember.ones(h, w, dtype=x.dtype,
                                                                                     device=x.device)], -1)
    scale = ember.tensor([0.5 * w, 0.5 * h], dtype=x.dtype, device=x.device)
    grid = (base.reshape(1, h * w, 3) @ (theta.transpose(1, 2) / scale)).reshape(1, h, w, 2)
    mode = F1._mode(interpolation)
    out = ember.nn.functional.grid_sample(x, grid.expand(x.shape[0], h, w, 2), mode=mode, padding_mode="zeros",
                                          align_corners=False)
    if fill:
        inside = ember.nn.functional.grid_sample(ember.ones(1, 1, h, w, dtype=x.dtype, device=x.device), grid,
                                                 mode=mode, padding_mode="zeros", align_corners=False)
        out = out + (1 - inside) * ember.tensor(fill if isinstance(fill, (list, tuple)) else [fill],
                                                dtype=x.dtype, device=x.device).reshape(1, -1, 1, 1)
    out = out.reshape(t.shape)
    return out if t.is_floating_point() else out.round().to(t.dtype)


def affine(inpt, angle: float, translate, scale: float, shear, interpolation=InterpolationMode.NEAREST, fill=0,
           center=None):
    """Rotate by ``angle`` degrees (clockwise, as torchvision), shear by ``shear`` degrees, scale by ``scale`` and
    translate by ``translate`` pixels about ``center`` (the image centre); boxes become the bounding boxes of
    their transformed corners, clamped to the canvas."""
    shear = [float(shear), 0.0] if isinstance(shear, numbers.Number) else [float(v) for v in shear] + [0.0] * (
        2 - len(shear))
    translate = [float(v) for v in translate]
    h, w = get_size(inpt)
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        c = center if center is not None else [w * 0.5, h * 0.5]
        m = _tensor.affine_matrix(c, angle, translate, scale, shear, inverted=False)

        def corners(b):
            xs = ember.stack([b[:, 0], b[:, 2], b[:, 2], b[:, 0]], 1)
            ys = ember.stack([b[:, 1], b[:, 1], b[:, 3], b[:, 3]], 1)
            nx, ny = m[0] * xs + m[1] * ys + m[2], m[3] * xs + m[4] * ys + m[5]
            return ember.stack([nx.amin(1), ny.amin(1), nx.amax(1), ny.amax(1)], 1)

        return _on_boxes(inpt, corners, (h, w), clamp=True)
    if isinstance(inpt, tv_tensors.KeyPoints):
        raise NotImplementedError("affine: key points are not supported yet")
    c = [0.0, 0.0] if center is None else [center[0] - w * 0.5, center[1] - h * 0.5]
    m = _tensor.affine_matrix(c, angle, translate, scale, shear, inverted=True)
    return _on_image(inpt, lambda t: _affine_tensor(t, m, interpolation, fill),
                     lambda t: _affine_tensor(t, m, InterpolationMode.NEAREST, 0))


def to_image(inpt) -> "tv_tensors.Image":
    """A PIL image, NumPy array (HWC) or tensor (CHW) as an :class:`~ember_vision.tv_tensors.Image`."""
    import numpy as np
    if isinstance(inpt, np.ndarray):
        inpt = ember.from_numpy(np.atleast_3d(inpt)).permute(2, 0, 1).contiguous()
    return tv_tensors.Image(_plain(inpt) if isinstance(inpt, Tensor) else inpt)


def to_pure_tensor(inpt) -> Tensor:
    """A TVTensor as a plain Tensor."""
    return _plain(inpt)


def _image_only(name: str, fn):
    """A v2 op that changes pixel values only: images, videos, PIL images and plain tensors; masks, boxes and
    key points pass through unchanged."""
    def op(inpt, *args, **kwargs):
        if isinstance(inpt, (tv_tensors.Mask, tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
            return inpt
        return _on_image(inpt, lambda t: fn(t, *args, **kwargs))
    op.__name__ = op.__qualname__ = name
    op.__signature__ = inspect.signature(fn)
    op.__doc__ = f"v1's :func:`~ember_vision.transforms.functional.{fn.__name__}` on images and videos; other " \
                 "inputs pass through."
    return op


invert = _image_only("invert", F1.invert)
posterize = _image_only("posterize", F1.posterize)
solarize = _image_only("solarize", F1.solarize)
autocontrast = _image_only("autocontrast", F1.autocontrast)
equalize = _image_only("equalize", F1.equalize)
adjust_sharpness = _image_only("adjust_sharpness", F1.adjust_sharpness)
gaussian_blur = _image_only("gaussian_blur", F1.gaussian_blur)
erase = _image_only("erase", F1.erase)


def _refuse_points(name: str, inpt):
    if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
        raise NotImplementedError(f"{name}: ember-vision's v2 {name} does not transform bounding boxes or key "
                                  "points yet")


def perspective(inpt, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """v1's :func:`~ember_vision.transforms.functional.perspective` on images and videos, and on masks with
    nearest sampling."""
    _refuse_points("perspective", inpt)
    return _on_image(inpt, lambda t: F1.perspective(t, startpoints, endpoints, interpolation, fill),
                     lambda m: F1.perspective(m, startpoints, endpoints, InterpolationMode.NEAREST, fill))


def elastic(inpt, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """v1's :func:`~ember_vision.transforms.functional.elastic_transform` on images and videos, and on masks
    with nearest sampling."""
    _refuse_points("elastic", inpt)
    return _on_image(inpt, lambda t: F1.elastic_transform(t, displacement, interpolation, fill),
                     lambda m: F1.elastic_transform(m, displacement, InterpolationMode.NEAREST, fill))


elastic_transform = elastic


adjust_brightness = _image_only("adjust_brightness", F1.adjust_brightness)
adjust_contrast = _image_only("adjust_contrast", F1.adjust_contrast)
adjust_saturation = _image_only("adjust_saturation", F1.adjust_saturation)
adjust_hue = _image_only("adjust_hue", F1.adjust_hue)


def adjust_gamma(inpt, gamma: float, gain: float = 1):
    """``gain * image ** gamma`` on images and videos (values in their dtype's range); other inputs pass
    through."""
    if isinstance(inpt, (tv_tensors.Mask, tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)):
        return inpt
    return _on_image(inpt, lambda t: F1.adjust_gamma(t, gamma, gain))


def _is_image_like(inpt) -> bool:
    return not isinstance(inpt, (tv_tensors.Mask, tv_tensors.BoundingBoxes, tv_tensors.KeyPoints))


def gaussian_noise(inpt, mean: float = 0.0, sigma: float = 0.1, clip: bool = True):
    """Add Gaussian noise ``N(mean, sigma)`` to a float image or video (scaled by 255 for uint8), clamped to
    the value range when ``clip``; other inputs pass through."""
    if not _is_image_like(inpt):
        return inpt
    if sigma < 0:
        raise ValueError(f"sigma shouldn't be negative. Got {sigma}")
    t = _plain(inpt)
    if t.is_floating_point():
        out = t + (mean + ember.randn_like(t) * sigma)
        out = out.clamp(0, 1) if clip else out
    elif t.dtype == ember.uint8:
        noise = (mean * 255 + ember.randn_like(t, dtype=ember.float32) * (sigma * 255)).to(ember.int16)
        out = t + noise
        out = (out.clamp(0, 255) if clip else out).to(ember.uint8)
    else:
        raise ValueError(f"Input tensor is expected to be in uint8 or float dtype, got dtype={t.dtype}")
    return _rewrap(out, inpt)


def get_dimensions(inpt) -> list[int]:
    """``[channels, height, width]`` of an image or video (a 2-D tensor has one channel)."""
    if not isinstance(inpt, Tensor):
        return F1.get_dimensions(inpt)
    if inpt.ndim < 2:
        raise TypeError(f"Input tensor should have at least two dimensions, but got {inpt.ndim}")
    return [1, *inpt.shape[-2:]] if inpt.ndim == 2 else list(inpt.shape[-3:])


def get_num_channels(inpt) -> int:
    """The number of channels of an image or video."""
    return get_dimensions(inpt)[0]


get_image_num_channels = get_num_channels


def get_image_size(inpt) -> list[int]:
    """``[width, height]`` (deprecated in torchvision in favour of :func:`get_size`, which gives ``[h, w]``)."""
    import warnings
    warnings.warn("The function `get_image_size(...)` is deprecated and will be removed in a future release. "
                  "Instead, please use `get_size(...)` which returns `[h, w]` instead of `[w, h]`.")
    return F1.get_image_size(inpt)


def get_num_frames(inpt) -> int:
    """The number of frames of a video ``[..., T, C, H, W]``."""
    return inpt.shape[-4]


get_size_bounding_boxes = get_size_keypoints = get_size


def permute_channels(inpt, permutation):
    """The channels of an image or video reordered by ``permutation``."""
    if not _is_image_like(inpt):
        return inpt
    return _on_image(inpt, lambda t: t[..., list(permutation), :, :])


def grayscale_to_rgb(inpt):
    """A one-channel image repeated to three channels (images with three channels or more unchanged)."""
    if not _is_image_like(inpt):
        return inpt
    return _on_image(inpt, lambda t: t if t.shape[-3] >= 3 else t.expand(*t.shape[:-3], 3, *t.shape[-2:]).clone())


def uniform_temporal_subsample(inpt, num_samples: int):
    """``num_samples`` frames evenly spaced over a video ``[..., T, C, H, W]``."""
    if not isinstance(inpt, Tensor) or isinstance(inpt, (tv_tensors.Image, tv_tensors.Mask, tv_tensors.BoundingBoxes,
                                                         tv_tensors.KeyPoints)):
        return inpt
    t = _plain(inpt)
    idx = ember.linspace(0, t.shape[-4] - 1, num_samples, device=t.device).long()
    return _rewrap(t.index_select(t.ndim - 4, idx), inpt)


def jpeg(image, quality: int):
    """A uint8 image or video JPEG-encoded at ``quality`` (1-100) and decoded again; other inputs pass through."""
    if not _is_image_like(image):
        return image
    if not 1 <= quality <= 100:
        raise ValueError(f"quality must be an integer from 1 to 100, got {quality=}")
    from ...io import decode_jpeg, encode_jpeg

    def one(t):
        if t.dtype != ember.uint8:
            raise TypeError(f"Input tensor dtype should be uint8, got {t.dtype}.")
        if t.ndim == 3:
            return decode_jpeg(encode_jpeg(t, quality)).to(t.device)  # decoded on the input's device
        return ember.stack([one(x) for x in t]) if t.shape[0] else t.clone()

    return _on_image(image, one) if isinstance(image, Tensor) else F1.to_pil_image(one(F1.pil_to_tensor(image)))


def five_crop(inpt, size):
    """The four corner crops and the centre crop of ``size``."""
    ch, cw = _pair(size)
    h, w = get_size(inpt)
    if ch > h or cw > w:
        raise ValueError(f"Requested crop size {(ch, cw)} is bigger than input size {(h, w)}")
    return (crop(inpt, 0, 0, ch, cw), crop(inpt, 0, w - cw, ch, cw), crop(inpt, h - ch, 0, ch, cw),
            crop(inpt, h - ch, w - cw, ch, cw), center_crop(inpt, [ch, cw]))


def ten_crop(inpt, size, vertical_flip: bool = False):
    """:func:`five_crop` of the input and of its horizontal (or vertical) mirror image."""
    flip = globals()["vertical_flip"] if vertical_flip else horizontal_flip
    return five_crop(inpt, size) + five_crop(flip(inpt), size)


def convert_image_dtype(image, dtype=ember.float32):
    """:func:`to_dtype` with ``scale=True``."""
    return to_dtype(image, dtype, scale=True)


hflip, vflip = horizontal_flip, vertical_flip


def pil_to_tensor(pic):
    """A PIL image as a uint8 ``[C, H, W]`` tensor."""
    return F1.pil_to_tensor(pic)


def to_tensor(pic):
    """v1's :func:`~ember_vision.transforms.functional.to_tensor` (deprecated in v2 for :func:`to_image`)."""
    return F1.to_tensor(pic)


def to_pil_image(pic, mode=None):
    """A tensor or array as a PIL image."""
    return F1.to_pil_image(pic, mode)


from ._kernels import TABLE as _TABLE  # noqa: E402  (built on the dispatchers above)
from ._kernels import kernels as _kernels  # noqa: E402

globals().update(_kernels(globals()))

_USER_KERNELS: dict = {}


def _with_user_kernels(fn):
    """``fn`` that first runs a kernel registered by :func:`register_kernel` for the input's type (or a base)."""
    def op(inpt, *args, **kwargs):
        if _USER_KERNELS:
            for cls in type(inpt).__mro__:
                kernel = _USER_KERNELS.get((fn.__name__, cls))
                if kernel is not None:
                    return kernel(inpt, *args, **kwargs)
        return fn(inpt, *args, **kwargs)
    return functools.wraps(fn)(op)


globals().update({op: _with_user_kernels(globals()[op]) for op in _TABLE})
hflip, vflip, elastic_transform, to_grayscale = horizontal_flip, vertical_flip, elastic, rgb_to_grayscale


def register_kernel(functional, tv_tensor_cls):
    """Decorator: run ``kernel(inpt, *args, **kwargs)`` when the v2 op ``functional`` (the function or its name)
    gets an input of ``tv_tensor_cls``, a TVTensor subclass of the user's own.

    >>> class Depth(tv_tensors.TVTensor): pass
    >>> @register_kernel(resize, Depth)
    ... def resize_depth(depth, size, *args, **kwargs): return depth
    """
    name = functional if isinstance(functional, str) else getattr(functional, "__name__", None)
    if name not in _TABLE:
        raise ValueError("Kernels can only be registered on dispatchers from the torchvision.transforms.v2.functional "
                         f"namespace, but got {functional}.")
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, tv_tensors.TVTensor)) \
            or tv_tensor_cls.__module__ == tv_tensors.__name__:
        raise ValueError(f"Kernels can only be registered for subclasses of tv_tensors.TVTensor of your own, but got "
                         f"{tv_tensor_cls}.")

    def decorator(kernel):
        _USER_KERNELS[(name, tv_tensor_cls)] = kernel
        return kernel
    return decorator
