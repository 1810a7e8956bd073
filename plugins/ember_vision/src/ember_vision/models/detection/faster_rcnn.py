"""Faster R-CNN (Ren et al. 2015) on ResNet-50 and MobileNetV3 FPN backbones, torchvision's names and weights."""
from __future__ import annotations

from ember import nn
from ember.nn import functional as F

from ...ops import MultiScaleRoIAlign
from ...ops import misc as misc_nn_ops
from ...transforms._presets import ObjectDetection
from .._api import Weights, WeightsEnum, register_model
from .._meta import _COCO_CATEGORIES
from .._utils import _ovewrite_value_param
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from ..resnet import ResNet50_Weights, resnet50
from ._utils import overwrite_eps
from .anchor_utils import AnchorGenerator
from .backbone_utils import _mobilenet_extractor, _resnet_fpn_extractor, _validate_trainable_layers
from .generalized_rcnn import GeneralizedRCNN
from .roi_heads import RoIHeads
from .rpn import RegionProposalNetwork, RPNHead
from .transform import GeneralizedRCNNTransform

__all__ = ["FasterRCNN", "FasterRCNN_ResNet50_FPN_Weights", "FasterRCNN_ResNet50_FPN_V2_Weights",
           "FasterRCNN_MobileNet_V3_Large_FPN_Weights", "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights",
           "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_mobilenet_v3_large_fpn",
           "fasterrcnn_mobilenet_v3_large_320_fpn"]

_URL = "https://download.pytorch.org/models/"
_RECIPES = "https://github.com/pytorch/vision/tree/main/references/detection#"


def coco_weights(file: str, num_params: int, recipe: str, metrics: dict, ops: float, file_size: float,
                 categories=_COCO_CATEGORIES, **meta) -> Weights:
    """A COCO checkpoint's :class:`Weights` with torchvision's metadata (``recipe``: a URL, or an anchor of the
    detection references' README)."""
    return Weights(_URL + file, len(categories), {
        "categories": categories, "min_size": (1, 1), **meta, "num_params": num_params,
        "recipe": recipe if recipe.startswith("https:") else _RECIPES + recipe,
        "_metrics": {"COCO-val2017": metrics}, "_ops": ops, "_file_size": file_size}, ObjectDetection)


def coco_enum(name: str, **members: Weights):
    """A weights enum whose members are ``members`` and whose ``DEFAULT`` is ``COCO_V1``."""
    return WeightsEnum(name, {**members, "DEFAULT": members["COCO_V1"]})


FasterRCNN_ResNet50_FPN_Weights = coco_enum("FasterRCNN_ResNet50_FPN_Weights", COCO_V1=coco_weights(
    "fasterrcnn_resnet50_fpn_coco-258fb6c6.pth", 41755286, "faster-r-cnn-resnet-50-fpn", {"box_map": 37.0},
    134.38, 159.743))
FasterRCNN_ResNet50_FPN_V2_Weights = coco_enum("FasterRCNN_ResNet50_FPN_V2_Weights", COCO_V1=coco_weights(
    "fasterrcnn_resnet50_fpn_v2_coco-dd69338a.pth", 43712278, "https://github.com/pytorch/vision/pull/5763",
    {"box_map": 46.7}, 280.371, 167.104))
FasterRCNN_MobileNet_V3_Large_FPN_Weights = coco_enum("FasterRCNN_MobileNet_V3_Large_FPN_Weights",
                                                      COCO_V1=coco_weights(
    "fasterrcnn_mobilenet_v3_large_fpn-fb6a3cc7.pth", 19386354, "faster-r-cnn-mobilenetv3-large-fpn",
    {"box_map": 32.8}, 4.494, 74.239))
FasterRCNN_MobileNet_V3_Large_320_FPN_Weights = coco_enum("FasterRCNN_MobileNet_V3_Large_320_FPN_Weights",
                                                          COCO_V1=coco_weights(
    "fasterrcnn_mobilenet_v3_large_320_fpn-907ea3f9.pth", 19386354, "faster-r-cnn-mobilenetv3-large-320-fpn",
    {"box_map": 22.8}, 0.719, 74.239))


def _default_anchorgen() -> AnchorGenerator:
    sizes = ((32,), (64,), (128,), (256,), (512,))
    return AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))


