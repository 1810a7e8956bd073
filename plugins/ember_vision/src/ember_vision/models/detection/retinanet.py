"""RetinaNet (Lin et al. 2017): a one-stage detector with a focal-loss classification head and a box regression
head shared over the FPN levels, with torchvision's names, state-dict keys and postprocessing."""
from __future__ import annotations

import math
from collections import OrderedDict
from functools import partial

import ember
from ember import nn

from ...ops import boxes as box_ops
from ...ops import misc as misc_nn_ops
from ...ops import sigmoid_focal_loss
from ...ops.feature_pyramid_network import LastLevelP6P7
from .._api import register_model
from ..resnet import ResNet50_Weights, resnet50
from . import _utils as det_utils
from ._utils import _box_loss
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from .faster_rcnn import coco_enum, coco_weights, load_weights, resolve_weights
from .transform import GeneralizedRCNNTransform

__all__ = ["RetinaNet", "RetinaNet_ResNet50_FPN_Weights", "RetinaNet_ResNet50_FPN_V2_Weights",
           "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2"]

RetinaNet_ResNet50_FPN_Weights = coco_enum("RetinaNet_ResNet50_FPN_Weights", COCO_V1=coco_weights(
    "retinanet_resnet50_fpn_coco-eeacb38b.pth", 34014999, "retinanet", {"box_map": 36.4}, 151.54, 130.267))
RetinaNet_ResNet50_FPN_V2_Weights = coco_enum("RetinaNet_ResNet50_FPN_V2_Weights", COCO_V1=coco_weights(
    "retinanet_resnet50_fpn_v2_coco-5905b1c5.pth", 38198935, "https://github.com/pytorch/vision/pull/5756",
    {"box_map": 41.5}, 152.238, 146.037))


def _sum(values):
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


def _default_anchorgen() -> AnchorGenerator:
    """Three sizes an octave-third apart at each of the five levels (32 to 512 px), ratios 0.5, 1, 2."""
    sizes = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])
    return AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))


def _rename_v1_conv_keys(state_dict, prefix, *args) -> None:
    """Checkpoints saved before the head's convs became Conv2dNormActivation blocks name them ``conv.0``,
    ``conv.2``, ``conv.4``, ``conv.6`` (ReLUs in between): rename those to ``conv.{i}.0``."""
    for i in range(4):
        for kind in ("weight", "bias"):
            old = f"{prefix}conv.{2 * i}.{kind}"
            if old in state_dict:
                state_dict[f"{prefix}conv.{i}.0.{kind}"] = state_dict.pop(old)


def anchor_rows(y, channels: int):
    """A head's ``(N, A*channels, H, W)`` map as ``(N, H*W*A, channels)``: cells row-major, anchors innermost,
    as the anchor generators lay them out."""
    n, _, h, w = y.shape
    return y.view(n, -1, channels, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, channels)


def _flatten_levels(head, x, channels: int):
    """``head.conv`` then ``head._last`` on each level's map, as anchor rows of all levels."""
    return ember.cat([anchor_rows(head._last(head.conv(features)), channels) for features in x], dim=1)


class _TowerHead(nn.Module):
    """Four 3x3 conv blocks (``conv``), weights N(0, 0.01) and zero biases, loading pre-v2 checkpoints too."""

    _version = 2

    def __init__(self, in_channels: int, norm_layer) -> None:
        super().__init__()
        self.conv = nn.Sequential(*(misc_nn_ops.Conv2dNormActivation(in_channels, in_channels, norm_layer=norm_layer)
                                    for _ in range(4)))
        for layer in self.conv.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.constant_(layer.bias, 0)
        self._register_load_state_dict_pre_hook(_rename_v1_conv_keys)


