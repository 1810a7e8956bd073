"""The second stage of the R-CNN models: features pooled for each proposal, classified and refined into
boxes, and, for Mask and Keypoint R-CNN, a mask or key-point heatmaps per detection; with the losses of each
branch and the post-processing that maps masks and heatmaps back onto the image.
"""
from __future__ import annotations

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from ...ops import roi_align
from . import _utils as det_utils


def fastrcnn_loss(class_logits: Tensor, box_regression: Tensor, labels: list[Tensor],
                  regression_targets: list[Tensor]) -> tuple[Tensor, Tensor]:
    """Cross-entropy over the sampled proposals' classes, and smooth-L1 (beta 1/9) of the positive proposals'
    box deltas for their true class, summed and divided by the number of sampled proposals."""
    labels = ember.cat(labels, dim=0)
    regression_targets = ember.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, labels)
    positive = ember.where(labels > 0)[0]
    n = class_logits.shape[0]
    box_regression = box_regression.reshape(n, box_regression.size(-1) // 4, 4)
    box_loss = F.smooth_l1_loss(box_regression[positive, labels[positive]], regression_targets[positive],
                                beta=1 / 9, reduction="sum")
    return classification_loss, box_loss / labels.numel()


def maskrcnn_inference(x: Tensor, labels: list[Tensor]) -> list[Tensor]:
    """Per image, the sigmoid of each detection's mask logits for its predicted class, ``(n, 1, M, M)``."""
    counts = [len(lab) for lab in labels]
    labels = ember.cat(labels)
    probs = x.sigmoid()[ember.arange(x.shape[0], device=labels.device), labels][:, None]
    return list(probs.split(counts, dim=0))


def project_masks_on_boxes(gt_masks: Tensor, boxes: Tensor, matched_idxs: Tensor, M: int) -> Tensor:
    """The ground-truth mask matched to each box, cropped to the box and resampled to ``M x M`` (RoI Align)."""
    rois = ember.cat([matched_idxs.to(boxes)[:, None], boxes], dim=1)
    return roi_align(gt_masks[:, None].to(rois), rois, (M, M), 1.0)[:, 0]


def maskrcnn_loss(mask_logits: Tensor, proposals: list[Tensor], gt_masks: list[Tensor], gt_labels: list[Tensor],
                  mask_matched_idxs: list[Tensor]) -> Tensor:
    """Binary cross-entropy between each positive proposal's mask logits for its true class and its matched
    ground-truth mask projected onto the proposal (zero, keeping the graph, when there is none)."""
    size = mask_logits.shape[-1]
    labels = ember.cat([lab[idx] for lab, idx in zip(gt_labels, mask_matched_idxs)], dim=0)
    targets = ember.cat([project_masks_on_boxes(m, p, i, size)
                         for m, p, i in zip(gt_masks, proposals, mask_matched_idxs)], dim=0)
    if targets.numel() == 0:
        return mask_logits.sum() * 0
    logits = mask_logits[ember.arange(labels.shape[0], device=labels.device), labels]
    return F.binary_cross_entropy_with_logits(logits, targets)


def keypoints_to_heatmap(keypoints: Tensor, rois: Tensor, heatmap_size: int) -> tuple[Tensor, Tensor]:
    """Each key point's flat index in its RoI's ``heatmap_size``-square grid, and whether it is visible and
    inside the RoI (a point on the right or bottom edge counts as the last cell)."""
    x0, y0 = rois[:, 0][:, None], rois[:, 1][:, None]
    scale_x = (heatmap_size / (rois[:, 2] - rois[:, 0]))[:, None]
    scale_y = (heatmap_size / (rois[:, 3] - rois[:, 1]))[:, None]
    x, y = keypoints[..., 0], keypoints[..., 1]
    on_right, on_bottom = x == rois[:, 2][:, None], y == rois[:, 3][:, None]
    x = ((x - x0) * scale_x).floor().long()
    y = ((y - y0) * scale_y).floor().long()
    x[on_right] = heatmap_size - 1
    y[on_bottom] = heatmap_size - 1
    inside = (x >= 0) & (y >= 0) & (x < heatmap_size) & (y < heatmap_size)
    valid = (inside & (keypoints[..., 2] > 0)).long()
    return (y * heatmap_size + x) * valid, valid


def heatmaps_to_keypoints(maps: Tensor, rois: Tensor) -> tuple[Tensor, Tensor]:
    """Each RoI's heatmaps resized (bicubic) to the RoI's size rounded up; per key point the arg-max cell's
    centre in image coordinates ``(x, y, 1)`` and the resized map's value there.  Returns ``(R, K, 3)`` and
    ``(R, K)``."""
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    num_keypoints = maps.shape[1]
    xy_preds = ember.zeros((len(rois), 3, num_keypoints), dtype=ember.float32, device=maps.device)
    end_scores = ember.zeros((len(rois), num_keypoints), dtype=ember.float32, device=maps.device)
    w_ceil, h_ceil = widths.ceil().tolist(), heights.ceil().tolist()
    for i in range(len(rois)):
        out_w, out_h = int(w_ceil[i]), int(h_ceil[i])
        roi_map = F.interpolate(maps[i][:, None], size=(out_h, out_w), mode="bicubic", align_corners=False)[:, 0]
        pos = roi_map.reshape(num_keypoints, -1).argmax(dim=1)
        x_int = pos % out_w
        y_int = ember.div(pos - x_int, out_w, rounding_mode="floor")
        xy_preds[i, 0, :] = (x_int.float() + 0.5) * (widths[i] / out_w) + rois[i, 0]
        xy_preds[i, 1, :] = (y_int.float() + 0.5) * (heights[i] / out_h) + rois[i, 1]
        xy_preds[i, 2, :] = 1
        end_scores[i, :] = roi_map[ember.arange(num_keypoints, device=roi_map.device), y_int, x_int]
    return xy_preds.permute(0, 2, 1), end_scores


def keypointrcnn_loss(keypoint_logits: Tensor, proposals: list[Tensor], gt_keypoints: list[Tensor],
                      keypoint_matched_idxs: list[Tensor]) -> Tensor:
    """Cross-entropy over each positive proposal's heatmap cells for every visible key point inside it."""
    n, k, h, w = keypoint_logits.shape
    if h != w:
        raise ValueError(f"keypoint_logits height and width (last two elements of shape) should be equal. "
                         f"Instead got H = {h} and W = {w}")
    heatmaps, valid = [], []
    for boxes, gt, idx in zip(proposals, gt_keypoints, keypoint_matched_idxs):
        cells, ok = keypoints_to_heatmap(gt[idx], boxes, h)
        heatmaps.append(cells.view(-1))
        valid.append(ok.view(-1))
    targets = ember.cat(heatmaps, dim=0)
    valid = ember.where(ember.cat(valid, dim=0).to(dtype=ember.uint8))[0]
    if targets.numel() == 0 or len(valid) == 0:
        return keypoint_logits.sum() * 0
    return F.cross_entropy(keypoint_logits.view(n * k, h * w)[valid], targets[valid])


def keypointrcnn_inference(x: Tensor, boxes: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """:func:`heatmaps_to_keypoints` per image: the key points and their scores."""
    pairs = [heatmaps_to_keypoints(maps, b) for maps, b in zip(x.split([len(b) for b in boxes], dim=0), boxes)]
    return [p for p, _ in pairs], [s for _, s in pairs]


def expand_boxes(boxes: Tensor, scale: float) -> Tensor:
    """xyxy boxes grown by ``scale`` about their centres."""
    half_w = (boxes[:, 2] - boxes[:, 0]) * 0.5 * scale
    half_h = (boxes[:, 3] - boxes[:, 1]) * 0.5 * scale
    cx = (boxes[:, 2] + boxes[:, 0]) * 0.5
    cy = (boxes[:, 3] + boxes[:, 1]) * 0.5
    return ember.stack((cx - half_w, cy - half_h, cx + half_w, cy + half_h), dim=1)


def expand_masks(mask: Tensor, padding: int) -> tuple[Tensor, float]:
    """``(N, 1, M, M)`` masks zero-padded by ``padding`` on each side, and the scale that pads a box alike."""
    size = mask.shape[-1]
    return F.pad(mask, (padding,) * 4), float(size + 2 * padding) / size


def paste_mask_in_image(mask: Tensor, box: list[int], im_h: int, im_w: int) -> Tensor:
    """One ``M x M`` mask resized (bilinear) onto the integer box ``box`` of an ``im_h x im_w`` zero image."""
    x0, y0, x1, y1 = box
    w, h = max(x1 - x0 + 1, 1), max(y1 - y0 + 1, 1)
    mask = F.interpolate(mask.expand((1, 1, -1, -1)), size=(h, w), mode="bilinear", align_corners=False)[0][0]
    image = ember.zeros((im_h, im_w), dtype=mask.dtype, device=mask.device)
    left, right, top, bottom = max(x0, 0), min(x1 + 1, im_w), max(y0, 0), min(y1 + 1, im_h)
    image[top:bottom, left:right] = mask[top - y0: bottom - y0, left - x0: right - x0]
    return image


def paste_masks_in_image(masks: Tensor, boxes: Tensor, img_shape, padding: int = 1) -> Tensor:
    """Masks ``(N, 1, M, M)`` predicted for ``boxes`` pasted into images of ``img_shape``: ``(N, 1, H, W)``.
    Each mask is padded by ``padding`` and its box grown to match before resizing."""
    masks, scale = expand_masks(masks, padding=padding)
    boxes = expand_boxes(boxes, scale).to(dtype=ember.int64).tolist()
    im_h, im_w = img_shape
    pasted = [paste_mask_in_image(m[0], b, im_h, im_w) for m, b in zip(masks, boxes)]
    if not pasted:
        return masks.new_empty((0, 1, im_h, im_w))
    return ember.stack(pasted, dim=0)[:, None]


def _positive_proposals(proposals: list[Tensor], labels: list[Tensor], matched_idxs: list[Tensor]):
    """The proposals sampled as objects (label > 0) in each image, and the index of their matched target."""
    picks = [ember.where(lab > 0)[0] for lab in labels]
    return [p[i] for p, i in zip(proposals, picks)], [m[i] for m, i in zip(matched_idxs, picks)]


class RoIHeads(nn.Module):
    """``RoIHeads(box_roi_pool, box_head, box_predictor, fg_iou_thresh, bg_iou_thresh, batch_size_per_image,
    positive_fraction, bbox_reg_weights, score_thresh, nms_thresh, detections_per_img, mask_roi_pool=None,
    mask_head=None, mask_predictor=None, keypoint_roi_pool=None, keypoint_head=None, keypoint_predictor=None)``.

    ``forward(features, proposals, image_shapes, targets=None)`` returns one dict per image (eval) and the
    loss dict (training).  In training the proposals (with the ground-truth boxes added) are matched to the
    targets and sampled; the mask and key-point branches run on the positive samples.
    """

    def __init__(self, box_roi_pool, box_head, box_predictor, fg_iou_thresh, bg_iou_thresh, batch_size_per_image,
                 positive_fraction, bbox_reg_weights, score_thresh, nms_thresh, detections_per_img,
                 mask_roi_pool=None, mask_head=None, mask_predictor=None, keypoint_roi_pool=None, keypoint_head=None,
                 keypoint_predictor=None):
        super().__init__()
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=False)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self.box_coder = det_utils.BoxCoder(bbox_reg_weights if bbox_reg_weights is not None
                                            else (10.0, 10.0, 5.0, 5.0))
        self.box_roi_pool = box_roi_pool
        self.box_head = box_head
        self.box_predictor = box_predictor
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.mask_roi_pool = mask_roi_pool
        self.mask_head = mask_head
        self.mask_predictor = mask_predictor
        self.keypoint_roi_pool = keypoint_roi_pool
        self.keypoint_head = keypoint_head
        self.keypoint_predictor = keypoint_predictor

    def has_mask(self) -> bool:
        return None not in (self.mask_roi_pool, self.mask_head, self.mask_predictor)

    def has_keypoint(self) -> bool:
        return None not in (self.keypoint_roi_pool, self.keypoint_head, self.keypoint_predictor)

    def assign_targets_to_proposals(self, proposals, gt_boxes, gt_labels):
        """Per image, each proposal's matched target index (0 where unmatched) and label (0 background,
        -1 between the thresholds)."""
        matched_idxs, labels = [], []
        for boxes, gt, gt_labels_i in zip(proposals, gt_boxes, gt_labels):
            if gt.numel() == 0:
                matched = ember.zeros((boxes.shape[0],), dtype=ember.int64, device=boxes.device)
                label = ember.zeros((boxes.shape[0],), dtype=ember.int64, device=boxes.device)
            else:
                raw = self.proposal_matcher(box_ops.box_iou(gt, boxes))
                matched = raw.clamp(min=0)
                label = gt_labels_i[matched].to(dtype=ember.int64)
                label[raw == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0
                label[raw == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1
            matched_idxs.append(matched)
            labels.append(label)
        return matched_idxs, labels

    def subsample(self, labels: list[Tensor]) -> list[Tensor]:
        """Per image, the indices of the proposals the sampler keeps."""
        pos, neg = self.fg_bg_sampler(labels)
        return [ember.where(p | n)[0] for p, n in zip(pos, neg)]

    def add_gt_proposals(self, proposals, gt_boxes):
        return [ember.cat((p, gt)) for p, gt in zip(proposals, gt_boxes)]

    def check_targets(self, targets) -> None:
        if targets is None:
            raise ValueError("targets should not be None")
        for key in ("boxes", "labels") + (("masks",) if self.has_mask() else ()):
            if not all(key in t for t in targets):
                raise ValueError(f"Every element of targets should have a {key} key")

    def select_training_samples(self, proposals, targets):
        """The sampled proposals per image with their matched target indices, labels and box-regression
        targets."""
        self.check_targets(targets)
        dtype, device = proposals[0].dtype, proposals[0].device
        gt_boxes = [t["boxes"].to(dtype) for t in targets]
        proposals = self.add_gt_proposals(proposals, gt_boxes)
        matched_idxs, labels = self.assign_targets_to_proposals(proposals, gt_boxes, [t["labels"] for t in targets])
        matched_gt_boxes = []
        for i, keep in enumerate(self.subsample(labels)):
            proposals[i], labels[i], matched_idxs[i] = proposals[i][keep], labels[i][keep], matched_idxs[i][keep]
            gt = gt_boxes[i] if gt_boxes[i].numel() else ember.zeros((1, 4), dtype=dtype, device=device)
            matched_gt_boxes.append(gt[matched_idxs[i]])
        return proposals, matched_idxs, labels, self.box_coder.encode(matched_gt_boxes, proposals)

    def postprocess_detections(self, class_logits, box_regression, proposals, image_shapes):
        """Per image, one candidate per proposal and foreground class: decoded, clipped, kept when its softmax
        score is above ``score_thresh`` and the box not tiny, NMS per class, the best ``detections_per_img``."""
        num_classes = class_logits.shape[-1]
        counts = [len(p) for p in proposals]
        all_boxes = self.box_coder.decode(box_regression, proposals).split(counts, 0)
        all_scores = F.softmax(class_logits, -1).split(counts, 0)
        out_boxes, out_scores, out_labels = [], [], []
        for boxes, scores, shape in zip(all_boxes, all_scores, image_shapes):
            boxes = box_ops.clip_boxes_to_image(boxes, shape)
            labels = ember.arange(num_classes, device=class_logits.device).view(1, -1).expand_as(scores)
            # drop the background column, one row per (proposal, class)
            boxes, scores, labels = boxes[:, 1:].reshape(-1, 4), scores[:, 1:].reshape(-1), labels[:, 1:].reshape(-1)
            keep = ember.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = box_ops.remove_small_boxes(boxes, min_size=1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)[: self.detections_per_img]
            out_boxes.append(boxes[keep])
            out_scores.append(scores[keep])
            out_labels.append(labels[keep])
        return out_boxes, out_scores, out_labels

    def _check_target_types(self, targets) -> None:
        for t in targets:
            if t["boxes"].dtype not in (ember.float32, ember.float64, ember.float16):
                raise TypeError(f"target boxes must of float type, instead got {t['boxes'].dtype}")
            if t["labels"].dtype != ember.int64:
                raise TypeError(f"target labels must of int64 type, instead got {t['labels'].dtype}")
            if self.has_keypoint() and t["keypoints"].dtype != ember.float32:
                raise TypeError(f"target keypoints must of float type, instead got {t['keypoints'].dtype}")

    def forward(self, features, proposals, image_shapes, targets=None):
        if targets is not None:
            self._check_target_types(targets)
        if self.training:
            proposals, matched_idxs, labels, regression_targets = self.select_training_samples(proposals, targets)
        box_features = self.box_head(self.box_roi_pool(features, proposals, image_shapes))
        class_logits, box_regression = self.box_predictor(box_features)
        result, losses = [], {}
        if self.training:
            loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
            positives, positive_idxs = _positive_proposals(proposals, labels, matched_idxs)
        else:
            boxes, scores, labels = self.postprocess_detections(class_logits, box_regression, proposals,
                                                                image_shapes)
            result = [{"boxes": b, "labels": lab, "scores": s} for b, s, lab in zip(boxes, scores, labels)]
            positives = [r["boxes"] for r in result]
        if self.has_mask():
            mask_logits = self.mask_predictor(self.mask_head(self.mask_roi_pool(features, positives, image_shapes)))
            if self.training:
                losses["loss_mask"] = maskrcnn_loss(mask_logits, positives, [t["masks"] for t in targets],
                                                    [t["labels"] for t in targets], positive_idxs)
            else:
                for probs, r in zip(maskrcnn_inference(mask_logits, [r["labels"] for r in result]), result):
                    r["masks"] = probs
        if self.has_keypoint():
            keypoint_logits = self.keypoint_predictor(
                self.keypoint_head(self.keypoint_roi_pool(features, positives, image_shapes)))
            if self.training:
                losses["loss_keypoint"] = keypointrcnn_loss(keypoint_logits, positives,
                                                            [t["keypoints"] for t in targets], positive_idxs)
            else:
                for points, point_scores, r in zip(*keypointrcnn_inference(keypoint_logits, positives), result):
                    r["keypoints"] = points
                    r["keypoints_scores"] = point_scores
        return result, losses
