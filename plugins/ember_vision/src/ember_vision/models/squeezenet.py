"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016): Fire modules, torchvision's names."""
from __future__ import annotations

import ember
from ember import nn

from ._api import build, register_model, weights_enum

SqueezeNet1_0_Weights = weights_enum("SqueezeNet1_0_Weights",
                                     IMAGENET1K_V1="https://download.pytorch.org/models/squeezenet1_0-b66bff10.pth")
SqueezeNet1_1_Weights = weights_enum("SqueezeNet1_1_Weights",
                                     IMAGENET1K_V1="https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth")


class Fire(nn.Module):
    """1x1 squeeze, then 1x1 and 3x3 expansions side by side, concatenated along channels."""

    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return ember.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


def _pool():
    return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)


# (stem conv channels, kernel) and the features after the first pool: "M" a pool, a tuple a Fire module
_STEMS = {"1_0": (96, 7), "1_1": (64, 3)}
_BODIES = {
    "1_0": [(96, 16, 64, 64), (128, 16, 64, 64), (128, 32, 128, 128), "M", (256, 32, 128, 128),
            (256, 48, 192, 192), (384, 48, 192, 192), (384, 64, 256, 256), "M", (512, 64, 256, 256)],
    "1_1": [(64, 16, 64, 64), (128, 16, 64, 64), "M", (128, 32, 128, 128), (256, 32, 128, 128), "M",
            (256, 48, 192, 192), (384, 48, 192, 192), (384, 64, 256, 256), (512, 64, 256, 256)],
}


class SqueezeNet(nn.Module):
    """``SqueezeNet(version="1_0" | "1_1", num_classes, dropout)``: ``features``, then a 1x1-conv classifier."""

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5):
        super().__init__()
        if version not in _STEMS:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        self.num_classes = num_classes
        channels, kernel = _STEMS[version]
        self.features = nn.Sequential(nn.Conv2d(3, channels, kernel_size=kernel, stride=2), nn.ReLU(inplace=True),
                                      _pool(), *(_pool() if c == "M" else Fire(*c) for c in _BODIES[version]))
        final_conv = nn.Conv2d(512, num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return ember.flatten(self.classifier(self.features(x)), 1)


@register_model(SqueezeNet1_0_Weights)
def squeezenet1_0(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SqueezeNet:
    """SqueezeNet 1.0 (AlexNet-level accuracy with 50x fewer parameters)."""
    return build((SqueezeNet, ("1_0",)), SqueezeNet1_0_Weights, weights, pretrained, kwargs, progress)


@register_model(SqueezeNet1_1_Weights)
def squeezenet1_1(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> SqueezeNet:
    """SqueezeNet 1.1: 2.4x less computation than 1.0 at the same accuracy."""
    return build((SqueezeNet, ("1_1",)), SqueezeNet1_1_Weights, weights, pretrained, kwargs, progress)