class FasterRCNN(GeneralizedRCNN):
    """Faster R-CNN on ``backbone`` (a module with ``out_channels`` returning a tensor or an ordered dict of
    maps).  The other arguments are torchvision's: the transform's ``min_size``/``max_size``/``image_mean``/
    ``image_std``, the RPN's ``rpn_*`` and the box branch's ``box_*`` settings; ``num_classes`` includes the
    background and must be None when ``box_predictor`` is given.

    >>> import ember
    >>> from ember_vision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn
    >>> m = fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None, num_classes=3, min_size=64).eval()
    >>> sorted(m([ember.rand(3, 64, 80)])[0])
    ['boxes', 'labels', 'scores']
    """

    def __init__(self, backbone, num_classes=None, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 rpn_anchor_generator=None, rpn_head=None, rpn_pre_nms_top_n_train=2000, rpn_pre_nms_top_n_test=1000,
                 rpn_post_nms_top_n_train=2000, rpn_post_nms_top_n_test=1000, rpn_nms_thresh=0.7,
                 rpn_fg_iou_thresh=0.7, rpn_bg_iou_thresh=0.3, rpn_batch_size_per_image=256,
                 rpn_positive_fraction=0.5, rpn_score_thresh=0.0, box_roi_pool=None, box_head=None,
                 box_predictor=None, box_score_thresh=0.05, box_nms_thresh=0.5, box_detections_per_img=100,
                 box_fg_iou_thresh=0.5, box_bg_iou_thresh=0.5, box_batch_size_per_image=512,
                 box_positive_fraction=0.25, bbox_reg_weights=None, **kwargs):
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                             "channels (assumed to be the same for all the levels)")
        if not isinstance(rpn_anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(f"rpn_anchor_generator should be of type AnchorGenerator or None instead of "
                            f"{type(rpn_anchor_generator)}")
        if not isinstance(box_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"box_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(box_roi_pool)}")
        if num_classes is not None and box_predictor is not None:
            raise ValueError("num_classes should be None when box_predictor is specified")
        if num_classes is None and box_predictor is None:
            raise ValueError("num_classes should not be None when box_predictor is not specified")
        out_channels = backbone.out_channels
        if rpn_anchor_generator is None:
            rpn_anchor_generator = _default_anchorgen()
        if rpn_head is None:
            rpn_head = RPNHead(out_channels, rpn_anchor_generator.num_anchors_per_location()[0])
        rpn = RegionProposalNetwork(
            rpn_anchor_generator, rpn_head, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image,
            rpn_positive_fraction, {"training": rpn_pre_nms_top_n_train, "testing": rpn_pre_nms_top_n_test},
            {"training": rpn_post_nms_top_n_train, "testing": rpn_post_nms_top_n_test}, rpn_nms_thresh,
            score_thresh=rpn_score_thresh)
        if box_roi_pool is None:
            box_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=7, sampling_ratio=2)
        if box_head is None:
            box_head = TwoMLPHead(out_channels * box_roi_pool.output_size[0] ** 2, 1024)
        if box_predictor is None:
            box_predictor = FastRCNNPredictor(1024, num_classes)
        roi_heads = RoIHeads(box_roi_pool, box_head, box_predictor, box_fg_iou_thresh, box_bg_iou_thresh,
                             box_batch_size_per_image, box_positive_fraction, bbox_reg_weights, box_score_thresh,
                             box_nms_thresh, box_detections_per_img)
        image_mean = [0.485, 0.456, 0.406] if image_mean is None else image_mean
        image_std = [0.229, 0.224, 0.225] if image_std is None else image_std
        transform = GeneralizedRCNNTransform(min_size, max_size, image_mean, image_std, **kwargs)
        super().__init__(backbone, rpn, roi_heads, transform)


class TwoMLPHead(nn.Module):
    """Flatten, ``fc6`` + ReLU, ``fc7`` + ReLU: the box head of the FPN models."""

    def __init__(self, in_channels: int, representation_size: int) -> None:
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x):
        return F.relu(self.fc7(F.relu(self.fc6(x.flatten(start_dim=1)))))


