"""The Region Proposal Network: an objectness score and box deltas for every anchor, decoded into proposals,
kept by score per level, clipped, de-duplicated by NMS per level; in training also its two losses."""
from __future__ import annotations

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import Conv2dNormActivation
from ...ops import boxes as box_ops
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator  # noqa: F401  (torchvision exposes it here too)
from .image_list import ImageList


def rename_legacy_keys(module: nn.Module, renames: dict[str, str]) -> None:
    """Have ``module`` accept a checkpoint that names some of its entries the old way (``renames``: old key
    -> new key, relative to the module)."""
    def rename(state_dict, prefix, *args):
        for old, new in renames.items():
            if prefix + old in state_dict:
                state_dict[prefix + new] = state_dict.pop(prefix + old)
    module._register_load_state_dict_pre_hook(rename)


class RPNHead(nn.Module):
    """``conv_depth`` 3x3 conv + ReLU layers shared by all levels, then 1x1 convs to ``num_anchors`` logits
    (``cls_logits``) and ``4 * num_anchors`` deltas (``bbox_pred``)."""

    _version = 2

    def __init__(self, in_channels: int, num_anchors: int, conv_depth: int = 1) -> None:
        super().__init__()
        self.conv = nn.Sequential(*(Conv2dNormActivation(in_channels, in_channels, kernel_size=3, norm_layer=None)
                                    for _ in range(conv_depth)))
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, kernel_size=1, stride=1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=1, stride=1)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.constant_(layer.bias, 0)
        # checkpoints from before conv_depth named the one conv "conv"
        rename_legacy_keys(self, {f"conv.{kind}": f"conv.0.0.{kind}" for kind in ("weight", "bias")})

    def forward(self, x: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        hidden = [self.conv(feature) for feature in x]
        return [self.cls_logits(t) for t in hidden], [self.bbox_pred(t) for t in hidden]


def permute_and_flatten(layer: Tensor, N: int, A: int, C: int, H: int, W: int) -> Tensor:
    """``(N, A*C, H, W)`` -> ``(N, H*W*A, C)``: one row per anchor, in (y, x, anchor) order."""
    return layer.view(N, -1, C, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, C)


def concat_box_prediction_layers(box_cls: list[Tensor], box_regression: list[Tensor]) -> tuple[Tensor, Tensor]:
    """Every level's per-anchor scores and deltas as two flat tables, ``(N*total, C)`` and ``(N*total, 4)``."""
    scores, deltas = [], []
    for cls_level, reg_level in zip(box_cls, box_regression):
        n, axc, h, w = cls_level.shape
        a = reg_level.shape[1] // 4
        scores.append(permute_and_flatten(cls_level, n, a, axc // a, h, w))
        deltas.append(permute_and_flatten(reg_level, n, a, 4, h, w))
    return ember.cat(scores, dim=1).flatten(0, -2), ember.cat(deltas, dim=1).reshape(-1, 4)


class RegionProposalNetwork(nn.Module):
    """``RegionProposalNetwork(anchor_generator, head, fg_iou_thresh, bg_iou_thresh, batch_size_per_image,
    positive_fraction, pre_nms_top_n, post_nms_top_n, nms_thresh, score_thresh=0.0)``; the ``*_top_n`` are
    dicts with a ``"training"`` and a ``"testing"`` count.  ``forward(images, features, targets=None)`` returns
    the proposals per image and the loss dict (empty in eval)."""

    def __init__(self, anchor_generator, head: nn.Module, fg_iou_thresh: float, bg_iou_thresh: float,
                 batch_size_per_image: int, positive_fraction: float, pre_nms_top_n: dict[str, int],
                 post_nms_top_n: dict[str, int], nms_thresh: float, score_thresh: float = 0.0) -> None:
        super().__init__()
        self.anchor_generator = anchor_generator
        self.head = head
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self._pre_nms_top_n = pre_nms_top_n
        self._post_nms_top_n = post_nms_top_n
        self.nms_thresh = nms_thresh
        self.score_thresh = score_thresh
        self.min_size = 1e-3

    def _mode(self) -> str:
        return "training" if self.training else "testing"

    def pre_nms_top_n(self) -> int:
        return self._pre_nms_top_n[self._mode()]

    def post_nms_top_n(self) -> int:
        return self._post_nms_top_n[self._mode()]

    def assign_targets_to_anchors(self, anchors: list[Tensor], targets: list[dict]) -> tuple[list, list]:
        """Per image, each anchor's label (1 object, 0 background, -1 ignored) and its matched box."""
        labels, matched_boxes = [], []
        for anchors_i, target in zip(anchors, targets):
            gt = target["boxes"]
            if gt.numel() == 0:
                matched_boxes.append(ember.zeros(anchors_i.shape, dtype=ember.float32, device=anchors_i.device))
                labels.append(ember.zeros((anchors_i.shape[0],), dtype=ember.float32, device=anchors_i.device))
                continue
            matched = self.proposal_matcher(self.box_similarity(gt, anchors_i))
            matched_boxes.append(gt[matched.clamp(min=0)])
            label = (matched >= 0).to(dtype=ember.float32)
            label[matched == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0.0
            label[matched == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1.0
            labels.append(label)
        return labels, matched_boxes

    def _get_top_n_idx(self, objectness: Tensor, num_anchors_per_level: list[int]) -> Tensor:
        """The indices of the ``pre_nms_top_n`` best anchors of each level, per image."""
        picked, offset = [], 0
        for level in objectness.split(num_anchors_per_level, 1):
            k = det_utils._topk_min(level, self.pre_nms_top_n(), 1)
            picked.append(level.topk(k, dim=1)[1] + offset)
            offset += level.shape[1]
        return ember.cat(picked, dim=1)

    def filter_proposals(self, proposals: Tensor, objectness: Tensor, image_shapes: list[tuple[int, int]],
                         num_anchors_per_level: list[int]) -> tuple[list[Tensor], list[Tensor]]:
        """The best proposals of each image: top-n per level, clipped to the image, tiny and low-scoring ones
        dropped, NMS within each level, at most ``post_nms_top_n``; with their objectness probabilities."""
        num_images, device = proposals.shape[0], proposals.device
        objectness = objectness.detach().reshape(num_images, -1)
        levels = ember.cat([ember.full((n,), i, dtype=ember.int64, device=device)
                            for i, n in enumerate(num_anchors_per_level)], 0).reshape(1, -1).expand_as(objectness)
        top = self._get_top_n_idx(objectness, num_anchors_per_level)
        rows = ember.arange(num_images, device=device)[:, None]
        probs, levels, proposals = ember.sigmoid(objectness[rows, top]), levels[rows, top], proposals[rows, top]
        final_boxes, final_scores = [], []
        for boxes, scores, lvl, shape in zip(proposals, probs, levels, image_shapes):
            boxes = box_ops.clip_boxes_to_image(boxes, shape)
            keep = box_ops.remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = ember.where(scores >= self.score_thresh)[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = box_ops.batched_nms(boxes, scores, lvl, self.nms_thresh)[: self.post_nms_top_n()]
            final_boxes.append(boxes[keep])
            final_scores.append(scores[keep])
        return final_boxes, final_scores

    def compute_loss(self, objectness: Tensor, pred_bbox_deltas: Tensor, labels: list[Tensor],
                     regression_targets: list[Tensor]) -> tuple[Tensor, Tensor]:
        """Binary cross-entropy of the sampled anchors' objectness, and smooth-L1 (beta 1/9) of the sampled
        positives' deltas summed over the number of sampled anchors."""
        pos, neg = self.fg_bg_sampler(labels)
        pos = ember.where(ember.cat(pos, dim=0))[0]
        neg = ember.where(ember.cat(neg, dim=0))[0]
        sampled = ember.cat([pos, neg], dim=0)
        labels = ember.cat(labels, dim=0)
        regression_targets = ember.cat(regression_targets, dim=0)
        box_loss = F.smooth_l1_loss(pred_bbox_deltas[pos], regression_targets[pos], beta=1 / 9,
                                    reduction="sum") / sampled.numel()
        objectness_loss = F.binary_cross_entropy_with_logits(objectness.flatten()[sampled], labels[sampled])
        return objectness_loss, box_loss

    def forward(self, images: ImageList, features: dict[str, Tensor], targets: list[dict] | None = None):
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_images = len(anchors)
        num_anchors_per_level = [o[0].shape[0] * o[0].shape[1] * o[0].shape[2] for o in objectness]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness, pred_bbox_deltas)
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors).view(num_images, -1, 4)
        boxes, _ = self.filter_proposals(proposals, objectness, images.image_sizes, num_anchors_per_level)
        losses = {}
        if self.training:
            if targets is None:
                raise ValueError("targets should not be None")
            labels, matched_gt_boxes = self.assign_targets_to_anchors(anchors, targets)
            regression_targets = self.box_coder.encode(matched_gt_boxes, anchors)
            loss_objectness, loss_rpn_box_reg = self.compute_loss(objectness, pred_bbox_deltas, labels,
                                                                  regression_targets)
            losses = {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
        return boxes, losses
