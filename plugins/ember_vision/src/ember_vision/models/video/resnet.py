"""Video ResNets (Tran et al. 2018): R3D (3D convolutions), MC3 (3D in the first stage only) and R(2+1)D
(each 3D convolution split into a spatial and a temporal one), torchvision's names."""
from __future__ import annotations

from functools import partial

from ember import nn

from ...transforms._presets import VideoClassification
from .._api import Weights, build, register_model, weights_enum


_R3D_TRANSFORMS = partial(VideoClassification, crop_size=(112, 112), resize_size=(128, 171))


def kinetics_weights(name: str, default: str = "KINETICS400_V1", transforms=_R3D_TRANSFORMS, **urls: str):
    """A weights enum of Kinetics-400 checkpoints (400 classes) preprocessed by ``transforms``."""
    meta = {"min_size": (1, 1), "min_temporal_size": 1}
    return weights_enum(name, default, **{key: Weights(url, 400, meta, transforms) for key, url in urls.items()})


_URL = "https://download.pytorch.org/models/"
R3D_18_Weights = kinetics_weights("R3D_18_Weights", KINETICS400_V1=_URL + "r3d_18-b3b3357e.pth")
MC3_18_Weights = kinetics_weights("MC3_18_Weights", KINETICS400_V1=_URL + "mc3_18-a90a0ba3.pth")
R2Plus1D_18_Weights = kinetics_weights("R2Plus1D_18_Weights", KINETICS400_V1=_URL + "r2plus1d_18-91a641e6.pth")


class Conv3DSimple(nn.Conv3d):
    """A 3x3x3 convolution."""

    def __init__(self, in_planes: int, out_planes: int, midplanes: int | None = None, stride: int = 1,
                 padding: int = 1) -> None:
        super().__init__(in_planes, out_planes, (3, 3, 3), stride=stride, padding=padding, bias=False)

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return stride, stride, stride


class Conv2Plus1D(nn.Sequential):
    """A 1x3x3 spatial convolution to ``midplanes``, batch norm, ReLU, then a 3x1x1 temporal convolution."""

    def __init__(self, in_planes: int, out_planes: int, midplanes: int, stride: int = 1, padding: int = 1) -> None:
        super().__init__(
            nn.Conv3d(in_planes, midplanes, (1, 3, 3), stride=(1, stride, stride), padding=(0, padding, padding),
                      bias=False),
            nn.BatchNorm3d(midplanes), nn.ReLU(inplace=True),
            nn.Conv3d(midplanes, out_planes, (3, 1, 1), stride=(stride, 1, 1), padding=(padding, 0, 0), bias=False))

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return stride, stride, stride


class Conv3DNoTemporal(nn.Conv3d):
    """A 1x3x3 convolution: spatial only, strided only in space."""

    def __init__(self, in_planes: int, out_planes: int, midplanes: int | None = None, stride: int = 1,
                 padding: int = 1) -> None:
        super().__init__(in_planes, out_planes, (1, 3, 3), stride=(1, stride, stride), padding=(0, padding, padding),
                         bias=False)

    @staticmethod
    def get_downsample_stride(stride: int) -> tuple[int, int, int]:
        return 1, stride, stride


def _midplanes(inplanes: int, planes: int) -> int:
    """R(2+1)D's intermediate width: the one that keeps the parameter count of a 3x3x3 convolution."""
    return (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)


class _Residual(nn.Module):
    def forward(self, x):
        out = self.convs(x)
        residual = x if self.downsample is None else self.downsample(x)
        return self.relu(out + residual)


class BasicBlock(_Residual):
    """Two ``conv_builder`` convolutions with batch norm, and the shortcut."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, conv_builder, stride: int = 1, downsample=None) -> None:
        super().__init__()
        midplanes = _midplanes(inplanes, planes)
        self.conv1 = nn.Sequential(conv_builder(inplanes, planes, midplanes, stride), nn.BatchNorm3d(planes),
                                   nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes), nn.BatchNorm3d(planes))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def convs(self, x):
        return self.conv2(self.conv1(x))


class Bottleneck(_Residual):
    """1x1x1 reduce, a ``conv_builder`` convolution, 1x1x1 expand (x4), each with batch norm, and the shortcut."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, conv_builder, stride: int = 1, downsample=None) -> None:
        super().__init__()
        midplanes = _midplanes(inplanes, planes)
        self.conv1 = nn.Sequential(nn.Conv3d(inplanes, planes, kernel_size=1, bias=False), nn.BatchNorm3d(planes),
                                   nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes, stride), nn.BatchNorm3d(planes),
                                   nn.ReLU(inplace=True))
        self.conv3 = nn.Sequential(nn.Conv3d(planes, planes * self.expansion, kernel_size=1, bias=False),
                                   nn.BatchNorm3d(planes * self.expansion))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def convs(self, x):
        return self.conv3(self.conv2(self.conv1(x)))


