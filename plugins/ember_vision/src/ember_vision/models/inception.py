"""Inception v3 (Szegedy et al. 2015), torchvision's names."""
from __future__ import annotations

import warnings
from collections import namedtuple

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, classification_transforms, register_model, weights_enum
from .googlenet import BasicConv2d, build_with_aux, init_truncated_normal, transform_input

Inception_V3_Weights = weights_enum("Inception_V3_Weights",
                                    IMAGENET1K_V1=Weights("https://download.pytorch.org/models/inception_v3_google-0cc3c7bd.pth",
                                                          transforms=classification_transforms(299, 342)))

InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])
_InceptionOutputs = InceptionOutputs


def _avg_pool(x):
    return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)


def _max_pool(x):
    return F.max_pool2d(x, kernel_size=3, stride=2)


class InceptionA(nn.Module):
    """35x35 block: 1x1; 1x1-5x5; 1x1-3x3-3x3; avg pool-1x1."""

    def __init__(self, in_channels: int, pool_features: int, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch1x1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = conv_block(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = conv_block(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, padding=1)
        self.branch_pool = conv_block(in_channels, pool_features, kernel_size=1)

    def forward(self, x):
        return ember.cat([self.branch1x1(x), self.branch5x5_2(self.branch5x5_1(x)),
                          self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                          self.branch_pool(_avg_pool(x))], 1)


class InceptionB(nn.Module):
    """Grid reduction 35 -> 17: 3x3 stride 2; 1x1-3x3-3x3 stride 2; max pool."""

    def __init__(self, in_channels: int, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch3x3 = conv_block(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, stride=2)

    def forward(self, x):
        return ember.cat([self.branch3x3(x), self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x))),
                          _max_pool(x)], 1)


class InceptionC(nn.Module):
    """17x17 block with factorised 7x7 convolutions (1x7 and 7x1)."""

    def __init__(self, in_channels: int, channels_7x7: int, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        c7 = channels_7x7
        row, col = {"kernel_size": (1, 7), "padding": (0, 3)}, {"kernel_size": (7, 1), "padding": (3, 0)}
        self.branch1x1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = conv_block(c7, c7, **row)
        self.branch7x7_3 = conv_block(c7, 192, **col)
        self.branch7x7dbl_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = conv_block(c7, c7, **col)
        self.branch7x7dbl_3 = conv_block(c7, c7, **row)
        self.branch7x7dbl_4 = conv_block(c7, c7, **col)
        self.branch7x7dbl_5 = conv_block(c7, 192, **row)
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def forward(self, x):
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        b7dbl = self.branch7x7dbl_1(x)
        for conv in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            b7dbl = conv(b7dbl)
        return ember.cat([self.branch1x1(x), b7, b7dbl, self.branch_pool(_avg_pool(x))], 1)


class InceptionD(nn.Module):
    """Grid reduction 17 -> 8: 1x1-3x3 stride 2; 1x1-1x7-7x1-3x3 stride 2; max pool."""

    def __init__(self, in_channels: int, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch3x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = conv_block(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = conv_block(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = conv_block(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = conv_block(192, 192, kernel_size=3, stride=2)

    def forward(self, x):
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return ember.cat([self.branch3x3_2(self.branch3x3_1(x)), b7, _max_pool(x)], 1)


class InceptionE(nn.Module):
    """8x8 block whose 3x3 branches end in parallel 1x3 and 3x1 convolutions."""

    def __init__(self, in_channels: int, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        row, col = {"kernel_size": (1, 3), "padding": (0, 1)}, {"kernel_size": (3, 1), "padding": (1, 0)}
        self.branch1x1 = conv_block(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = conv_block(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = conv_block(384, 384, **row)
        self.branch3x3_2b = conv_block(384, 384, **col)
        self.branch3x3dbl_1 = conv_block(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = conv_block(384, 384, **row)
        self.branch3x3dbl_3b = conv_block(384, 384, **col)
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def forward(self, x):
        b3 = self.branch3x3_1(x)
        b3dbl = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        return ember.cat([self.branch1x1(x), self.branch3x3_2a(b3), self.branch3x3_2b(b3),
                          self.branch3x3dbl_3a(b3dbl), self.branch3x3dbl_3b(b3dbl),
                          self.branch_pool(_avg_pool(x))], 1)


class InceptionAux(nn.Module):
    """The auxiliary classifier on the 17x17 grid (training only)."""

    def __init__(self, in_channels: int, num_classes: int, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.conv0 = conv_block(in_channels, 128, kernel_size=1)
        self.conv1 = conv_block(128, 768, kernel_size=5)
        self.conv1.stddev = 0.01
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001

    def forward(self, x):
        x = self.conv1(self.conv0(F.avg_pool2d(x, kernel_size=5, stride=3)))
        return self.fc(ember.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1))


class Inception3(nn.Module):
    """Inception v3; in training with ``aux_logits`` the forward returns ``InceptionOutputs``, else the logits.
    Inputs must be at least 75x75."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True, transform_input: bool = False,
                 inception_blocks=None, init_weights: bool | None = None, dropout: float = 0.5):
        super().__init__()
        if init_weights is None:
            warnings.warn("The default weight initialization of inception_v3 will be changed in future releases of "
                          "torchvision. If you wish to keep the old behavior (which leads to long initialization "
                          "times due to scipy/scipy#11299), please set init_weights=True.", FutureWarning)
            init_weights = True
        blocks = inception_blocks or [BasicConv2d, InceptionA, InceptionB, InceptionC, InceptionD, InceptionE,
                                      InceptionAux]
        if len(blocks) != 7:
            raise ValueError(f"length of inception_blocks should be 7 instead of {len(blocks)}")
        conv, block_a, block_b, block_c, block_d, block_e, block_aux = blocks
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.Conv2d_1a_3x3 = conv(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = conv(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = conv(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = conv(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = block_a(192, pool_features=32)
        self.Mixed_5c = block_a(256, pool_features=64)
        self.Mixed_5d = block_a(288, pool_features=64)
        self.Mixed_6a = block_b(288)
        self.Mixed_6b = block_c(768, channels_7x7=128)
        self.Mixed_6c = block_c(768, channels_7x7=160)
        self.Mixed_6d = block_c(768, channels_7x7=160)
        self.Mixed_6e = block_c(768, channels_7x7=192)
        self.AuxLogits = block_aux(768, num_classes) if aux_logits else None
        self.Mixed_7a = block_d(768)
        self.Mixed_7b = block_e(1280)
        self.Mixed_7c = block_e(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(2048, num_classes)
        if init_weights:
            init_truncated_normal(self, 0.1)

    def forward(self, x):
        if self.transform_input:
            x = transform_input(x)
        for name in ("Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "maxpool1", "Conv2d_3b_1x1", "Conv2d_4a_3x3",
                     "maxpool2", "Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a", "Mixed_6b", "Mixed_6c", "Mixed_6d",
                     "Mixed_6e"):
            x = getattr(self, name)(x)
        aux_defined = self.training and self.aux_logits
        aux = self.AuxLogits(x) if aux_defined and self.AuxLogits is not None else None
        x = self.avgpool(self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x))))
        x = self.fc(ember.flatten(self.dropout(x), 1))
        return InceptionOutputs(x, aux) if aux_defined else x


def _drop_aux(model):
    model.AuxLogits = None


@register_model(Inception_V3_Weights)
def inception_v3(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> Inception3:
    """Inception v3 (299x299 inputs for the pretrained weights, at least 75x75)."""
    return build_with_aux(Inception3, Inception_V3_Weights, weights, pretrained, kwargs, progress, _drop_aux)
