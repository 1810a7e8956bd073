"""FCN (Long et al. 2015) on a dilated ResNet, torchvision's names."""
from __future__ import annotations

from ember import nn

from .._api import register_model
from ..resnet import ResNet50_Weights, ResNet101_Weights, resnet50, resnet101
from ._utils import IntermediateLayerGetter, _SimpleSegmentationModel, finish, resolve, voc_weights

_URL = "https://download.pytorch.org/models/"
FCN_ResNet50_Weights = voc_weights("FCN_ResNet50_Weights", _URL + "fcn_resnet50_coco-1167a1af.pth")
FCN_ResNet101_Weights = voc_weights("FCN_ResNet101_Weights", _URL + "fcn_resnet101_coco-7ecb50ca.pth")


class FCN(_SimpleSegmentationModel):
    """Fully convolutional network: ``FCN(backbone, classifier, aux_classifier=None)``."""


class FCNHead(nn.Sequential):
    """3x3 conv to a quarter of the channels, batch norm, ReLU, dropout 0.1, 1x1 conv to ``channels``."""

    def __init__(self, in_channels: int, channels: int) -> None:
        inter_channels = in_channels // 4
        super().__init__(nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
                         nn.BatchNorm2d(inter_channels), nn.ReLU(), nn.Dropout(0.1),
                         nn.Conv2d(inter_channels, channels, 1))


def resnet_backbone(builder, weights_backbone, aux: bool | None):
    """A ResNet with dilated layers 3 and 4 (output stride 8) returning layer4 as "out" and layer3 as "aux"."""
    backbone = builder(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    return IntermediateLayerGetter(backbone, {"layer4": "out", **({"layer3": "aux"} if aux else {})})


def _fcn_resnet(weights_cls, backbone_cls, builder, weights, progress, num_classes, aux_loss, weights_backbone,
                kwargs) -> FCN:
    weights, weights_backbone, num_classes, aux_loss = resolve(weights_cls, weights, backbone_cls, weights_backbone,
                                                               num_classes, aux_loss, kwargs)
    model = FCN(resnet_backbone(builder, weights_backbone, aux_loss), FCNHead(2048, num_classes),
                FCNHead(1024, num_classes) if aux_loss else None)
    return finish(model, weights, progress)


@register_model(FCN_ResNet50_Weights)
def fcn_resnet50(*, weights=None, progress: bool = True, num_classes: int | None = None, aux_loss: bool | None = None,
                 weights_backbone=ResNet50_Weights.IMAGENET1K_V1, **kwargs) -> FCN:
    """FCN with a ResNet-50 backbone (21 Pascal VOC classes by default; ``aux_loss`` adds a head on layer3)."""
    return _fcn_resnet(FCN_ResNet50_Weights, ResNet50_Weights, resnet50, weights, progress, num_classes, aux_loss,
                       weights_backbone, kwargs)


@register_model(FCN_ResNet101_Weights)
def fcn_resnet101(*, weights=None, progress: bool = True, num_classes: int | None = None,
                  aux_loss: bool | None = None, weights_backbone=ResNet101_Weights.IMAGENET1K_V1, **kwargs) -> FCN:
    """FCN with a ResNet-101 backbone (21 Pascal VOC classes by default; ``aux_loss`` adds a head on layer3)."""
    return _fcn_resnet(FCN_ResNet101_Weights, ResNet101_Weights, resnet101, weights, progress, num_classes,
                       aux_loss, weights_backbone, kwargs)
