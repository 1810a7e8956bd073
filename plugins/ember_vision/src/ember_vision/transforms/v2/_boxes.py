"""v2 transforms for detection samples: box and key-point bookkeeping (format, clamping, sanitizing) and the
scale/zoom/IoU-crop augmentations of detection recipes, with torchvision 0.28's parameter draws."""
from __future__ import annotations

import ember

from ... import tv_tensors
from ...ops.boxes import box_iou
from . import functional as F
from ._transforms import Transform, _flatten, _query_size, _unflatten
from .functional import InterpolationMode


class _OnType(Transform):
    """A transform that applies ``_apply(inpt)`` to the leaves of one TVTensor type and passes others through."""

    _type = tv_tensors.TVTensor

    def _needs_transform_list(self, flat):
        return [isinstance(x, self._type) for x in flat]

    def transform(self, inpt, params):
        return self._apply(inpt)


class ConvertBoundingBoxFormat(_OnType):
    """Convert boxes to ``format`` (a :class:`~ember_vision.tv_tensors.BoundingBoxFormat` or its name)."""

    _type = tv_tensors.BoundingBoxes

    def __init__(self, format):
        super().__init__()
        self.format = format

    def _apply(self, inpt):
        return F.convert_bounding_box_format(inpt, new_format=self.format)


class ClampBoundingBoxes(_OnType):
    """Clamp boxes to their canvas (``clamping_mode="auto"`` uses each box set's own mode)."""

    _type = tv_tensors.BoundingBoxes

    def __init__(self, clamping_mode="auto"):
        super().__init__()
        self.clamping_mode = clamping_mode

    def _apply(self, inpt):
        return F.clamp_bounding_boxes(inpt, clamping_mode=self.clamping_mode)


class ClampKeyPoints(_OnType):
    """Clamp key points to their canvas."""

    _type = tv_tensors.KeyPoints

    def _apply(self, inpt):
        return F.clamp_keypoints(inpt)


class SetClampingMode(_OnType):
    """Set the ``clamping_mode`` (``"soft"``, ``"hard"`` or ``None``) that later transforms use for boxes."""

    _type = tv_tensors.BoundingBoxes

    def __init__(self, clamping_mode):
        super().__init__()
        if clamping_mode not in (None, "soft", "hard"):
            raise ValueError(f"clamping_mode must be soft, hard or None, got {clamping_mode}")
        self.clamping_mode = clamping_mode

    def _apply(self, inpt):
        return tv_tensors.wrap(F.to_pure_tensor(inpt).clone(), like=inpt, clamping_mode=self.clamping_mode)


class SanitizeKeyPoints(Transform):
    """Drop key points (or groups of points along the first dimension) outside their canvas, with their labels
    (``labels_getter``: a callable on the sample, or ``None`` for none)."""

    def __init__(self, labels_getter=None):
        super().__init__()
        self.labels_getter = labels_getter

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        labels = self.labels_getter(sample) if self.labels_getter is not None else None
        leaves = []
        spec = _flatten(sample, leaves)
        points = [x for x in leaves if isinstance(x, tv_tensors.KeyPoints)]
        if len(points) != 1:
            raise ValueError(f"SanitizeKeyPoints: expected one KeyPoints in the sample, got {len(points)}")
        _, valid = F.sanitize_keypoints(points[0])
        labels = labels if isinstance(labels, (list, tuple)) else [labels]

        def keep(x):
            if isinstance(x, tv_tensors.KeyPoints) or any(x is lab for lab in labels if lab is not None):
                return F._rewrap(F.to_pure_tensor(x)[valid], x)
            return x

        return _unflatten(spec, [keep(x) for x in leaves])


class RandomZoomOut(Transform):
    """With probability ``p``, place the input on a canvas ``side_range`` times its size, filled with ``fill``
    (boxes and points move with it)."""

    def __init__(self, fill=0, side_range=(1.0, 4.0), p: float = 0.5):
        super().__init__()
        if len(side_range) != 2:
            raise TypeError("side_range should be a sequence of length 2.")
        if side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ValueError(f"Invalid side range provided {side_range}.")
        self.fill, self.side_range, self.p = fill, side_range, p

    def forward(self, *inputs):
        if ember.rand(1).item() >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return super().forward(*inputs)

    def make_params(self, flat_inputs):
        h, w = _query_size(flat_inputs)
        r = self.side_range[0] + ember.rand(1).item() * (self.side_range[1] - self.side_range[0])
        canvas_w, canvas_h = int(w * r), int(h * r)
        rx, ry = ember.rand(2).tolist()
        left, top = int((canvas_w - w) * rx), int((canvas_h - h) * ry)
        return {"padding": [left, top, canvas_w - (left + w), canvas_h - (top + h)]}

    def transform(self, inpt, params):
        fill = 0 if isinstance(inpt, tv_tensors.Mask) else self.fill
        return F.pad(inpt, params["padding"], fill=fill)


