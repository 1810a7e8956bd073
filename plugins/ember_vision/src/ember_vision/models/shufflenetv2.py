"""ShuffleNet V2 (Ma et al. 2018): channel split, shuffle, torchvision's names."""
from __future__ import annotations

import ember
from ember import nn

from ._api import RECIPE_V2, Weights, build, register_model, weights_enum

_URL = "https://download.pytorch.org/models/"
ShuffleNet_V2_X0_5_Weights = weights_enum("ShuffleNet_V2_X0_5_Weights",
                                          IMAGENET1K_V1=_URL + "shufflenetv2_x0.5-f707e7126e.pth")
ShuffleNet_V2_X1_0_Weights = weights_enum("ShuffleNet_V2_X1_0_Weights",
                                          IMAGENET1K_V1=_URL + "shufflenetv2_x1-5666bf0f80.pth")
ShuffleNet_V2_X1_5_Weights = weights_enum("ShuffleNet_V2_X1_5_Weights",
                                          IMAGENET1K_V1=Weights(_URL + "shufflenetv2_x1_5-3c479a10.pth",
                                                                transforms=RECIPE_V2))
ShuffleNet_V2_X2_0_Weights = weights_enum("ShuffleNet_V2_X2_0_Weights",
                                          IMAGENET1K_V1=Weights(_URL + "shufflenetv2_x2_0-8be3c8ee.pth",
                                                                transforms=RECIPE_V2))


def channel_shuffle(x, groups: int):
    """Interleave the channels of ``groups`` equal groups."""
    n, c, h, w = x.shape
    return x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous().view(n, c, h, w)


def _conv1x1(i: int, o: int) -> nn.Conv2d:
    return nn.Conv2d(i, o, kernel_size=1, stride=1, padding=0, bias=False)


class InvertedResidual(nn.Module):
    """Stride 1: half the channels pass through, half go through ``branch2``; stride > 1: both branches see the
    whole input.  The halves are concatenated and shuffled."""

    def __init__(self, inp: int, oup: int, stride: int):
        super().__init__()
        if not 1 <= stride <= 3:
            raise ValueError("illegal stride value")
        self.stride = stride
        branch_features = oup // 2
        if stride == 1 and inp != branch_features << 1:
            raise ValueError(f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. If stride == 1 "
                             "then inp should be equal to oup // 2 << 1.")
        self.branch1 = nn.Sequential()
        if stride > 1:
            self.branch1 = nn.Sequential(self.depthwise_conv(inp, inp, 3, stride, 1), nn.BatchNorm2d(inp),
                                         _conv1x1(inp, branch_features), nn.BatchNorm2d(branch_features),
                                         nn.ReLU(inplace=True))
        self.branch2 = nn.Sequential(
            _conv1x1(inp if stride > 1 else branch_features, branch_features), nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True), self.depthwise_conv(branch_features, branch_features, 3, stride, 1),
            nn.BatchNorm2d(branch_features), _conv1x1(branch_features, branch_features),
            nn.BatchNorm2d(branch_features), nn.ReLU(inplace=True))

    @staticmethod
    def depthwise_conv(i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0,
                       bias: bool = False) -> nn.Conv2d:
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = ember.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = ember.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """``ShuffleNetV2(stages_repeats [3 ints], stages_out_channels [5 ints], num_classes)``."""

    def __init__(self, stages_repeats, stages_out_channels, num_classes: int = 1000,
                 inverted_residual=InvertedResidual):
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels
        channels = stages_out_channels[0]
        self.conv1 = nn.Sequential(nn.Conv2d(3, channels, 3, 2, 1, bias=False), nn.BatchNorm2d(channels),
                                   nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for i, (repeats, out) in enumerate(zip(stages_repeats, stages_out_channels[1:4])):
            setattr(self, f"stage{i + 2}", nn.Sequential(inverted_residual(channels, out, 2),
                                                         *(inverted_residual(out, out, 1) for _ in range(repeats - 1))))
            channels = out
        self.conv5 = nn.Sequential(_conv1x1(channels, stages_out_channels[-1]),
                                   nn.BatchNorm2d(stages_out_channels[-1]), nn.ReLU(inplace=True))
        self.fc = nn.Linear(stages_out_channels[-1], num_classes)

    def forward(self, x):
        x = self.stage4(self.stage3(self.stage2(self.maxpool(self.conv1(x)))))
        return self.fc(self.conv5(x).mean([2, 3]))


def _shufflenet(channels, weights_cls, weights, pretrained, kwargs, progress) -> ShuffleNetV2:
    return build((ShuffleNetV2, ([4, 8, 4], channels)), weights_cls, weights, pretrained, kwargs, progress)


@register_model(ShuffleNet_V2_X0_5_Weights)
def shufflenet_v2_x0_5(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """ShuffleNet V2 with 0.5x output channels."""
    return _shufflenet([24, 48, 96, 192, 1024], ShuffleNet_V2_X0_5_Weights, weights, pretrained, kwargs, progress)


@register_model(ShuffleNet_V2_X1_0_Weights)
def shufflenet_v2_x1_0(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """ShuffleNet V2 with 1.0x output channels."""
    return _shufflenet([24, 116, 232, 464, 1024], ShuffleNet_V2_X1_0_Weights, weights, pretrained, kwargs, progress)


@register_model(ShuffleNet_V2_X1_5_Weights)
def shufflenet_v2_x1_5(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """ShuffleNet V2 with 1.5x output channels."""
    return _shufflenet([24, 176, 352, 704, 1024], ShuffleNet_V2_X1_5_Weights, weights, pretrained, kwargs, progress)


@register_model(ShuffleNet_V2_X2_0_Weights)
def shufflenet_v2_x2_0(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ShuffleNetV2:
    """ShuffleNet V2 with 2.0x output channels."""
    return _shufflenet([24, 244, 488, 976, 2048], ShuffleNet_V2_X2_0_Weights, weights, pretrained, kwargs, progress)
