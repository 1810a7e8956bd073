"""Position-sensitive RoI Align (R-FCN, Dai et al. 2016): bin ``(ph, pw)`` of output channel ``c`` reads input
channel ``(c * PH + ph) * PW + pw``.

The bins are RoI Align's with ``aligned=True`` sampling (half-pixel shift, no minimum RoI size), computed for
every channel with the same two matrix products and then the position-sensitive channel of each bin taken.
"""
from __future__ import annotations

import ember
from ember import Tensor, nn

from ._utils import roi_format
from .roi_align import _apply_bin_matrices, _pair, _roi_bin_matrices


def _check_ps_channels(name: str, input: Tensor, output_size) -> None:
    if input.dim() != 4:
        raise RuntimeError(f"{name}: input should be a 4d tensor [N, C, H, W], got {input.dim()}D")
    if input.size(1) % (output_size[0] * output_size[1]) != 0:
        raise RuntimeError(f"{name}: input channels must be a multiple of pooling height * pooling width, got "
                           f"{input.size(1)} channels for output_size {tuple(output_size)}")


def _position_sensitive(full: Tensor) -> Tensor:
    """``[R, C * PH * PW, PH, PW]`` bins of every channel -> ``[R, C, PH, PW]`` with each bin's own channel."""
    r, cin, ph, pw = full.shape
    diag = full.reshape(r, cin // (ph * pw), ph * pw, ph * pw).diagonal(dim1=2, dim2=3)
    return diag.reshape(r, cin // (ph * pw), ph, pw)


def ps_roi_align(input: Tensor, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1) -> Tensor:
    """Position-sensitive RoI Align: ``Tensor[K, C / (PH * PW), PH, PW]`` from ``input`` (``[N, C, H, W]``)
    and ``boxes`` (``Tensor[K, 5]`` or a list of ``Tensor[L, 4]``)."""
    output_size = _pair(output_size)
    _check_ps_channels("ps_roi_align", input, output_size)
    rois = roi_format(boxes, input)
    with ember.no_grad():
        rois = rois.detach()
        ay, ax = _roi_bin_matrices(rois, spatial_scale, output_size, sampling_ratio, True, *input.shape[2:])
    return _position_sensitive(_apply_bin_matrices(input, rois[:, 0].long(), ay, ax))


class PSRoIAlign(nn.Module):
    """See :func:`ps_roi_align`."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio

    def forward(self, input: Tensor, rois) -> Tensor:
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio})")