class RetinaNetClassificationHead(_TowerHead):
    """Per-anchor class logits ``(N, HWA, num_classes)``; the last conv's bias starts at the logit of
    ``prior_probability``."""

    def __init__(self, in_channels, num_anchors, num_classes, prior_probability=0.01, norm_layer=None):
        super().__init__(in_channels, norm_layer)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.BETWEEN_THRESHOLDS = det_utils.Matcher.BETWEEN_THRESHOLDS

    def _last(self, x):
        return self.cls_logits(x)

    def compute_loss(self, targets, head_outputs, matched_idxs):
        """Sigmoid focal loss over the anchors not between thresholds, per image divided by its foreground
        count, averaged over images."""
        losses = []
        for target, logits, matched in zip(targets, head_outputs["cls_logits"], matched_idxs):
            foreground = ember.where(matched >= 0)[0]
            gt_classes = ember.zeros_like(logits)
            gt_classes[foreground, target["labels"][matched[foreground]]] = 1.0
            valid = matched != self.BETWEEN_THRESHOLDS
            losses.append(sigmoid_focal_loss(logits[valid], gt_classes[valid], reduction="sum")
                          / max(1, foreground.numel()))
        return _sum(losses) / len(targets)

    def forward(self, x):
        return _flatten_levels(self, x, self.num_classes)


class RetinaNetRegressionHead(_TowerHead):
    """Per-anchor box deltas ``(N, HWA, 4)`` for :class:`BoxCoder` with unit weights; the loss is
    ``_loss_type`` (``"l1"``; the v2 model uses ``"giou"``)."""

    def __init__(self, in_channels, num_anchors, norm_layer=None):
        super().__init__(in_channels, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.bbox_reg.weight, std=0.01)
        nn.init.zeros_(self.bbox_reg.bias)
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self._loss_type = "l1"

    def _last(self, x):
        return self.bbox_reg(x)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """The box loss over foreground anchors, per image divided by their count, averaged over images."""
        losses = []
        for target, regression, anchors_i, matched in zip(targets, head_outputs["bbox_regression"], anchors,
                                                          matched_idxs):
            foreground = ember.where(matched >= 0)[0]
            loss = _box_loss(self._loss_type, self.box_coder, anchors_i[foreground, :],
                             target["boxes"][matched[foreground]], regression[foreground, :])
            losses.append(loss / max(1, foreground.numel()))
        return _sum(losses) / max(1, len(targets))

    def forward(self, x):
        return _flatten_levels(self, x, 4)


class RetinaNetHead(nn.Module):
    """The classification and regression heads; ``forward`` returns ``{"cls_logits", "bbox_regression"}``."""

    def __init__(self, in_channels, num_anchors, num_classes, norm_layer=None):
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(in_channels, num_anchors, num_classes,
                                                               norm_layer=norm_layer)
        self.regression_head = RetinaNetRegressionHead(in_channels, num_anchors, norm_layer=norm_layer)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """``{"classification": ..., "bbox_regression": ...}``."""
        return {"classification": self.classification_head.compute_loss(targets, head_outputs, matched_idxs),
                "bbox_regression": self.regression_head.compute_loss(targets, head_outputs, anchors, matched_idxs)}

    def forward(self, x):
        return {"cls_logits": self.classification_head(x), "bbox_regression": self.regression_head(x)}


def imagenet_transform(min_size, max_size, image_mean, image_std, **kwargs) -> GeneralizedRCNNTransform:
    """The models' image transform, normalising with ImageNet's mean and std where ``image_mean`` /
    ``image_std`` are None."""
    return GeneralizedRCNNTransform(min_size, max_size, [0.485, 0.456, 0.406] if image_mean is None else image_mean,
                                    [0.229, 0.224, 0.225] if image_std is None else image_std, **kwargs)


def check_targets(targets, show_shape: bool = False) -> None:
    """torchvision's checks of training targets: present, with ``boxes`` a tensor of shape ``[N, 4]`` (the
    message gives the shape found when ``show_shape``, as FCOS's does)."""
    if targets is None:
        raise AssertionError("targets should not be none when in training mode")
    for target in targets:
        boxes = target["boxes"]
        if not isinstance(boxes, ember.Tensor):
            raise AssertionError("Expected target boxes to be of type Tensor.")
        if not (boxes.dim() == 2 and boxes.shape[-1] == 4):
            raise AssertionError("Expected target boxes to be a tensor of shape [N, 4]"
                                 + (f", got {boxes.shape}." if show_shape else "."))


def check_degenerate(targets) -> None:
    """Raise naming the first box (after resizing) whose width or height is not positive."""
    for index, target in enumerate(targets or ()):
        boxes = target["boxes"]
        bad = (boxes[:, 2:] <= boxes[:, :2]).any(dim=1)
        if bad.any():
            box = boxes[ember.where(bad)[0][0]].tolist()
            raise AssertionError("All bounding boxes should have positive height and width. "
                                 f"Found invalid box {box} for target at index {index}.")


