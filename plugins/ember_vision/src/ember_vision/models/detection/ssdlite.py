"""SSDlite (Sandler et al. 2018): SSD with depthwise-separable heads and extra layers on MobileNetV3-Large,
with torchvision's names and state-dict keys."""
from __future__ import annotations

import warnings
from collections import OrderedDict
from functools import partial

from ember import nn

from ...ops.misc import Conv2dNormActivation
from .._api import register_model
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from . import _utils as det_utils
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers
from .faster_rcnn import coco_enum, coco_weights, load_weights, resolve_weights
from .ssd import SSD, SSDScoringHead

__all__ = ["SSDLite320_MobileNet_V3_Large_Weights", "ssdlite320_mobilenet_v3_large"]

SSDLite320_MobileNet_V3_Large_Weights = coco_enum("SSDLite320_MobileNet_V3_Large_Weights", COCO_V1=coco_weights(
    "ssdlite320_mobilenet_v3_large_coco-a79551df.pth", 3440060, "ssdlite320-mobilenetv3-large", {"box_map": 21.3},
    0.583, 13.418))


def _prediction_block(in_channels: int, out_channels: int, kernel_size: int, norm_layer) -> nn.Sequential:
    """Depthwise ``kernel_size`` conv with norm and ReLU6, then a 1x1 conv to ``out_channels``."""
    return nn.Sequential(Conv2dNormActivation(in_channels, in_channels, kernel_size=kernel_size, groups=in_channels,
                                              norm_layer=norm_layer, activation_layer=nn.ReLU6),
                         nn.Conv2d(in_channels, out_channels, 1))


def _extra_block(in_channels: int, out_channels: int, norm_layer) -> nn.Sequential:
    """1x1 conv to half of ``out_channels``, depthwise stride-2 3x3 conv, 1x1 conv to ``out_channels``, each
    with norm and ReLU6."""
    mid = out_channels // 2
    block = partial(Conv2dNormActivation, norm_layer=norm_layer, activation_layer=nn.ReLU6)
    return nn.Sequential(block(in_channels, mid, kernel_size=1),
                         block(mid, mid, kernel_size=3, stride=2, groups=mid),
                         block(mid, out_channels, kernel_size=1))


def _normal_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, mean=0.0, std=0.03)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDLiteClassificationHead(SSDScoringHead):
    """A depthwise-separable prediction block per feature map giving ``num_classes`` logits per default box."""

    def __init__(self, in_channels, num_anchors, num_classes: int, norm_layer):
        blocks = nn.ModuleList(_prediction_block(c, num_classes * a, 3, norm_layer)
                               for c, a in zip(in_channels, num_anchors))
        _normal_init(blocks)
        super().__init__(blocks, num_classes)


class SSDLiteRegressionHead(SSDScoringHead):
    """A depthwise-separable prediction block per feature map giving 4 box deltas per default box."""

    def __init__(self, in_channels, num_anchors, norm_layer):
        blocks = nn.ModuleList(_prediction_block(c, 4 * a, 3, norm_layer) for c, a in zip(in_channels, num_anchors))
        _normal_init(blocks)
        super().__init__(blocks, 4)


class SSDLiteHead(nn.Module):
    """The classification and regression heads; ``forward`` returns ``{"bbox_regression", "cls_logits"}``."""

    def __init__(self, in_channels, num_anchors, num_classes: int, norm_layer):
        super().__init__()
        self.classification_head = SSDLiteClassificationHead(in_channels, num_anchors, num_classes, norm_layer)
        self.regression_head = SSDLiteRegressionHead(in_channels, num_anchors, norm_layer)

    def forward(self, x):
        return {"bbox_regression": self.regression_head(x), "cls_logits": self.classification_head(x)}


