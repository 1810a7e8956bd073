"""Image grids and image files from tensors; boxes, masks, keypoints and optical flow drawn on images.

>>> import ember
>>> make_grid(ember.zeros(4, 3, 2, 2), nrow=2, padding=1).shape
ember.Size([3, 7, 7])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import ember

from .transforms.functional import to_pil_image


def make_grid(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False, value_range=None,
              scale_each: bool = False, pad_value: float = 0.0):
    """Tile a ``(B, C, H, W)`` batch (or a list of ``(C, H, W)`` images) into one ``(3, H', W')`` image.

    ``nrow`` images per row, ``padding`` pixels of ``pad_value`` around each; ``normalize`` rescales
    to ``[0, 1]`` by ``value_range`` (default: min and max, of each image if ``scale_each``).
    """
    if isinstance(tensor, (list, tuple)):
        tensor = ember.stack(list(tensor), dim=0)
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"make_grid: tensor or list of tensors expected, got {type(tensor).__name__}")
    if tensor.ndim == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.ndim == 3:
        tensor = tensor.unsqueeze(0)
    if tensor.ndim != 4 or int(tensor.shape[1]) not in (1, 3):
        raise ValueError(f"make_grid: expected images of shape (B, C, H, W) with 1 or 3 channels, "
                         f"got shape {tuple(tensor.shape)}")
    if int(tensor.shape[1]) == 1:
        tensor = ember.cat((tensor, tensor, tensor), dim=1)
    if normalize:
        tensor = _rescale(tensor.clone(), value_range, scale_each)
    b, c, h, w = (int(s) for s in tensor.shape)
    if b == 1:
        return tensor[0]
    ncol = min(nrow, b)
    nrows = int(math.ceil(b / ncol))
    hp, wp = h + padding, w + padding
    # pad the batch to a full grid, add the padding after each image, then tile in one reshape
    if nrows * ncol > b:
        extra = ember.full((nrows * ncol - b, c, h, w), pad_value, dtype=tensor.dtype, device=tensor.device)
        tensor = ember.cat((tensor, extra), dim=0)
    cells = ember.full((nrows * ncol, c, hp, wp), pad_value, dtype=tensor.dtype, device=tensor.device)
    cells[:, :, padding:, padding:] = tensor
    grid = cells.reshape(nrows, ncol, c, hp, wp).permute(2, 0, 3, 1, 4).reshape(c, nrows * hp, ncol * wp)
    out = ember.full((c, nrows * hp + padding, ncol * wp + padding), pad_value, dtype=tensor.dtype,
                     device=tensor.device)
    out[:, :nrows * hp, :ncol * wp] = grid
    return out


def _rescale(t, value_range, scale_each: bool):
    if value_range is not None and not isinstance(value_range, (tuple, list)):
        raise TypeError("make_grid: value_range has to be a tuple (min, max) if specified")
    if value_range is not None:
        lo, hi = float(value_range[0]), float(value_range[1])
        return ((t.clamp(lo, hi) - lo) / max(hi - lo, 1e-5))
    dims = (1, 2, 3) if scale_each else (0, 1, 2, 3)
    lo, hi = t.amin(dim=dims, keepdim=True), t.amax(dim=dims, keepdim=True)
    return (t - lo) / (hi - lo).clamp(min=1e-5)


def save_image(tensor, fp, format: str | None = None, **kwargs) -> None:  # noqa: A002
    """``make_grid(tensor, **kwargs)`` written as an image file (format from the name or ``format``)."""
    grid = make_grid(tensor, **kwargs)
    img = to_pil_image((grid.detach().to(ember.float32) * 255 + 0.5).clamp(0, 255).to(ember.uint8))
    img.save(fp, format=format)


def _image_array(image, op: str, channels=(3,)) -> tuple:
    """An image tensor as an ``(H, W, C)`` uint8 array and its dtype; torchvision's checks and messages."""
    if not ember.is_tensor(image):
        raise TypeError(f"{op}: the image must be a tensor, got {type(image)}")
    if not (image.dtype == ember.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if int(image.shape[0]) not in channels:
        raise ValueError("Only grayscale and RGB images are supported" if 1 in channels
                         else "Pass an RGB image. Other Image formats are not supported")
    array = image.detach().cpu().numpy()
    if image.is_floating_point():  # as torchvision's to_dtype(..., uint8, scale=True)
        array = (array * np.float32(255.999)).astype(np.uint8)
    if array.shape[0] == 1:
        array = np.repeat(array, 3, 0)
    return np.ascontiguousarray(array.transpose(1, 2, 0)), image


def _back(array: np.ndarray, like):
    """An ``(H, W, 3)`` uint8 array as a ``(3, H, W)`` tensor of ``like``'s dtype (floats in [0, 1]) and device."""
    out = ember.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))
    if like.is_floating_point():
        out = out.to(like.dtype) / 255
    return out.to(like.device)


