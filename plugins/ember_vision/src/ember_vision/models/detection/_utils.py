"""Detection building blocks shared by the one- and two-stage models: box coders, anchor matchers, the
positive/negative sampler and the box-regression losses, with torchvision's names and arithmetic."""
from __future__ import annotations

import math
from collections import OrderedDict

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import complete_box_iou_loss, distance_box_iou_loss, FrozenBatchNorm2d, generalized_box_iou_loss


class BalancedPositiveNegativeSampler:
    """Picks at most ``batch_size_per_image`` elements per image, ``positive_fraction`` of them positive
    (matched index >= 1) and the rest negative (== 0), at random; -1 (ignored) is never picked."""

    def __init__(self, batch_size_per_image: int, positive_fraction: float) -> None:
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs):
        """Two lists of uint8 masks, one per image: the positives picked and the negatives picked."""
        pos_masks, neg_masks = [], []
        for matched in matched_idxs:
            positive = ember.where(matched >= 1)[0]
            negative = ember.where(matched == 0)[0]
            num_pos = min(positive.numel(), int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)
            pos_pick = positive[ember.randperm(positive.numel(), device=positive.device)[:num_pos]]
            neg_pick = negative[ember.randperm(negative.numel(), device=negative.device)[:num_neg]]
            for picked, masks in ((pos_pick, pos_masks), (neg_pick, neg_masks)):
                mask = ember.zeros_like(matched, dtype=ember.uint8)
                mask[picked] = 1
                masks.append(mask)
        return pos_masks, neg_masks


def _centres_and_sizes(boxes):
    """``(cx, cy, w, h)`` of ``(x1, y1, x2, y2)`` boxes, each of shape ``boxes.shape[:-1]``."""
    w = boxes[..., 2] - boxes[..., 0]
    h = boxes[..., 3] - boxes[..., 1]
    return boxes[..., 0] + 0.5 * w, boxes[..., 1] + 0.5 * h, w, h


def encode_boxes(reference_boxes, proposals, weights):
    """The ``(dx, dy, dw, dh)`` regression targets (scaled by ``weights``) that move each proposal onto its
    reference box, shape ``(N, 4)``."""
    ex_x, ex_y, ex_w, ex_h = _centres_and_sizes(proposals)
    gt_x, gt_y, gt_w, gt_h = _centres_and_sizes(reference_boxes)
    return ember.stack((weights[0] * (gt_x - ex_x) / ex_w, weights[1] * (gt_y - ex_y) / ex_h,
                        weights[2] * ember.log(gt_w / ex_w), weights[3] * ember.log(gt_h / ex_h)), dim=1)


class BoxCoder:
    """Encodes boxes as centre offsets and log size ratios relative to reference boxes (R-CNN's
    parametrisation), weighted by ``weights``; decoding clamps the log ratios at ``bbox_xform_clip``."""

    def __init__(self, weights, bbox_xform_clip: float = math.log(1000.0 / 16)) -> None:
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes, proposals):
        """Per-image targets: the images' boxes are encoded together and split back."""
        counts = [len(b) for b in reference_boxes]
        targets = self.encode_single(ember.cat(reference_boxes, dim=0), ember.cat(proposals, dim=0))
        return targets.split(counts, 0)

    def encode_single(self, reference_boxes, proposals):
        """The targets of one image's boxes, shape ``(N, 4)``."""
        weights = ember.as_tensor(self.weights, dtype=reference_boxes.dtype, device=reference_boxes.device)
        return encode_boxes(reference_boxes, proposals, weights)

    def decode(self, rel_codes, boxes):
        """Boxes of shape ``(N, K, 4)`` from ``rel_codes`` and the list of per-image reference boxes."""
        if not isinstance(boxes, (list, tuple)):
            raise AssertionError("This function expects boxes of type list or tuple.")
        if not isinstance(rel_codes, ember.Tensor):
            raise AssertionError("This function expects rel_codes of type torch.Tensor.")
        total = sum(b.size(0) for b in boxes)
        if total > 0:
            rel_codes = rel_codes.reshape(total, -1)
        pred = self.decode_single(rel_codes, ember.cat(boxes, dim=0))
        return pred.reshape(total, -1, 4) if total > 0 else pred

    def decode_single(self, rel_codes, boxes):
        """Boxes ``(N, 4k)`` from codes ``(N, 4k)`` (k sets of 4 per reference box) and ``boxes`` ``(N, 4)``."""
        ctr_x, ctr_y, widths, heights = (v[:, None] for v in _centres_and_sizes(boxes.to(rel_codes.dtype)))
        wx, wy, ww, wh = self.weights
        dw = ember.clamp(rel_codes[:, 2::4] / ww, max=self.bbox_xform_clip)
        dh = ember.clamp(rel_codes[:, 3::4] / wh, max=self.bbox_xform_clip)
        cx = rel_codes[:, 0::4] / wx * widths + ctr_x
        cy = rel_codes[:, 1::4] / wy * heights + ctr_y
        half_w = 0.5 * (ember.exp(dw) * widths)
        half_h = 0.5 * (ember.exp(dh) * heights)
        return ember.stack((cx - half_w, cy - half_h, cx + half_w, cy + half_h), dim=2).flatten(1)


