"""Complete IoU loss (torchvision.ops.complete_box_iou_loss)."""
import math

import ember
from ember import Tensor

from ._utils import _reduce, _upcast_non_float
from .diou_loss import _diou_iou_loss


def complete_box_iou_loss(boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7) -> Tensor:
    """``1 - CIoU`` of matching xyxy boxes (``[..., 4]`` each), reduced by ``reduction``."""
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    diou_loss, iou = _diou_iou_loss(boxes1, boxes2, eps)
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    v = (4 / math.pi ** 2) * (ember.atan((x2g - x1g) / (y2g - y1g)) - ember.atan((x2 - x1) / (y2 - y1))) ** 2
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce(diou_loss + alpha * v, reduction)
