"""Multi-scale RoI Align for feature pyramids (torchvision.ops.MultiScaleRoIAlign).

Each box is pooled from the pyramid level chosen by eq. 1 of the FPN paper (Lin et al. 2017):
``k = floor(k0 + log2(sqrt(area) / 224))`` clamped to the levels present. Scales of the levels are inferred
from the feature-map sizes relative to the largest image, as powers of two.
"""
from __future__ import annotations

import math

import ember
from ember import Tensor, nn

from ._utils import convert_boxes_to_roi_format
from .boxes import box_area
from .roi_align import roi_align


class LevelMapper:
    """Pyramid level (0-based from ``k_min``) of each box of a list of box sets, by the FPN heuristic."""

    def __init__(self, k_min: int, k_max: int, canonical_scale: int = 224, canonical_level: int = 4,
                 eps: float = 1e-6):
        self.k_min, self.k_max = k_min, k_max
        self.s0, self.lvl0, self.eps = canonical_scale, canonical_level, eps

    def __call__(self, boxlists) -> Tensor:
        s = ember.sqrt(ember.cat([box_area(b) for b in boxlists]))
        target = ember.floor(self.lvl0 + ember.log2(s / self.s0) + self.eps)
        return target.clamp(min=self.k_min, max=self.k_max).long() - self.k_min


def initLevelMapper(k_min: int, k_max: int, canonical_scale: int = 224, canonical_level: int = 4,
                    eps: float = 1e-6) -> LevelMapper:
    """A :class:`LevelMapper` (torchvision's factory name)."""
    return LevelMapper(k_min, k_max, canonical_scale, canonical_level, eps)


def _infer_scale(feature: Tensor, original_size) -> float:
    """The power of two closest to (in log scale) the feature map's height over the image's height."""
    approx = float(feature.shape[-2]) / float(original_size[0])
    return 2.0 ** round(math.log2(approx))


def _setup_scales(features, image_shapes, canonical_scale: int, canonical_level: int):
    if not image_shapes:
        raise ValueError("images list should not be empty")
    original = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
    scales = [_infer_scale(f, original) for f in features]
    mapper = initLevelMapper(int(-math.log2(scales[0])), int(-math.log2(scales[-1])), canonical_scale=canonical_scale,
                             canonical_level=canonical_level)
    return scales, mapper


def _multiscale_roi_align(x_filtered, boxes, output_size, sampling_ratio: int, scales, mapper) -> Tensor:
    if scales is None or mapper is None:
        raise ValueError("scales and mapper should not be None")
    rois = convert_boxes_to_roi_format(boxes)
    if len(x_filtered) == 1:
        return roi_align(x_filtered[0], rois, output_size, scales[0], sampling_ratio)
    levels = mapper(boxes)
    first = x_filtered[0]
    result = ember.zeros((rois.size(0), first.shape[1]) + tuple(output_size), dtype=first.dtype, device=first.device)
    for level, (feature, scale) in enumerate(zip(x_filtered, scales)):
        idx = ember.where(levels == level)[0]
        result[idx] = roi_align(feature, rois[idx], output_size, scale, sampling_ratio).to(result.dtype)
    return result


class MultiScaleRoIAlign(nn.Module):
    """RoI Align over the feature maps ``featmap_names`` of a pyramid, each box from the level its size
    selects; ``forward(x, boxes, image_shapes)`` with ``x`` a dict of maps, ``boxes`` a list of per-image
    xyxy boxes in image coordinates."""

    def __init__(self, featmap_names: list[str], output_size, sampling_ratio: int, *, canonical_scale: int = 224,
                 canonical_level: int = 4):
        super().__init__()
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.scales = None
        self.map_levels = None
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level

    def forward(self, x: dict, boxes: list, image_shapes: list) -> Tensor:
        x_filtered = [v for k, v in x.items() if k in self.featmap_names]
        self.scales, self.map_levels = _setup_scales(x_filtered, image_shapes, self.canonical_scale,
                                                     self.canonical_level)
        return _multiscale_roi_align(x_filtered, boxes, self.output_size, self.sampling_ratio, self.scales,
                                     self.map_levels)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(featmap_names={self.featmap_names}, output_size={self.output_size}, "
                f"sampling_ratio={self.sampling_ratio})")
