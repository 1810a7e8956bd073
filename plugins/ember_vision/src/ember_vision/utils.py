"""Image grids and image files from tensors.

>>> import ember
>>> make_grid(ember.zeros(4, 3, 2, 2), nrow=2, padding=1).shape
ember.Size([3, 7, 7])
"""
from __future__ import annotations

import math

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
