"""EfficientNet B0-B7 (Tan & Le 2019) and EfficientNetV2 S/M/L (Tan & Le 2021), torchvision's names."""
from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import ember
from ember import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth
from ..transforms.functional import InterpolationMode
from ._api import Weights, build, classification_transforms, register_model, weights_enum
from .mobilenetv2 import _make_divisible, init_mobile_weights

_URL = "https://download.pytorch.org/models/"


def _weights(file: str, crop_size: int, resize_size: int, interpolation=InterpolationMode.BICUBIC, **kwargs) -> Weights:
    """A checkpoint evaluated on a ``crop_size`` crop of a ``resize_size`` resize (bicubic unless told)."""
    return Weights(_URL + file, transforms=classification_transforms(crop_size, resize_size, interpolation, **kwargs))


@dataclass
class _MBConvConfig:
    expand_ratio: float
    kernel: int
    stride: int
    input_channels: int
    out_channels: int
    num_layers: int
    block: type

    @staticmethod
    def adjust_channels(channels: int, width_mult: float, min_value: int | None = None) -> int:
        return _make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_MBConvConfig):
    """A stage of MBConv blocks, its channels scaled by ``width_mult`` and its depth by ``depth_mult``."""

    def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                 num_layers: int, width_mult: float = 1.0, depth_mult: float = 1.0, block=None):
        super().__init__(expand_ratio, kernel, stride, self.adjust_channels(input_channels, width_mult),
                         self.adjust_channels(out_channels, width_mult), self.adjust_depth(num_layers, depth_mult),
                         block or MBConv)

    @staticmethod
    def adjust_depth(num_layers: int, depth_mult: float) -> int:
        return int(math.ceil(num_layers * depth_mult))


class FusedMBConvConfig(_MBConvConfig):
    """A stage of FusedMBConv blocks (EfficientNetV2's early stages)."""

    def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                 num_layers: int, block=None):
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers,
                         block or FusedMBConv)


class _Residual(nn.Module):
    """``block`` plus the input (through stochastic depth) when stride and widths allow."""

    def _init_residual(self, cnf, layers, stochastic_depth_prob: float):
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input):
        result = self.block(input)
        return self.stochastic_depth(result) + input if self.use_res_connect else result


