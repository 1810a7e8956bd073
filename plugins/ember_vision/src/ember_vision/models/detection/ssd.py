"""SSD (Liu et al. 2016): one-stage detection from several feature maps of a truncated VGG-16 and extra layers,
softmax class scores per default box, with torchvision's names, state-dict keys and postprocessing."""
from __future__ import annotations

import warnings
from collections import OrderedDict

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from .._api import register_model
from ..vgg import VGG16_Weights, vgg16
from . import _utils as det_utils
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers
from .faster_rcnn import coco_enum, coco_weights, load_weights, resolve_weights
from .retinanet import (anchor_rows, backbone_features, check_degenerate, imagenet_transform, match_anchors,
                        original_sizes, select_detections)

__all__ = ["SSD300_VGG16_Weights", "ssd300_vgg16"]

SSD300_VGG16_Weights = coco_enum("SSD300_VGG16_Weights", COCO_V1=coco_weights(
    "ssd300_vgg16_coco-b556d3b4.pth", 35641826, "ssd300-vgg16", {"box_map": 25.1}, 34.858, 135.988))


def _xavier_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDScoringHead(nn.Module):
    """One module per feature map (``module_list``), each output laid out as ``(N, H*W*A, num_columns)`` and
    the maps concatenated."""

    def __init__(self, module_list: nn.ModuleList, num_columns: int):
        super().__init__()
        self.module_list = module_list
        self.num_columns = num_columns

    def _get_result_from_module_list(self, x, idx: int):
        """``module_list[idx](x)`` (a negative ``idx`` counts from the end)."""
        return self.module_list[idx](x)

    def forward(self, x):
        return ember.cat([anchor_rows(self._get_result_from_module_list(features, i), self.num_columns)
                          for i, features in enumerate(x)], dim=1)


class SSDClassificationHead(SSDScoringHead):
    """A 3x3 conv per feature map giving ``num_classes`` logits per default box."""

    def __init__(self, in_channels, num_anchors, num_classes: int):
        convs = nn.ModuleList(nn.Conv2d(c, num_classes * a, kernel_size=3, padding=1)
                              for c, a in zip(in_channels, num_anchors))
        _xavier_init(convs)
        super().__init__(convs, num_classes)


class SSDRegressionHead(SSDScoringHead):
    """A 3x3 conv per feature map giving 4 box deltas per default box."""

    def __init__(self, in_channels, num_anchors):
        convs = nn.ModuleList(nn.Conv2d(c, 4 * a, kernel_size=3, padding=1) for c, a in zip(in_channels, num_anchors))
        _xavier_init(convs)
        super().__init__(convs, 4)


class SSDHead(nn.Module):
    """The classification and regression heads; ``forward`` returns ``{"bbox_regression", "cls_logits"}``."""

    def __init__(self, in_channels, num_anchors, num_classes: int):
        super().__init__()
        self.classification_head = SSDClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = SSDRegressionHead(in_channels, num_anchors)

    def forward(self, x):
        return {"bbox_regression": self.regression_head(x), "cls_logits": self.classification_head(x)}


