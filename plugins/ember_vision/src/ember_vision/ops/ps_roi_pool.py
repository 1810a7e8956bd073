"""Position-sensitive RoI pooling (R-FCN): the average of each bin over its own input channel
``(c * PH + ph) * PW + pw``.

Bins use rounded box corners as in torchvision's kernel; an average over a window is separable, so each RoI's
bins are ``A_y @ feature @ A_x^T`` with ``A`` the windows' indicator rows divided by their lengths.
"""
from __future__ import annotations

import ember
from ember import Tensor, nn

from ._utils import roi_format
from .ps_roi_align import _check_ps_channels, _position_sensitive
from .roi_align import _apply_bin_matrices, _pair
from .roi_pool import _round_half_away


def _mean_weights(start: Tensor, end: Tensor, pooled: int, size: int) -> Tensor:
    """``[R, pooled, size]``: the averaging weights of each bin's window along one axis (zeros if empty)."""
    binsz = ((end - start).clamp(min=1) / pooled)[:, None]
    p = ember.arange(pooled, device=start.device, dtype=start.dtype)[None, :]
    lo = (ember.floor(p * binsz) + start[:, None]).clamp(0, size)[..., None]
    hi = (ember.ceil((p + 1) * binsz) + start[:, None]).clamp(0, size)[..., None]
    pos = ember.arange(size, device=start.device, dtype=start.dtype)
    return ((pos >= lo) & (pos < hi)).to(start.dtype) / (hi - lo).clamp(min=1)


def ps_roi_pool(input: Tensor, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """Position-sensitive RoI average pooling: ``Tensor[K, C / (PH * PW), PH, PW]`` from ``input``
    (``[N, C, H, W]``) and ``boxes`` (``Tensor[K, 5]`` or a list of ``Tensor[L, 4]``)."""
    output_size = _pair(output_size)
    _check_ps_channels("ps_roi_pool", input, output_size)
    rois = roi_format(boxes, input)
    h, w = input.shape[2:]
    with ember.no_grad():
        rois = rois.detach()
        x1, y1, x2, y2 = (_round_half_away(rois[:, k] * spatial_scale) for k in range(1, 5))
        ay, ax = _mean_weights(y1, y2, output_size[0], h), _mean_weights(x1, x2, output_size[1], w)
    return _position_sensitive(_apply_bin_matrices(input, rois[:, 0].long(), ay, ax))


class PSRoIPool(nn.Module):
    """See :func:`ps_roi_pool`."""

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input: Tensor, rois) -> Tensor:
        return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"