class BasicStem(nn.Sequential):
    """A 3x7x7 convolution (spatial stride 2), batch norm, ReLU."""

    def __init__(self) -> None:
        super().__init__(nn.Conv3d(3, 64, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
                         nn.BatchNorm3d(64), nn.ReLU(inplace=True))


class R2Plus1dStem(nn.Sequential):
    """The stem split in two: a 1x7x7 spatial convolution to 45 channels and a 3x1x1 temporal one to 64."""

    def __init__(self) -> None:
        super().__init__(nn.Conv3d(3, 45, (1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False),
                         nn.BatchNorm3d(45), nn.ReLU(inplace=True),
                         nn.Conv3d(45, 64, (3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0), bias=False),
                         nn.BatchNorm3d(64), nn.ReLU(inplace=True))


class VideoResNet(nn.Module):
    """``VideoResNet(block, conv_makers, layers, stem, num_classes=400, zero_init_residual=False)``: a stem,
    four stages of ``layers[i]`` blocks built with ``conv_makers[i]``, global average pooling, a linear layer.
    Input: ``(N, 3, T, H, W)``."""

    def __init__(self, block, conv_makers, layers: list[int], stem, num_classes: int = 400,
                 zero_init_residual: bool = False) -> None:
        super().__init__()
        self.inplanes = 64
        self.stem = stem()
        self.layer1 = self._make_layer(block, conv_makers[0], 64, layers[0], stride=1)
        self.layer2 = self._make_layer(block, conv_makers[1], 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, conv_makers[2], 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, conv_makers[3], 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)
        if zero_init_residual:  # each residual branch starts as zero: its last batch norm's scale
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.zeros_(m.conv3[1].weight)

    def _make_layer(self, block, conv_builder, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv3d(self.inplanes, planes * block.expansion, kernel_size=1,
                          stride=conv_builder.get_downsample_stride(stride), bias=False),
                nn.BatchNorm3d(planes * block.expansion))
        layers = [block(self.inplanes, planes, conv_builder, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, conv_builder) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.layer4(self.layer3(self.layer2(self.layer1(self.stem(x)))))
        return self.fc(self.avgpool(x).flatten(1))


def _video_resnet(conv_makers, stem, weights_cls, weights, progress, kwargs) -> VideoResNet:
    pretrained = kwargs.pop("pretrained", False)
    return build((VideoResNet, (BasicBlock, conv_makers, [2, 2, 2, 2], stem)), weights_cls, weights, pretrained,
                 kwargs, progress)


@register_model(R3D_18_Weights)
def r3d_18(*, weights=None, progress: bool = True, **kwargs) -> VideoResNet:
    """R3D-18: an 18-layer ResNet of 3x3x3 convolutions (Kinetics-400's 400 classes by default)."""
    return _video_resnet([Conv3DSimple] * 4, BasicStem, R3D_18_Weights, weights, progress, kwargs)


@register_model(MC3_18_Weights)
def mc3_18(*, weights=None, progress: bool = True, **kwargs) -> VideoResNet:
    """MC3-18: 3D convolutions in the first stage, spatial-only ones after it."""
    return _video_resnet([Conv3DSimple] + [Conv3DNoTemporal] * 3, BasicStem, MC3_18_Weights, weights, progress,
                         kwargs)


@register_model(R2Plus1D_18_Weights)
def r2plus1d_18(*, weights=None, progress: bool = True, **kwargs) -> VideoResNet:
    """R(2+1)D-18: every 3D convolution factored into a spatial and a temporal one."""
    return _video_resnet([Conv2Plus1D] * 4, R2Plus1dStem, R2Plus1D_18_Weights, weights, progress, kwargs)
