"""Lite R-ASPP (Howard et al. 2019) on a dilated MobileNetV3-Large, torchvision's names."""
from __future__ import annotations

from collections import OrderedDict

from ember import nn

from .._api import register_model
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from ._utils import IntermediateLayerGetter, finish, mobilenet_stages, resolve, upsample, voc_weights

LRASPP_MobileNet_V3_Large_Weights = voc_weights(
    "LRASPP_MobileNet_V3_Large_Weights", "https://download.pytorch.org/models/lraspp_mobilenet_v3_large-d234d4ea.pth")


class LRASPP(nn.Module):
    """``LRASPP(backbone, low_channels, high_channels, num_classes, inter_channels=128)``: the backbone returns
    ``{"low": ..., "high": ...}``; the output is ``{"out": scores at the input's size}``."""

    def __init__(self, backbone: nn.Module, low_channels: int, high_channels: int, num_classes: int,
                 inter_channels: int = 128) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = LRASPPHead(low_channels, high_channels, num_classes, inter_channels)

    def forward(self, input):
        out = self.classifier(self.backbone(input))
        return OrderedDict(out=upsample(out, input.shape[-2:]))


class LRASPPHead(nn.Module):
    """High-level features (1x1 conv-bn-ReLU) gated by their squeezed, sigmoid-activated mean, upsampled to the
    low-level features' size; each side classified by a 1x1 conv, and the two summed."""

    def __init__(self, low_channels: int, high_channels: int, num_classes: int, inter_channels: int) -> None:
        super().__init__()
        self.cbr = nn.Sequential(nn.Conv2d(high_channels, inter_channels, 1, bias=False),
                                 nn.BatchNorm2d(inter_channels), nn.ReLU(inplace=True))
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(high_channels, inter_channels, 1, bias=False),
                                   nn.Sigmoid())
        self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
        self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)

    def forward(self, input: dict):
        low, high = input["low"], input["high"]
        x = upsample(self.cbr(high) * self.scale(high), low.shape[-2:])
        return self.low_classifier(low) + self.high_classifier(x)


@register_model(LRASPP_MobileNet_V3_Large_Weights)
def lraspp_mobilenet_v3_large(*, weights=None, progress: bool = True, num_classes: int | None = None,
                              weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1, **kwargs) -> LRASPP:
    """LR-ASPP on a dilated MobileNetV3-Large (low: the stride-8 stage, high: the last stage)."""
    if kwargs.pop("aux_loss", False):
        raise NotImplementedError("This model does not use auxiliary loss")
    weights, weights_backbone, num_classes, _ = resolve(LRASPP_MobileNet_V3_Large_Weights, weights,
                                                        MobileNet_V3_Large_Weights, weights_backbone, num_classes,
                                                        None, kwargs)
    features = mobilenet_v3_large(weights=weights_backbone, dilated=True).features
    stages = mobilenet_stages(features)
    low_pos, high_pos = stages[-4], stages[-1]
    backbone = IntermediateLayerGetter(features, {str(low_pos): "low", str(high_pos): "high"})
    model = LRASPP(backbone, features[low_pos].out_channels, features[high_pos].out_channels, num_classes)
    return finish(model, weights, progress)