def _palette(n: int) -> list:
    return [tuple(int(v) for v in (i * np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1])) % 255) for i in range(n)]


def _colors(colors, n: int) -> list:
    """``n`` RGB tuples from None (a palette), one colour, or a list of at least ``n`` colours."""
    from PIL import ImageColor

    if colors is None:
        colors = _palette(n)
    elif isinstance(colors, list):
        if len(colors) < n:
            raise ValueError(f"Number of colors must be equal or larger than the number of objects, "
                             f"but got {len(colors)} < {n}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got {colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * n
    return [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill: bool = False, width: int = 1, font=None,
                        font_size=None, label_colors=None, label_background_colors=None, fill_labels: bool = False):
    """Draw ``(N, 4)`` xyxy ``boxes`` (with optional ``labels``) on a ``(C, H, W)`` uint8 or float image.

    Returns a new image of the input's dtype; ``fill`` shades each box; colours default to a palette.
    """
    from PIL import Image, ImageDraw, ImageFont

    array, image = _image_array(image, "draw_bounding_boxes", (1, 3))
    if boxes.dim() != 2 or int(boxes.shape[-1]) != 4:
        raise ValueError(f"draw_bounding_boxes: boxes must be of shape (N, 4), got {tuple(boxes.shape)}")
    xyxy = boxes.detach().cpu().numpy()
    if ((xyxy[:, 0] > xyxy[:, 2]) | (xyxy[:, 1] > xyxy[:, 3])).any():
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. "
                         "Use torchvision.ops.box_convert to convert them")
    n = len(xyxy)
    if n == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn")
        return image
    if labels is None:
        labels = [None] * n
    elif len(labels) != n:
        raise ValueError(f"Number of boxes ({n}) and labels ({len(labels)}) mismatch. "
                         f"Please specify labels for each box.")
    colors = _colors(colors, n)
    text_colors = _colors(label_colors or "black", n) if (label_colors or fill_labels) else colors
    backgrounds = _colors(label_background_colors, n) if (fill_labels and label_background_colors) else colors
    if font is None:
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.")
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)
    canvas = Image.fromarray(array)
    draw = ImageDraw.Draw(canvas, "RGBA" if fill else None)
    for box, color, label, text_color, background in zip(xyxy.astype(np.int64).tolist(), colors, labels,
                                                          text_colors, backgrounds):
        draw.rectangle(box, width=width, outline=color, fill=color + (100,) if fill else None)
        if label is not None:
            margin = width + 1
            at = (box[0] + margin, box[1] + margin)
            if fill_labels:
                left, top, right, bottom = draw.textbbox(at, label, font=txt_font)
                draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=background)
            draw.text(at, label, fill=text_color, font=txt_font)
    return _back(np.asarray(canvas), image)


def draw_segmentation_masks(image, masks, alpha: float = 0.8, colors=None):
    """Blend boolean ``(N, H, W)`` (or ``(H, W)``) masks onto a ``(3, H, W)`` image with weight ``alpha``;
    pixels covered by more than one mask are blended with black."""
    if not ember.is_tensor(image):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    _image_array(image, "draw_segmentation_masks")
    if masks.dim() == 2:
        masks = masks[None]
    if masks.dim() != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != ember.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if tuple(masks.shape[-2:]) != tuple(image.shape[-2:]):
        raise ValueError("The image and the masks must have the same height and width")
    if int(masks.shape[0]) == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn")
        return image
    src = image.detach().cpu().numpy()
    m = masks.detach().cpu().numpy()
    floating = image.is_floating_point()
    painted = src.copy()
    for mask, color in zip(m, _colors(colors, len(m))):
        painted[:, mask] = np.array([v / 255 for v in color] if floating else color, src.dtype)[:, None]
    painted[:, m.sum(0) > 1] = 0
    work = src.dtype.type if floating else np.float32
    out = src.astype(work) * work(1 - alpha) + painted.astype(work) * work(alpha)
    return ember.from_numpy(np.ascontiguousarray(out.astype(src.dtype))).to(image.device)


