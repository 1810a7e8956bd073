"""Classification networks turned into detection backbones: the stages an FPN reads, frozen up to a chosen
depth (detection fine-tunes only the last stages of an ImageNet-trained network)."""
from __future__ import annotations

import warnings

from ember import Tensor, nn

from ...ops import misc as misc_nn_ops
from ...ops.feature_pyramid_network import ExtraFPNBlock, FeaturePyramidNetwork, LastLevelMaxPool
from .. import mobilenetv2, mobilenetv3, resnet
from .._utils import IntermediateLayerGetter

_FPN_CHANNELS = 256


class BackboneWithFPN(nn.Module):
    """``body`` (the backbone's children up to the last of ``return_layers``, returning those layers' maps)
    followed by an FPN with ``out_channels`` channels on every level (``extra_blocks`` default: a max-pooled
    extra level, ``"pool"``).

    >>> import ember
    >>> from ember_vision.models import resnet18
    >>> m = BackboneWithFPN(resnet18(), {"layer3": "0", "layer4": "1"}, [256, 512], 32)
    >>> {k: tuple(v.shape) for k, v in m(ember.rand(1, 3, 64, 64)).items()}
    {'0': (1, 32, 4, 4), '1': (1, 32, 2, 2), 'pool': (1, 32, 1, 1)}
    """

    def __init__(self, backbone: nn.Module, return_layers: dict[str, str], in_channels_list: list[int],
                 out_channels: int, extra_blocks: ExtraFPNBlock | None = None, norm_layer=None) -> None:
        super().__init__()
        self.body = IntermediateLayerGetter(backbone, return_layers=return_layers)
        self.fpn = FeaturePyramidNetwork(in_channels_list=in_channels_list, out_channels=out_channels,
                                         extra_blocks=extra_blocks or LastLevelMaxPool(), norm_layer=norm_layer)
        self.out_channels = out_channels

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        return self.fpn(self.body(x))


def _freeze_all_but(backbone: nn.Module, prefixes: list[str]) -> None:
    for name, parameter in backbone.named_parameters():
        if not any(name.startswith(p) for p in prefixes):
            parameter.requires_grad_(False)


def _legacy_backbone_weights(module, builder_name: str, weights, kwargs: dict):
    """torchvision's legacy ``pretrained=True`` of a backbone builder: the ImageNet V1 weights of the net."""
    if kwargs.pop("pretrained", False) and weights is None:
        weights = getattr(module, builder_name)._weights_enum["IMAGENET1K_V1"]
    if kwargs:
        raise TypeError(f"unexpected keyword arguments {sorted(kwargs)}")
    return weights


def resnet_fpn_backbone(*, backbone_name: str, weights=None, norm_layer=misc_nn_ops.FrozenBatchNorm2d,
                        trainable_layers: int = 3, returned_layers: list[int] | None = None,
                        extra_blocks: ExtraFPNBlock | None = None, **kwargs) -> BackboneWithFPN:
    """The ResNet ``backbone_name`` (``"resnet50"``, ``"resnext101_32x8d"``, ...) with an FPN on
    ``returned_layers`` (default all four stages), the stages before the last ``trainable_layers`` frozen.

    >>> import ember
    >>> m = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    >>> [tuple(v.shape) for v in m(ember.rand(1, 3, 64, 64)).values()][-1]
    (1, 256, 1, 1)
    """
    weights = _legacy_backbone_weights(resnet, backbone_name, weights, kwargs)
    backbone = getattr(resnet, backbone_name)(weights=weights, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, trainable_layers, returned_layers, extra_blocks)