class SSD(nn.Module):
    """SSD around ``backbone`` (its feature maps, one per ``anchor_generator`` level), images resized to the
    fixed ``size``: eval mode returns one ``{"boxes", "scores", "labels"}`` dict per image, training mode
    (with targets) ``{"bbox_regression", "classification"}`` (smooth L1; cross entropy with hard negatives,
    ``(1 - positive_fraction) / positive_fraction`` negatives per positive)."""

    def __init__(self, backbone, anchor_generator: DefaultBoxGenerator, size, num_classes: int, image_mean=None,
                 image_std=None, head=None, score_thresh: float = 0.01, nms_thresh: float = 0.45,
                 detections_per_img: int = 200, iou_thresh: float = 0.5, topk_candidates: int = 400,
                 positive_fraction: float = 0.25, **kwargs):
        super().__init__()
        self.backbone = backbone
        self.anchor_generator = anchor_generator
        self.box_coder = det_utils.BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
        if head is None:
            out_channels = (backbone.out_channels if hasattr(backbone, "out_channels")
                            else det_utils.retrieve_out_channels(backbone, size))
            if len(out_channels) != len(anchor_generator.aspect_ratios):
                raise ValueError(f"The length of the output channels from the backbone ({len(out_channels)}) do not "
                                 f"match the length of the anchor generator aspect ratios "
                                 f"({len(anchor_generator.aspect_ratios)})")
            head = SSDHead(out_channels, anchor_generator.num_anchors_per_location(), num_classes)
        self.head = head
        self.proposal_matcher = det_utils.SSDMatcher(iou_thresh)
        self.transform = imagenet_transform(min(size), max(size), image_mean, image_std, size_divisible=1,
                                            fixed_size=size, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates
        self.neg_to_pos_ratio = (1.0 - positive_fraction) / positive_fraction

    def eager_outputs(self, losses, detections):
        return losses if self.training else detections

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """Smooth L1 on the matched boxes' deltas; cross entropy on the matched boxes and on the hardest
        negatives (``neg_to_pos_ratio`` per positive in each image); both divided by the positives' count."""
        cls_logits = head_outputs["cls_logits"]
        num_foreground, box_losses, cls_targets = 0, [], []
        for target, regression, anchors_i, matched in zip(targets, head_outputs["bbox_regression"], anchors,
                                                          matched_idxs):
            foreground = ember.where(matched >= 0)[0]
            gt_idx = matched[foreground]
            num_foreground += gt_idx.numel()
            deltas = self.box_coder.encode_single(target["boxes"][gt_idx], anchors_i[foreground, :])
            box_losses.append(F.smooth_l1_loss(regression[foreground, :], deltas, reduction="sum"))
            classes = ember.zeros((cls_logits.size(1),), dtype=target["labels"].dtype, device=target["labels"].device)
            classes[foreground] = target["labels"][gt_idx]
            cls_targets.append(classes)
        cls_targets = ember.stack(cls_targets)
        cls_loss = F.cross_entropy(cls_logits.view(-1, cls_logits.size(-1)), cls_targets.view(-1),
                                   reduction="none").view(cls_targets.size())
        positive = cls_targets > 0
        num_negative = self.neg_to_pos_ratio * positive.sum(1, keepdim=True)
        negative_loss = cls_loss.clone()
        negative_loss[positive] = -float("inf")  # positives rank last
        rank = negative_loss.sort(1, descending=True)[1].sort(1)[1]
        hard_negative = rank < num_negative
        n = max(1, num_foreground)
        return {"bbox_regression": ember.stack(box_losses).sum() / n,
                "classification": (cls_loss[positive].sum() + cls_loss[hard_negative].sum()) / n}

    def postprocess_detections(self, head_outputs, image_anchors, image_shapes):
        """Per image: boxes decoded and clipped; per foreground class the ``topk_candidates`` best softmax
        scores above ``score_thresh``; class-wise NMS and the ``detections_per_img`` best."""
        scores_all = F.softmax(head_outputs["cls_logits"], dim=-1)
        num_classes = scores_all.size(-1)
        detections = []
        for regression, scores, anchors, image_shape in zip(head_outputs["bbox_regression"], scores_all,
                                                            image_anchors, image_shapes):
            boxes = box_ops.clip_boxes_to_image(self.box_coder.decode_single(regression, anchors), image_shape)
            image_boxes, image_scores, image_labels = [], [], []
            for label in range(1, num_classes):
                score = scores[:, label]
                keep = score > self.score_thresh
                score, box = score[keep], boxes[keep]
                score, idxs = score.topk(det_utils._topk_min(score, self.topk_candidates, 0))
                image_boxes.append(box[idxs])
                image_scores.append(score)
                image_labels.append(ember.full_like(score, fill_value=label, dtype=ember.int64))
            detections.append(select_detections(image_boxes, image_scores, image_labels, self.nms_thresh,
                                                self.detections_per_img))
        return detections

    def forward(self, images, targets=None):
        """Detections per image in eval mode; the loss dict in training mode."""
        if self.training:
            if targets is None:
                raise AssertionError("targets should not be none when in training mode")
            for target in targets:
                boxes = target["boxes"]
                if not isinstance(boxes, ember.Tensor):
                    raise AssertionError(f"Expected target boxes to be of type Tensor, got {type(boxes)}.")
                if not (boxes.dim() == 2 and boxes.shape[-1] == 4):
                    raise AssertionError(f"Expected target boxes to be a tensor of shape [N, 4], got {boxes.shape}.")
        sizes = original_sizes(images)
        images, targets = self.transform(images, targets)
        check_degenerate(targets)
        features = backbone_features(self.backbone, images.tensors)
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        if self.training:
            matched_idxs = match_anchors(self.proposal_matcher, targets, anchors)
            return self.eager_outputs(self.compute_loss(targets, head_outputs, anchors, matched_idxs), [])
        detections = self.postprocess_detections(head_outputs, anchors, images.image_sizes)
        return self.eager_outputs({}, self.transform.postprocess(detections, images.image_sizes, sizes))


def _conv_pair(in_channels: int, mid: int, out_channels: int, **conv) -> nn.Sequential:
    """1x1 conv to ``mid`` channels, ReLU, 3x3 conv (``conv`` arguments) to ``out_channels``, ReLU."""
    return nn.Sequential(nn.Conv2d(in_channels, mid, kernel_size=1), nn.ReLU(inplace=True),
                         nn.Conv2d(mid, out_channels, **conv), nn.ReLU(inplace=True))


class SSDFeatureExtractorVGG(nn.Module):
    """VGG-16's ``features`` up to conv4_3 (its output L2-normalised and scaled by the learnt
    ``scale_weight``), then ``extra``: conv5 with the dilated fc6/fc7 convs, and four (five when ``highres``)
    blocks each halving the map."""

    def __init__(self, backbone: nn.Module, highres: bool):
        super().__init__()
        _, _, maxpool3_pos, maxpool4_pos, _ = (i for i, layer in enumerate(backbone) if isinstance(layer, nn.MaxPool2d))
        backbone[maxpool3_pos].ceil_mode = True
        self.scale_weight = nn.Parameter(ember.ones(512) * 20)
        self.features = nn.Sequential(*backbone[:maxpool4_pos])
        extra = nn.ModuleList([_conv_pair(1024, 256, 512, kernel_size=3, padding=1, stride=2),
                               _conv_pair(512, 128, 256, kernel_size=3, padding=1, stride=2),
                               _conv_pair(256, 128, 256, kernel_size=3),
                               _conv_pair(256, 128, 256, kernel_size=3)])
        if highres:
            extra.append(_conv_pair(256, 128, 256, kernel_size=4))
        _xavier_init(extra)
        fc = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=False),
                           nn.Conv2d(512, 1024, kernel_size=3, padding=6, dilation=6), nn.ReLU(inplace=True),
                           nn.Conv2d(1024, 1024, kernel_size=1), nn.ReLU(inplace=True))
        _xavier_init(fc)
        extra.insert(0, nn.Sequential(*backbone[maxpool4_pos:-1], fc))  # conv5_x (not pool5), fc6, fc7
        self.extra = extra

    def forward(self, x):
        x = self.features(x)
        output = [self.scale_weight.view(1, -1, 1, 1) * F.normalize(x)]
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict((str(i), v) for i, v in enumerate(output))


