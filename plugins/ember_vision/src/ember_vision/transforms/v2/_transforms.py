"""transforms.v2 classes: one set of random parameters per call, applied to every image, video, mask, box set
and key-point set in the (arbitrarily nested) input, as torchvision does.

Plain tensors: when the input holds no Image/Video (nor PIL image), the first plain tensor is the image and
the others pass through untouched.
"""
from __future__ import annotations

import math
import numbers

import ember
from ember import Tensor, nn

from ... import tv_tensors
from .. import autoaugment as _v1_auto
from .. import functional as F1
from .. import transforms as F1_classes
from ..autoaugment import AutoAugmentPolicy, _apply_op, _fill_for
from . import functional as F
from .functional import InterpolationMode

_IMAGE_TYPES = (tv_tensors.Image, tv_tensors.Video)


def _flatten(x, leaves):
    if isinstance(x, (list, tuple)):
        return type(x), [_flatten(v, leaves) for v in x]
    if isinstance(x, dict):
        return dict, {k: _flatten(v, leaves) for k, v in x.items()}
    leaves.append(x)
    return None, len(leaves) - 1


def _unflatten(spec, leaves):
    kind, body = spec
    if kind is None:
        return leaves[body]
    if kind is dict:
        return {k: _unflatten(v, leaves) for k, v in body.items()}
    items = [_unflatten(v, leaves) for v in body]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def _is_pil(x) -> bool:
    return hasattr(x, "getbands")


class Transform(nn.Module):
    """Base class: ``make_params(flat_inputs)`` draws the parameters once, ``transform(inpt, params)`` applies
    them to one leaf of a transformable type."""

    _transformed_types = (Tensor,)

    def _needs_transform_list(self, flat):
        has_image = any(isinstance(x, _IMAGE_TYPES) or _is_pil(x) for x in flat)
        first_plain, out = True, []
        for x in flat:
            plain = isinstance(x, Tensor) and not isinstance(x, tv_tensors.TVTensor)
            if plain:
                out.append(first_plain and not has_image)
                first_plain = False
            else:
                out.append(isinstance(x, tv_tensors.TVTensor) or _is_pil(x))
        return out

    def make_params(self, flat_inputs) -> dict:
        return {}

    def transform(self, inpt, params: dict):
        raise NotImplementedError

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves = []
        spec = _flatten(sample, leaves)
        needs = self._needs_transform_list(leaves)
        params = self.make_params([x for x, n in zip(leaves, needs) if n])
        out = [self.transform(x, params) if n else x for x, n in zip(leaves, needs)]
        return _unflatten(spec, out)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.__dict__.items() if not k.startswith("_") and k != "training")


def _query_size(flat) -> list[int]:
    sizes = {tuple(F.get_size(x)) for x in flat if isinstance(x, (tv_tensors.Image, tv_tensors.Video, tv_tensors.Mask,
                                                                   Tensor)) or _is_pil(x)
             if not isinstance(x, (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints))}
    if not sizes:
        sizes = {tuple(F.get_size(x)) for x in flat}
    if len(sizes) != 1:
        raise ValueError(f"Found multiple HxW dimensions in the sample: {sorted(sizes)}")
    return list(sizes.pop())


class Compose(Transform):
    """Apply ``transforms`` in order."""

    def __init__(self, transforms):
        super().__init__()
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("Argument transforms should be a sequence of callables")
        if not transforms:
            raise ValueError("Pass at least one transform")
        self.transforms = transforms

    def forward(self, *inputs):
        needs_unpacking = len(inputs) > 1
        for t in self.transforms:
            outputs = t(*inputs)
            inputs = outputs if needs_unpacking else (outputs,)
        return outputs

    def extra_repr(self) -> str:
        return "\n".join(f"    {t}" for t in self.transforms)


