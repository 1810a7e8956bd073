"""RegNetX and RegNetY (Radosavovic et al. 2020): stage widths and depths from the quantised linear rule,
torchvision's names."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

import ember
from ember import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ._api import IMAGENET_TRANSFORMS, RECIPE_V2, Weights, build, register_model, swag_transforms, weights_enum
from .mobilenetv2 import _make_divisible

_URL = "https://download.pytorch.org/models/"


class SimpleStemIN(Conv2dNormActivation):
    """3x3 stride-2 conv, norm, activation."""

    def __init__(self, width_in: int, width_out: int, norm_layer, activation_layer):
        super().__init__(width_in, width_out, kernel_size=3, stride=2, norm_layer=norm_layer,
                         activation_layer=activation_layer)


class BottleneckTransform(nn.Sequential):
    """``a`` 1x1, ``b`` grouped 3x3 (the stride), optional ``se``, ``c`` 1x1 without activation."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer, activation_layer, group_width: int,
                 bottleneck_multiplier: float, se_ratio: float | None):
        super().__init__()
        w_b = int(round(width_out * bottleneck_multiplier))
        conv = partial(Conv2dNormActivation, norm_layer=norm_layer, activation_layer=activation_layer)
        self.add_module("a", conv(width_in, w_b, kernel_size=1, stride=1))
        self.add_module("b", conv(w_b, w_b, kernel_size=3, stride=stride, groups=w_b // group_width))
        if se_ratio:
            self.add_module("se", SqueezeExcitation(w_b, int(round(se_ratio * width_in)), activation=activation_layer))
        self.add_module("c", conv(w_b, width_out, kernel_size=1, stride=1, activation_layer=None))


class ResBottleneckBlock(nn.Module):
    """``f`` (the bottleneck) plus the input, projected by ``proj`` when width or stride change; activation."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer, activation_layer,
                 group_width: int = 1, bottleneck_multiplier: float = 1.0, se_ratio: float | None = None):
        super().__init__()
        self.proj = None
        if width_in != width_out or stride != 1:
            self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1, stride=stride, norm_layer=norm_layer,
                                             activation_layer=None)
        self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, activation_layer, group_width,
                                     bottleneck_multiplier, se_ratio)
        self.activation = activation_layer(inplace=True)

    def forward(self, x):
        return self.activation((x if self.proj is None else self.proj(x)) + self.f(x))


class AnyStage(nn.Sequential):
    """``depth`` blocks named ``block{stage}-{i}``, the first carrying the stride and the width change."""

    def __init__(self, width_in: int, width_out: int, stride: int, depth: int, block_constructor, norm_layer,
                 activation_layer, group_width: int, bottleneck_multiplier: float, se_ratio: float | None = None,
                 stage_index: int = 0):
        super().__init__()
        for i in range(depth):
            self.add_module(f"block{stage_index}-{i}", block_constructor(
                width_in if i == 0 else width_out, width_out, stride if i == 0 else 1, norm_layer, activation_layer,
                group_width, bottleneck_multiplier, se_ratio))


class BlockParams:
    """Per-stage depths, widths, group widths, bottleneck multipliers and strides."""

    def __init__(self, depths, widths, group_widths, bottleneck_multipliers, strides, se_ratio=None):
        self.depths, self.widths, self.group_widths = depths, widths, group_widths
        self.bottleneck_multipliers, self.strides, self.se_ratio = bottleneck_multipliers, strides, se_ratio

    @classmethod
    def from_init_params(cls, depth: int, w_0: int, w_a: float, w_m: float, group_width: int,
                         bottleneck_multiplier: float = 1.0, se_ratio: float | None = None, **kwargs) -> BlockParams:
        """The stages of the RegNet with ``depth`` blocks whose widths grow linearly from ``w_0`` by ``w_a``,
        quantised in log space with step ``w_m`` and to multiples of 8 (computed in float32, as torchvision)."""
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError("Invalid RegNet settings")
        f32 = np.float32
        widths_cont = np.arange(depth).astype(f32) * f32(w_a) + f32(w_0)
        capacity = np.round(np.log(widths_cont / f32(w_0)) / f32(math.log(w_m)))
        block_widths = (np.round(np.power(f32(w_m), capacity) * f32(w_0) / f32(8)) * 8).astype(np.int64).tolist()
        starts = [i for i, w in enumerate(block_widths) if i == 0 or w != block_widths[i - 1]] + [depth]
        stage_widths = [block_widths[i] for i in starts[:-1]]
        n = len(stage_widths)
        multipliers, group_widths = [bottleneck_multiplier] * n, [group_width] * n
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(stage_widths, multipliers, group_widths)
        return cls(depths=[b - a for a, b in zip(starts, starts[1:])], widths=stage_widths,
                   group_widths=group_widths, bottleneck_multipliers=multipliers, strides=[2] * n, se_ratio=se_ratio)

    def _get_expanded_params(self):
        return zip(self.widths, self.strides, self.depths, self.group_widths, self.bottleneck_multipliers)

    @staticmethod
    def _adjust_widths_groups_compatibilty(stage_widths, bottleneck_ratios, group_widths):
        """Bottleneck widths made divisible by their (capped) group widths."""
        widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios)]
        group_widths_min = [min(g, w_bot) for g, w_bot in zip(group_widths, widths)]
        ws_bot = [_make_divisible(w_bot, g) for w_bot, g in zip(widths, group_widths_min)]
        return [int(w_bot / b) for w_bot, b in zip(ws_bot, bottleneck_ratios)], group_widths_min


class RegNet(nn.Module):
    """``RegNet(block_params, num_classes, stem_width, stem_type, block_type, norm_layer, activation)``:
    ``stem``, ``trunk_output`` (stages ``block1..``), pooling, ``fc``."""

    def __init__(self, block_params: BlockParams, num_classes: int = 1000, stem_width: int = 32, stem_type=None,
                 block_type=None, norm_layer=None, activation=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        activation = activation or nn.ReLU
        self.stem = (stem_type or SimpleStemIN)(3, stem_width, norm_layer, activation)
        width = stem_width
        self.trunk_output = nn.Sequential()
        for i, (width_out, stride, depth, group_width, multiplier) in enumerate(block_params._get_expanded_params()):
            self.trunk_output.add_module(f"block{i + 1}", AnyStage(
                width, width_out, stride, depth, block_type or ResBottleneckBlock, norm_layer, activation,
                group_width, multiplier, block_params.se_ratio, stage_index=i + 1))
            width = width_out
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=width, out_features=num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.fc(ember.flatten(self.avgpool(self.trunk_output(self.stem(x))), 1))


# name: (depth, w_0, w_a, w_m, group width, weights {member: file}, default member); RegNetY has SE blocks
_V12 = ("IMAGENET1K_V1", "IMAGENET1K_V2")
_SWAG = ("IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1")
_TRANSFORMS = {"IMAGENET1K_V1": IMAGENET_TRANSFORMS, "IMAGENET1K_V2": RECIPE_V2,
               "IMAGENET1K_SWAG_E2E_V1": swag_transforms(384), "IMAGENET1K_SWAG_LINEAR_V1": swag_transforms(224)}
_ARCHS = {
    "y_400mf": (16, 48, 27.89, 2.09, 8, dict(zip(_V12, ["c65dace8", "e6988f5f"]))),
    "y_800mf": (14, 56, 38.84, 2.4, 16, dict(zip(_V12, ["1b27b58c", "58fc7688"]))),
    "y_1_6gf": (27, 48, 20.71, 2.65, 24, dict(zip(_V12, ["b11a554e", "0d7bc02a"]))),
    "y_3_2gf": (21, 80, 42.63, 2.66, 24, dict(zip(_V12, ["b5a9779c", "9180c971"]))),
    "y_8gf": (17, 192, 76.82, 2.19, 56, dict(zip(_V12, ["d0d0e4a8", "dc2b1b54"]))),
    "y_16gf": (18, 200, 106.23, 2.48, 112, dict(zip(_V12 + _SWAG, ["9e6ed7dd", "3e4a00f9", "43afe44d", "f3ec0043"]))),
    "y_32gf": (20, 232, 115.89, 2.53, 232, dict(zip(_V12 + _SWAG, ["4dee3f7a", "8db6d4b5", "04fdfa75", "e1583746"]))),
    "y_128gf": (27, 456, 160.83, 2.52, 264, dict(zip(_SWAG, ["c8ce3e52", "cbe8ce12"]))),
    "x_400mf": (22, 24, 24.48, 2.54, 16, dict(zip(_V12, ["adf1edd5", "62229a5f"]))),
    "x_800mf": (16, 56, 35.73, 2.28, 16, dict(zip(_V12, ["ad17e45c", "94a99ebd"]))),
    "x_1_6gf": (18, 80, 34.01, 2.25, 24, dict(zip(_V12, ["e3633e7f", "a12f2b72"]))),
    "x_3_2gf": (25, 88, 26.31, 2.25, 48, dict(zip(_V12, ["f342aeae", "7071aa85"]))),
    "x_8gf": (23, 80, 49.56, 2.88, 120, dict(zip(_V12, ["03ceed89", "2b70d774"]))),
    "x_16gf": (22, 216, 55.59, 2.1, 128, dict(zip(_V12, ["2007eb11", "ba3796d7"]))),
    "x_32gf": (23, 320, 69.86, 2.0, 168, dict(zip(_V12, ["9d47f8d0", "6eb8fdc6"]))),
}


def _file(arch: str, member: str, digest: str) -> str:
    kind = {"IMAGENET1K_SWAG_E2E_V1": "_swag", "IMAGENET1K_SWAG_LINEAR_V1": "_lc_swag"}.get(member, "")
    return f"{_URL}regnet_{arch}{kind}-{digest}.pth"


def _make_builder(arch: str):
    depth, w_0, w_a, w_m, group_width, digests = _ARCHS[arch]
    weights_cls = weights_enum(f"RegNet_{arch.upper()}_Weights", "IMAGENET1K_V2" if "IMAGENET1K_V2" in digests
                               else "IMAGENET1K_SWAG_E2E_V1",
                               **{m: Weights(_file(arch, m, d), transforms=_TRANSFORMS[m]) for m, d in digests.items()})
    se_ratio = 0.25 if arch.startswith("y") else None

    def builder(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> RegNet:
        params = BlockParams.from_init_params(depth=depth, w_0=w_0, w_a=w_a, w_m=w_m, group_width=group_width,
                                              se_ratio=se_ratio, **kwargs)
        kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
        return build((RegNet, (params,)), weights_cls, weights, pretrained, kwargs, progress)

    builder.__name__ = builder.__qualname__ = f"regnet_{arch}"
    builder.__doc__ = f"RegNet{arch[0].upper()}-{arch[2:].upper().replace('_', '.')}."
    return register_model(weights_cls)(builder), weights_cls


regnet_y_400mf, RegNet_Y_400MF_Weights = _make_builder("y_400mf")
regnet_y_800mf, RegNet_Y_800MF_Weights = _make_builder("y_800mf")
regnet_y_1_6gf, RegNet_Y_1_6GF_Weights = _make_builder("y_1_6gf")
regnet_y_3_2gf, RegNet_Y_3_2GF_Weights = _make_builder("y_3_2gf")
regnet_y_8gf, RegNet_Y_8GF_Weights = _make_builder("y_8gf")
regnet_y_16gf, RegNet_Y_16GF_Weights = _make_builder("y_16gf")
regnet_y_32gf, RegNet_Y_32GF_Weights = _make_builder("y_32gf")
regnet_y_128gf, RegNet_Y_128GF_Weights = _make_builder("y_128gf")
regnet_x_400mf, RegNet_X_400MF_Weights = _make_builder("x_400mf")
regnet_x_800mf, RegNet_X_800MF_Weights = _make_builder("x_800mf")
regnet_x_1_6gf, RegNet_X_1_6GF_Weights = _make_builder("x_1_6gf")
regnet_x_3_2gf, RegNet_X_3_2GF_Weights = _make_builder("x_3_2gf")
regnet_x_8gf, RegNet_X_8GF_Weights = _make_builder("x_8gf")
regnet_x_16gf, RegNet_X_16GF_Weights = _make_builder("x_16gf")
regnet_x_32gf, RegNet_X_32GF_Weights = _make_builder("x_32gf")
