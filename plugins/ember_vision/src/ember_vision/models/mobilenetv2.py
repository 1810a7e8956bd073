"""MobileNetV2 (Sandler et al. 2018): inverted residual blocks, torchvision's names."""
from __future__ import annotations

import ember
from ember import nn

from ..ops.misc import Conv2dNormActivation
from ._api import RECIPE_V2, Weights, build, weights_enum

_URL = "https://download.pytorch.org/models/"
MobileNet_V2_Weights = weights_enum("MobileNet_V2_Weights", "IMAGENET1K_V2",
                                    IMAGENET1K_V1=_URL + "mobilenet_v2-b0353104.pth",
                                    IMAGENET1K_V2=Weights(_URL + "mobilenet_v2-7ebf99e0.pth", transforms=RECIPE_V2))


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """Round ``v`` to a multiple of ``divisor``, never going down by more than 10%."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class InvertedResidual(nn.Module):
    """1x1 expand (when ``expand_ratio > 1``), 3x3 depthwise, 1x1 linear projection; residual when shapes allow."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int, norm_layer=None):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"InvertedResidual: stride should be 1 or 2 instead of {stride}")
        norm_layer = norm_layer or nn.BatchNorm2d
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers += [Conv2dNormActivation(hidden, hidden, stride=stride, groups=hidden, norm_layer=norm_layer,
                                        activation_layer=nn.ReLU6),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), norm_layer(oup)]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1  # a strided block starts a stage (detection backbones read this)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


# expansion t, output channels c, repeats n, first stride s
SETTINGS = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2],
            [6, 320, 1, 1]]


def init_mobile_weights(model: nn.Module, linear=lambda w: nn.init.normal_(w, 0, 0.01)) -> None:
    """The initialisation torchvision's mobile networks share: He-normal (fan-out) convolutions, unit norms, zero
    biases, and ``linear(weight)`` for the classifier's layers."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            linear(m.weight)
            nn.init.zeros_(m.bias)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, round_nearest: int = 8,
                 dropout: float = 0.2, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        input_channel = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer, activation_layer=nn.ReLU6)]
        for t, c, n, s in SETTINGS:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(InvertedResidual(input_channel, output_channel, s if i == 0 else 1, t, norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer,
                                             activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        init_mobile_weights(self)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(ember.flatten(x, 1))


def mobilenet_v2(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MobileNetV2:
    """MobileNetV2; ``pretrained=True`` loads ImageNet weights."""
    return build((MobileNetV2, ()), MobileNet_V2_Weights, weights, pretrained, kwargs, progress)
