"""FCOS (Tian et al. 2019): anchor-free one-stage detection, one point per FPN cell regressing the distances to
the box's sides, with a centre-ness branch; torchvision's names, state-dict keys and postprocessing."""
from __future__ import annotations

import math
from functools import partial

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from ...ops import generalized_box_iou_loss, sigmoid_focal_loss
from .._api import register_model
from ..resnet import ResNet50_Weights
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator
from .faster_rcnn import coco_enum, coco_weights, load_weights, resolve_weights
from .retinanet import (_flatten_levels, _resnet50_fpn_backbone, anchor_rows, backbone_features, check_degenerate,
                        check_targets, imagenet_transform, original_sizes, select_detections,
                        top_candidates)

__all__ = ["FCOS", "FCOS_ResNet50_FPN_Weights", "fcos_resnet50_fpn"]

FCOS_ResNet50_FPN_Weights = coco_enum("FCOS_ResNet50_FPN_Weights", COCO_V1=coco_weights(
    "fcos_resnet50_fpn_coco-99b0c9b7.pth", 32269600, "fcos-resnet-50-fpn", {"box_map": 39.2}, 128.207, 123.608))


def _conv_tower(in_channels: int, num_convs: int, norm_layer) -> nn.Sequential:
    """``num_convs`` x (3x3 conv, norm, ReLU), the convs N(0, 0.01) with zero biases."""
    layers = []
    for _ in range(num_convs):
        conv = nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(conv.weight, std=0.01)
        nn.init.constant_(conv.bias, 0)
        layers += [conv, (norm_layer or partial(nn.GroupNorm, 32))(in_channels), nn.ReLU()]
    return nn.Sequential(*layers)


def _small_conv(in_channels: int, out_channels: int, bias: float = 0.0) -> nn.Conv2d:
    conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1)
    nn.init.normal_(conv.weight, std=0.01)
    nn.init.constant_(conv.bias, bias)
    return conv


class FCOSClassificationHead(nn.Module):
    """Per-point class logits ``(N, HWA, num_classes)``; the last conv's bias starts at the logit of
    ``prior_probability``; ``norm_layer`` defaults to 32-group GroupNorm."""

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int, num_convs: int = 4,
                 prior_probability: float = 0.01, norm_layer=None) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.conv = _conv_tower(in_channels, num_convs, norm_layer)
        self.cls_logits = _small_conv(in_channels, num_anchors * num_classes,
                                      -math.log((1 - prior_probability) / prior_probability))

    def _last(self, x):
        return self.cls_logits(x)

    def forward(self, x):
        return _flatten_levels(self, x, self.num_classes)


class FCOSRegressionHead(nn.Module):
    """Per-point side distances ``(N, HWA, 4)`` (through a ReLU) and centre-ness logits ``(N, HWA, 1)`` from a
    shared conv tower."""

    def __init__(self, in_channels: int, num_anchors: int, num_convs: int = 4, norm_layer=None):
        super().__init__()
        self.conv = _conv_tower(in_channels, num_convs, norm_layer)
        self.bbox_reg = _small_conv(in_channels, num_anchors * 4)
        self.bbox_ctrness = _small_conv(in_channels, num_anchors * 1)

    def forward(self, x):
        regression, ctrness = [], []
        for features in x:
            tower = self.conv(features)
            regression.append(anchor_rows(F.relu(self.bbox_reg(tower)), 4))
            ctrness.append(anchor_rows(self.bbox_ctrness(tower), 1))
        return ember.cat(regression, dim=1), ember.cat(ctrness, dim=1)


