"""Mask R-CNN (He et al. 2017): Faster R-CNN with a mask branch, torchvision's names and weights."""
from __future__ import annotations

from collections import OrderedDict

from ember import nn

from ...ops import MultiScaleRoIAlign
from ...ops import misc as misc_nn_ops
from .._api import register_model
from ..resnet import ResNet50_Weights
from .rpn import rename_legacy_keys
from .faster_rcnn import FasterRCNN, coco_enum, coco_weights, load_weights, resnet50_fpn, resolve_weights, v2_heads

__all__ = ["MaskRCNN", "MaskRCNN_ResNet50_FPN_Weights", "MaskRCNN_ResNet50_FPN_V2_Weights", "maskrcnn_resnet50_fpn",
           "maskrcnn_resnet50_fpn_v2"]

MaskRCNN_ResNet50_FPN_Weights = coco_enum("MaskRCNN_ResNet50_FPN_Weights", COCO_V1=coco_weights(
    "maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth", 44401393, "mask-r-cnn", {"box_map": 37.9, "mask_map": 34.6}, 134.38,
    169.84))
MaskRCNN_ResNet50_FPN_V2_Weights = coco_enum("MaskRCNN_ResNet50_FPN_V2_Weights", COCO_V1=coco_weights(
    "maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth", 46359409, "https://github.com/pytorch/vision/pull/5773",
    {"box_map": 47.4, "mask_map": 41.8}, 333.577, 177.219))


class MaskRCNN(FasterRCNN):
    """Faster R-CNN's arguments (positional ones in the same order) plus ``mask_roi_pool`` (14x14 RoI Align by
    default), ``mask_head`` (four 3x3 convs) and ``mask_predictor``.  In eval each detection also gets
    ``masks``: ``(N, 1, H, W)`` probabilities in the input image's coordinates."""

    def __init__(self, backbone, num_classes=None, *args, mask_roi_pool=None, mask_head=None, mask_predictor=None,
                 **kwargs):
        if not isinstance(mask_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"mask_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(mask_roi_pool)}")
        if num_classes is not None and mask_predictor is not None:
            raise ValueError("num_classes should be None when mask_predictor is specified")
        if mask_roi_pool is None:
            mask_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=14, sampling_ratio=2)
        if mask_head is None:
            mask_head = MaskRCNNHeads(backbone.out_channels, (256, 256, 256, 256), 1)
        if mask_predictor is None:
            mask_predictor = MaskRCNNPredictor(256, 256, num_classes)
        super().__init__(backbone, num_classes, *args, **kwargs)
        self.roi_heads.mask_roi_pool = mask_roi_pool
        self.roi_heads.mask_head = mask_head
        self.roi_heads.mask_predictor = mask_predictor


class MaskRCNNHeads(nn.Sequential):
    """3x3 conv (+ norm) + ReLU blocks of ``layers`` channels with ``dilation``."""

    _version = 2

    def __init__(self, in_channels: int, layers, dilation: int, norm_layer=None) -> None:
        blocks = []
        for out in layers:
            blocks.append(misc_nn_ops.Conv2dNormActivation(in_channels, out, kernel_size=3, stride=1,
                                                           padding=dilation, dilation=dilation,
                                                           norm_layer=norm_layer))
            in_channels = out
        super().__init__(*blocks)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)
        # older checkpoints named the convs mask_fcn1, mask_fcn2, ...
        rename_legacy_keys(self, {f"mask_fcn{i + 1}.{kind}": f"{i}.0.{kind}"
                                  for i in range(len(layers)) for kind in ("weight", "bias")})


class MaskRCNNPredictor(nn.Sequential):
    """2x transposed conv (``conv5_mask``), ReLU, 1x1 conv to one mask per class (``mask_fcn_logits``)."""

    def __init__(self, in_channels: int, dim_reduced: int, num_classes: int) -> None:
        super().__init__(OrderedDict([
            ("conv5_mask", nn.ConvTranspose2d(in_channels, dim_reduced, 2, 2, 0)),
            ("relu", nn.ReLU(inplace=True)),
            ("mask_fcn_logits", nn.Conv2d(dim_reduced, num_classes, 1, 1, 0)),
        ]))
        for name, param in self.named_parameters():
            if "weight" in name:
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")


@register_model(MaskRCNN_ResNet50_FPN_Weights)
def maskrcnn_resnet50_fpn(*, weights=None, progress: bool = True, num_classes: int | None = None,
                          weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers: int | None = None,
                          **kwargs) -> MaskRCNN:
    """Mask R-CNN with a ResNet-50 FPN backbone (91 COCO classes by default)."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        MaskRCNN_ResNet50_FPN_Weights, weights, ResNet50_Weights, weights_backbone, kwargs, num_classes=num_classes)
    backbone = resnet50_fpn(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=False)
    model = MaskRCNN(backbone, num_classes=counts["num_classes"], **kwargs)
    return load_weights(model, weights, progress, MaskRCNN_ResNet50_FPN_Weights.COCO_V1)


@register_model(MaskRCNN_ResNet50_FPN_V2_Weights)
def maskrcnn_resnet50_fpn_v2(*, weights=None, progress: bool = True, num_classes: int | None = None,
                             weights_backbone=None, trainable_backbone_layers: int | None = None,
                             **kwargs) -> MaskRCNN:
    """Mask R-CNN v2: Faster R-CNN v2's backbone and heads, a mask head with batch norm."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        MaskRCNN_ResNet50_FPN_V2_Weights, weights, ResNet50_Weights, weights_backbone, kwargs,
        num_classes=num_classes)
    backbone = resnet50_fpn(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=True)
    mask_head = MaskRCNNHeads(backbone.out_channels, [256, 256, 256, 256], 1, norm_layer=nn.BatchNorm2d)
    model = MaskRCNN(backbone, num_classes=counts["num_classes"], mask_head=mask_head,
                     **v2_heads(backbone.out_channels), **kwargs)
    return load_weights(model, weights, progress)