class SSDLiteFeatureExtractorMobileNet(nn.Module):
    """MobileNet ``features`` cut inside block ``c4_pos`` (after its expansion layer: the C4 map, then the
    rest: C5), followed by four extra blocks; six maps in all."""

    def __init__(self, backbone: nn.Module, c4_pos: int, norm_layer, width_mult: float = 1.0, min_depth: int = 16):
        super().__init__()
        if backbone[c4_pos].use_res_connect:
            raise ValueError("backbone[c4_pos].use_res_connect should be False")
        self.features = nn.Sequential(nn.Sequential(*backbone[:c4_pos], backbone[c4_pos].block[0]),
                                      nn.Sequential(backbone[c4_pos].block[1:], *backbone[c4_pos + 1:]))

        def depth(d):
            return max(min_depth, int(d * width_mult))

        channels = [backbone[-1].out_channels, depth(512), depth(256), depth(256), depth(128)]
        self.extra = nn.ModuleList(_extra_block(c_in, c_out, norm_layer) for c_in, c_out in zip(channels, channels[1:]))
        _normal_init(self.extra)

    def forward(self, x):
        output = []
        for block in [*self.features, *self.extra]:
            x = block(x)
            output.append(x)
        return OrderedDict((str(i), v) for i, v in enumerate(output))


def _mobilenet_extractor(backbone, trainable_layers: int, norm_layer) -> SSDLiteFeatureExtractorMobileNet:
    """SSDlite's MobileNet feature extractor, the stages before the last ``trainable_layers`` frozen."""
    features = backbone.features
    stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    if not 0 <= trainable_layers <= len(stages):
        raise ValueError(f"trainable_layers should be in the range [0, {len(stages)}], instead got "
                         f"{trainable_layers}")
    freeze_before = len(features) if trainable_layers == 0 else stages[len(stages) - trainable_layers]
    for block in features[:freeze_before]:
        for parameter in block.parameters():
            parameter.requires_grad_(False)
    return SSDLiteFeatureExtractorMobileNet(features, stages[-2], norm_layer)


@register_model(SSDLite320_MobileNet_V3_Large_Weights)
def ssdlite320_mobilenet_v3_large(*, weights=None, progress: bool = True, num_classes: int | None = None,
                                  weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1,
                                  trainable_backbone_layers: int | None = None, norm_layer=None, **kwargs) -> SSD:
    """SSDlite on MobileNetV3-Large (320x320 input, 91 COCO classes by default; without backbone weights the
    backbone's tail is halved); ``**kwargs`` go to :class:`SSD` (and MobileNetV3, which ignores the rest)."""
    if "size" in kwargs:
        warnings.warn("The size of the model is already fixed; ignoring the parameter.")
        kwargs.pop("size")
    weights, weights_backbone, counts, is_trained = resolve_weights(
        SSDLite320_MobileNet_V3_Large_Weights, weights, MobileNet_V3_Large_Weights, weights_backbone, kwargs,
        num_classes=num_classes)
    layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 6, 6)
    norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    backbone = mobilenet_v3_large(weights=weights_backbone, progress=progress, norm_layer=norm_layer,
                                  reduced_tail=weights_backbone is None, **kwargs)
    if weights_backbone is None:
        _normal_init(backbone)
    backbone = _mobilenet_extractor(backbone, layers, norm_layer)
    size = (320, 320)
    anchor_generator = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    out_channels = det_utils.retrieve_out_channels(backbone, size)
    if len(out_channels) != len(anchor_generator.aspect_ratios):
        raise ValueError(f"The length of the output channels from the backbone {len(out_channels)} do not match the "
                         f"length of the anchor generator aspect ratios {len(anchor_generator.aspect_ratios)}")
    kwargs = {"score_thresh": 0.001, "nms_thresh": 0.55, "detections_per_img": 300, "topk_candidates": 300,
              "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], **kwargs}
    head = SSDLiteHead(out_channels, anchor_generator.num_anchors_per_location(), counts["num_classes"], norm_layer)
    model = SSD(backbone, anchor_generator, size, counts["num_classes"], head=head, **kwargs)
    return load_weights(model, weights, progress)
