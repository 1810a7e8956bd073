"""MNASNet B1 (Tan et al. 2018) at depth multipliers 0.5, 0.75, 1.0 and 1.3, torchvision's names."""
from __future__ import annotations

from ember import nn

from ._api import RECIPE_V2, Weights, build, register_model, weights_enum

_URL = "https://download.pytorch.org/models/"
MNASNet0_5_Weights = weights_enum("MNASNet0_5_Weights", IMAGENET1K_V1=_URL + "mnasnet0.5_top1_67.823-3ffadce67e.pth")
MNASNet0_75_Weights = weights_enum("MNASNet0_75_Weights", IMAGENET1K_V1=Weights(
    _URL + "mnasnet0_75-7090bc5f.pth", transforms=RECIPE_V2))
MNASNet1_0_Weights = weights_enum("MNASNet1_0_Weights",
                                  IMAGENET1K_V1=_URL + "mnasnet1.0_top1_73.512-f206786ef8.pth")
MNASNet1_3_Weights = weights_enum("MNASNet1_3_Weights", IMAGENET1K_V1=Weights(
    _URL + "mnasnet1_3-a4c69d6f.pth", transforms=RECIPE_V2))

_BN_MOMENTUM = 1 - 0.9997  # TensorFlow's decay 0.9997 in PyTorch's convention


class _InvertedResidual(nn.Module):
    """1x1 expand, k x k depthwise (k 3 or 5), 1x1 project; residual when shapes allow."""

    def __init__(self, in_ch: int, out_ch: int, kernel_size: int, stride: int, expansion_factor: int,
                 bn_momentum: float = 0.1):
        super().__init__()
        if stride not in [1, 2]:
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if kernel_size not in [3, 5]:
            raise ValueError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
        mid = in_ch * expansion_factor
        self.apply_residual = in_ch == out_ch and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(in_ch, mid, 1, bias=False), nn.BatchNorm2d(mid, momentum=bn_momentum), nn.ReLU(inplace=True),
            nn.Conv2d(mid, mid, kernel_size, padding=kernel_size // 2, stride=stride, groups=mid, bias=False),
            nn.BatchNorm2d(mid, momentum=bn_momentum), nn.ReLU(inplace=True),
            nn.Conv2d(mid, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch, momentum=bn_momentum))

    def forward(self, input):
        return self.layers(input) + input if self.apply_residual else self.layers(input)


def _stack(in_ch, out_ch, kernel_size, stride, exp_factor, repeats, bn_momentum) -> nn.Sequential:
    if repeats < 1:
        raise ValueError(f"repeats should be >= 1, instead got {repeats}")
    return nn.Sequential(_InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, bn_momentum),
                         *(_InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, bn_momentum)
                           for _ in range(1, repeats)))


def _round_to_multiple_of(val: float, divisor: int, round_up_bias: float = 0.9) -> int:
    """Round ``val`` to a multiple of ``divisor``, up unless that goes more than 10% above it."""
    if not 0.0 < round_up_bias < 1.0:
        raise ValueError(f"round_up_bias should be greater than 0.0 and smaller than 1.0 instead of {round_up_bias}")
    new_val = max(divisor, int(val + divisor / 2) // divisor * divisor)
    return new_val if new_val >= round_up_bias * val else new_val + divisor


def _get_depths(alpha: float) -> list[int]:
    return [_round_to_multiple_of(depth * alpha, 8) for depth in [32, 16, 24, 40, 80, 96, 192, 320]]


# (kernel, stride, expansion, repeats) of the six stacks after the stem
_STACKS = [(3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3), (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1)]


class MNASNet(nn.Module):
    """``MNASNet(alpha, num_classes, dropout)``: ``layers`` (stem, six stacks, 1x1 to 1280), ``classifier``."""

    _version = 2

    def __init__(self, alpha: float, num_classes: int = 1000, dropout: float = 0.2):
        super().__init__()
        if alpha <= 0.0:
            raise ValueError(f"alpha should be greater than 0.0 instead of {alpha}")
        self.alpha, self.num_classes = alpha, num_classes
        d = _get_depths(alpha)
        bn = _BN_MOMENTUM
        layers = [nn.Conv2d(3, d[0], 3, padding=1, stride=2, bias=False), nn.BatchNorm2d(d[0], momentum=bn),
                  nn.ReLU(inplace=True),
                  nn.Conv2d(d[0], d[0], 3, padding=1, stride=1, groups=d[0], bias=False),
                  nn.BatchNorm2d(d[0], momentum=bn), nn.ReLU(inplace=True),
                  nn.Conv2d(d[0], d[1], 1, padding=0, stride=1, bias=False), nn.BatchNorm2d(d[1], momentum=bn)]
        layers += [_stack(d[i + 1], d[i + 2], *args, bn) for i, args in enumerate(_STACKS)]
        layers += [nn.Conv2d(d[7], 1280, 1, padding=0, stride=1, bias=False), nn.BatchNorm2d(1280, momentum=bn),
                   nn.ReLU(inplace=True)]
        self.layers = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(1280, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_uniform_(m.weight, mode="fan_out", nonlinearity="sigmoid")
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(self.layers(x).mean([2, 3]))


def _mnasnet(alpha, weights_cls, weights, pretrained, kwargs, progress) -> MNASNet:
    return build((MNASNet, (alpha,)), weights_cls, weights, pretrained, kwargs, progress)


@register_model(MNASNet0_5_Weights)
def mnasnet0_5(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 0.5."""
    return _mnasnet(0.5, MNASNet0_5_Weights, weights, pretrained, kwargs, progress)


@register_model(MNASNet0_75_Weights)
def mnasnet0_75(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 0.75."""
    return _mnasnet(0.75, MNASNet0_75_Weights, weights, pretrained, kwargs, progress)


@register_model(MNASNet1_0_Weights)
def mnasnet1_0(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 1.0."""
    return _mnasnet(1.0, MNASNet1_0_Weights, weights, pretrained, kwargs, progress)


@register_model(MNASNet1_3_Weights)
def mnasnet1_3(*, weights=None, progress: bool = True, pretrained: bool = False, **kwargs) -> MNASNet:
    """MNASNet with depth multiplier 1.3."""
    return _mnasnet(1.3, MNASNet1_3_Weights, weights, pretrained, kwargs, progress)