class RandomIoUCrop(Transform):
    """SSD's crop: a window of ``min_scale``-``max_scale`` of each side and aspect ratio within bounds, holding the
    centre of at least one box whose IoU with it reaches a threshold drawn from ``sampler_options`` (1.0 or more
    leaves the sample as it is); boxes whose centre falls outside are zeroed (follow with
    SanitizeBoundingBoxes)."""

    def __init__(self, min_scale: float = 0.3, max_scale: float = 1.0, min_aspect_ratio: float = 0.5,
                 max_aspect_ratio: float = 2.0, sampler_options=None, trials: int = 40):
        super().__init__()
        self.min_scale, self.max_scale = min_scale, max_scale
        self.min_aspect_ratio, self.max_aspect_ratio = min_aspect_ratio, max_aspect_ratio
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None else sampler_options
        self.trials = trials

    def make_params(self, flat_inputs):
        boxes = [x for x in flat_inputs if isinstance(x, tv_tensors.BoundingBoxes)]
        if len(boxes) != 1:
            raise TypeError(f"{type(self).__name__}() requires input sample to contain tensor or PIL images "
                            "and bounding boxes. Sample can also contain masks.")
        h, w = _query_size(flat_inputs)
        xyxy = F.to_pure_tensor(F.convert_bounding_box_format(boxes[0], new_format="XYXY"))
        xyxy = xyxy if xyxy.is_floating_point() else xyxy.float()
        cx, cy = 0.5 * (xyxy[..., 0] + xyxy[..., 2]), 0.5 * (xyxy[..., 1] + xyxy[..., 3])
        while True:
            threshold = self.options[int(ember.randint(0, len(self.options), (1,)).item())]
            if threshold >= 1.0:
                return {}
            for _ in range(self.trials):
                params = self._window(h, w)
                if params is None:
                    continue
                top, left, new_h, new_w = params
                inside = (left < cx) & (cx < left + new_w) & (top < cy) & (cy < top + new_h)
                if not inside.any():
                    continue
                window = ember.tensor([[left, top, left + new_w, top + new_h]], dtype=xyxy.dtype)
                if box_iou(xyxy[inside], window).max().item() < threshold:
                    continue
                return {"top": top, "left": left, "height": new_h, "width": new_w, "is_within_crop_area": inside}

    def _window(self, h, w):
        """One draw of (top, left, height, width), or None when its aspect ratio or size is out of bounds."""
        rw, rh = (self.min_scale + (self.max_scale - self.min_scale) * ember.rand(2)).tolist()
        new_w, new_h = int(w * rw), int(h * rh)
        if new_h == 0 or not self.min_aspect_ratio <= new_w / new_h <= self.max_aspect_ratio:
            return None
        rx, ry = ember.rand(2).tolist()
        left, top = int((w - new_w) * rx), int((h - new_h) * ry)
        return None if new_w == 0 else (top, left, new_h, new_w)

    def transform(self, inpt, params):
        if not params:
            return inpt
        out = F.crop(inpt, params["top"], params["left"], params["height"], params["width"])
        if isinstance(out, tv_tensors.BoundingBoxes):
            kept = params["is_within_crop_area"][:, None].to(out.dtype)
            out = tv_tensors.wrap(F.to_pure_tensor(out) * kept, like=out)
        return out


class _RandomSize(Transform):
    """Resize to the size ``make_params`` draws."""

    def __init__(self, interpolation=InterpolationMode.BILINEAR, antialias: bool = True):
        super().__init__()
        self.interpolation, self.antialias = interpolation, antialias

    def transform(self, inpt, params):
        return F.resize(inpt, params["size"], interpolation=self.interpolation, antialias=self.antialias)


class ScaleJitter(_RandomSize):
    """Resize so the input fits ``target_size`` ``(height, width)`` times a factor drawn from ``scale_range``,
    keeping the aspect ratio (Large Scale Jitter)."""

    def __init__(self, target_size, scale_range=(0.1, 2.0), interpolation=InterpolationMode.BILINEAR,
                 antialias: bool = True):
        super().__init__(interpolation, antialias)
        self.target_size, self.scale_range = target_size, scale_range

    def make_params(self, flat_inputs):
        h, w = _query_size(flat_inputs)
        scale = self.scale_range[0] + ember.rand(1).item() * (self.scale_range[1] - self.scale_range[0])
        # torchvision pairs target_size[1] with the height and target_size[0] with the width
        r = min(self.target_size[1] / h, self.target_size[0] / w) * scale
        return {"size": (int(h * r), int(w * r))}


class RandomShortestSize(_RandomSize):
    """Resize the shorter side to a size drawn from ``min_size``, the longer side at most ``max_size``."""

    def __init__(self, min_size, max_size=None, interpolation=InterpolationMode.BILINEAR, antialias: bool = True):
        super().__init__(interpolation, antialias)
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size = max_size

    def make_params(self, flat_inputs):
        h, w = _query_size(flat_inputs)
        r = self.min_size[int(ember.randint(0, len(self.min_size), ()).item())] / min(h, w)
        if self.max_size is not None:
            r = min(r, self.max_size / max(h, w))
        return {"size": (int(h * r), int(w * r))}


class RandomResize(_RandomSize):
    """Resize the shorter side to a size drawn uniformly from ``[min_size, max_size)``."""

    def __init__(self, min_size: int, max_size: int, interpolation=InterpolationMode.BILINEAR,
                 antialias: bool = True):
        super().__init__(interpolation, antialias)
        self.min_size, self.max_size = min_size, max_size

    def make_params(self, flat_inputs):
        return {"size": [int(ember.randint(self.min_size, self.max_size, ()).item())]}