class RandomApply(Transform):
    """Apply all of ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.transforms, self.p = list(transforms), p

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        if ember.rand(1).item() >= self.p:
            return sample
        for t in self.transforms:
            sample = t(sample)
        return sample


class RandomChoice(Transform):
    """Apply one of ``transforms``, picked with probabilities ``p`` (uniform by default)."""

    def __init__(self, transforms, p=None):
        super().__init__()
        if p is None:
            p = [1] * len(transforms)
        elif len(p) != len(transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != {len(transforms)}")
        self.transforms = transforms
        self.p = [x / sum(p) for x in p]

    def forward(self, *inputs):
        idx = int(ember.multinomial(ember.tensor(self.p), 1))
        return self.transforms[idx](*inputs)


class _RandomFlip(Transform):
    _fn = None

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.p = p

    def forward(self, *inputs):
        if ember.rand(1).item() >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return super().forward(*inputs)

    def transform(self, inpt, params):
        return type(self)._fn(inpt)


class RandomHorizontalFlip(_RandomFlip):
    """Mirror left-right with probability ``p``."""
    _fn = staticmethod(F.horizontal_flip)


class RandomVerticalFlip(_RandomFlip):
    """Mirror top-bottom with probability ``p``."""
    _fn = staticmethod(F.vertical_flip)


class Resize(Transform):
    """See :func:`functional.resize`."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias: bool = True):
        super().__init__()
        self.size = [size] if isinstance(size, int) else (list(size) if size is not None else None)
        self.interpolation, self.max_size, self.antialias = interpolation, max_size, antialias

    def transform(self, inpt, params):
        size = self.size if self.size is not None else [self.max_size]
        return F.resize(inpt, size if len(size) > 1 else size[0], self.interpolation, self.max_size, self.antialias)


class CenterCrop(Transform):
    """See :func:`functional.center_crop`."""

    def __init__(self, size):
        super().__init__()
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def transform(self, inpt, params):
        return F.center_crop(inpt, self.size)


class Pad(Transform):
    """See :func:`functional.pad`."""

    def __init__(self, padding, fill=0, padding_mode: str = "constant"):
        super().__init__()
        F._pad_sides(padding)
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("`padding_mode` must be one of 'constant', 'edge', 'reflect' or 'symmetric'.")
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def transform(self, inpt, params):
        fill = 0 if isinstance(inpt, tv_tensors.Mask) else self.fill
        return F.pad(inpt, self.padding, fill, self.padding_mode)


class RandomCrop(Transform):
    """A random ``size`` window, after optional ``padding`` (and padding up to ``size`` with
    ``pad_if_needed``)."""

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant"):
        super().__init__()
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    def make_params(self, flat_inputs):
        h, w = _query_size(flat_inputs)
        pads = list(F._pad_sides(self.padding)) if self.padding is not None else [0, 0, 0, 0]
        h, w = h + pads[1] + pads[3], w + pads[0] + pads[2]
        ch, cw = self.size
        if self.pad_if_needed:
            dw, dh = max(cw - w, 0), max(ch - h, 0)
            pads = [pads[0] + dw, pads[1] + dh, pads[2] + dw, pads[3] + dh]
            h, w = h + 2 * dh, w + 2 * dw
        if h < ch or w < cw:
            raise ValueError(f"Required crop size {(ch, cw)} is larger than input image size {(h, w)}.")
        top = int(ember.randint(0, h - ch + 1, size=(1,))) if h > ch else 0
        left = int(ember.randint(0, w - cw + 1, size=(1,))) if w > cw else 0
        return dict(pads=pads, top=top, left=left, height=ch, width=cw)

    def transform(self, inpt, params):
        if any(params["pads"]):
            inpt = F.pad(inpt, params["pads"], 0 if isinstance(inpt, tv_tensors.Mask) else self.fill,
                         self.padding_mode)
        return F.crop(inpt, params["top"], params["left"], params["height"], params["width"])


class RandomResizedCrop(Transform):
    """A crop of random area ``scale`` and aspect ``ratio`` of the input, resized to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias: bool = True):
        super().__init__()
        self.size = [size, size] if isinstance(size, int) else list(size)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        self.scale, self.ratio, self.interpolation, self.antialias = scale, ratio, interpolation, antialias

    def make_params(self, flat_inputs):
        height, width = _query_size(flat_inputs)
        area = height * width
        log_ratio = ember.log(ember.tensor(self.ratio))
        for _ in range(10):
            target = area * ember.empty(1).uniform_(self.scale[0], self.scale[1]).item()
            aspect = math.exp(ember.empty(1).uniform_(log_ratio[0].item(), log_ratio[1].item()).item())
            w, h = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                i = int(ember.randint(0, height - h + 1, size=(1,)))
                j = int(ember.randint(0, width - w + 1, size=(1,)))
                return dict(top=i, left=j, height=h, width=w)
        in_ratio = width / height
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            w, h = width, height
        return dict(top=(height - h) // 2, left=(width - w) // 2, height=h, width=w)

    def transform(self, inpt, params):
        return F.resized_crop(inpt, params["top"], params["left"], params["height"], params["width"], self.size,
                              self.interpolation, self.antialias)


class RandomRotation(Transform):
    """Rotate images and masks by an angle drawn from ``degrees``."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None,
                 fill=0):
        super().__init__()
        self.degrees = [-degrees, degrees] if isinstance(degrees, numbers.Number) else list(degrees)
        self.interpolation, self.expand, self.center, self.fill = interpolation, expand, center, fill

    def make_params(self, flat_inputs):
        return dict(angle=ember.empty(1).uniform_(self.degrees[0], self.degrees[1]).item())

    def transform(self, inpt, params):
        return F.rotate(inpt, params["angle"], self.interpolation, self.expand, self.center, self.fill)


