"""DeepLabV3 (Chen et al. 2017): atrous spatial pyramid pooling on a dilated ResNet or MobileNetV3-Large."""
from __future__ import annotations

from collections.abc import Sequence

import ember
from ember import nn

from .._api import register_model
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from ..resnet import ResNet50_Weights, ResNet101_Weights, resnet50, resnet101
from ._utils import (
    IntermediateLayerGetter, _SimpleSegmentationModel, finish, mobilenet_stages, resolve, upsample, voc_weights,
)
from .fcn import FCNHead, resnet_backbone

_URL = "https://download.pytorch.org/models/"
DeepLabV3_ResNet50_Weights = voc_weights("DeepLabV3_ResNet50_Weights",
                                         _URL + "deeplabv3_resnet50_coco-cd0a2569.pth")
DeepLabV3_ResNet101_Weights = voc_weights("DeepLabV3_ResNet101_Weights",
                                          _URL + "deeplabv3_resnet101_coco-586e9e4e.pth")
DeepLabV3_MobileNet_V3_Large_Weights = voc_weights("DeepLabV3_MobileNet_V3_Large_Weights",
                                                   _URL + "deeplabv3_mobilenet_v3_large-fc3c493d.pth")


class DeepLabV3(_SimpleSegmentationModel):
    """DeepLabV3: ``DeepLabV3(backbone, classifier, aux_classifier=None)``."""


def _conv_bn_relu(in_channels: int, out_channels: int, kernel_size: int = 1, dilation: int = 1) -> list:
    padding = dilation if kernel_size == 3 else 0
    return [nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU()]


class DeepLabHead(nn.Sequential):
    """ASPP, a 3x3 conv-bn-ReLU, a 1x1 conv to the classes."""

    def __init__(self, in_channels: int, num_classes: int, atrous_rates: Sequence[int] = (12, 24, 36)) -> None:
        super().__init__(ASPP(in_channels, atrous_rates), *_conv_bn_relu(256, 256, 3),
                         nn.Conv2d(256, num_classes, 1))


class ASPPConv(nn.Sequential):
    """A dilated 3x3 conv-bn-ReLU branch."""

    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        super().__init__(*_conv_bn_relu(in_channels, out_channels, 3, dilation))


class ASPPPooling(nn.Sequential):
    """The image-level branch: global average, 1x1 conv-bn-ReLU, upsampled back to the input's size."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(nn.AdaptiveAvgPool2d(1), *_conv_bn_relu(in_channels, out_channels))

    def forward(self, x):
        return upsample(super().forward(x), x.shape[-2:])


class ASPP(nn.Module):
    """Atrous spatial pyramid pooling: a 1x1 branch, one dilated branch per rate and the pooling branch,
    concatenated and projected to ``out_channels`` (dropout 0.5)."""

    def __init__(self, in_channels: int, atrous_rates: Sequence[int], out_channels: int = 256) -> None:
        super().__init__()
        self.convs = nn.ModuleList([nn.Sequential(*_conv_bn_relu(in_channels, out_channels)),
                                    *(ASPPConv(in_channels, out_channels, rate) for rate in tuple(atrous_rates)),
                                    ASPPPooling(in_channels, out_channels)])
        self.project = nn.Sequential(*_conv_bn_relu(len(self.convs) * out_channels, out_channels), nn.Dropout(0.5))

    def forward(self, x):
        return self.project(ember.cat([conv(x) for conv in self.convs], dim=1))


def _deeplabv3_resnet(weights_cls, backbone_cls, builder, weights, progress, num_classes, aux_loss,
                      weights_backbone, kwargs) -> DeepLabV3:
    weights, weights_backbone, num_classes, aux_loss = resolve(weights_cls, weights, backbone_cls, weights_backbone,
                                                               num_classes, aux_loss, kwargs)
    model = DeepLabV3(resnet_backbone(builder, weights_backbone, aux_loss), DeepLabHead(2048, num_classes),
                      FCNHead(1024, num_classes) if aux_loss else None)
    return finish(model, weights, progress)


@register_model(DeepLabV3_ResNet50_Weights)
def deeplabv3_resnet50(*, weights=None, progress: bool = True, num_classes: int | None = None,
                       aux_loss: bool | None = None, weights_backbone=ResNet50_Weights.IMAGENET1K_V1,
                       **kwargs) -> DeepLabV3:
    """DeepLabV3 with a ResNet-50 backbone (21 Pascal VOC classes by default)."""
    return _deeplabv3_resnet(DeepLabV3_ResNet50_Weights, ResNet50_Weights, resnet50, weights, progress, num_classes,
                             aux_loss, weights_backbone, kwargs)


@register_model(DeepLabV3_ResNet101_Weights)
def deeplabv3_resnet101(*, weights=None, progress: bool = True, num_classes: int | None = None,
                        aux_loss: bool | None = None, weights_backbone=ResNet101_Weights.IMAGENET1K_V1,
                        **kwargs) -> DeepLabV3:
    """DeepLabV3 with a ResNet-101 backbone (21 Pascal VOC classes by default)."""
    return _deeplabv3_resnet(DeepLabV3_ResNet101_Weights, ResNet101_Weights, resnet101, weights, progress,
                             num_classes, aux_loss, weights_backbone, kwargs)


@register_model(DeepLabV3_MobileNet_V3_Large_Weights)
def deeplabv3_mobilenet_v3_large(*, weights=None, progress: bool = True, num_classes: int | None = None,
                                 aux_loss: bool | None = None,
                                 weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1, **kwargs) -> DeepLabV3:
    """DeepLabV3 on a dilated MobileNetV3-Large: the head on its last stage (output stride 16), the auxiliary
    head on the stride-8 stage."""
    weights, weights_backbone, num_classes, aux_loss = resolve(
        DeepLabV3_MobileNet_V3_Large_Weights, weights, MobileNet_V3_Large_Weights, weights_backbone, num_classes,
        aux_loss, kwargs)
    features = mobilenet_v3_large(weights=weights_backbone, dilated=True).features
    stages = mobilenet_stages(features)
    out_pos, aux_pos = stages[-1], stages[-4]
    backbone = IntermediateLayerGetter(features, {str(out_pos): "out", **({str(aux_pos): "aux"} if aux_loss else {})})
    model = DeepLabV3(backbone, DeepLabHead(features[out_pos].out_channels, num_classes),
                      FCNHead(features[aux_pos].out_channels, num_classes) if aux_loss else None)
    return finish(model, weights, progress)
