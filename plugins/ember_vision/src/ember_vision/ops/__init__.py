"""torchvision.ops on ember: box operations, RoI pooling, detection losses and model building blocks.

Everything is written with ember ops, so it runs on every backend and differentiates where torchvision does.
Importing this package also registers torchvision's operators as ``ember.ops.torchvision.nms``, ``roi_align``,
... with torchvision's schemas (see ``_library``), as importing torchvision adds ``torch.ops.torchvision``.
"""
from . import _library
from .boxes import (batched_nms, box_area, box_convert, box_iou, clip_boxes_to_image, complete_box_iou,
                    distance_box_iou, generalized_box_iou, masks_to_boxes, nms, remove_small_boxes)
from .ciou_loss import complete_box_iou_loss
from .deform_conv import DeformConv2d, deform_conv2d
from .diou_loss import distance_box_iou_loss
from .drop_block import DropBlock2d, DropBlock3d, drop_block2d, drop_block3d
from .feature_pyramid_network import FeaturePyramidNetwork
from .focal_loss import sigmoid_focal_loss
from .giou_loss import generalized_box_iou_loss
from .misc import Conv2dNormActivation, Conv3dNormActivation, FrozenBatchNorm2d, MLP, Permute, SqueezeExcitation
from .poolers import MultiScaleRoIAlign
from .ps_roi_align import PSRoIAlign, ps_roi_align
from .ps_roi_pool import PSRoIPool, ps_roi_pool
from .roi_align import RoIAlign, roi_align
from .roi_pool import RoIPool, roi_pool
from .stochastic_depth import StochasticDepth, stochastic_depth

__all__ = ["masks_to_boxes", "deform_conv2d", "DeformConv2d", "nms", "batched_nms", "remove_small_boxes",
           "clip_boxes_to_image", "box_convert", "box_area", "box_iou", "generalized_box_iou", "distance_box_iou",
           "complete_box_iou", "roi_align", "RoIAlign", "roi_pool", "RoIPool", "ps_roi_align", "PSRoIAlign",
           "ps_roi_pool", "PSRoIPool", "MultiScaleRoIAlign", "FeaturePyramidNetwork", "sigmoid_focal_loss",
           "stochastic_depth", "StochasticDepth", "FrozenBatchNorm2d", "Conv2dNormActivation",
           "Conv3dNormActivation", "SqueezeExcitation", "MLP", "Permute", "generalized_box_iou_loss",
           "distance_box_iou_loss", "complete_box_iou_loss", "drop_block2d", "DropBlock2d", "drop_block3d",
           "DropBlock3d"]

_LIBRARY = _library.register()