def original_sizes(images) -> list:
    """The ``(H, W)`` of each input image."""
    sizes = []
    for img in images:
        size = img.shape[-2:]
        if len(size) != 2:
            raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W instead got "
                                 f"{img.shape[-2:]}")
        sizes.append((size[0], size[1]))
    return sizes


def match_anchors(matcher, targets, anchors) -> list:
    """Each image's anchor-to-ground-truth matches by IoU (all -1 for an image without boxes)."""
    matched = []
    for anchors_i, target in zip(anchors, targets):
        if target["boxes"].numel() == 0:
            matched.append(ember.full((anchors_i.size(0),), -1, dtype=ember.int64, device=anchors_i.device))
        else:
            matched.append(matcher(box_ops.box_iou(target["boxes"], anchors_i)))
    return matched


def backbone_features(backbone, tensors) -> list:
    """The backbone's feature maps as a list (a single tensor becomes a one-level list)."""
    features = backbone(tensors)
    if isinstance(features, ember.Tensor):
        features = OrderedDict([("0", features)])
    return list(features.values())


def split_by_level(head_outputs: dict, anchors: list, features: list):
    """Head outputs and anchors cut into per-level pieces (``H*W*A`` rows each)."""
    cells = [x.size(2) * x.size(3) for x in features]
    per_cell = head_outputs["cls_logits"].size(1) // sum(cells)
    sizes = [c * per_cell for c in cells]
    return ({k: list(v.split(sizes, dim=1)) for k, v in head_outputs.items()},
            [list(a.split(sizes)) for a in anchors])


def top_candidates(scores, score_thresh: float, topk: int):
    """``(scores, flat indices)`` of at most ``topk`` best entries of the flat ``scores`` above ``score_thresh``."""
    keep = scores > score_thresh
    idxs = ember.where(keep)[0]
    scores, order = scores[keep].topk(det_utils._topk_min(idxs, topk, 0))
    return scores, idxs[order]