class MBConv(_Residual):
    """1x1 expand, depthwise k x k, squeeze-excitation (SiLU), 1x1 project."""

    def __init__(self, cnf: MBConvConfig, stochastic_depth_prob: float, norm_layer, se_layer=SqueezeExcitation):
        super().__init__()
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer, activation_layer=nn.SiLU)
        layers = [conv(cnf.input_channels, expanded, kernel_size=1)] if expanded != cnf.input_channels else []
        layers += [conv(expanded, expanded, kernel_size=cnf.kernel, stride=cnf.stride, groups=expanded),
                   se_layer(expanded, max(1, cnf.input_channels // 4), activation=partial(nn.SiLU, inplace=True)),
                   conv(expanded, cnf.out_channels, kernel_size=1, activation_layer=None)]
        self._init_residual(cnf, layers, stochastic_depth_prob)


class FusedMBConv(_Residual):
    """k x k expand (carrying the stride), 1x1 project; a single k x k conv when not expanding."""

    def __init__(self, cnf: FusedMBConvConfig, stochastic_depth_prob: float, norm_layer):
        super().__init__()
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer, activation_layer=nn.SiLU)
        if expanded != cnf.input_channels:
            layers = [conv(cnf.input_channels, expanded, kernel_size=cnf.kernel, stride=cnf.stride),
                      conv(expanded, cnf.out_channels, kernel_size=1, activation_layer=None)]
        else:
            layers = [conv(cnf.input_channels, cnf.out_channels, kernel_size=cnf.kernel, stride=cnf.stride)]
        self._init_residual(cnf, layers, stochastic_depth_prob)


class EfficientNet(nn.Module):
    """``EfficientNet(inverted_residual_setting, dropout, stochastic_depth_prob, num_classes, norm_layer,
    last_channel)``: stem, one ``features`` stage per config, 1x1 head conv, ``classifier``."""

    def __init__(self, inverted_residual_setting, dropout: float, stochastic_depth_prob: float = 0.2,
                 num_classes: int = 1000, norm_layer=None, last_channel: int | None = None):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (isinstance(inverted_residual_setting, Sequence)
                and all(isinstance(s, _MBConvConfig) for s in inverted_residual_setting)):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
        norm_layer = norm_layer or nn.BatchNorm2d
        layers = [Conv2dNormActivation(3, inverted_residual_setting[0].input_channels, kernel_size=3, stride=2,
                                       norm_layer=norm_layer, activation_layer=nn.SiLU)]
        total_blocks = sum(cnf.num_layers for cnf in inverted_residual_setting)
        block_id = 0
        for cnf in inverted_residual_setting:
            stage = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                if stage:
                    block_cnf.input_channels, block_cnf.stride = block_cnf.out_channels, 1
                # the drop probability grows linearly with the block's depth
                stage.append(block_cnf.block(block_cnf, stochastic_depth_prob * block_id / total_blocks, norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(last_out, num_classes))
        init_mobile_weights(self, lambda w: nn.init.uniform_(w, -1 / math.sqrt(w.shape[0]), 1 / math.sqrt(w.shape[0])))

    def forward(self, x):
        return self.classifier(ember.flatten(self.avgpool(self.features(x)), 1))


# (expand ratio, kernel, stride, in, out, layers) per stage; "F" marks a FusedMBConv stage
_B = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3),
      (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
_V2 = {
    "s": [("F", 1, 3, 1, 24, 24, 2), ("F", 4, 3, 2, 24, 48, 4), ("F", 4, 3, 2, 48, 64, 4), (4, 3, 2, 64, 128, 6),
          (6, 3, 1, 128, 160, 9), (6, 3, 2, 160, 256, 15)],
    "m": [("F", 1, 3, 1, 24, 24, 3), ("F", 4, 3, 2, 24, 48, 5), ("F", 4, 3, 2, 48, 80, 5), (4, 3, 2, 80, 160, 7),
          (6, 3, 1, 160, 176, 14), (6, 3, 2, 176, 304, 18), (6, 3, 1, 304, 512, 5)],
    "l": [("F", 1, 3, 1, 32, 32, 4), ("F", 4, 3, 2, 32, 64, 7), ("F", 4, 3, 2, 64, 96, 7), (4, 3, 2, 96, 192, 10),
          (6, 3, 1, 192, 224, 19), (6, 3, 2, 224, 384, 25), (6, 3, 1, 384, 640, 7)],
}


def _efficientnet_conf(arch: str, width_mult: float = 1.0, depth_mult: float = 1.0):
    """The stage configurations and head width (None: 4x the last stage's) of ``arch``."""
    if arch.startswith("efficientnet_b"):
        return [MBConvConfig(*row, width_mult=width_mult, depth_mult=depth_mult) for row in _B], None
    if arch[:-1] == "efficientnet_v2_" and arch[-1] in _V2:
        return [FusedMBConvConfig(*row[1:]) if row[0] == "F" else MBConvConfig(*row) for row in _V2[arch[-1]]], 1280
    raise ValueError(f"Unsupported model type {arch}")


# builder: (width, depth, default dropout, BatchNorm eps, BatchNorm momentum, {weights member: Weights})
_VARIANTS = {
    "b0": (1.0, 1.0, 0.2, None, None, {"IMAGENET1K_V1": _weights("efficientnet_b0_rwightman-7f5810bc.pth", 224, 256)}),
    "b1": (1.0, 1.1, 0.2, None, None, {"IMAGENET1K_V1": _weights("efficientnet_b1_rwightman-bac287d4.pth", 240, 256),
                                       "IMAGENET1K_V2": _weights("efficientnet_b1-c27df63c.pth", 240, 255,
                                                                 InterpolationMode.BILINEAR)}),
    "b2": (1.1, 1.2, 0.3, None, None, {"IMAGENET1K_V1": _weights("efficientnet_b2_rwightman-c35c1473.pth", 288, 288)}),
    "b3": (1.2, 1.4, 0.3, None, None, {"IMAGENET1K_V1": _weights("efficientnet_b3_rwightman-b3899882.pth", 300, 320)}),
    "b4": (1.4, 1.8, 0.4, None, None, {"IMAGENET1K_V1": _weights("efficientnet_b4_rwightman-23ab8bcd.pth", 380, 384)}),
    "b5": (1.6, 2.2, 0.4, 0.001, 0.01, {"IMAGENET1K_V1": _weights("efficientnet_b5_lukemelas-1a07897c.pth", 456, 456)}),
    "b6": (1.8, 2.6, 0.5, 0.001, 0.01, {"IMAGENET1K_V1": _weights("efficientnet_b6_lukemelas-24a108a5.pth", 528, 528)}),
    "b7": (2.0, 3.1, 0.5, 0.001, 0.01, {"IMAGENET1K_V1": _weights("efficientnet_b7_lukemelas-c5b4e57e.pth", 600, 600)}),
    "v2_s": (1.0, 1.0, 0.2, 1e-3, None, {"IMAGENET1K_V1": _weights("efficientnet_v2_s-dd5fe13b.pth", 384, 384,
                                                                          InterpolationMode.BILINEAR)}),
    "v2_m": (1.0, 1.0, 0.3, 1e-3, None, {"IMAGENET1K_V1": _weights("efficientnet_v2_m-dc08266a.pth", 480, 480,
                                                                          InterpolationMode.BILINEAR)}),
    "v2_l": (1.0, 1.0, 0.4, 1e-3, None, {"IMAGENET1K_V1": _weights("efficientnet_v2_l-59c71312.pth", 480, 480,
                                                                          mean=(0.5,) * 3, std=(0.5,) * 3)}),
}


def _make_builder(variant: str):
    width, depth, dropout, eps, momentum, files = _VARIANTS[variant]
    weights_cls = weights_enum(f"EfficientNet_{variant.upper()}_Weights", max(files),
                               **files)

    def builder(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> EfficientNet:
        setting, last_channel = _efficientnet_conf(f"efficientnet_{variant}", width, depth)
        if eps is not None:
            bn = {"eps": eps, **({} if momentum is None else {"momentum": momentum})}
            kwargs["norm_layer"] = partial(nn.BatchNorm2d, **bn)
        args = (setting, kwargs.pop("dropout", dropout))
        kwargs["last_channel"] = last_channel
        return build((EfficientNet, args), weights_cls, weights, pretrained, kwargs, progress)

    builder.__name__ = builder.__qualname__ = f"efficientnet_{variant}"
    label = "V2-" + variant[-1].upper() if variant.startswith("v2") else "-" + variant.upper()
    builder.__doc__ = f"EfficientNet{label}."
    return register_model(weights_cls)(builder), weights_cls


efficientnet_b0, EfficientNet_B0_Weights = _make_builder("b0")
efficientnet_b1, EfficientNet_B1_Weights = _make_builder("b1")
efficientnet_b2, EfficientNet_B2_Weights = _make_builder("b2")
efficientnet_b3, EfficientNet_B3_Weights = _make_builder("b3")
efficientnet_b4, EfficientNet_B4_Weights = _make_builder("b4")
efficientnet_b5, EfficientNet_B5_Weights = _make_builder("b5")
efficientnet_b6, EfficientNet_B6_Weights = _make_builder("b6")
efficientnet_b7, EfficientNet_B7_Weights = _make_builder("b7")
efficientnet_v2_s, EfficientNet_V2_S_Weights = _make_builder("v2_s")
efficientnet_v2_m, EfficientNet_V2_M_Weights = _make_builder("v2_m")
efficientnet_v2_l, EfficientNet_V2_L_Weights = _make_builder("v2_l")
