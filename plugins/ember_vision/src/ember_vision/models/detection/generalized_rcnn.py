"""The frame every R-CNN shares: transform -> backbone -> region proposals -> RoI heads -> postprocess."""
from __future__ import annotations

from collections import OrderedDict

import ember
from ember import Tensor, nn


def _check_training_targets(targets) -> None:
    if targets is None:
        raise AssertionError("targets should not be none when in training mode")
    for target in targets:
        boxes = target["boxes"]
        if not isinstance(boxes, Tensor):
            raise AssertionError(f"Expected target boxes to be of type Tensor, got {type(boxes)}.")
        if boxes.dim() != 2 or boxes.shape[-1] != 4:
            raise AssertionError(f"Expected target boxes to be a tensor of shape [N, 4], got {boxes.shape}.")


def _check_boxes_not_degenerate(targets) -> None:
    for index, target in enumerate(targets):
        boxes = target["boxes"]
        degenerate = (boxes[:, 2:] <= boxes[:, :2]).any(dim=1)
        if degenerate.any():
            box = boxes[ember.where(degenerate)[0][0]].tolist()
            raise AssertionError("All bounding boxes should have positive height and width. Found invalid box "
                                 f"{box} for target at index {index}.")


class GeneralizedRCNN(nn.Module):
    """``GeneralizedRCNN(backbone, rpn, roi_heads, transform)``.  ``forward(images, targets=None)`` takes a list
    of ``(C, H, W)`` images (and, in training, a list of target dicts with ``boxes`` and ``labels``); it returns
    the loss dict in training and one dict of ``boxes``, ``labels``, ``scores`` (and ``masks`` or ``keypoints``)
    per image in eval, in the input image's coordinates."""

    def __init__(self, backbone: nn.Module, rpn: nn.Module, roi_heads: nn.Module, transform: nn.Module) -> None:
        super().__init__()
        self.transform = transform
        self.backbone = backbone
        self.rpn = rpn
        self.roi_heads = roi_heads
        self._has_warned = False

    def eager_outputs(self, losses: dict, detections: list[dict]):
        """The losses in training, the detections in eval."""
        return losses if self.training else detections

    def forward(self, images: list[Tensor], targets: list[dict] | None = None):
        if self.training:
            _check_training_targets(targets)
        original_image_sizes = []
        for img in images:
            size = img.shape[-2:]
            if len(size) != 2:
                raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W instead got "
                                     f"{img.shape[-2:]}")
            original_image_sizes.append((int(size[0]), int(size[1])))
        images, targets = self.transform(images, targets)
        if targets is not None:
            _check_boxes_not_degenerate(targets)
        features = self.backbone(images.tensors)
        if isinstance(features, Tensor):
            features = OrderedDict([("0", features)])
        proposals, proposal_losses = self.rpn(images, features, targets)
        detections, detector_losses = self.roi_heads(features, proposals, images.image_sizes, targets)
        detections = self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
        return self.eager_outputs({**detector_losses, **proposal_losses}, detections)
