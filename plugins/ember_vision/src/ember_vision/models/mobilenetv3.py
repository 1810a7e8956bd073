"""MobileNetV3 large and small (Howard et al. 2019), torchvision's names."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import ember
from ember import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation as SElayer
from ._api import RECIPE_V2, Weights, build, register_model, weights_enum
from .mobilenetv2 import _make_divisible, init_mobile_weights

_URL = "https://download.pytorch.org/models/"
MobileNet_V3_Large_Weights = weights_enum("MobileNet_V3_Large_Weights", "IMAGENET1K_V2",
                                          IMAGENET1K_V1=_URL + "mobilenet_v3_large-8738ca79.pth",
                                          IMAGENET1K_V2=Weights(_URL + "mobilenet_v3_large-5c1a4163.pth",
                                                                transforms=RECIPE_V2))
MobileNet_V3_Small_Weights = weights_enum("MobileNet_V3_Small_Weights",
                                          IMAGENET1K_V1=_URL + "mobilenet_v3_small-047dcff4.pth")


_HARD_SE = partial(SElayer, scale_activation=nn.Hardsigmoid)


class InvertedResidualConfig:
    """One block: channels (scaled by ``width_mult``), kernel, squeeze-excitation, activation ("RE" ReLU or
    "HS" hard-swish), stride and dilation."""

    def __init__(self, input_channels: int, kernel: int, expanded_channels: int, out_channels: int, use_se: bool,
                 activation: str, stride: int, dilation: int, width_mult: float):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float) -> int:
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """1x1 expand (when wider), depthwise k x k, optional squeeze-excitation (hard-sigmoid gate), 1x1 project."""

    def __init__(self, cnf: InvertedResidualConfig, norm_layer, se_layer=_HARD_SE):
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        act = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=act))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
                                           stride=1 if cnf.dilation > 1 else cnf.stride, dilation=cnf.dilation,
                                           groups=cnf.expanded_channels, norm_layer=norm_layer, activation_layer=act))
        if cnf.use_se:
            layers.append(se_layer(cnf.expanded_channels, _make_divisible(cnf.expanded_channels // 4, 8)))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input):
        result = self.block(input)
        return result + input if self.use_res_connect else result


class MobileNetV3(nn.Module):
    """``MobileNetV3(inverted_residual_setting, last_channel, num_classes, block, norm_layer, dropout)``."""

    def __init__(self, inverted_residual_setting, last_channel: int, num_classes: int = 1000, block=None,
                 norm_layer=None, dropout: float = 0.2, **kwargs):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (isinstance(inverted_residual_setting, Sequence)
                and all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting)):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig]")
        block = block or InvertedResidual
        norm_layer = norm_layer or partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        first, last_in = inverted_residual_setting[0].input_channels, inverted_residual_setting[-1].out_channels
        self.features = nn.Sequential(
            Conv2dNormActivation(3, first, kernel_size=3, stride=2, norm_layer=norm_layer,
                                 activation_layer=nn.Hardswish),
            *(block(cnf, norm_layer) for cnf in inverted_residual_setting),
            Conv2dNormActivation(last_in, 6 * last_in, kernel_size=1, norm_layer=norm_layer,
                                 activation_layer=nn.Hardswish))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(6 * last_in, last_channel), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=dropout, inplace=True), nn.Linear(last_channel, num_classes))
        init_mobile_weights(self)

    def forward(self, x):
        return self.classifier(ember.flatten(self.avgpool(self.features(x)), 1))


# (in, kernel, expanded, out, squeeze-excitation, activation, stride); the last three blocks are the tail that
# reduced_tail halves and dilated dilates
_LARGE = [(16, 3, 16, 16, False, "RE", 1), (16, 3, 64, 24, False, "RE", 2), (24, 3, 72, 24, False, "RE", 1),
          (24, 5, 72, 40, True, "RE", 2), (40, 5, 120, 40, True, "RE", 1), (40, 5, 120, 40, True, "RE", 1),
          (40, 3, 240, 80, False, "HS", 2), (80, 3, 200, 80, False, "HS", 1), (80, 3, 184, 80, False, "HS", 1),
          (80, 3, 184, 80, False, "HS", 1), (80, 3, 480, 112, True, "HS", 1), (112, 3, 672, 112, True, "HS", 1),
          (112, 5, 672, 160, True, "HS", 2), (160, 5, 960, 160, True, "HS", 1), (160, 5, 960, 160, True, "HS", 1)]
_SMALL = [(16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2), (24, 3, 88, 24, False, "RE", 1),
          (24, 5, 96, 40, True, "HS", 2), (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
          (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1), (48, 5, 288, 96, True, "HS", 2),
          (96, 5, 576, 96, True, "HS", 1), (96, 5, 576, 96, True, "HS", 1)]


def _mobilenet_v3_conf(arch: str, width_mult: float = 1.0, reduced_tail: bool = False, dilated: bool = False,
                       **kwargs):
    """The block configurations and last channel count of ``arch``."""
    rows, last = {"mobilenet_v3_large": (_LARGE, 1280), "mobilenet_v3_small": (_SMALL, 1024)}.get(arch, (None, 0))
    if rows is None:
        raise ValueError(f"Unsupported model type {arch}")
    divider, dilation = (2 if reduced_tail else 1), (2 if dilated else 1)
    setting = []
    for i, (cin, k, exp, cout, se, act, stride) in enumerate(rows):
        tail = i >= len(rows) - 3
        if tail:  # the first tail block keeps its input width; everything after it is divided
            cin = cin if i == len(rows) - 3 else cin // divider
            exp, cout = exp // divider if i > len(rows) - 3 else exp, cout // divider
        setting.append(InvertedResidualConfig(cin, k, exp, cout, se, act, stride, dilation if tail else 1,
                                              width_mult))
    return setting, InvertedResidualConfig.adjust_channels(last // divider, width_mult)


def _mobilenet_v3(arch, weights_cls, weights, pretrained, kwargs, progress) -> MobileNetV3:
    setting, last_channel = _mobilenet_v3_conf(arch, **kwargs)
    for key in ("width_mult", "reduced_tail", "dilated"):
        kwargs.pop(key, None)
    return build((MobileNetV3, (setting, last_channel)), weights_cls, weights, pretrained, kwargs, progress)


@register_model(MobileNet_V3_Large_Weights)
def mobilenet_v3_large(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MobileNetV3:
    """MobileNetV3-Large (``width_mult``, ``reduced_tail``, ``dilated`` as in torchvision)."""
    return _mobilenet_v3("mobilenet_v3_large", MobileNet_V3_Large_Weights, weights, pretrained, kwargs, progress)


@register_model(MobileNet_V3_Small_Weights)
def mobilenet_v3_small(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MobileNetV3:
    """MobileNetV3-Small (``width_mult``, ``reduced_tail``, ``dilated`` as in torchvision)."""
    return _mobilenet_v3("mobilenet_v3_small", MobileNet_V3_Small_Weights, weights, pretrained, kwargs, progress)