class RandomAffine(Transform):
    """A random affine map: rotation from ``degrees``, translation up to ``translate`` (fractions of the
    size), ``scale`` and ``shear`` ranges; boxes follow their corners."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        self.degrees = [-degrees, degrees] if isinstance(degrees, numbers.Number) else list(degrees)
        if translate is not None and not all(0.0 <= t <= 1.0 for t in translate):
            raise ValueError("translation values should be between 0 and 1")
        if scale is not None and any(s <= 0 for s in scale):
            raise ValueError("scale values should be positive")
        self.translate, self.scale = translate, scale
        self.shear = [-shear, shear] if isinstance(shear, numbers.Number) else shear
        self.interpolation, self.fill, self.center = interpolation, fill, center

    def make_params(self, flat_inputs):
        height, width = _query_size(flat_inputs)
        draw = lambda lo, hi: ember.empty(1).uniform_(lo, hi).item()  # noqa: E731
        angle = draw(*self.degrees)
        tx = ty = 0
        if self.translate is not None:
            dx, dy = float(self.translate[0] * width), float(self.translate[1] * height)
            tx, ty = int(round(draw(-dx, dx))), int(round(draw(-dy, dy)))
        scale = draw(*self.scale) if self.scale is not None else 1.0
        shear = [0.0, 0.0]
        if self.shear is not None:
            shear[0] = draw(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear[1] = draw(self.shear[2], self.shear[3])
        return dict(angle=angle, translate=[tx, ty], scale=scale, shear=shear)

    def transform(self, inpt, params):
        return F.affine(inpt, params["angle"], params["translate"], params["scale"], params["shear"],
                        self.interpolation, self.fill, self.center)


class Normalize(Transform):
    """See :func:`functional.normalize`."""

    def __init__(self, mean, std, inplace: bool = False):
        super().__init__()
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def transform(self, inpt, params):
        return F.normalize(inpt, self.mean, self.std, self.inplace)


class Grayscale(Transform):
    """RGB to grayscale with ``num_output_channels`` channels."""

    def __init__(self, num_output_channels: int = 1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def transform(self, inpt, params):
        return F.rgb_to_grayscale(inpt, self.num_output_channels)


class RandomGrayscale(Transform):
    """Grayscale (keeping the channel count) with probability ``p``."""

    def __init__(self, p: float = 0.1):
        super().__init__()
        self.p = p

    def forward(self, *inputs):
        if ember.rand(1).item() >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return super().forward(*inputs)

    def make_params(self, flat_inputs):
        return dict(channels=next(F1.get_image_num_channels(F.to_pure_tensor(x)) if isinstance(x, Tensor) else 3
                                  for x in flat_inputs if not isinstance(x, (tv_tensors.BoundingBoxes,
                                                                             tv_tensors.Mask, tv_tensors.KeyPoints))))

    def transform(self, inpt, params):
        return F.rgb_to_grayscale(inpt, params["channels"])


class ColorJitter(Transform):
    """Random brightness, contrast, saturation and hue changes, in a random order, on images only."""

    def __init__(self, brightness=None, contrast=None, saturation=None, hue=None):
        super().__init__()
        self.brightness = self._range(brightness, "brightness")
        self.contrast = self._range(contrast, "contrast")
        self.saturation = self._range(saturation, "saturation")
        self.hue = self._range(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _range(value, name, center=1.0, bound=(0, float("inf")), clip_first_on_zero=True):
        if value is None:
            return None
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - value, center + value]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        value = [float(v) for v in value]
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else tuple(value)

    def make_params(self, flat_inputs):
        draw = lambda r: None if r is None else ember.empty(1).uniform_(r[0], r[1]).item()  # noqa: E731
        return dict(order=ember.randperm(4).tolist(), b=draw(self.brightness), c=draw(self.contrast),
                    s=draw(self.saturation), h=draw(self.hue))

    def transform(self, inpt, params):
        if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask, tv_tensors.KeyPoints)):
            return inpt
        fns = [(params["b"], F1.adjust_brightness), (params["c"], F1.adjust_contrast),
               (params["s"], F1.adjust_saturation), (params["h"], F1.adjust_hue)]
        out = F.to_pure_tensor(inpt) if isinstance(inpt, Tensor) else inpt
        for i in params["order"]:
            factor, fn = fns[i]
            if factor is not None:
                out = fn(out, factor)
        return F._rewrap(out, inpt)


class ToImage(Transform):
    """PIL images, NumPy arrays and plain tensors to :class:`~ember_vision.tv_tensors.Image`."""

    def _needs_transform_list(self, flat):
        import numpy as np
        return [(_is_pil(x) or isinstance(x, np.ndarray) or (isinstance(x, Tensor) and not isinstance(
            x, tv_tensors.TVTensor))) and i == 0 or _is_pil(x) for i, x in enumerate(flat)]

    def transform(self, inpt, params):
        return F.to_image(inpt)


class ToPureTensor(Transform):
    """Every TVTensor to a plain Tensor."""

    def _needs_transform_list(self, flat):
        return [isinstance(x, tv_tensors.TVTensor) for x in flat]

    def transform(self, inpt, params):
        return F.to_pure_tensor(inpt)


class ToDtype(Transform):
    """Convert to ``dtype`` (a dtype, or a dict from TVTensor type — or ``"others"`` — to dtype), rescaling
    image values when ``scale=True``."""

    def __init__(self, dtype, scale: bool = False):
        super().__init__()
        self.dtype, self.scale = dtype, scale

    def transform(self, inpt, params):
        if isinstance(self.dtype, dict):
            key = type(inpt) if type(inpt) in self.dtype else (
                tv_tensors.Image if isinstance(inpt, Tensor) and not isinstance(inpt, tv_tensors.TVTensor)
                and tv_tensors.Image in self.dtype else "others")
            dtype = self.dtype.get(key)
            if dtype is None:
                return inpt
        elif isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask, tv_tensors.KeyPoints)):
            return inpt  # a single dtype applies to images and videos only, as in torchvision
        else:
            dtype = self.dtype
        return F.to_dtype(inpt, dtype, self.scale)


def _find_labels(flat_sample):
    if isinstance(flat_sample, dict):
        for key in flat_sample:
            if isinstance(key, str) and key.lower() == "labels":
                return flat_sample[key]
    raise ValueError("Could not infer where the labels are in the sample. Try passing a callable as the "
                     "labels_getter parameter?")


class SanitizeBoundingBoxes(Transform):
    """Drop boxes smaller than ``min_size`` per side or ``min_area``, or outside their canvas, with their
    labels (the ``"labels"`` key of a dict sample by default) and their masks."""

    def __init__(self, min_size: float = 1.0, min_area: float = 1.0, labels_getter="default"):
        super().__init__()
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}.")
        if min_area < 1:
            raise ValueError(f"min_area must be >= 1, got {min_area}.")
        self.min_size, self.min_area, self.labels_getter = min_size, min_area, labels_getter

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        labels = None
        if self.labels_getter is not None:
            probe = sample[1] if isinstance(sample, tuple) and len(sample) == 2 and isinstance(sample[1], dict) \
                else sample
            labels = _find_labels(probe) if self.labels_getter == "default" else self.labels_getter(sample)
        leaves = []
        spec = _flatten(sample, leaves)
        boxes = [x for x in leaves if isinstance(x, tv_tensors.BoundingBoxes)]
        if len(boxes) != 1:
            raise ValueError(f"SanitizeBoundingBoxes: expected one BoundingBoxes in the sample, got {len(boxes)}")
        b = boxes[0]
        xyxy = F.box_convert(F.to_pure_tensor(b).float(), F._FMT[b.format], "xyxy")
        ws, hs = xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1]
        h, w = b.canvas_size
        valid = (ws >= self.min_size) & (hs >= self.min_size) & (ws * hs >= self.min_area)
        valid = valid & (xyxy[:, 0] < w) & (xyxy[:, 1] < h) & (xyxy[:, 2] > 0) & (xyxy[:, 3] > 0)
        n = b.shape[0]

        def keep(x):
            is_labels = labels is not None and x is labels
            if isinstance(x, tv_tensors.BoundingBoxes) or is_labels or (
                    isinstance(x, tv_tensors.Mask) and x.ndim >= 3 and x.shape[0] == n):
                out = F.to_pure_tensor(x)[valid]
                return F._rewrap(out, x)
            return x

        return _unflatten(spec, [keep(x) for x in leaves])


class _BaseMixUpCutMix(Transform):
    def __init__(self, *, alpha: float = 1.0, num_classes: int | None = None, labels_getter="default"):
        super().__init__()
        self.alpha, self.num_classes = float(alpha), num_classes
        self.labels_getter = labels_getter

    def forward(self, *inputs):
        images, labels = inputs if len(inputs) > 1 else inputs[0]
        if not isinstance(labels, Tensor) or labels.ndim not in (1, 2):
            raise ValueError("The labels should be a tensor of shape (batch_size,) or (batch_size, num_classes)")
        x = F.to_pure_tensor(images)
        if x.ndim != 4:
            raise ValueError(f"Expected a batched input with 4 dims, but got {x.ndim} dimensions.")
        if labels.ndim == 1:
            if self.num_classes is None:
                raise ValueError("num_classes is required when labels are class indices")
            labels = ember.nn.functional.one_hot(labels, num_classes=self.num_classes)
        labels = labels.to(x.dtype if x.is_floating_point() else ember.float32)
        lam = float(ember.distributions.Beta(ember.tensor([self.alpha]), ember.tensor([self.alpha])).sample())
        out, lam = self._mix(x, lam)
        mixed = labels.roll(1, 0).mul(1.0 - lam).add(labels.mul(lam))
        return F._rewrap(out, images), mixed


class MixUp(_BaseMixUpCutMix):
    """MixUp (Zhang et al. 2017) on a batch: images and one-hot labels blended with the batch rolled by one,
    by a weight drawn from Beta(alpha, alpha)."""

    def _mix(self, x, lam):
        return x.roll(1, 0).mul(1.0 - lam).add(x.mul(lam)), lam


class CutMix(_BaseMixUpCutMix):
    """CutMix (Yun et al. 2019) on a batch: a random box of each image is pasted from the batch rolled by one;
    labels are mixed by the box's share of the image."""

    def _mix(self, x, lam):
        h, w = x.shape[-2:]
        rx, ry = int(ember.randint(0, w, (1,))), int(ember.randint(0, h, (1,)))
        rw, rh = 0.5 * math.sqrt(1.0 - lam) * w, 0.5 * math.sqrt(1.0 - lam) * h
        x1, y1 = int(max(rx - rw, 0)), int(max(ry - rh, 0))
        x2, y2 = int(min(rx + rw, w)), int(min(ry + rh, h))
        out = x.clone()
        out[..., y1:y2, x1:x2] = x.roll(1, 0)[..., y1:y2, x1:x2]
        return out, 1.0 - float((x2 - x1) * (y2 - y1)) / (w * h)


