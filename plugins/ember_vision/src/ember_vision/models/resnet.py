"""ResNet (He et al. 2015), ResNeXt (Xie et al. 2017) and Wide ResNet (Zagoruyko & Komodakis 2016) with
torchvision's layer and state-dict names."""
from __future__ import annotations

import ember
from ember import nn

from ._api import RECIPE_V2, Weights, _weights_enum, build, register_model, weights_enum

ResNet18_Weights = _weights_enum("ResNet18_Weights", "https://download.pytorch.org/models/resnet18-f37072fd.pth")
ResNet34_Weights = _weights_enum("ResNet34_Weights", "https://download.pytorch.org/models/resnet34-b627a593.pth")
_URL = "https://download.pytorch.org/models/"
ResNet50_Weights = weights_enum("ResNet50_Weights", "IMAGENET1K_V2", IMAGENET1K_V1=_URL + "resnet50-0676ba61.pth",
                                IMAGENET1K_V2=Weights(_URL + "resnet50-11ad3fa6.pth", transforms=RECIPE_V2))
ResNet101_Weights = weights_enum("ResNet101_Weights", "IMAGENET1K_V2", IMAGENET1K_V1=_URL + "resnet101-63fe2227.pth",
                                 IMAGENET1K_V2=Weights(_URL + "resnet101-cd907fc2.pth", transforms=RECIPE_V2))
ResNet152_Weights = weights_enum("ResNet152_Weights", "IMAGENET1K_V2", IMAGENET1K_V1=_URL + "resnet152-394f9c45.pth",
                                 IMAGENET1K_V2=Weights(_URL + "resnet152-f82ba261.pth", transforms=RECIPE_V2))
ResNeXt50_32X4D_Weights = weights_enum("ResNeXt50_32X4D_Weights", "IMAGENET1K_V2",
                                       IMAGENET1K_V1=_URL + "resnext50_32x4d-7cdf4587.pth",
                                       IMAGENET1K_V2=Weights(_URL + "resnext50_32x4d-1a0047aa.pth",
                                                             transforms=RECIPE_V2))
ResNeXt101_32X8D_Weights = weights_enum("ResNeXt101_32X8D_Weights", "IMAGENET1K_V2",
                                        IMAGENET1K_V1=_URL + "resnext101_32x8d-8ba56ff5.pth",
                                        IMAGENET1K_V2=Weights(_URL + "resnext101_32x8d-110c445d.pth",
                                                              transforms=RECIPE_V2))
ResNeXt101_64X4D_Weights = weights_enum("ResNeXt101_64X4D_Weights",
                                        IMAGENET1K_V1=Weights(_URL + "resnext101_64x4d-173b62eb.pth",
                                                              transforms=RECIPE_V2))
Wide_ResNet50_2_Weights = weights_enum("Wide_ResNet50_2_Weights", "IMAGENET1K_V2",
                                       IMAGENET1K_V1=_URL + "wide_resnet50_2-95faca4d.pth",
                                       IMAGENET1K_V2=Weights(_URL + "wide_resnet50_2-9ba9bcbe.pth",
                                                             transforms=RECIPE_V2))
