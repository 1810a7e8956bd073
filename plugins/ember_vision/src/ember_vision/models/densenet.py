"""DenseNet-121/161/169/201 (Huang et al. 2016), torchvision's names."""
from __future__ import annotations

import re

import ember
from ember import nn
from ember.nn import functional as F
from ember.utils import checkpoint as cp

from ._api import build, register_model, weights_enum

_URL = "https://download.pytorch.org/models/"
DenseNet121_Weights = weights_enum("DenseNet121_Weights", IMAGENET1K_V1=_URL + "densenet121-a639ec97.pth")
DenseNet161_Weights = weights_enum("DenseNet161_Weights", IMAGENET1K_V1=_URL + "densenet161-8d451a50.pth")
DenseNet169_Weights = weights_enum("DenseNet169_Weights", IMAGENET1K_V1=_URL + "densenet169-b2777c0a.pth")
DenseNet201_Weights = weights_enum("DenseNet201_Weights", IMAGENET1K_V1=_URL + "densenet201-c1103571.pth")

# the published checkpoints name a layer's parts "norm.1", "conv.2", ...: read as "norm1", "conv2"
_OLD_KEY = re.compile(r"^(norm|relu|conv)\.([12])\.(weight|bias|running_mean|running_var)$")


class _DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv (``bn_size * growth_rate`` channels), BN-ReLU-3x3 conv (``growth_rate`` channels),
    on the concatenation of every earlier feature map of the block."""

    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float,
                 memory_efficient: bool = False):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs):
        return self.conv1(self.relu1(self.norm1(ember.cat(list(inputs), 1))))

    def forward(self, input):
        features = [input] if isinstance(input, ember.Tensor) else input
        if self.memory_efficient and any(t.requires_grad for t in features):
            bottleneck = cp.checkpoint(lambda *xs: self.bn_function(xs), *features, use_reentrant=False)
        else:
            bottleneck = self.bn_function(features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features

    def _load_from_state_dict(self, state_dict, prefix, *args):
        for key in [k for k in state_dict if k.startswith(prefix)]:
            old = _OLD_KEY.match(key[len(prefix):])
            if old:
                state_dict[prefix + "".join(old.group(1, 2)) + "." + old.group(3)] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args)


class _DenseBlock(nn.ModuleDict):
    """``denselayer1..N``, each fed every earlier output; returns them all concatenated with the input."""

    def __init__(self, num_layers: int, num_input_features: int, bn_size: int, growth_rate: int, drop_rate: float,
                 memory_efficient: bool = False):
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(num_input_features + i * growth_rate, growth_rate,
                                                               bn_size, drop_rate, memory_efficient))

    def forward(self, init_features):
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return ember.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """Densenet-BC: a stem, dense blocks joined by halving transitions, a final norm and ``classifier``."""

    def __init__(self, growth_rate: int = 32, block_config=(6, 12, 24, 16), num_init_features: int = 64,
                 bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000, memory_efficient: bool = False):
        super().__init__()
        self.features = nn.Sequential()
        for name, module in [("conv0", nn.Conv2d(3, num_init_features, 7, stride=2, padding=3, bias=False)),
                             ("norm0", nn.BatchNorm2d(num_init_features)), ("relu0", nn.ReLU(inplace=True)),
                             ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))]:
            self.features.add_module(name, module)
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(num_layers, num_features, bn_size,
                                                                       growth_rate, drop_rate, memory_efficient))
            num_features += num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(num_features, num_features // 2))
                num_features //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        out = F.adaptive_avg_pool2d(F.relu(self.features(x), inplace=True), (1, 1))
        return self.classifier(ember.flatten(out, 1))


def _densenet(growth_rate, block_config, num_init_features, weights_cls, weights, pretrained, kwargs, progress):
    return build((DenseNet, (growth_rate, block_config, num_init_features)), weights_cls, weights, pretrained,
                 kwargs, progress)


@register_model(DenseNet121_Weights)
def densenet121(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> DenseNet:
    """DenseNet-121 (growth 32, blocks 6-12-24-16)."""
    return _densenet(32, (6, 12, 24, 16), 64, DenseNet121_Weights, weights, pretrained, kwargs, progress)


@register_model(DenseNet161_Weights)
def densenet161(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> DenseNet:
    """DenseNet-161 (growth 48, blocks 6-12-36-24, 96 stem channels)."""
    return _densenet(48, (6, 12, 36, 24), 96, DenseNet161_Weights, weights, pretrained, kwargs, progress)


@register_model(DenseNet169_Weights)
def densenet169(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> DenseNet:
    """DenseNet-169 (growth 32, blocks 6-12-32-32)."""
    return _densenet(32, (6, 12, 32, 32), 64, DenseNet169_Weights, weights, pretrained, kwargs, progress)


@register_model(DenseNet201_Weights)
def densenet201(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> DenseNet:
    """DenseNet-201 (growth 32, blocks 6-12-48-32)."""
    return _densenet(32, (6, 12, 48, 32), 64, DenseNet201_Weights, weights, pretrained, kwargs, progress)