def draw_keypoints(image, keypoints, connectivity=None, colors=None, radius: int = 2, width: int = 3,
                   visibility=None):
    """Draw ``(N, K, 2)`` keypoints as dots of ``radius`` (and lines of ``width`` between ``connectivity``
    pairs) on a ``(3, H, W)`` image; ``visibility`` ``(N, K)`` hides points and their lines."""
    from PIL import Image, ImageDraw

    array, image = _image_array(image, "draw_keypoints")
    if keypoints.dim() != 3:
        raise ValueError("keypoints must be of shape (num_instances, K, 2)")
    vis = (np.ones(tuple(keypoints.shape[:-1]), bool) if visibility is None
           else visibility.detach().cpu().numpy().astype(bool))
    if vis.ndim == 3:
        vis = vis.squeeze(-1)
    if vis.ndim != 2:
        raise ValueError(f"visibility must be of shape (num_instances, K). Got ndim={vis.ndim}")
    if vis.shape != tuple(keypoints.shape[:-1]):
        raise ValueError(f"keypoints and visibility must have the same dimensionality for num_instances and K. "
                         f"Got visibility.shape={vis.shape} and keypoints.shape={tuple(keypoints.shape)}")
    canvas = Image.fromarray(array)
    draw = ImageDraw.Draw(canvas)
    for points, seen in zip(keypoints.detach().cpu().numpy().astype(np.int64).tolist(), vis.tolist()):
        for (x, y), shown in zip(points, seen):
            if shown:
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=colors, outline=None, width=0)
        for a, b in connectivity or ():
            if seen[a] and seen[b]:
                draw.line((tuple(points[a]), tuple(points[b])), width=width)
    return _back(np.asarray(canvas), image)


def _colorwheel() -> np.ndarray:
    """The 55-colour wheel of Baker et al.'s optical-flow visualisation (float32, 0-255)."""
    segments = ((15, 0, 1, True), (6, 1, 0, False), (4, 1, 2, True), (11, 2, 1, False), (13, 2, 0, True),
                (6, 0, 2, False))  # (length, channel held at 255, channel that ramps, ramp up?)
    rows = []
    for n, full, ramp, up in segments:
        block = np.zeros((n, 3), np.float32)
        block[:, full] = 255
        steps = np.floor(np.float32(255) * np.arange(n, dtype=np.float32) / np.float32(n))
        block[:, ramp] = steps if up else 255 - steps
        rows.append(block)
    return np.concatenate(rows)


def flow_to_image(flow):
    """An optical flow ``(2, H, W)`` or ``(N, 2, H, W)`` float32 tensor as uint8 RGB: hue is the direction,
    saturation the magnitude relative to the largest in the input."""
    if flow.dtype != ember.float32:
        raise ValueError(f"Flow should be of dtype torch.float, got {flow.dtype}.")
    shape = tuple(flow.shape)
    f = flow.detach().cpu().numpy()
    if f.ndim == 3:
        f = f[None]
    if f.ndim != 4 or f.shape[1] != 2:
        raise ValueError(f"Input flow should have shape (2, H, W) or (N, 2, H, W), got {shape}.")
    f = f / (np.sqrt((f ** 2).sum(1)).max() + np.finfo(np.float32).eps)
    wheel = _colorwheel()
    ncols = len(wheel)
    norm = np.sqrt((f ** 2).sum(1))
    fk = (np.arctan2(-f[:, 1], -f[:, 0]) / np.float32(np.pi) + 1) / 2 * (ncols - 1)
    k0 = np.floor(fk).astype(np.int64)
    k1 = np.where(k0 + 1 == ncols, 0, k0 + 1)
    frac = fk - k0
    img = np.empty((f.shape[0], 3) + f.shape[2:], np.uint8)
    for c in range(3):
        col = (1 - frac) * (wheel[k0, c] / 255) + frac * (wheel[k1, c] / 255)
        img[:, c] = np.floor(255 * (1 - norm * (1 - col)))
    out = ember.from_numpy(img if len(shape) == 4 else img[0])
    return out.to(flow.device)