Wide_ResNet101_2_Weights = weights_enum("Wide_ResNet101_2_Weights", "IMAGENET1K_V2",
                                        IMAGENET1K_V1=_URL + "wide_resnet101_2-32ee1156.pth",
                                        IMAGENET1K_V2=Weights(_URL + "wide_resnet101_2-d733dc28.pth",
                                                              transforms=RECIPE_V2))


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, 3, stride, padding=dilation, groups=groups, bias=False,
                     dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_planes, out_planes, 1, stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None, groups: int = 1,
                 base_width: int = 64, dilation: int = 1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)  # after the main branch, as torchvision
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carrying the stride, as torchvision's "ResNet V1.5"), 1x1 expand by 4."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None, groups: int = 1,
                 base_width: int = 64, dilation: int = 1, norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    """``ResNet(block, [n1, n2, n3, n4], num_classes)``: stem, four stages, global pooling, ``fc``."""

    def __init__(self, block, layers, num_classes: int = 1000, zero_init_residual: bool = False, groups: int = 1,
                 width_per_group: int = 64, replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        dilate = replace_stride_with_dilation or [False, False, False]
        if len(dilate) != 3:
            raise ValueError("replace_stride_with_dilation should be None "
                             f"or a 3-element tuple, got {replace_stride_with_dilation}")
        self._norm_layer = norm_layer or nn.BatchNorm2d
        self.inplanes, self.dilation = 64, 1
        self.groups, self.base_width = groups, width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=dilate[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=dilate[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=dilate[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1, dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample, previous_dilation = None, self.dilation
        if dilate:  # a dilated stage keeps the resolution: the stride goes into the dilation
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(ember.flatten(self.avgpool(x), 1))


def _resnet(block, layers, weights_cls, weights, pretrained, kwargs, progress, **fixed) -> ResNet:
    kwargs.update(fixed)  # the variant's own groups / width, as torchvision overwrites them
    return build((ResNet, (block, layers)), weights_cls, weights, pretrained, kwargs, progress)


@register_model(ResNet18_Weights)
def resnet18(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-18; ``weights=ResNet18_Weights.DEFAULT`` or ``pretrained=True`` loads ImageNet weights.

    >>> resnet18(num_classes=10).fc.out_features
    10
    """
    return _resnet(BasicBlock, [2, 2, 2, 2], ResNet18_Weights, weights, pretrained, kwargs, progress)


@register_model(ResNet34_Weights)
def resnet34(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-34 (BasicBlock, [3, 4, 6, 3])."""
    return _resnet(BasicBlock, [3, 4, 6, 3], ResNet34_Weights, weights, pretrained, kwargs, progress)


@register_model(ResNet50_Weights)
def resnet50(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-50 (Bottleneck, [3, 4, 6, 3])."""
    return _resnet(Bottleneck, [3, 4, 6, 3], ResNet50_Weights, weights, pretrained, kwargs, progress)


@register_model(ResNet101_Weights)
def resnet101(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-101 (Bottleneck, [3, 4, 23, 3])."""
    return _resnet(Bottleneck, [3, 4, 23, 3], ResNet101_Weights, weights, pretrained, kwargs, progress)


@register_model(ResNet152_Weights)
def resnet152(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNet-152 (Bottleneck, [3, 8, 36, 3])."""
    return _resnet(Bottleneck, [3, 8, 36, 3], ResNet152_Weights, weights, pretrained, kwargs, progress)


@register_model(ResNeXt50_32X4D_Weights)
def resnext50_32x4d(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-50 32x4d: ResNet-50 with 32 groups of width 4 in each 3x3 conv."""
    return _resnet(Bottleneck, [3, 4, 6, 3], ResNeXt50_32X4D_Weights, weights, pretrained, kwargs, progress,
                   groups=32, width_per_group=4)


@register_model(ResNeXt101_32X8D_Weights)
def resnext101_32x8d(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-101 32x8d."""
    return _resnet(Bottleneck, [3, 4, 23, 3], ResNeXt101_32X8D_Weights, weights, pretrained, kwargs, progress,
                   groups=32, width_per_group=8)


@register_model(ResNeXt101_64X4D_Weights)
def resnext101_64x4d(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """ResNeXt-101 64x4d."""
    return _resnet(Bottleneck, [3, 4, 23, 3], ResNeXt101_64X4D_Weights, weights, pretrained, kwargs, progress,
                   groups=64, width_per_group=4)


@register_model(Wide_ResNet50_2_Weights)
def wide_resnet50_2(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """Wide ResNet-50-2: ResNet-50 with the bottleneck 3x3 convs twice as wide."""
    return _resnet(Bottleneck, [3, 4, 6, 3], Wide_ResNet50_2_Weights, weights, pretrained, kwargs, progress,
                   width_per_group=128)


@register_model(Wide_ResNet101_2_Weights)
def wide_resnet101_2(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> ResNet:
    """Wide ResNet-101-2."""
    return _resnet(Bottleneck, [3, 4, 23, 3], Wide_ResNet101_2_Weights, weights, pretrained, kwargs, progress,
                   width_per_group=128)