class BoxLinearCoder:
    """FCOS's parametrisation: the distances from a reference box's centre to the four sides of the target,
    divided by the reference box's width/height when ``normalize_by_size``."""

    def __init__(self, normalize_by_size: bool = True) -> None:
        self.normalize_by_size = normalize_by_size

    def _sizes(self, boxes):
        _, _, w, h = _centres_and_sizes(boxes)
        return ember.stack((w, h, w, h), dim=-1)

    def encode(self, reference_boxes, proposals):
        """``(l, t, r, b)`` of ``proposals`` around the centres of ``reference_boxes`` (same leading shape)."""
        cx = 0.5 * (reference_boxes[..., 0] + reference_boxes[..., 2])
        cy = 0.5 * (reference_boxes[..., 1] + reference_boxes[..., 3])
        targets = ember.stack((cx - proposals[..., 0], cy - proposals[..., 1], proposals[..., 2] - cx,
                               proposals[..., 3] - cy), dim=-1)
        return targets / self._sizes(reference_boxes) if self.normalize_by_size else targets

    def decode(self, rel_codes, boxes):
        """The boxes whose sides lie ``rel_codes`` from the centres of ``boxes`` (same leading shape)."""
        boxes = boxes.to(dtype=rel_codes.dtype)
        cx = 0.5 * (boxes[..., 0] + boxes[..., 2])
        cy = 0.5 * (boxes[..., 1] + boxes[..., 3])
        if self.normalize_by_size:
            rel_codes = rel_codes * self._sizes(boxes)
        return ember.stack((cx - rel_codes[..., 0], cy - rel_codes[..., 1], cx + rel_codes[..., 2],
                            cy + rel_codes[..., 3]), dim=-1)


class Matcher:
    """Assigns each prediction (column of an M x N quality matrix) its best ground-truth row, or
    ``BELOW_LOW_THRESHOLD`` (-1) / ``BETWEEN_THRESHOLDS`` (-2) when the best quality is under
    ``low_threshold`` / ``high_threshold``.  With ``allow_low_quality_matches`` the predictions that are some
    ground truth's best (ties included) keep their match whatever its quality."""

    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold: float, low_threshold: float, allow_low_quality_matches: bool = False) -> None:
        if not low_threshold <= high_threshold:
            raise AssertionError("low_threshold should be <= high_threshold")
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix):
        """The int64 match of each of the N predictions."""
        if match_quality_matrix.numel() == 0:
            what = "ground-truth" if match_quality_matrix.shape[0] == 0 else "proposal"
            raise ValueError(f"No {what} boxes available for one of the images during training")
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below = matched_vals < self.low_threshold
        between = (matched_vals >= self.low_threshold) & (matched_vals < self.high_threshold)
        matches[below] = self.BELOW_LOW_THRESHOLD
        matches[between] = self.BETWEEN_THRESHOLDS
        if all_matches is not None:
            self.set_low_quality_matches_(matches, all_matches, match_quality_matrix)
        return matches

    def set_low_quality_matches_(self, matches, all_matches, match_quality_matrix) -> None:
        """Restore, in place, the match of every prediction that is the best (or tied best) of some ground truth."""
        best_per_gt = match_quality_matrix.max(dim=1)[0]
        preds = ember.where(match_quality_matrix == best_per_gt[:, None])[1]
        matches[preds] = all_matches[preds]


class SSDMatcher(Matcher):
    """One IoU ``threshold``; in addition each ground truth's best prediction is matched to it."""

    def __init__(self, threshold: float) -> None:
        super().__init__(threshold, threshold, allow_low_quality_matches=False)

    def __call__(self, match_quality_matrix):
        matches = super().__call__(match_quality_matrix)
        best_pred_per_gt = match_quality_matrix.max(dim=1)[1]
        matches[best_pred_per_gt] = ember.arange(best_pred_per_gt.size(0), dtype=ember.int64,
                                                 device=best_pred_per_gt.device)
        return matches


def overwrite_eps(model: nn.Module, eps: float) -> None:
    """Set ``eps`` of every FrozenBatchNorm2d in ``model`` (the legacy checkpoints were trained with 0.0)."""
    for module in model.modules():
        if isinstance(module, FrozenBatchNorm2d):
            module.eps = eps


def retrieve_out_channels(model: nn.Module, size) -> list:
    """The channel counts of ``model``'s feature maps (a tensor or a dict of them), found by running it in
    eval mode on a zero image of ``size`` = (width, height)."""
    was_training = model.training
    model.eval()
    with ember.no_grad():
        device = next(model.parameters()).device
        features = model(ember.zeros((1, 3, size[1], size[0]), device=device))
        if isinstance(features, ember.Tensor):
            features = OrderedDict([("0", features)])
        out_channels = [x.size(1) for x in features.values()]
    if was_training:
        model.train()
    return out_channels


def _topk_min(input, orig_kval: int, axis: int) -> int:
    """``orig_kval`` capped at the size of ``input`` along ``axis``."""
    return min(orig_kval, input.size(axis))


_IOU_LOSSES = {"ciou": complete_box_iou_loss, "diou": distance_box_iou_loss, "giou": generalized_box_iou_loss}


def _box_loss(type: str, box_coder, anchors_per_image, matched_gt_boxes_per_image, bbox_regression_per_image,
              cnf=None):
    """The summed box-regression loss of one image: ``l1``/``smooth_l1`` on the encoded targets, or an IoU
    loss (``ciou``/``diou``/``giou``) on the decoded boxes; ``cnf`` may give ``beta`` and ``eps``."""
    cnf = cnf or {}
    if type in ("l1", "smooth_l1"):
        target = box_coder.encode_single(matched_gt_boxes_per_image, anchors_per_image)
        if type == "l1":
            return F.l1_loss(bbox_regression_per_image, target, reduction="sum")
        return F.smooth_l1_loss(bbox_regression_per_image, target, reduction="sum", beta=cnf.get("beta", 1.0))
    if type not in _IOU_LOSSES:
        raise AssertionError(f"Unsupported loss: {type}")
    boxes = box_coder.decode_single(bbox_regression_per_image, anchors_per_image)
    return _IOU_LOSSES[type](boxes, matched_gt_boxes_per_image, reduction="sum", eps=cnf.get("eps", 1e-7))