def _vgg_extractor(backbone, highres: bool, trainable_layers: int) -> SSDFeatureExtractorVGG:
    """SSD's VGG feature extractor, the stages before the last ``trainable_layers`` (of 5) frozen."""
    features = backbone.features
    stages = [0] + [i for i, b in enumerate(features) if isinstance(b, nn.MaxPool2d)][:-1]
    if not 0 <= trainable_layers <= len(stages):
        raise AssertionError(f"trainable_layers should be in the range [0, {len(stages)}]. Instead got "
                             f"{trainable_layers}")
    freeze_before = len(features) if trainable_layers == 0 else stages[len(stages) - trainable_layers]
    for block in features[:freeze_before]:
        for parameter in block.parameters():
            parameter.requires_grad_(False)
    return SSDFeatureExtractorVGG(features, highres)


@register_model(SSD300_VGG16_Weights)
def ssd300_vgg16(*, weights=None, progress: bool = True, num_classes: int | None = None,
                 weights_backbone=VGG16_Weights.IMAGENET1K_FEATURES, trainable_backbone_layers: int | None = None,
                 **kwargs) -> SSD:
    """SSD300 on VGG-16 (300x300 input, 91 COCO classes by default); ``**kwargs`` go to :class:`SSD`."""
    if "size" in kwargs:
        warnings.warn("The size of the model is already fixed; ignoring the parameter.")
        kwargs.pop("size")
    if "pretrained_backbone" in kwargs:  # the legacy flag means the features-only checkpoint here
        weights_backbone = VGG16_Weights.IMAGENET1K_FEATURES if kwargs.pop("pretrained_backbone") else None
    weights, weights_backbone, counts, is_trained = resolve_weights(
        SSD300_VGG16_Weights, weights, VGG16_Weights, weights_backbone, kwargs, num_classes=num_classes)
    layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 4)
    backbone = _vgg_extractor(vgg16(weights=weights_backbone, progress=progress), False, layers)
    anchor_generator = DefaultBoxGenerator([[2], [2, 3], [2, 3], [2, 3], [2], [2]],
                                           scales=[0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05],
                                           steps=[8, 16, 32, 64, 100, 300])
    # the backbone's weights expect 0-255 inputs less the mean: a std of 1/255 undoes ToTensor's scaling
    kwargs = {"image_mean": [0.48235, 0.45882, 0.40784], "image_std": [1.0 / 255.0] * 3, **kwargs}
    model = SSD(backbone, anchor_generator, (300, 300), counts["num_classes"], **kwargs)
    return load_weights(model, weights, progress)