# -- automatic augmentation, erasing, perspective and elastic distortion: one draw per call, on every image
class _ImageTransform(Transform):
    """Transforms that act on images and videos (and PIL/plain-tensor images) only; a sample holding
    bounding boxes or masks is refused, as torchvision's auto-augment transforms do."""

    _refused = (tv_tensors.BoundingBoxes, tv_tensors.Mask)

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves = []
        _flatten(sample, leaves)
        refused = [type(x).__name__ for x in leaves if isinstance(x, self._refused)]
        if refused:
            raise TypeError(f"{type(self).__name__}() does not support {', '.join(sorted(set(refused)))} inputs")
        return super().forward(*inputs)


class _AutoAugmentBase(_ImageTransform):
    """Wraps the v1 policy ``self._policy``: its ops are drawn once per call for the sample's size."""

    def make_params(self, flat_inputs):
        h, w = _query_size(flat_inputs)
        return {"steps": self._policy.draw(h, w)}

    def transform(self, inpt, params):
        def apply(img):
            fill = _fill_for(img, self._policy.fill)
            for op_name, magnitude in params["steps"]:
                img = _apply_op(img, op_name, magnitude, self._policy.interpolation, fill)
            return img
        return F._on_image(inpt, apply)


class AutoAugment(_AutoAugmentBase):
    """See :class:`ember_vision.transforms.AutoAugment`."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self._policy = _v1_auto.AutoAugment(policy, interpolation, fill)
        self.policy, self.interpolation, self.fill = policy, interpolation, fill


class RandAugment(_AutoAugmentBase):
    """See :class:`ember_vision.transforms.RandAugment`."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self._policy = _v1_auto.RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation, fill)
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins
        self.interpolation, self.fill = interpolation, fill