def select_detections(boxes, scores, labels, nms_thresh: float, limit: int) -> dict:
    """Class-wise NMS, then the ``limit`` best."""
    boxes, scores, labels = ember.cat(boxes, dim=0), ember.cat(scores, dim=0), ember.cat(labels, dim=0)
    keep = box_ops.batched_nms(boxes, scores, labels, nms_thresh)[:limit]
    return {"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]}


class RetinaNet(nn.Module):
    """RetinaNet around ``backbone`` (with an ``out_channels`` attribute): eval mode returns one
    ``{"boxes", "scores", "labels"}`` dict per image, training mode (with targets) the loss dict
    ``{"classification", "bbox_regression"}``.  Images are transformed by :class:`GeneralizedRCNNTransform`
    (``min_size``, ``max_size``, ``image_mean``, ``image_std`` and ``**kwargs``)."""

    def __init__(self, backbone, num_classes, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 anchor_generator=None, head=None, proposal_matcher=None, score_thresh=0.05, nms_thresh=0.5,
                 detections_per_img=300, fg_iou_thresh=0.5, bg_iou_thresh=0.4, topk_candidates=1000, **kwargs):
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                             "channels (assumed to be the same for all the levels)")
        if not isinstance(anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(f"anchor_generator should be of type AnchorGenerator or None instead of "
                            f"{type(anchor_generator)}")
        self.backbone = backbone
        self.anchor_generator = _default_anchorgen() if anchor_generator is None else anchor_generator
        if head is None:
            head = RetinaNetHead(backbone.out_channels, self.anchor_generator.num_anchors_per_location()[0],
                                 num_classes)
        self.head = head
        if proposal_matcher is None:
            proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.proposal_matcher = proposal_matcher
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.transform = imagenet_transform(min_size, max_size, image_mean, image_std, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def eager_outputs(self, losses, detections):
        return losses if self.training else detections

    def compute_loss(self, targets, head_outputs, anchors):
        """The head's loss dict, anchors matched to the targets by ``proposal_matcher``."""
        return self.head.compute_loss(targets, head_outputs, anchors,
                                      match_anchors(self.proposal_matcher, targets, anchors))

    def postprocess_detections(self, head_outputs, anchors, image_shapes):
        """Per image and level: sigmoid scores above ``score_thresh``, the ``topk_candidates`` best, their
        boxes decoded and clipped; then class-wise NMS over all levels and the ``detections_per_img`` best."""
        detections = []
        for index, image_shape in enumerate(image_shapes):
            boxes, scores, labels = [], [], []
            for regression, logits, level_anchors in zip(head_outputs["bbox_regression"],
                                                         head_outputs["cls_logits"], anchors[index]):
                regression, logits = regression[index], logits[index]
                num_classes = logits.shape[-1]
                level_scores, idxs = top_candidates(ember.sigmoid(logits).flatten(), self.score_thresh,
                                                    self.topk_candidates)
                anchor_idxs = idxs // num_classes
                level_boxes = self.box_coder.decode_single(regression[anchor_idxs], level_anchors[anchor_idxs])
                boxes.append(box_ops.clip_boxes_to_image(level_boxes, image_shape))
                scores.append(level_scores)
                labels.append(idxs % num_classes)
            detections.append(select_detections(boxes, scores, labels, self.nms_thresh, self.detections_per_img))
        return detections

    def forward(self, images, targets=None):
        """Detections per image in eval mode; the loss dict in training mode."""
        if self.training:
            check_targets(targets)
        sizes = original_sizes(images)
        images, targets = self.transform(images, targets)
        check_degenerate(targets)
        features = backbone_features(self.backbone, images.tensors)
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        if self.training:
            return self.eager_outputs(self.compute_loss(targets, head_outputs, anchors), [])
        split_outputs, split_anchors = split_by_level(head_outputs, anchors, features)
        detections = self.postprocess_detections(split_outputs, split_anchors, images.image_sizes)
        return self.eager_outputs({}, self.transform.postprocess(detections, images.image_sizes, sizes))


def _resnet50_fpn_backbone(weights_backbone, progress, is_trained, trainable_backbone_layers, v2: bool):
    layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = misc_nn_ops.FrozenBatchNorm2d if is_trained and not v2 else nn.BatchNorm2d
    backbone = resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, layers, returned_layers=[2, 3, 4],
                                 extra_blocks=LastLevelP6P7(2048 if v2 else 256, 256))


@register_model(RetinaNet_ResNet50_FPN_Weights)
def retinanet_resnet50_fpn(*, weights=None, progress: bool = True, num_classes: int | None = None,
                           weights_backbone=ResNet50_Weights.IMAGENET1K_V1,
                           trainable_backbone_layers: int | None = None, **kwargs) -> RetinaNet:
    """RetinaNet with a ResNet-50 FPN backbone (P3-P7; 91 COCO classes by default); ``**kwargs`` go to
    :class:`RetinaNet`."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        RetinaNet_ResNet50_FPN_Weights, weights, ResNet50_Weights, weights_backbone, kwargs, num_classes=num_classes)
    backbone = _resnet50_fpn_backbone(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=False)
    model = RetinaNet(backbone, counts["num_classes"], **kwargs)
    return load_weights(model, weights, progress, RetinaNet_ResNet50_FPN_Weights.COCO_V1)


@register_model(RetinaNet_ResNet50_FPN_V2_Weights)
def retinanet_resnet50_fpn_v2(*, weights=None, progress: bool = True, num_classes: int | None = None,
                              weights_backbone=None, trainable_backbone_layers: int | None = None,
                              **kwargs) -> RetinaNet:
    """The improved RetinaNet (Zhang et al. 2020's recipe): P6 from C5, group norm in the heads, GIoU box loss."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        RetinaNet_ResNet50_FPN_V2_Weights, weights, ResNet50_Weights, weights_backbone, kwargs,
        num_classes=num_classes)
    backbone = _resnet50_fpn_backbone(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=True)
    anchor_generator = _default_anchorgen()
    head = RetinaNetHead(backbone.out_channels, anchor_generator.num_anchors_per_location()[0], counts["num_classes"],
                         norm_layer=partial(nn.GroupNorm, 32))
    head.regression_head._loss_type = "giou"
    model = RetinaNet(backbone, counts["num_classes"], anchor_generator=anchor_generator, head=head, **kwargs)
    return load_weights(model, weights, progress)
