"""S3D (Xie et al. 2018): separable 3D convolutions in Inception blocks, torchvision's names."""
from __future__ import annotations

from functools import partial

import ember
from ember import nn

from ...ops.misc import Conv3dNormActivation
from ...transforms._presets import VideoClassification
from .._api import build, register_model
from .resnet import kinetics_weights

S3D_Weights = kinetics_weights("S3D_Weights", transforms=partial(VideoClassification, crop_size=(224, 224),
                                                                  resize_size=(256, 256)),
                               KINETICS400_V1="https://download.pytorch.org/models/s3d-d76dad2f.pth")


class TemporalSeparableConv(nn.Sequential):
    """A 1 x k x k spatial conv-norm-ReLU followed by a k x 1 x 1 temporal one."""

    def __init__(self, in_planes: int, out_planes: int, kernel_size: int, stride: int, padding: int, norm_layer):
        super().__init__(
            Conv3dNormActivation(in_planes, out_planes, kernel_size=(1, kernel_size, kernel_size),
                                 stride=(1, stride, stride), padding=(0, padding, padding), bias=False,
                                 norm_layer=norm_layer),
            Conv3dNormActivation(out_planes, out_planes, kernel_size=(kernel_size, 1, 1), stride=(stride, 1, 1),
                                 padding=(padding, 0, 0), bias=False, norm_layer=norm_layer))


class SepInceptionBlock3D(nn.Module):
    """Four branches concatenated: 1x1x1; 1x1x1 then separable 3x3x3 (two of these); 3x3x3 max pool then
    1x1x1."""

    def __init__(self, in_planes: int, b0_out: int, b1_mid: int, b1_out: int, b2_mid: int, b2_out: int,
                 b3_out: int, norm_layer):
        super().__init__()
        pointwise = partial(Conv3dNormActivation, kernel_size=1, stride=1, norm_layer=norm_layer)
        separable = partial(TemporalSeparableConv, kernel_size=3, stride=1, padding=1, norm_layer=norm_layer)
        self.branch0 = pointwise(in_planes, b0_out)
        self.branch1 = nn.Sequential(pointwise(in_planes, b1_mid), separable(b1_mid, b1_out))
        self.branch2 = nn.Sequential(pointwise(in_planes, b2_mid), separable(b2_mid, b2_out))
        self.branch3 = nn.Sequential(nn.MaxPool3d(kernel_size=(3, 3, 3), stride=1, padding=1),
                                     pointwise(in_planes, b3_out))

    def forward(self, x):
        return ember.cat((self.branch0(x), self.branch1(x), self.branch2(x), self.branch3(x)), 1)


# the Inception blocks' widths: (in, b0, b1 mid, b1 out, b2 mid, b2 out, b3)
_BLOCKS = [(192, 64, 96, 128, 16, 32, 32), (256, 128, 128, 192, 32, 96, 64), (480, 192, 96, 208, 16, 48, 64),
           (512, 160, 112, 224, 24, 64, 64), (512, 128, 128, 256, 24, 64, 64), (512, 112, 144, 288, 32, 64, 64),
           (528, 256, 160, 320, 32, 128, 128), (832, 256, 160, 320, 32, 128, 128),
           (832, 384, 192, 384, 48, 128, 128)]


class S3D(nn.Module):
    """``S3D(num_classes=400, dropout=0.2, norm_layer=None)``; input ``(N, 3, T, H, W)`` with H, W >= 224 and
    T >= 14 (the final 2x7x7 average pool)."""

    def __init__(self, num_classes: int = 400, dropout: float = 0.2, norm_layer=None) -> None:
        super().__init__()
        norm_layer = norm_layer or partial(nn.BatchNorm3d, eps=0.001, momentum=0.001)
        block = [SepInceptionBlock3D(*widths, norm_layer) for widths in _BLOCKS]
        spatial_pool = partial(nn.MaxPool3d, kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        self.features = nn.Sequential(
            TemporalSeparableConv(3, 64, 7, 2, 3, norm_layer), spatial_pool(),
            Conv3dNormActivation(64, 64, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(64, 192, 3, 1, 1, norm_layer), spatial_pool(),
            *block[:2], nn.MaxPool3d(kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1)),
            *block[2:7], nn.MaxPool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0)),
            *block[7:])
        self.avgpool = nn.AvgPool3d(kernel_size=(2, 7, 7), stride=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout),
                                        nn.Conv3d(1024, num_classes, kernel_size=1, stride=1, bias=True))

    def forward(self, x):
        return ember.mean(self.classifier(self.avgpool(self.features(x))), dim=(2, 3, 4))


@register_model(S3D_Weights)
def s3d(*, weights=None, progress: bool = True, **kwargs) -> S3D:
    """S3D for Kinetics-400 (clips of at least 14 frames of 224 x 224)."""
    pretrained = kwargs.pop("pretrained", False)
    return build((S3D, ()), S3D_Weights, weights, pretrained, kwargs, progress)
