"""RoI max pooling (Girshick 2015, Fast R-CNN) written with ember ops.

Bin edges follow torchvision's kernel (rounded box corners, floor/ceil bin bounds clipped to the map). Every
bin's window is gathered at once, padded to the largest window and masked, then reduced with ``amax``: no
per-box loop, and the gradient flows to the maximum of each bin.
"""
from __future__ import annotations

import ember
from ember import Tensor, nn

from ._utils import roi_format
from .roi_align import _pair


def _round_half_away(x: Tensor) -> Tensor:
    return ember.sign(x) * ember.floor(x.abs() + 0.5)


def _bin_windows(start: Tensor, end: Tensor, pooled: int, size: int):
    """Per-RoI, per-bin ``[R, pooled, K]`` indices along one axis, and their mask."""
    length = (end - start + 1).clamp(min=1)
    binsz = (length / pooled)[:, None]
    p = ember.arange(pooled, device=start.device, dtype=start.dtype)[None, :]
    lo = (ember.floor(p * binsz) + start[:, None]).clamp(0, size)
    hi = (ember.ceil((p + 1) * binsz) + start[:, None]).clamp(0, size)
    k = max(int((hi - lo).max()), 1) if lo.numel() else 1
    idx = lo[..., None] + ember.arange(k, device=start.device, dtype=start.dtype)
    return idx.clamp(max=size - 1).long(), idx < hi[..., None]


def roi_pool(input: Tensor, boxes, output_size, spatial_scale: float = 1.0) -> Tensor:
    """RoI max pooling: ``Tensor[K, C, output_size]``, the maximum of ``input`` over each bin of each box of
    ``boxes`` (``Tensor[K, 5]`` or a list of ``Tensor[L, 4]``, scaled by ``spatial_scale``); 0 for an empty
    bin."""
    return _roi_pool(input, boxes, output_size, spatial_scale)[0]


def _roi_pool(input: Tensor, boxes, output_size, spatial_scale: float, argmax: bool = False):
    """``(pooled, where)``: ``where`` (with ``argmax``, else None) is the int32 ``h * W + w`` of each output's
    maximum in its input map, -1 for an empty bin (the second output of torchvision's operator)."""
    if input.dim() != 4:
        raise RuntimeError(f"roi_pool: input should be a 4d tensor [N, C, H, W], got {input.dim()}D")
    rois = roi_format(boxes, input)
    ph, pw = _pair(output_size)
    h, w = input.shape[2:]
    with ember.no_grad():
        x1, y1, x2, y2 = (_round_half_away(rois[:, k].detach() * spatial_scale) for k in range(1, 5))
        hi, hm = _bin_windows(y1, y2, ph, h)
        wi, wm = _bin_windows(x1, x2, pw, w)
        b = rois[:, 0].detach().long()[:, None, None, None, None]
        mask = hm[:, :, None, :, None] & wm[:, None, :, None, :]
    vals = input.permute(0, 2, 3, 1)[b, hi[:, :, None, :, None], wi[:, None, :, None, :]]  # R,PH,PW,Kh,Kw,C
    empty = ~mask.flatten(3).any(3)
    masked = ember.where(mask[..., None], vals, float("-inf"))
    out = ember.where(empty[..., None], 0.0, masked.amax((3, 4)))
    where = None
    if argmax:
        with ember.no_grad():
            flat = masked.flatten(3, 4).argmax(3)  # R, PH, PW, C: the position in the bin's window
            kw = wi.shape[-1]
            row = hi.gather(2, (flat // kw).permute(0, 1, 3, 2).flatten(2)).reshape(flat.shape[0], ph, -1, pw)
            col = wi.gather(2, (flat % kw).permute(0, 2, 3, 1).flatten(2)).reshape(flat.shape[0], pw, -1, ph)
            where = row.permute(0, 1, 3, 2) * w + col.permute(0, 3, 1, 2)
            where = ember.where(empty[..., None], -1, where).int().permute(0, 3, 1, 2)
    return out.permute(0, 3, 1, 2), where


class RoIPool(nn.Module):
    """See :func:`roi_pool`."""

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input: Tensor, rois) -> Tensor:
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"