class TrivialAugmentWide(_AutoAugmentBase):
    """See :class:`ember_vision.transforms.TrivialAugmentWide`."""

    def __init__(self, num_magnitude_bins: int = 31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self._policy = _v1_auto.TrivialAugmentWide(num_magnitude_bins, interpolation, fill)
        self.num_magnitude_bins, self.interpolation, self.fill = num_magnitude_bins, interpolation, fill


class AugMix(_ImageTransform):
    """See :class:`ember_vision.transforms.AugMix` (each image of the sample mixed with its own chains)."""

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__()
        self._augmix = _v1_auto.AugMix(severity, mixture_width, chain_depth, alpha, all_ops, interpolation, fill)
        self.severity, self.mixture_width, self.chain_depth, self.alpha = severity, mixture_width, chain_depth, alpha
        self.all_ops, self.interpolation, self.fill = all_ops, interpolation, fill

    def transform(self, inpt, params):
        return F._on_image(inpt, self._augmix)


class RandomErasing(Transform):
    """See :class:`ember_vision.transforms.RandomErasing`: one rectangle per call, erased in every image and
    video; boxes and masks pass through."""

    def __init__(self, p: float = 0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace: bool = False):
        super().__init__()
        self._v1 = F1_classes.RandomErasing(p, scale, ratio, value, inplace)
        self.p, self.scale, self.ratio, self.value, self.inplace = p, tuple(scale), tuple(ratio), value, inplace

    def forward(self, *inputs):
        if ember.rand(1).item() >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return super().forward(*inputs)

    def make_params(self, flat_inputs):
        image = next(x for x in flat_inputs if isinstance(x, Tensor) and not isinstance(
            x, (tv_tensors.BoundingBoxes, tv_tensors.Mask, tv_tensors.KeyPoints)))
        value = None if self.value == "random" else self.value
        return dict(zip("ijhwv", self._v1.get_params(F._plain(image), self.scale, self.ratio, value)))

    def transform(self, inpt, params):
        if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask, tv_tensors.KeyPoints)) or _is_pil(inpt):
            return inpt
        return F.erase(inpt, params["i"], params["j"], params["h"], params["w"], params["v"], self.inplace)