def _resnet_fpn_extractor(backbone: resnet.ResNet, trainable_layers: int, returned_layers: list[int] | None = None,
                          extra_blocks: ExtraFPNBlock | None = None, norm_layer=None) -> BackboneWithFPN:
    if trainable_layers < 0 or trainable_layers > 5:
        raise ValueError(f"Trainable layers should be in the range [0,5], got {trainable_layers}")
    trained = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    _freeze_all_but(backbone, trained + ["bn1"] * (trainable_layers == 5))
    returned_layers = returned_layers if returned_layers is not None else [1, 2, 3, 4]
    if min(returned_layers) <= 0 or max(returned_layers) >= 5:
        raise ValueError(f"Each returned layer should be in the range [1,4]. Got {returned_layers}")
    return_layers = {f"layer{k}": str(v) for v, k in enumerate(returned_layers)}
    stage2_channels = backbone.inplanes // 8
    in_channels_list = [stage2_channels * 2 ** (i - 1) for i in returned_layers]
    return BackboneWithFPN(backbone, return_layers, in_channels_list, _FPN_CHANNELS, extra_blocks=extra_blocks,
                           norm_layer=norm_layer)


def _validate_trainable_layers(is_trained: bool, trainable_backbone_layers: int | None, max_value: int,
                               default_value: int) -> int:
    """How many backbone stages to train: all of them (``max_value``) without pretrained weights, else the
    given number or ``default_value``, checked to lie in ``[0, max_value]``."""
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn("Changing trainable_backbone_layers has no effect if neither pretrained nor "
                          "pretrained_backbone have been set to True, falling back to "
                          f"trainable_backbone_layers={max_value} so that all layers are trainable")
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if trainable_backbone_layers < 0 or trainable_backbone_layers > max_value:
        raise ValueError(f"Trainable backbone layers should be in the range [0,{max_value}], got "
                         f"{trainable_backbone_layers} ")
    return trainable_backbone_layers


def mobilenet_backbone(*, backbone_name: str, weights=None, fpn: bool, norm_layer=misc_nn_ops.FrozenBatchNorm2d,
                       trainable_layers: int = 2, returned_layers: list[int] | None = None,
                       extra_blocks: ExtraFPNBlock | None = None, **kwargs) -> nn.Module:
    """The features of MobileNet ``backbone_name`` (``"mobilenet_v2"``, ``"mobilenet_v3_large"``, ...), with an
    FPN on its last two stages when ``fpn``, else a 1x1 conv to 256 channels; the stages before the last
    ``trainable_layers`` frozen."""
    module = mobilenetv2 if backbone_name == "mobilenet_v2" else mobilenetv3
    weights = _legacy_backbone_weights(module, backbone_name, weights, kwargs)
    backbone = getattr(module, backbone_name)(weights=weights, norm_layer=norm_layer)
    return _mobilenet_extractor(backbone, fpn, trainable_layers, returned_layers, extra_blocks)


def _mobilenet_extractor(backbone, fpn: bool, trainable_layers: int, returned_layers: list[int] | None = None,
                         extra_blocks: ExtraFPNBlock | None = None, norm_layer=None) -> nn.Module:
    features = backbone.features
    # stage i starts at the i-th strided block; the stem and the last layer bound the list
    stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    num_stages = len(stages)
    if trainable_layers < 0 or trainable_layers > num_stages:
        raise ValueError(f"Trainable layers should be in the range [0,{num_stages}], got {trainable_layers} ")
    freeze_before = len(features) if trainable_layers == 0 else stages[num_stages - trainable_layers]
    for block in features[:freeze_before]:
        for parameter in block.parameters():
            parameter.requires_grad_(False)
    if not fpn:
        model = nn.Sequential(features, nn.Conv2d(features[-1].out_channels, _FPN_CHANNELS, 1))
        model.out_channels = _FPN_CHANNELS
        return model
    returned_layers = returned_layers if returned_layers is not None else [num_stages - 2, num_stages - 1]
    if min(returned_layers) < 0 or max(returned_layers) >= num_stages:
        raise ValueError(f"Each returned layer should be in the range [0,{num_stages - 1}], got {returned_layers} ")
    return_layers = {f"{stages[k]}": str(v) for v, k in enumerate(returned_layers)}
    in_channels_list = [features[stages[i]].out_channels for i in returned_layers]
    return BackboneWithFPN(features, return_layers, in_channels_list, _FPN_CHANNELS, extra_blocks=extra_blocks,
                           norm_layer=norm_layer)
