"""VGG-11/16/19 with and without batch norm (Simonyan & Zisserman 2014), torchvision's names."""
from __future__ import annotations

import ember
from ember import nn

from ._api import Weights, _weights_enum, build, classification_transforms, weights_enum

_URL = "https://download.pytorch.org/models/"
VGG11_Weights = _weights_enum("VGG11_Weights", _URL + "vgg11-8a719046.pth")
VGG11_BN_Weights = _weights_enum("VGG11_BN_Weights", _URL + "vgg11_bn-6002323d.pth")
VGG13_Weights = _weights_enum("VGG13_Weights", _URL + "vgg13-19584684.pth")
VGG13_BN_Weights = _weights_enum("VGG13_BN_Weights", _URL + "vgg13_bn-abd245e5.pth")
# IMAGENET1K_FEATURES: SSD's backbone (ported from amdegroot/ssd.pytorch; its classifier is not trained), fed
# 0-255 values less the channel means
_SSD_INPUT = classification_transforms(224, mean=(0.48235, 0.45882, 0.40784), std=(1.0 / 255.0,) * 3)
VGG16_Weights = weights_enum("VGG16_Weights", IMAGENET1K_V1=_URL + "vgg16-397923af.pth",
                             IMAGENET1K_FEATURES=Weights(_URL + "vgg16_features-amdegroot-88682ab5.pth",
                                                                 transforms=_SSD_INPUT))
VGG16_BN_Weights = _weights_enum("VGG16_BN_Weights", _URL + "vgg16_bn-6c64b313.pth")
VGG19_Weights = _weights_enum("VGG19_Weights", _URL + "vgg19-dcbb9e9d.pth")
VGG19_BN_Weights = _weights_enum("VGG19_BN_Weights", _URL + "vgg19_bn-c79401a0.pth")

# output channels of each 3x3 conv; "M" is a 2x2 max pool
CFGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


class VGG(nn.Module):
    """``features`` (convolutions), ``avgpool`` to 7x7, ``classifier`` (three Linear layers)."""

    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(ember.flatten(self.avgpool(self.features(x)), 1))


def make_layers(cfg, batch_norm: bool = False) -> nn.Sequential:
    layers, in_channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


def _vgg(cfg: str, batch_norm: bool, weights_cls, weights, pretrained, progress, kwargs) -> VGG:
    if weights is not None or pretrained:
        kwargs.setdefault("init_weights", False)
    return build((VGG, (make_layers(CFGS[cfg], batch_norm),)), weights_cls, weights, pretrained, kwargs, progress)


def vgg11(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-11 (configuration "A")."""
    return _vgg("A", False, VGG11_Weights, weights, pretrained, progress, kwargs)


def vgg11_bn(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-11 with batch norm."""
    return _vgg("A", True, VGG11_BN_Weights, weights, pretrained, progress, kwargs)


def vgg13(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-13 (configuration "B": ten 3x3 convolutions)."""
    return _vgg("B", False, VGG13_Weights, weights, pretrained, progress, kwargs)


def vgg13_bn(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-13 with batch normalization."""
    return _vgg("B", True, VGG13_BN_Weights, weights, pretrained, progress, kwargs)


def vgg16(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-16 (configuration "D")."""
    return _vgg("D", False, VGG16_Weights, weights, pretrained, progress, kwargs)


def vgg16_bn(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-16 with batch norm."""
    return _vgg("D", True, VGG16_BN_Weights, weights, pretrained, progress, kwargs)


def vgg19(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-19 (configuration "E"); ``vgg19(pretrained=True).features`` is the perceptual-loss backbone.

    >>> len(vgg19(init_weights=False).features)
    37
    """
    return _vgg("E", False, VGG19_Weights, weights, pretrained, progress, kwargs)


def vgg19_bn(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> VGG:
    """VGG-19 with batch norm."""
    return _vgg("E", True, VGG19_BN_Weights, weights, pretrained, progress, kwargs)
