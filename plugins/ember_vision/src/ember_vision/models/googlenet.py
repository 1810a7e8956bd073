"""GoogLeNet (Inception v1, Szegedy et al. 2014), torchvision's names."""
from __future__ import annotations

import warnings
from collections import namedtuple

import ember
from ember import nn
from ember.nn import functional as F

from ._api import build, register_model, weights_enum

GoogLeNet_Weights = weights_enum("GoogLeNet_Weights",
                                 IMAGENET1K_V1="https://download.pytorch.org/models/googlenet-1378be20.pth")

GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])
_GoogLeNetOutputs = GoogLeNetOutputs


class BasicConv2d(nn.Module):
    """Conv2d without bias, BatchNorm2d (eps 1e-3), ReLU."""

    def __init__(self, in_channels: int, out_channels: int, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


def transform_input(x):
    """Re-normalise ImageNet-normalised input to the [-1, 1] range the ported weights were trained on."""
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    return ember.cat([x[:, c:c + 1] * (std[c] / 0.5) + (mean[c] - 0.5) / 0.5 for c in range(3)], 1)


def init_truncated_normal(model: nn.Module, default_std: float) -> None:
    """Conv and Linear weights from N(0, std) truncated to [-2, 2] (a module's ``stddev`` overrides the std);
    BatchNorm to the identity."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, mean=0.0, std=float(getattr(m, "stddev", default_std)), a=-2, b=2)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


class Inception(nn.Module):
    """Four branches concatenated: 1x1; 1x1-3x3; 1x1-3x3 (the paper's 5x5); 3x3 max pool-1x1."""

    def __init__(self, in_channels: int, ch1x1: int, ch3x3red: int, ch3x3: int, ch5x5red: int, ch5x5: int,
                 pool_proj: int, conv_block=None):
        super().__init__()
        conv_block = conv_block or BasicConv2d
        self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(conv_block(in_channels, ch3x3red, kernel_size=1),
                                     conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1))
        self.branch3 = nn.Sequential(conv_block(in_channels, ch5x5red, kernel_size=1),
                                     conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                                     conv_block(in_channels, pool_proj, kernel_size=1))

    def forward(self, x):
        return ember.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class InceptionAux(nn.Module):
    """The auxiliary classifier (training only): 4x4 pool, 1x1 conv, two Linear layers."""

    def __init__(self, in_channels: int, num_classes: int, conv_block=None, dropout: float = 0.7):
        super().__init__()
        self.conv = (conv_block or BasicConv2d)(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        x = ember.flatten(self.conv(F.adaptive_avg_pool2d(x, (4, 4))), 1)
        return self.fc2(self.dropout(F.relu(self.fc1(x), inplace=True)))


# (in, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool projection) of inception3a..5b
_INCEPTIONS = {"3a": (192, 64, 96, 128, 16, 32, 32), "3b": (256, 128, 128, 192, 32, 96, 64),
               "4a": (480, 192, 96, 208, 16, 48, 64), "4b": (512, 160, 112, 224, 24, 64, 64),
               "4c": (512, 128, 128, 256, 24, 64, 64), "4d": (512, 112, 144, 288, 32, 64, 64),
               "4e": (528, 256, 160, 320, 32, 128, 128), "5a": (832, 256, 160, 320, 32, 128, 128),
               "5b": (832, 384, 192, 384, 48, 128, 128)}


class GoogLeNet(nn.Module):
    """GoogLeNet; in training with ``aux_logits`` the forward returns ``GoogLeNetOutputs``, else the logits."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True, transform_input: bool = False,
                 init_weights: bool | None = None, blocks=None, dropout: float = 0.2, dropout_aux: float = 0.7):
        super().__init__()
        if init_weights is None:
            warnings.warn("The default weight initialization of GoogleNet will be changed in future releases of "
                          "torchvision. If you wish to keep the old behavior (which leads to long initialization "
                          "times due to scipy/scipy#11299), please set init_weights=True.", FutureWarning)
            init_weights = True
        blocks = blocks or [BasicConv2d, Inception, InceptionAux]
        if len(blocks) != 3:
            raise ValueError(f"blocks length should be 3 instead of {len(blocks)}")
        conv_block, inception_block, aux_block = blocks
        self.aux_logits, self.transform_input = aux_logits, transform_input
        self.conv1 = conv_block(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv_block(64, 64, kernel_size=1)
        self.conv3 = conv_block(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        for name in ("3a", "3b"):
            setattr(self, "inception" + name, inception_block(*_INCEPTIONS[name]))
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        for name in ("4a", "4b", "4c", "4d", "4e"):
            setattr(self, "inception" + name, inception_block(*_INCEPTIONS[name]))
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
        for name in ("5a", "5b"):
            setattr(self, "inception" + name, inception_block(*_INCEPTIONS[name]))
        self.aux1 = aux_block(512, num_classes, dropout=dropout_aux) if aux_logits else None
        self.aux2 = aux_block(528, num_classes, dropout=dropout_aux) if aux_logits else None
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)
        if init_weights:
            init_truncated_normal(self, 0.01)

    def forward(self, x):
        if self.transform_input:
            x = transform_input(x)
        x = self.maxpool2(self.conv3(self.conv2(self.maxpool1(self.conv1(x)))))
        x = self.inception4a(self.maxpool3(self.inception3b(self.inception3a(x))))
        aux_defined = self.training and self.aux_logits
        aux1 = self.aux1(x) if aux_defined and self.aux1 is not None else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if aux_defined and self.aux2 is not None else None
        x = self.inception5b(self.inception5a(self.maxpool4(self.inception4e(x))))
        x = self.fc(self.dropout(ember.flatten(self.avgpool(x), 1)))
        return GoogLeNetOutputs(x, aux2, aux1) if aux_defined else x


def build_with_aux(model_cls, weights_cls, weights, pretrained, kwargs, progress, drop_aux, aux_warning=None):
    """Build an Inception-family model; pretrained weights carry the auxiliary classifiers (dropped afterwards
    unless ``aux_logits=True`` was asked for) and expect ``transform_input``."""
    weights = weights_cls.verify(weights) or (weights_cls.IMAGENET1K_V1 if pretrained else None)
    wants_aux = kwargs.get("aux_logits", False)
    if weights is not None:
        kwargs.setdefault("transform_input", True)
        kwargs.update(aux_logits=True, init_weights=False)
    model = build((model_cls, ()), weights_cls, weights, False, kwargs, progress)
    if weights is not None:
        if wants_aux:
            if aux_warning:
                warnings.warn(aux_warning)
        else:
            model.aux_logits = False
            drop_aux(model)
    return model


def _drop_aux(model):
    model.aux1 = model.aux2 = None


@register_model(GoogLeNet_Weights)
def googlenet(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> GoogLeNet:
    """GoogLeNet (Inception v1)."""
    return build_with_aux(GoogLeNet, GoogLeNet_Weights, weights, pretrained, kwargs, progress, _drop_aux,
                          "auxiliary heads in the pretrained googlenet model are NOT pretrained, so make sure to "
                          "train them")
