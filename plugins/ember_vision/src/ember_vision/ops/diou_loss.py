"""Distance IoU loss (torchvision.ops.distance_box_iou_loss)."""
import ember
from ember import Tensor

from ._utils import _loss_inter_union, _reduce, _upcast_non_float


def _diou_iou_loss(boxes1: Tensor, boxes2: Tensor, eps: float = 1e-7):
    intsct, union = _loss_inter_union(boxes1, boxes2)
    iou = intsct / (union + eps)
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    diag = (ember.maximum(x2, x2g) - ember.minimum(x1, x1g)) ** 2 + \
        (ember.maximum(y2, y2g) - ember.minimum(y1, y1g)) ** 2 + eps
    centre = ((x1 + x2) / 2 - (x1g + x2g) / 2) ** 2 + ((y1 + y2) / 2 - (y1g + y2g) / 2) ** 2
    return 1 - iou + centre / diag, iou


def distance_box_iou_loss(boxes1: Tensor, boxes2: Tensor, reduction: str = "none", eps: float = 1e-7) -> Tensor:
    """``1 - DIoU`` of matching xyxy boxes (``[..., 4]`` each), reduced by ``reduction``."""
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    return _reduce(_diou_iou_loss(boxes1, boxes2, eps)[0], reduction)