class RandomPerspective(Transform):
    """See :class:`ember_vision.transforms.RandomPerspective` (images, videos and masks)."""

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        super().__init__()
        if not 0 <= distortion_scale <= 1:
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        self.distortion_scale, self.p, self.interpolation, self.fill = distortion_scale, p, interpolation, fill

    def forward(self, *inputs):
        if ember.rand(1).item() >= self.p:
            return inputs if len(inputs) > 1 else inputs[0]
        return super().forward(*inputs)

    def make_params(self, flat_inputs):
        h, w = _query_size(flat_inputs)
        start, end = F1_classes.RandomPerspective.get_params(w, h, self.distortion_scale)
        return {"startpoints": start, "endpoints": end}

    def transform(self, inpt, params):
        fill = _fill_for(inpt, self.fill) if isinstance(inpt, Tensor) else self.fill
        return F.perspective(inpt, params["startpoints"], params["endpoints"], self.interpolation, fill)


class ElasticTransform(Transform):
    """See :class:`ember_vision.transforms.ElasticTransform` (images, videos and masks)."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        super().__init__()
        self._v1 = F1_classes.ElasticTransform(alpha, sigma, interpolation, fill)
        self.alpha, self.sigma, self.interpolation, self.fill = self._v1.alpha, self._v1.sigma, interpolation, fill

    def make_params(self, flat_inputs):
        return {"displacement": self._v1.get_params(self.alpha, self.sigma, _query_size(flat_inputs))}

    def transform(self, inpt, params):
        fill = _fill_for(inpt, self.fill) if isinstance(inpt, Tensor) else self.fill
        return F.elastic(inpt, params["displacement"], self.interpolation, fill)
