"""ConvNeXt tiny/small/base/large (Liu et al. 2022), torchvision's names."""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import ember
from ember import nn
from ember.nn import functional as F

from ..ops.misc import Conv2dNormActivation, Permute
from ..ops.stochastic_depth import StochasticDepth
from ._api import Weights, build, classification_transforms, register_model, weights_enum

_URL = "https://download.pytorch.org/models/"
ConvNeXt_Tiny_Weights = weights_enum("ConvNeXt_Tiny_Weights", IMAGENET1K_V1=Weights(
    _URL + "convnext_tiny-983f1562.pth", transforms=classification_transforms(224, 236)))
ConvNeXt_Small_Weights = weights_enum("ConvNeXt_Small_Weights", IMAGENET1K_V1=Weights(
    _URL + "convnext_small-0c510722.pth", transforms=classification_transforms(224, 230)))
ConvNeXt_Base_Weights = weights_enum("ConvNeXt_Base_Weights", IMAGENET1K_V1=Weights(
    _URL + "convnext_base-6075fbad.pth", transforms=classification_transforms(224, 232)))
ConvNeXt_Large_Weights = weights_enum("ConvNeXt_Large_Weights", IMAGENET1K_V1=Weights(
    _URL + "convnext_large-ea097f82.pth", transforms=classification_transforms(224, 232)))


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor."""

    def forward(self, x):
        x = F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """7x7 depthwise conv, LayerNorm, Linear 4x, GELU, Linear back, scaled by ``layer_scale``, plus the input."""

    def __init__(self, dim: int, layer_scale: float, stochastic_depth_prob: float, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True), Permute([0, 2, 3, 1]),
            norm_layer(dim), nn.Linear(dim, 4 * dim, bias=True), nn.GELU(), nn.Linear(4 * dim, dim, bias=True),
            Permute([0, 3, 1, 2]))
        self.layer_scale = nn.Parameter(ember.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input):
        return self.stochastic_depth(self.layer_scale * self.block(input)) + input


class CNBlockConfig:
    """A stage: its width, the width the downsampling after it leads to (None for the last), its depth."""

    def __init__(self, input_channels: int, out_channels: int | None, num_layers: int):
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(input_channels={self.input_channels}, "
                f"out_channels={self.out_channels}, num_layers={self.num_layers})")


class ConvNeXt(nn.Module):
    """``ConvNeXt(block_setting, stochastic_depth_prob, layer_scale, num_classes, block, norm_layer)``: a 4x4
    patchify stem, stages separated by LayerNorm + 2x2 stride-2 convs, a LayerNorm-Flatten-Linear classifier."""

    def __init__(self, block_setting, stochastic_depth_prob: float = 0.0, layer_scale: float = 1e-6,
                 num_classes: int = 1000, block=None, norm_layer=None, **kwargs):
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        if not (isinstance(block_setting, Sequence) and all(isinstance(s, CNBlockConfig) for s in block_setting)):
            raise TypeError("The block_setting should be List[CNBlockConfig]")
        block = block or CNBlock
        norm_layer = norm_layer or partial(LayerNorm2d, eps=1e-6)
        layers = [Conv2dNormActivation(3, block_setting[0].input_channels, kernel_size=4, stride=4, padding=0,
                                       norm_layer=norm_layer, activation_layer=None, bias=True)]
        total_blocks = sum(cnf.num_layers for cnf in block_setting)
        block_id = 0
        for cnf in block_setting:
            stage = []
            for _ in range(cnf.num_layers):
                stage.append(block(cnf.input_channels, layer_scale,
                                   stochastic_depth_prob * block_id / (total_blocks - 1.0)))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                            nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        width = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(norm_layer(width), nn.Flatten(1), nn.Linear(width, num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)))


def _convnext(widths, depths, default_sd_prob, weights_cls, weights, pretrained, kwargs, progress) -> ConvNeXt:
    setting = [CNBlockConfig(w, w_next, d) for w, w_next, d in zip(widths, [*widths[1:], None], depths)]
    kwargs["stochastic_depth_prob"] = kwargs.pop("stochastic_depth_prob", default_sd_prob)
    return build((ConvNeXt, (setting,)), weights_cls, weights, pretrained, kwargs, progress)


@register_model(ConvNeXt_Tiny_Weights)
def convnext_tiny(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ConvNeXt:
    """ConvNeXt-T (widths 96-768, depths 3-3-9-3)."""
    return _convnext([96, 192, 384, 768], [3, 3, 9, 3], 0.1, ConvNeXt_Tiny_Weights, weights, pretrained, kwargs,
                     progress)


@register_model(ConvNeXt_Small_Weights)
def convnext_small(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ConvNeXt:
    """ConvNeXt-S (widths 96-768, depths 3-3-27-3)."""
    return _convnext([96, 192, 384, 768], [3, 3, 27, 3], 0.4, ConvNeXt_Small_Weights, weights, pretrained, kwargs,
                     progress)


@register_model(ConvNeXt_Base_Weights)
def convnext_base(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ConvNeXt:
    """ConvNeXt-B (widths 128-1024, depths 3-3-27-3)."""
    return _convnext([128, 256, 512, 1024], [3, 3, 27, 3], 0.5, ConvNeXt_Base_Weights, weights, pretrained, kwargs,
                     progress)


@register_model(ConvNeXt_Large_Weights)
def convnext_large(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ConvNeXt:
    """ConvNeXt-L (widths 192-1536, depths 3-3-27-3)."""
    return _convnext([192, 384, 768, 1536], [3, 3, 27, 3], 0.5, ConvNeXt_Large_Weights, weights, pretrained, kwargs,
                     progress)
