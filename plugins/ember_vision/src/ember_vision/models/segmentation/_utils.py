"""The shared frame of FCN and DeepLabV3: backbone features -> classifier -> upsampled to the input size."""
from __future__ import annotations

from collections import OrderedDict
from functools import partial

from ember import nn
from ember.nn import functional as F

from ...transforms._presets import SemanticSegmentation
from .._api import Weights, weights_enum
from .._utils import IntermediateLayerGetter, _ovewrite_value_param

VOC_CATEGORIES = ["__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair",
                  "cow", "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa",
                  "train", "tvmonitor"]


def voc_weights(name: str, url: str):
    """The weights enum ``name`` of one checkpoint trained on COCO's images with the 21 Pascal VOC labels."""
    meta = {"categories": VOC_CATEGORIES, "min_size": (1, 1)}
    return weights_enum(name, "COCO_WITH_VOC_LABELS_V1",
                        COCO_WITH_VOC_LABELS_V1=Weights(url, len(VOC_CATEGORIES), meta,
                                                                partial(SemanticSegmentation, resize_size=520)))


def upsample(x, size):
    return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class _SimpleSegmentationModel(nn.Module):
    """``backbone`` returns ``{"out": ..., "aux": ...}``; ``classifier`` (and ``aux_classifier`` when given)
    map them to per-pixel class scores at the input's size."""

    def __init__(self, backbone: nn.Module, classifier: nn.Module, aux_classifier: nn.Module | None = None):
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x):
        size = x.shape[-2:]
        features = self.backbone(x)
        result = OrderedDict(out=upsample(self.classifier(features["out"]), size))
        if self.aux_classifier is not None:
            result["aux"] = upsample(self.aux_classifier(features["aux"]), size)
        return result


def resolve(weights_cls, weights, backbone_cls, weights_backbone, num_classes, aux_loss, kwargs):
    """torchvision's argument rules for a segmentation builder: given ``weights`` fix ``num_classes`` (21) and
    ``aux_loss`` (True) and drop the backbone's weights; without them ``num_classes``
    defaults to 21.  The legacy ``pretrained``/``pretrained_backbone`` flags pick the first checkpoints.
    Returns ``(weights, weights_backbone, num_classes, aux_loss)``."""
    if kwargs.pop("pretrained", False) and weights is None:
        weights = weights_cls.COCO_WITH_VOC_LABELS_V1
    if not kwargs.pop("pretrained_backbone", True):
        weights_backbone = None
    weights = weights_cls.verify(weights)
    weights_backbone = backbone_cls.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
        aux_loss = _ovewrite_value_param("aux_loss", aux_loss, True)
    elif num_classes is None:
        num_classes = 21
    return weights, weights_backbone, num_classes, aux_loss


def finish(model, weights, progress: bool):
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


def mobilenet_stages(features) -> list[int]:
    """The indices of MobileNetV3's stage outputs: the stem, each strided block, the last layer."""
    return [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]


__all__ = ["IntermediateLayerGetter", "VOC_CATEGORIES", "voc_weights", "resolve", "finish", "mobilenet_stages"]
