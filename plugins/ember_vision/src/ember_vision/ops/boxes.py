"""Box operations of torchvision.ops: NMS, IoU variants, conversions, clipping, masks to boxes.

NMS computes the IoU matrix once with ember ops on the boxes' device, then walks the score order on the
host keeping each box not yet suppressed (a loop over kept boxes only), as torchvision's CUDA kernel does.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember import Tensor

from ._utils import _upcast

_AXIS_ALIGNED = ("xyxy", "xywh", "cxcywh")


def _check_nms_args(boxes: Tensor, scores: Tensor) -> None:
    if boxes.dim() != 2:
        raise RuntimeError(f"nms: boxes should be a 2d tensor, got {boxes.dim()}D")
    if boxes.size(1) != 4:
        raise RuntimeError(f"nms: boxes should have 4 elements in dimension 1, got {boxes.size(1)}")
    if scores.dim() != 1:
        raise RuntimeError(f"nms: scores should be a 1d tensor, got {scores.dim()}D")
    if boxes.size(0) != scores.size(0):
        raise RuntimeError("nms: boxes and scores should have same number of elements in dimension 0, got "
                           f"{boxes.size(0)} and {scores.size(0)}")


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Non-maximum suppression: indices (int64, by decreasing score) of the boxes kept, dropping every box whose
    IoU with a higher-scoring kept box is above ``iou_threshold``. ``boxes`` is ``Tensor[N, 4]`` in xyxy."""
    _check_nms_args(boxes, scores)
    n = boxes.size(0)
    if n == 0:
        return ember.empty(0, dtype=ember.int64, device=boxes.device)
    with ember.no_grad():
        order = ember.argsort(scores, descending=True)
        b = boxes.detach()[order]
        over = (box_iou(b, b) > iou_threshold).cpu().numpy()
    suppressed = np.zeros(n, dtype=bool)
    kept = []
    for i in range(n):
        if not suppressed[i]:
            kept.append(i)
            suppressed |= over[i]
    return order[ember.as_tensor(kept, dtype=ember.int64, device=boxes.device)]


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """NMS within each category ``idxs`` independently: boxes of different categories never suppress each
    other. Returns kept indices sorted by decreasing score."""
    if boxes.numel() == 0:
        return ember.empty(0, dtype=ember.int64, device=boxes.device)
    with ember.no_grad():
        offsets = idxs.to(boxes.dtype) * (boxes.max() + 1)
        return nms(boxes + offsets[:, None], scores, iou_threshold)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the xyxy boxes whose width and height are both at least ``min_size``."""
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    return ember.where((ws >= min_size) & (hs >= min_size))[0]


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """Clip xyxy ``boxes`` (``Tensor[..., 4]``) to an image of ``size = (height, width)``."""
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return ember.stack((x, y), dim=-1).reshape(boxes.shape)


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """Convert ``Tensor[..., 4]`` boxes between 'xyxy' (corners), 'xywh' (corner, size) and 'cxcywh'
    (centre, size)."""
    if in_fmt not in _AXIS_ALIGNED or out_fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        c, d = a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        c, d = c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return ember.stack((a, b, c, d), dim=-1)


def box_area(boxes: Tensor, fmt: str = "xyxy") -> Tensor:
    """Area of each box of ``Tensor[..., 4]`` in ``fmt``."""
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported Bounding Box area for given format {fmt}")
    boxes = _upcast(boxes)
    if fmt != "xyxy":
        return boxes[..., 2] * boxes[..., 3]
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def _box_inter_union(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy"):
    if fmt != "xyxy":
        boxes1, boxes2 = box_convert(boxes1, fmt, "xyxy"), box_convert(boxes2, fmt, "xyxy")
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = ember.maximum(boxes1[..., :, None, :2], boxes2[..., None, :, :2])
    rb = ember.minimum(boxes1[..., :, None, 2:], boxes2[..., None, :, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter, area1[..., :, None] + area2[..., None, :] - inter


def box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> Tensor:
    """Pairwise intersection over union, ``Tensor[..., N, M]``, of ``boxes1`` (``[..., N, 4]``) and
    ``boxes2`` (``[..., M, 4]``) in ``fmt``."""
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported format '{fmt}'. Supported axis-aligned formats: {_AXIS_ALIGNED}.")
    inter, union = _box_inter_union(boxes1, boxes2, fmt)
    return inter / union


def _enclosing_wh(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    lti = ember.minimum(boxes1[..., :, None, :2], boxes2[..., None, :, :2])
    rbi = ember.maximum(boxes1[..., :, None, 2:], boxes2[..., None, :, 2:])
    return _upcast(rbi - lti).clamp(min=0)


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """Pairwise generalized IoU (Rezatofighi et al. 2019) of xyxy boxes: IoU minus the share of the smallest
    enclosing box that the union leaves empty."""
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    whi = _enclosing_wh(boxes1, boxes2)
    areai = whi[..., 0] * whi[..., 1]
    return iou - (areai - union) / areai


def _box_diou_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7):
    iou = box_iou(boxes1, boxes2)
    whi = _enclosing_wh(boxes1, boxes2)
    diag = whi[..., 0] ** 2 + whi[..., 1] ** 2 + eps
    c1 = (boxes1[..., 0:2] + boxes1[..., 2:4]) / 2
    c2 = (boxes2[..., 0:2] + boxes2[..., 2:4]) / 2
    d = _upcast(c1[..., :, None, :] - c2[..., None, :, :])
    return iou - (d[..., 0] ** 2 + d[..., 1] ** 2) / diag, iou


def distance_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """Pairwise distance IoU (Zheng et al. 2020): IoU minus the squared centre distance over the squared
    diagonal of the enclosing box."""
    return _box_diou_iou(boxes1, boxes2, eps)[0]


def complete_box_iou(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7) -> Tensor:
    """Pairwise complete IoU (Zheng et al. 2020): distance IoU minus an aspect-ratio consistency term."""
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    diou, iou = _box_diou_iou(boxes1, boxes2, eps)
    w1, h1 = boxes1[..., 2] - boxes1[..., 0], boxes1[..., 3] - boxes1[..., 1]
    w2, h2 = boxes2[..., 2] - boxes2[..., 0], boxes2[..., 3] - boxes2[..., 1]
    v = (4 / math.pi ** 2) * (
        ember.atan(w1 / h1)[..., :, None] - ember.atan(w2 / h2)[..., None, :]) ** 2
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


def masks_to_boxes(masks: Tensor) -> Tensor:
    """The xyxy bounding box (float) of each of the ``Tensor[N, H, W]`` masks' non-zero pixels; zeros for an
    empty mask."""
    if masks.numel() == 0:
        return ember.zeros((0, 4), device=masks.device, dtype=ember.float32)
    on = masks != 0
    rows, cols = on.any(2), on.any(1)
    empty = ~rows.any(1)

    def first_last(hit):
        pos = ember.arange(hit.size(1), device=masks.device, dtype=ember.float32).expand(hit.shape)
        lo = ember.where(hit, pos, float(hit.size(1))).amin(1)
        hi = ember.where(hit, pos, -1.0).amax(1)
        return ember.where(empty, 0.0, lo), ember.where(empty, 0.0, hi)

    (y1, y2), (x1, x2) = first_last(rows), first_last(cols)
    return ember.stack((x1, y1, x2, y2), dim=1)
