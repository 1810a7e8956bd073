"""Helpers shared by the box and RoI ops: roi formats, upcasting, the loss reductions."""
from __future__ import annotations

import ember
from ember import Tensor


def _cat(tensors, dim: int = 0) -> Tensor:
    return tensors[0] if len(tensors) == 1 else ember.cat(list(tensors), dim)


def convert_boxes_to_roi_format(boxes) -> Tensor:
    """A list of per-image ``Tensor[K, 4]`` boxes as one ``Tensor[L, 5]`` whose first column is the image index."""
    ids = [ember.full_like(b[:, :1], i) for i, b in enumerate(boxes)]
    return ember.cat([_cat(ids), _cat(boxes)], 1)


def check_roi_boxes_shape(boxes) -> None:
    """torchvision's check: ``Tensor[K, 5]`` or a list of ``Tensor[L, 4]`` (AssertionError otherwise)."""
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if b.dim() != 2 or b.size(1) != 4:
                raise AssertionError("The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    elif isinstance(boxes, Tensor):
        if boxes.dim() != 2 or boxes.size(1) != 5:
            raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    else:
        raise AssertionError("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def roi_format(boxes, input: Tensor) -> Tensor:
    """Checked ``Tensor[K, 5]`` rois on ``input``'s device and dtype."""
    check_roi_boxes_shape(boxes)
    rois = convert_boxes_to_roi_format(boxes) if isinstance(boxes, (list, tuple)) else boxes
    return rois.to(device=input.device, dtype=input.dtype)


def _upcast(t: Tensor) -> Tensor:
    """Floats to at least float32, ints to at least int32, so products of coordinates don't overflow."""
    if t.is_floating_point():
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def _upcast_non_float(t: Tensor) -> Tensor:
    return t if t.is_floating_point() else t.float()


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    """The ``reduction`` of torchvision's box and focal losses ("none", "mean", "sum")."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n "
                     "Supported reduction modes: 'none', 'mean', 'sum'")


def _loss_inter_union(boxes1: Tensor, boxes2: Tensor):
    """Element-wise intersection and union of two ``[..., 4]`` xyxy box sets."""
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    w = (ember.minimum(x2, x2g) - ember.maximum(x1, x1g)).clamp(min=0)
    h = (ember.minimum(y2, y2g) - ember.maximum(y1, y1g)).clamp(min=0)
    inter = w * h
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter
    return inter, union