class FCOSHead(nn.Module):
    """The classification and regression heads; ``forward`` returns ``{"cls_logits", "bbox_regression",
    "bbox_ctrness"}``."""

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int, num_convs: int | None = 4) -> None:
        super().__init__()
        self.box_coder = det_utils.BoxLinearCoder(normalize_by_size=True)
        self.classification_head = FCOSClassificationHead(in_channels, num_anchors, num_classes, num_convs)
        self.regression_head = FCOSRegressionHead(in_channels, num_anchors, num_convs)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """Focal loss on the classes, GIoU on the foreground boxes, BCE on their centre-ness, each divided by
        the number of foreground points in the batch."""
        gt_classes, gt_boxes = [], []
        for target, matched in zip(targets, matched_idxs):
            if len(target["labels"]) == 0:
                classes = target["labels"].new_zeros((len(matched),))
                boxes = target["boxes"].new_zeros((len(matched), 4))
            else:
                classes = target["labels"][matched.clip(min=0)]
                boxes = target["boxes"][matched.clip(min=0)]
            classes[matched < 0] = -1
            gt_classes.append(classes)
            gt_boxes.append(boxes)
        gt_boxes, gt_classes, anchors = ember.stack(gt_boxes), ember.stack(gt_classes), ember.stack(anchors)
        foreground = gt_classes >= 0
        count = max(1, int(foreground.sum().item()))
        cls_logits = head_outputs["cls_logits"]
        one_hot = ember.zeros_like(cls_logits)
        image_idx, point_idx = ember.where(foreground)
        one_hot[image_idx, point_idx, gt_classes[image_idx, point_idx]] = 1.0
        loss_cls = sigmoid_focal_loss(cls_logits, one_hot, reduction="sum")
        pred_boxes = self.box_coder.decode(head_outputs["bbox_regression"], anchors)
        loss_box = generalized_box_iou_loss(pred_boxes[foreground], gt_boxes[foreground], reduction="sum")
        distances = self.box_coder.encode(anchors, gt_boxes)
        if len(distances) == 0:
            gt_ctrness = distances.new_zeros(distances.size()[:-1])
        else:
            lr, tb = distances[:, :, [0, 2]], distances[:, :, [1, 3]]
            gt_ctrness = ember.sqrt((lr.min(dim=-1)[0] / lr.max(dim=-1)[0]) * (tb.min(dim=-1)[0] / tb.max(dim=-1)[0]))
        pred_ctrness = head_outputs["bbox_ctrness"].squeeze(dim=2)
        loss_ctrness = F.binary_cross_entropy_with_logits(pred_ctrness[foreground], gt_ctrness[foreground],
                                                          reduction="sum")
        return {"classification": loss_cls / count, "bbox_regression": loss_box / count,
                "bbox_ctrness": loss_ctrness / count}

    def forward(self, x):
        regression, ctrness = self.regression_head(x)
        return {"cls_logits": self.classification_head(x), "bbox_regression": regression, "bbox_ctrness": ctrness}