class FastRCNNConvFCHead(nn.Sequential):
    """3x3 conv (+ norm) + ReLU blocks of ``conv_layers`` channels, flatten, Linear + ReLU of ``fc_layers``
    widths; ``input_size`` is ``(channels, height, width)`` of the pooled features."""

    def __init__(self, input_size: tuple[int, int, int], conv_layers: list[int], fc_layers: list[int],
                 norm_layer=None) -> None:
        channels, height, width = input_size
        blocks = []
        for out in conv_layers:
            blocks.append(misc_nn_ops.Conv2dNormActivation(channels, out, norm_layer=norm_layer))
            channels = out
        blocks.append(nn.Flatten())
        features = channels * height * width
        for out in fc_layers:
            blocks += [nn.Linear(features, out), nn.ReLU(inplace=True)]
            features = out
        super().__init__(*blocks)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)


class FastRCNNPredictor(nn.Module):
    """Class logits (``cls_score``) and per-class box deltas (``bbox_pred``) from the box head's features."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x):
        if x.dim() == 4 and list(x.shape[2:]) != [1, 1]:
            raise AssertionError(f"x has the wrong shape, expecting the last two dimensions to be [1,1] instead "
                                 f"of {list(x.shape[2:])}")
        x = x.flatten(start_dim=1)
        return self.cls_score(x), self.bbox_pred(x)


def resolve_weights(weights_cls, weights, backbone_cls, weights_backbone, kwargs: dict, default_classes: int = 91,
                    legacy=None, **counts):
    """torchvision's argument rules for a detection builder.  The legacy flags ``pretrained`` (``legacy(flag)``
    or ``COCO_V1``) and ``pretrained_backbone`` (the backbone's ``IMAGENET1K_V1``) pick weights; given
    ``weights`` the backbone's weights are dropped and each of ``counts`` (``num_classes=...``, compared with the
    number of the weights' categories, or ``num_keypoints``) is checked.  Returns ``(weights, weights_backbone,
    counts, is_trained)``, ``counts`` defaulting to ``default_classes`` classes and 17 key points."""
    flag = kwargs.pop("pretrained", False)
    if flag and weights is None:
        weights = legacy(flag) if legacy else weights_cls.COCO_V1
    if "pretrained_backbone" in kwargs:
        weights_backbone = backbone_cls.IMAGENET1K_V1 if kwargs.pop("pretrained_backbone") else None
    weights = weights_cls.verify(weights)
    weights_backbone = backbone_cls.verify(weights_backbone)
    meta_keys = {"num_classes": "categories", "num_keypoints": "keypoint_names"}
    if weights is not None:
        weights_backbone = None
        counts = {k: _ovewrite_value_param(k, v, len(weights.meta[meta_keys[k]])) for k, v in counts.items()}
    else:
        defaults = {"num_classes": default_classes, "num_keypoints": 17}
        counts = {k: defaults[k] if v is None else v for k, v in counts.items()}
    return weights, weights_backbone, counts, weights is not None or weights_backbone is not None


def load_weights(model, weights, progress: bool, zero_eps_for=None):
    """Load ``weights`` into ``model`` when given; the legacy checkpoint ``zero_eps_for`` was trained with
    FrozenBatchNorm2d's eps at 0."""
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
        if weights == zero_eps_for:
            overwrite_eps(model, 0.0)
    return model


def resnet50_fpn(weights_backbone, progress: bool, is_trained: bool, trainable_backbone_layers, v2: bool):
    """The ResNet-50 FPN backbone: frozen batch norm (v1, when pretrained) or batch norm in the FPN (v2)."""
    layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    if v2:
        return _resnet_fpn_extractor(resnet50(weights=weights_backbone, progress=progress), layers,
                                     norm_layer=nn.BatchNorm2d)
    norm_layer = misc_nn_ops.FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    return _resnet_fpn_extractor(resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer), layers)


def v2_heads(out_channels: int) -> dict:
    """The v2 models' RPN head (two convs) and box head (four convs with batch norm, one Linear)."""
    anchors = _default_anchorgen()
    return {"rpn_anchor_generator": anchors,
            "rpn_head": RPNHead(out_channels, anchors.num_anchors_per_location()[0], conv_depth=2),
            "box_head": FastRCNNConvFCHead((out_channels, 7, 7), [256, 256, 256, 256], [1024],
                                           norm_layer=nn.BatchNorm2d)}


