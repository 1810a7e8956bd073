"""Pixel-coordinate sampling, coordinate grids and flow upsampling for the flow models."""
from __future__ import annotations

import ember
from ember.nn import functional as F


def grid_sample(img, absolute_grid, mode: str = "bilinear", align_corners: bool | None = None):
    """``F.grid_sample`` with a grid of absolute pixel coordinates ``(x, y)`` instead of [-1, 1] ones."""
    h, w = img.shape[-2:]
    xgrid, ygrid = absolute_grid.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (w - 1) - 1
    if h > 1:  # a one-row image keeps its y as is (RAFT-Stereo samples such rows)
        ygrid = 2 * ygrid / (h - 1) - 1
    return F.grid_sample(img, ember.cat([xgrid, ygrid], dim=-1), mode=mode, align_corners=align_corners)


def make_coords_grid(batch_size: int, h: int, w: int, device="cpu"):
    """[N, 2, H, W] float pixel coordinates, x first."""
    ys, xs = ember.meshgrid(ember.arange(h, device=device), ember.arange(w, device=device), indexing="ij")
    return ember.stack([xs, ys], dim=0).float()[None].repeat(batch_size, 1, 1, 1)


def upsample_flow(flow, up_mask=None, factor: int = 8):
    """``flow`` [N, 2, H, W] upsampled ``factor`` times (values scaled with it): bilinearly, or with
    ``up_mask`` [N, 9 * factor**2, H, W] as a convex combination of each pixel's 3x3 neighbourhood."""
    n, c, h, w = flow.shape
    if up_mask is None:
        return factor * F.interpolate(flow, size=(h * factor, w * factor), mode="bilinear", align_corners=True)
    weights = ember.softmax(up_mask.view(n, 1, 9, factor, factor, h, w), dim=2)
    neighbours = F.unfold(factor * flow, kernel_size=3, padding=1).view(n, c, 9, 1, 1, h, w)
    up = ember.sum(weights * neighbours, dim=2)
    return up.permute(0, 1, 4, 2, 5, 3).reshape(n, c, h * factor, w * factor)
