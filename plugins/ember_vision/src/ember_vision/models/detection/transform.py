"""What a detection model does to its images before the backbone and to its predictions after the heads:
normalise, resize (shorter side to ``min_size``, longer side at most ``max_size``), pad into one batch whose
sides are multiples of ``size_divisible``; afterwards map boxes, masks and key points back to each input's size.
"""
from __future__ import annotations

import math

import ember
from ember import Tensor, nn
from ember.nn import functional as F

from .image_list import ImageList
from .roi_heads import paste_masks_in_image


def _resize_image_and_masks(image: Tensor, self_min_size: int, self_max_size: int, target: dict | None = None,
                            fixed_size: tuple[int, int] | None = None):
    """Resize one ``(C, H, W)`` image, and its target's ``masks`` with nearest sampling.  Without ``fixed_size``
    (``(w, h)``) one scale factor applies to both sides, the output side being ``floor(side * factor)``."""
    if fixed_size is not None:
        size, factor, recompute = [fixed_size[1], fixed_size[0]], None, None
    else:
        h, w = image.shape[-2:]
        size, factor, recompute = None, min(self_min_size / min(h, w), self_max_size / max(h, w)), True
    image = F.interpolate(image[None], size=size, scale_factor=factor, mode="bilinear",
                          recompute_scale_factor=recompute, align_corners=False)[0]
    if target is not None and "masks" in target:
        masks = F.interpolate(target["masks"][:, None].float(), size=size, scale_factor=factor,
                              recompute_scale_factor=recompute)
        target["masks"] = masks[:, 0].byte()
    return image, target


def _ratios(original_size, new_size, device) -> list[Tensor]:
    """``new / original`` per side, as float32 scalars (the rounding torchvision's resized boxes carry)."""
    return [ember.tensor(s, dtype=ember.float32, device=device) / ember.tensor(s0, dtype=ember.float32, device=device)
            for s, s0 in zip(new_size, original_size)]


def resize_boxes(boxes: Tensor, original_size, new_size) -> Tensor:
    """``(N, 4)`` xyxy boxes drawn on an image of ``original_size`` (h, w), rescaled to ``new_size``."""
    ratio_h, ratio_w = _ratios(original_size, new_size, boxes.device)
    x0, y0, x1, y1 = boxes.unbind(1)
    return ember.stack((x0 * ratio_w, y0 * ratio_h, x1 * ratio_w, y1 * ratio_h), dim=1)


def resize_keypoints(keypoints: Tensor, original_size, new_size) -> Tensor:
    """``(N, K, 3)`` key points ``(x, y, visibility)`` rescaled from ``original_size`` (h, w) to ``new_size``."""
    ratio_h, ratio_w = _ratios(original_size, new_size, keypoints.device)
    out = keypoints.clone()
    out[..., 0] *= ratio_w
    out[..., 1] *= ratio_h
    return out


class GeneralizedRCNNTransform(nn.Module):
    """Normalise with ``image_mean``/``image_std``, resize, batch; ``forward(images, targets=None)`` returns an
    :class:`ImageList` and the resized targets (copies: the caller's dicts are left as they were).

    >>> import ember
    >>> t = GeneralizedRCNNTransform(32, 64, [0.5] * 3, [0.25] * 3).eval()
    >>> batch, _ = t([ember.rand(3, 20, 30)])
    >>> tuple(batch.tensors.shape), batch.image_sizes
    ((1, 3, 32, 64), [(32, 48)])
    """

    def __init__(self, min_size, max_size: int, image_mean: list[float], image_std: list[float],
                 size_divisible: int = 32, fixed_size: tuple[int, int] | None = None, **kwargs) -> None:
        super().__init__()
        self.min_size = tuple(min_size) if isinstance(min_size, (list, tuple)) else (min_size,)
        self.max_size = max_size
        self.image_mean = image_mean
        self.image_std = image_std
        self.size_divisible = size_divisible
        self.fixed_size = fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def forward(self, images: list[Tensor], targets: list[dict] | None = None):
        images = list(images)
        if targets is not None:
            targets = [dict(t) for t in targets]
        for i, image in enumerate(images):
            if image.dim() != 3:
                raise ValueError(f"images is expected to be a list of 3d tensors of shape [C, H, W], got "
                                 f"{image.shape}")
            target = targets[i] if targets is not None else None
            images[i], target = self.resize(self.normalize(image), target)
            if target is not None:
                targets[i] = target
        sizes = [(int(img.shape[-2]), int(img.shape[-1])) for img in images]
        return ImageList(self.batch_images(images, size_divisible=self.size_divisible), sizes), targets

    def normalize(self, image: Tensor) -> Tensor:
        """``(image - mean) / std`` per channel; the image must be floating point (values in [0, 1])."""
        if not image.is_floating_point():
            raise TypeError(f"Expected input images to be of floating type (in range [0, 1]), but found type "
                            f"{image.dtype} instead")
        mean = ember.as_tensor(self.image_mean, dtype=image.dtype, device=image.device)
        std = ember.as_tensor(self.image_std, dtype=image.dtype, device=image.device)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k: list[int]) -> int:
        """A random element of ``k``, drawn from ember's generator (as torchvision draws from PyTorch's)."""
        return k[int(ember.empty(1).uniform_(0.0, float(len(k))).item())]

    def resize(self, image: Tensor, target: dict | None = None):
        """Resize ``image`` (to a random one of ``min_size`` in training, the last one in eval) and rescale the
        target's boxes, masks and key points with it."""
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image, target = _resize_image_and_masks(image, size, self.max_size, target, self.fixed_size)
        if target is None:
            return image, target
        new = image.shape[-2:]
        target["boxes"] = resize_boxes(target["boxes"], (h, w), new)
        if "keypoints" in target:
            target["keypoints"] = resize_keypoints(target["keypoints"], (h, w), new)
        return image, target

    def max_by_axis(self, the_list: list[list[int]]) -> list[int]:
        """The largest entry of each position across ``the_list``'s lists."""
        return [max(column) for column in zip(*the_list)]

    def batch_images(self, images: list[Tensor], size_divisible: int = 32) -> Tensor:
        """Zero-pad ``images`` at the bottom and right into one batch, its sides rounded up to
        ``size_divisible``."""
        channels, height, width = self.max_by_axis([list(img.shape) for img in images])
        stride = float(size_divisible)
        height, width = (int(math.ceil(s / stride) * stride) for s in (height, width))
        batch = images[0].new_full((len(images), channels, height, width), 0)
        for i, img in enumerate(images):
            batch[i, : img.shape[0], : img.shape[1], : img.shape[2]].copy_(img)
        return batch

    def postprocess(self, result: list[dict], image_shapes, original_image_sizes) -> list[dict]:
        """In eval mode, each prediction's boxes and key points rescaled from the resized image to the input's
        size, and its masks pasted into an image of that size; in training ``result`` unchanged."""
        if self.training:
            return result
        for pred, resized, original in zip(result, image_shapes, original_image_sizes):
            pred["boxes"] = resize_boxes(pred["boxes"], resized, original)
            if "masks" in pred:
                pred["masks"] = paste_masks_in_image(pred["masks"], pred["boxes"], original)
            if "keypoints" in pred:
                pred["keypoints"] = resize_keypoints(pred["keypoints"], resized, original)
        return result

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(\n    Normalize(mean={self.image_mean}, std={self.image_std})\n    "
                f"Resize(min_size={self.min_size}, max_size={self.max_size}, mode='bilinear')\n)")