@register_model(FasterRCNN_ResNet50_FPN_Weights)
def fasterrcnn_resnet50_fpn(*, weights=None, progress: bool = True, num_classes: int | None = None,
                            weights_backbone=ResNet50_Weights.IMAGENET1K_V1,
                            trainable_backbone_layers: int | None = None, **kwargs) -> FasterRCNN:
    """Faster R-CNN with a ResNet-50 FPN backbone (91 COCO classes by default)."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        FasterRCNN_ResNet50_FPN_Weights, weights, ResNet50_Weights, weights_backbone, kwargs, num_classes=num_classes)
    backbone = resnet50_fpn(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=False)
    model = FasterRCNN(backbone, num_classes=counts["num_classes"], **kwargs)
    return load_weights(model, weights, progress, FasterRCNN_ResNet50_FPN_Weights.COCO_V1)


@register_model(FasterRCNN_ResNet50_FPN_V2_Weights)
def fasterrcnn_resnet50_fpn_v2(*, weights=None, progress: bool = True, num_classes: int | None = None,
                               weights_backbone=None, trainable_backbone_layers: int | None = None,
                               **kwargs) -> FasterRCNN:
    """Faster R-CNN v2 (Li et al. 2021's recipe): batch norm in the FPN and the heads, a two-conv RPN head."""
    weights, weights_backbone, counts, is_trained = resolve_weights(
        FasterRCNN_ResNet50_FPN_V2_Weights, weights, ResNet50_Weights, weights_backbone, kwargs,
        num_classes=num_classes)
    backbone = resnet50_fpn(weights_backbone, progress, is_trained, trainable_backbone_layers, v2=True)
    model = FasterRCNN(backbone, num_classes=counts["num_classes"], **v2_heads(backbone.out_channels), **kwargs)
    return load_weights(model, weights, progress)


def _fasterrcnn_mobilenet_v3_large_fpn(weights_cls, weights, progress, num_classes, weights_backbone,
                                       trainable_backbone_layers, defaults: dict, kwargs: dict) -> FasterRCNN:
    weights, weights_backbone, counts, is_trained = resolve_weights(
        weights_cls, weights, MobileNet_V3_Large_Weights, weights_backbone, kwargs, num_classes=num_classes)
    layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 6, 3)
    norm_layer = misc_nn_ops.FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = mobilenet_v3_large(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    backbone = _mobilenet_extractor(backbone, True, layers)
    sizes = ((32, 64, 128, 256, 512),) * 3
    anchors = AnchorGenerator(sizes, ((0.5, 1.0, 2.0),) * len(sizes))
    model = FasterRCNN(backbone, counts["num_classes"], rpn_anchor_generator=anchors, **{**defaults, **kwargs})
    return load_weights(model, weights, progress)


@register_model(FasterRCNN_MobileNet_V3_Large_320_FPN_Weights)
def fasterrcnn_mobilenet_v3_large_320_fpn(*, weights=None, progress: bool = True, num_classes: int | None = None,
                                          weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1,
                                          trainable_backbone_layers: int | None = None, **kwargs) -> FasterRCNN:
    """Low-resolution Faster R-CNN on MobileNetV3-Large with an FPN (images resized to 320 px, fewer
    proposals)."""
    defaults = {"min_size": 320, "max_size": 640, "rpn_pre_nms_top_n_test": 150, "rpn_post_nms_top_n_test": 150,
                "rpn_score_thresh": 0.05}
    return _fasterrcnn_mobilenet_v3_large_fpn(FasterRCNN_MobileNet_V3_Large_320_FPN_Weights, weights, progress,
                                              num_classes, weights_backbone, trainable_backbone_layers, defaults,
                                              kwargs)


@register_model(FasterRCNN_MobileNet_V3_Large_FPN_Weights)
def fasterrcnn_mobilenet_v3_large_fpn(*, weights=None, progress: bool = True, num_classes: int | None = None,
                                      weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1,
                                      trainable_backbone_layers: int | None = None, **kwargs) -> FasterRCNN:
    """High-resolution Faster R-CNN on MobileNetV3-Large with an FPN."""
    return _fasterrcnn_mobilenet_v3_large_fpn(FasterRCNN_MobileNet_V3_Large_FPN_Weights, weights, progress,
                                              num_classes, weights_backbone, trainable_backbone_layers,
                                              {"rpn_score_thresh": 0.05}, kwargs)
