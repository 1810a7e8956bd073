"""Generalized IoU loss (torchvision.ops.generalized_box_iou_loss)."""
import ember
from ember import Tensor

from ._utils import _loss_inter_union, _reduce, _upcast_non_float


def generalized_box_iou_loss(boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7) -> Tensor:
    """``1 - GIoU`` of matching xyxy boxes (``[..., 4]`` each), reduced by ``reduction``."""
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    intsctk, unionk = _loss_inter_union(boxes1, boxes2)
    iouk = intsctk / (unionk + eps)
    area_c = _enclosing_area(boxes1, boxes2)
    return _reduce(1 - (iouk - (area_c - unionk) / (area_c + eps)), reduction)


def _enclosing_area(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    return (ember.maximum(x2, x2g) - ember.minimum(x1, x1g)) * (ember.maximum(y2, y2g) - ember.minimum(y1, y1g))
