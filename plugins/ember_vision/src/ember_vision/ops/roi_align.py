"""RoI Align (He et al. 2017, Mask R-CNN) written with ember ops.

Each output bin averages ``grid_h x grid_w`` bilinear samples. Bilinear weights are separable, so the bin
values of every RoI are ``A_y @ feature @ A_x^T``: ``A_y[r, ph, h]`` holds the averaged row weights of bin row
``ph`` (a one-hot over rows times the bilinear factor, summed over the samples), ``A_x`` the column weights.
The whole op is then two batched matrix products (no per-box loop), and its gradient with respect to the
input comes from those products. The sampling points follow torchvision's CPU kernel exactly (samples
farther than one pixel outside the map count as zero, coordinates are clamped to the border).
"""
from __future__ import annotations

import ember
from ember import Tensor, nn

from ._utils import roi_format


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _axis_weights(start: Tensor, length: Tensor, grid: Tensor, size: int, pooled: int) -> Tensor:
    """``[R, pooled, size]`` averaged bilinear weights along one axis for RoIs starting at ``start`` with
    extent ``length`` and ``grid`` samples per bin."""
    dev, dt = start.device, start.dtype
    gmax = max(int(grid.max()), 1) if grid.numel() else 1
    binsz = (length / pooled)[:, None, None]
    p = ember.arange(pooled, device=dev, dtype=dt)[None, :, None]
    i = ember.arange(gmax, device=dev, dtype=dt)[None, None, :]
    g = grid.to(dt)[:, None, None]
    y = start[:, None, None] + p * binsz + (i + 0.5) * binsz / g.clamp(min=1)
    valid = (i < g) & (y >= -1.0) & (y <= size)
    y = y.clamp(min=0)
    low = ember.floor(y)
    edge = low >= size - 1
    low = ember.where(edge, float(size - 1), low)
    high = ember.where(edge, low, low + 1)
    frac = ember.where(edge, 0.0, y - low)
    pos = ember.arange(size, device=dev, dtype=dt)
    w = (1 - frac)[..., None] * (pos == low[..., None]) + frac[..., None] * (pos == high[..., None])
    return (w * valid[..., None]).sum(2) / g.clamp(min=1)


def _roi_bin_matrices(rois: Tensor, spatial_scale: float, output_size, sampling_ratio: int, aligned: bool,
                      height: int, width: int):
    ph, pw = output_size
    offset = 0.5 if aligned else 0.0
    x1, y1, x2, y2 = (rois[:, k] * spatial_scale - offset for k in range(1, 5))
    roi_w, roi_h = x2 - x1, y2 - y1
    if not aligned:
        roi_w, roi_h = roi_w.clamp(min=1.0), roi_h.clamp(min=1.0)
    if sampling_ratio > 0:
        gh = gw = ember.full_like(roi_h, sampling_ratio)
    else:
        gh, gw = ember.ceil(roi_h / ph), ember.ceil(roi_w / pw)
    return _axis_weights(y1, roi_h, gh, height, ph), _axis_weights(x1, roi_w, gw, width, pw)


def _apply_bin_matrices(input: Tensor, batch: Tensor, ay: Tensor, ax: Tensor) -> Tensor:
    """``out[r, c] = ay[r] @ input[batch[r], c] @ ax[r]^T`` as two matrix products."""
    n, c, h, w = input.shape
    r, ph, pw = ay.shape[0], ay.shape[1], ax.shape[1]
    if n > 1:  # pick each RoI's image by spreading its row weights over a one-hot of the batch index
        onehot = (batch[:, None] == ember.arange(n, device=input.device)).to(ay.dtype)
        ay = (onehot[:, None, :, None] * ay[:, :, None, :]).reshape(r, ph, n * h)
    rows = ay.reshape(r * ph, n * h) @ input.permute(0, 2, 1, 3).reshape(n * h, c * w)
    out = rows.reshape(r, ph * c, w) @ ax.transpose(1, 2)
    return out.reshape(r, ph, c, pw).permute(0, 2, 1, 3)


def roi_align(input: Tensor, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Tensor:
    """RoI Align: ``Tensor[K, C, output_size]`` features of the regions ``boxes`` (``Tensor[K, 5]`` of
    ``(batch index, x1, y1, x2, y2)`` or a list of per-image ``Tensor[L, 4]``) of ``input`` (``[N, C, H, W]``),
    box coordinates scaled by ``spatial_scale``; ``sampling_ratio`` samples per bin side (adaptive when
    <= 0); ``aligned=True`` shifts boxes by half a pixel."""
    if input.dim() != 4:
        raise RuntimeError(f"roi_align: input should be a 4d tensor [N, C, H, W], got {input.dim()}D")
    rois = roi_format(boxes, input)
    output_size = _pair(output_size)
    with ember.no_grad():
        rois = rois.detach()
        ay, ax = _roi_bin_matrices(rois, spatial_scale, output_size, sampling_ratio, aligned, *input.shape[2:])
    return _apply_bin_matrices(input, rois[:, 0].long(), ay, ax)


class RoIAlign(nn.Module):
    """See :func:`roi_align`."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")