class FCOS(nn.Module):
    """FCOS around ``backbone`` (with an ``out_channels`` attribute): eval mode returns one ``{"boxes",
    "scores", "labels"}`` dict per image (score: the geometric mean of class and centre-ness probabilities),
    training mode (with targets) the loss dict ``{"classification", "bbox_regression", "bbox_ctrness"}``.  A
    ground truth claims the points within ``center_sampling_radius`` strides of its centre, inside it and at
    the level whose scale range holds its extent."""

    def __init__(self, backbone, num_classes, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 anchor_generator=None, head=None, center_sampling_radius=1.5, score_thresh=0.2, nms_thresh=0.6,
                 detections_per_img=100, topk_candidates=1000, **kwargs):
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                             "channels (assumed to be the same for all the levels)")
        if not isinstance(anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(f"anchor_generator should be of type AnchorGenerator or None, instead  got "
                            f"{type(anchor_generator)}")
        self.backbone = backbone
        if anchor_generator is None:  # one square per cell, as large as the level's stride
            anchor_generator = AnchorGenerator(((8,), (16,), (32,), (64,), (128,)), ((1.0,),) * 5)
        self.anchor_generator = anchor_generator
        if anchor_generator.num_anchors_per_location()[0] != 1:
            raise ValueError(f"anchor_generator.num_anchors_per_location()[0] should be 1 instead of "
                             f"{anchor_generator.num_anchors_per_location()[0]}")
        self.head = FCOSHead(backbone.out_channels, 1, num_classes) if head is None else head
        self.box_coder = det_utils.BoxLinearCoder(normalize_by_size=True)
        self.transform = imagenet_transform(min_size, max_size, image_mean, image_std, **kwargs)
        self.center_sampling_radius = center_sampling_radius
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def eager_outputs(self, losses, detections):
        return losses if self.training else detections

    def _match(self, anchors, gt_boxes, num_anchors_per_level):
        """Each point's ground truth (the smallest of those claiming it) or -1."""
        gt_centres = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2
        centres = (anchors[:, :2] + anchors[:, 2:]) / 2
        strides = anchors[:, 2] - anchors[:, 0]
        near = (centres[:, None, :] - gt_centres[None, :, :]).abs().max(dim=2).values \
            < self.center_sampling_radius * strides[:, None]
        x, y = centres.unsqueeze(dim=2).unbind(dim=1)
        x0, y0, x1, y1 = gt_boxes.unsqueeze(dim=0).unbind(dim=2)
        sides = ember.stack([x - x0, y - y0, x1 - x, y1 - y], dim=2)
        lower, upper = strides * 4, strides * 8
        lower[:num_anchors_per_level[0]] = 0
        upper[-num_anchors_per_level[-1]:] = float("inf")
        extent = sides.max(dim=2).values
        claimed = near & (sides.min(dim=2).values > 0) & (extent > lower[:, None]) & (extent < upper[:, None])
        areas = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
        best, matched = (claimed.to(ember.float32) * (1e8 - areas[None, :])).max(dim=1)
        matched[best < 1e-5] = -1
        return matched

    def compute_loss(self, targets, head_outputs, anchors, num_anchors_per_level):
        """The head's loss dict, points matched to the targets by FCOS's centre-sampling rule."""
        matched_idxs = [
            ember.full((a.size(0),), -1, dtype=ember.int64, device=a.device) if t["boxes"].numel() == 0
            else self._match(a, t["boxes"], num_anchors_per_level) for a, t in zip(anchors, targets)]
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(self, head_outputs, anchors, image_shapes):
        """Per image and level: scores above ``score_thresh``, the ``topk_candidates`` best, their boxes decoded
        and clipped; then class-wise NMS over all levels and the ``detections_per_img`` best."""
        detections = []
        for index, image_shape in enumerate(image_shapes):
            boxes, scores, labels = [], [], []
            for regression, logits, ctrness, level_anchors in zip(
                    head_outputs["bbox_regression"], head_outputs["cls_logits"], head_outputs["bbox_ctrness"],
                    anchors[index]):
                logits = logits[index]
                num_classes = logits.shape[-1]
                level_scores = ember.sqrt(ember.sigmoid(logits) * ember.sigmoid(ctrness[index])).flatten()
                level_scores, idxs = top_candidates(level_scores, self.score_thresh, self.topk_candidates)
                anchor_idxs = idxs // num_classes
                level_boxes = self.box_coder.decode(regression[index][anchor_idxs], level_anchors[anchor_idxs])
                boxes.append(box_ops.clip_boxes_to_image(level_boxes, image_shape))
                scores.append(level_scores)
                labels.append(idxs % num_classes)
            detections.append(select_detections(boxes, scores, labels, self.nms_thresh, self.detections_per_img))
        return detections

    def forward(self, images, targets=None):
        """Detections per image in eval mode; the loss dict in training mode."""
        if self.training:
            check_targets(targets, show_shape=True)
        sizes = original_sizes(images)
        images, targets = self.transform(images, targets)
        check_degenerate(targets)
        features = backbone_features(self.backbone, images.tensors)
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        per_level = [x.size(2) * x.size(3) for x in features]
        if self.training:
            return self.eager_outputs(self.compute_loss(targets, head_outputs, anchors, per_level), [])
        split_outputs = {k: list(v.split(per_level, dim=1)) for k, v in head_outputs.items()}
        split_anchors = [list(a.split(per_level)) for a in anchors]
        detections = self.postprocess_detections(split_outputs, split_anchors, images.image_sizes)
        return self.eager_outputs({}, self.transform.postprocess(detections, images.image_sizes, sizes))


@register_model(FCOS_ResNet50_FPN_Weights)
def fcos_resnet50_fpn(*, weights=None, progress: bool = True, num_classes: int | None = None,
                      weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers: int | None = None,
                      **kwargs) -> FCOS:
    """FCOS with a ResNet-50 FPN backbone (P3-P7; 91 COCO classes by default); ``**kwargs`` go to :class:`FCOS`."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        FCOS_ResNet50_FPN_Weights, weights, ResNet50_Weights, weights_backbone, kwargs, num_classes=num_classes)
    backbone = _resnet50_fpn_backbone(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=False)
    return load_weights(FCOS(backbone, counts["num_classes"], **kwargs), weights, progress)
