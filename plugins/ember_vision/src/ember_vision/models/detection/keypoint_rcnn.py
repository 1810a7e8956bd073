"""Keypoint R-CNN: Faster R-CNN with a key-point heatmap branch, torchvision's names and weights."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F

from ...ops import MultiScaleRoIAlign
from .._api import register_model
from .._meta import _COCO_PERSON_CATEGORIES, _COCO_PERSON_KEYPOINT_NAMES
from ..resnet import ResNet50_Weights
from .faster_rcnn import FasterRCNN, coco_enum, coco_weights, load_weights, resnet50_fpn, resolve_weights

__all__ = ["KeypointRCNN", "KeypointRCNN_ResNet50_FPN_Weights", "keypointrcnn_resnet50_fpn"]


def _person_weights(file: str, recipe: str, box_map: float, kp_map: float, ops: float) -> object:
    return coco_weights(file, 59137258, recipe, {"box_map": box_map, "kp_map": kp_map}, ops, 226.054,
                        categories=_COCO_PERSON_CATEGORIES, keypoint_names=_COCO_PERSON_KEYPOINT_NAMES)


KeypointRCNN_ResNet50_FPN_Weights = coco_enum(
    "KeypointRCNN_ResNet50_FPN_Weights",
    COCO_LEGACY=_person_weights("keypointrcnn_resnet50_fpn_coco-9f466800.pth",
                                "https://github.com/pytorch/vision/issues/1606", 50.6, 61.1, 133.924),
    COCO_V1=_person_weights("keypointrcnn_resnet50_fpn_coco-fc266e95.pth", "keypoint-r-cnn", 54.6, 65.0, 137.42))


class KeypointRCNN(FasterRCNN):
    """Faster R-CNN's arguments (positional ones in the same order; ``min_size`` defaults to the six training
    sizes 640..800) plus ``keypoint_roi_pool`` (14x14 RoI Align), ``keypoint_head`` (eight 3x3 convs),
    ``keypoint_predictor`` and ``num_keypoints`` (17).  In eval each detection also gets ``keypoints``
    ``(N, K, 3)`` and ``keypoints_scores`` ``(N, K)``."""

    def __init__(self, backbone, num_classes=None, min_size=None, *args, keypoint_roi_pool=None, keypoint_head=None,
                 keypoint_predictor=None, num_keypoints=None, **kwargs):
        if not isinstance(keypoint_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"keypoint_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(keypoint_roi_pool)}")
        if num_keypoints is not None and keypoint_predictor is not None:
            raise ValueError("num_keypoints should be None when keypoint_predictor is specified")
        if keypoint_roi_pool is None:
            keypoint_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=14,
                                                   sampling_ratio=2)
        if keypoint_head is None:
            keypoint_head = KeypointRCNNHeads(backbone.out_channels, (512,) * 8)
        if keypoint_predictor is None:
            keypoint_predictor = KeypointRCNNPredictor(512, 17 if num_keypoints is None else num_keypoints)
        if min_size is None:
            min_size = (640, 672, 704, 736, 768, 800)
        super().__init__(backbone, num_classes, min_size, *args, **kwargs)
        self.roi_heads.keypoint_roi_pool = keypoint_roi_pool
        self.roi_heads.keypoint_head = keypoint_head
        self.roi_heads.keypoint_predictor = keypoint_predictor


class KeypointRCNNHeads(nn.Sequential):
    """3x3 conv + ReLU blocks of ``layers`` channels."""

    def __init__(self, in_channels: int, layers) -> None:
        blocks = []
        for out in layers:
            blocks += [nn.Conv2d(in_channels, out, 3, stride=1, padding=1), nn.ReLU(inplace=True)]
            in_channels = out
        super().__init__(*blocks)
        for m in self.children():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(m.bias, 0)


class KeypointRCNNPredictor(nn.Module):
    """One heatmap per key point: a stride-2 transposed conv (``kps_score_lowres``), then 2x bilinear
    upsampling."""

    def __init__(self, in_channels: int, num_keypoints: int) -> None:
        super().__init__()
        self.kps_score_lowres = nn.ConvTranspose2d(in_channels, num_keypoints, 4, stride=2, padding=1)
        nn.init.kaiming_normal_(self.kps_score_lowres.weight, mode="fan_out", nonlinearity="relu")
        nn.init.constant_(self.kps_score_lowres.bias, 0)
        self.up_scale = 2
        self.out_channels = num_keypoints

    def forward(self, x):
        return F.interpolate(self.kps_score_lowres(x), scale_factor=float(self.up_scale), mode="bilinear",
                             align_corners=False, recompute_scale_factor=False)


def _legacy_weights(flag):
    weights = KeypointRCNN_ResNet50_FPN_Weights
    return weights.COCO_LEGACY if flag == "legacy" else weights.COCO_V1


@register_model(KeypointRCNN_ResNet50_FPN_Weights)
def keypointrcnn_resnet50_fpn(*, weights=None, progress: bool = True, num_classes: int | None = None,
                              num_keypoints: int | None = None, weights_backbone=ResNet50_Weights.IMAGENET1K_V1,
                              trainable_backbone_layers: int | None = None, **kwargs) -> KeypointRCNN:
    """Keypoint R-CNN with a ResNet-50 FPN backbone (person and background, COCO's 17 key points by default;
    ``pretrained="legacy"`` picks the first checkpoint)."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        KeypointRCNN_ResNet50_FPN_Weights, weights, ResNet50_Weights, weights_backbone, kwargs, default_classes=2,
        legacy=_legacy_weights, num_classes=num_classes, num_keypoints=num_keypoints)
    backbone = resnet50_fpn(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=False)
    model = KeypointRCNN(backbone, counts["num_classes"], num_keypoints=counts["num_keypoints"], **kwargs)
    return load_weights(model, weights, progress, KeypointRCNN_ResNet50_FPN_Weights.COCO_V1)
