"""The inference preprocessing of pretrained weights: what ``weights.transforms()`` returns.

Each ``*_Weights`` member carries a partial of one of these presets with the sizes, filter and statistics its
checkpoint was evaluated with, as torchvision's ``transforms._presets`` (arguments, outputs, ``repr`` and
``describe()`` as in torchvision 0.28).

>>> from ember_vision.models import ResNet50_Weights
>>> ResNet50_Weights.IMAGENET1K_V2.transforms().resize_size
[232]
"""
from __future__ import annotations

import ember
from ember import nn

from . import functional as F
from .functional import InterpolationMode

__all__ = ["ObjectDetection", "ImageClassification", "VideoClassification", "SemanticSegmentation", "OpticalFlow"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
KINETICS_MEAN = (0.43216, 0.394666, 0.37645)
KINETICS_STD = (0.22803, 0.22145, 0.216989)

_ACCEPTS_IMAGES = ("Accepts ``PIL.Image``, batched ``(B, C, H, W)`` and single ``(C, H, W)`` image "
                   "``torch.Tensor`` objects. ")


def _float_image(img) -> ember.Tensor:
    """A PIL image or tensor image as a float32 tensor with values in ``[0, 1]``."""
    if not isinstance(img, ember.Tensor):
        img = F.pil_to_tensor(img)
    return F.convert_image_dtype(img, ember.float32)


def _settings_repr(module, names: tuple) -> str:
    """``Name(`` then one ``name=value`` line per setting, indented four spaces, and ``)``."""
    lines = "".join(f"\n    {name}={getattr(module, name)}" for name in names)
    closing = "\n)" if names else ")"
    return f"{type(module).__name__}({lines}{closing}"


def _resize_phrase(module) -> str:
    return f"resized to ``resize_size={module.resize_size}`` using ``interpolation={module.interpolation}``"


def _rescale_phrase(module) -> str:
    return (f"Finally the values are first rescaled to ``[0.0, 1.0]`` and then normalized using "
            f"``mean={module.mean}`` and ``std={module.std}``.")


class ObjectDetection(nn.Module):
    """Detection input: the image as float values in ``[0, 1]``, its size kept (the model resizes)."""

    def forward(self, img):
        return _float_image(img)

    def __repr__(self) -> str:
        return _settings_repr(self, ())

    def describe(self) -> str:
        """What the preset does, in words (torchvision's documentation sentence)."""
        return _ACCEPTS_IMAGES + "The images are rescaled to ``[0.0, 1.0]``."


class ImageClassification(nn.Module):
    """Resize the shorter side to ``resize_size``, centre-crop ``crop_size``, rescale to ``[0, 1]`` and normalize.

    >>> import ember
    >>> t = ImageClassification(crop_size=4, resize_size=6)
    >>> t(ember.zeros(3, 8, 10, dtype=ember.uint8)).shape
    ember.Size([3, 4, 4])
    """

    _SHOWN = ("crop_size", "resize_size", "mean", "std", "interpolation")

    def __init__(self, *, crop_size: int, resize_size: int = 256, mean: tuple = IMAGENET_MEAN,
                 std: tuple = IMAGENET_STD, interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img):
        img = F.resize(img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias)
        img = _float_image(F.center_crop(img, self.crop_size))
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self) -> str:
        return _settings_repr(self, self._SHOWN)

    def describe(self) -> str:
        """What the preset does, in words (torchvision's documentation sentence)."""
        return (f"{_ACCEPTS_IMAGES}The images are {_resize_phrase(self)}, followed by a central crop of "
                f"``crop_size={self.crop_size}``. {_rescale_phrase(self)}")


class VideoClassification(nn.Module):
    """Per frame of a ``(T, C, H, W)`` clip or ``(B, T, C, H, W)`` batch: resize (no antialiasing, as the video
    checkpoints were evaluated), centre-crop, rescale and normalize; the output is ``(..., C, T, H, W)``."""

    _SHOWN = ("crop_size", "resize_size", "mean", "std", "interpolation")

    def __init__(self, *, crop_size: tuple, resize_size: tuple, mean: tuple = KINETICS_MEAN,
                 std: tuple = KINETICS_STD, interpolation: InterpolationMode = InterpolationMode.BILINEAR) -> None:
        super().__init__()
        self.crop_size = list(crop_size)
        self.resize_size = list(resize_size)
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation

    def forward(self, vid):
        single = vid.ndim < 5
        if single:
            vid = vid.unsqueeze(0)
        n, t, c = (int(s) for s in vid.shape[:3])
        frames = vid.reshape(-1, c, *vid.shape[-2:])
        frames = F.resize(frames, self.resize_size, interpolation=self.interpolation, antialias=False)
        frames = F.convert_image_dtype(F.center_crop(frames, self.crop_size), ember.float32)
        frames = F.normalize(frames, mean=self.mean, std=self.std)
        out = frames.reshape(n, t, c, *self.crop_size).permute(0, 2, 1, 3, 4)
        return out.squeeze(0) if single else out

    def __repr__(self) -> str:
        return _settings_repr(self, self._SHOWN)

    def describe(self) -> str:
        """What the preset does, in words (torchvision's documentation sentence)."""
        return ("Accepts batched ``(B, T, C, H, W)`` and single ``(T, C, H, W)`` video frame ``torch.Tensor`` "
                f"objects. The frames are {_resize_phrase(self)}, followed by a central crop of "
                f"``crop_size={self.crop_size}``. {_rescale_phrase(self)} Finally the output dimensions are "
                "permuted to ``(..., C, T, H, W)`` tensors.")


class SemanticSegmentation(nn.Module):
    """Resize the shorter side to ``resize_size`` (kept as is when None), rescale to ``[0, 1]`` and normalize."""

    _SHOWN = ("resize_size", "mean", "std", "interpolation")

    def __init__(self, *, resize_size: int | None, mean: tuple = IMAGENET_MEAN, std: tuple = IMAGENET_STD,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR, antialias: bool | None = True) -> None:
        super().__init__()
        self.resize_size = None if resize_size is None else [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img):
        if self.resize_size is not None:
            img = F.resize(img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias)
        return F.normalize(_float_image(img), mean=self.mean, std=self.std)

    def __repr__(self) -> str:
        return _settings_repr(self, self._SHOWN)

    def describe(self) -> str:
        """What the preset does, in words (torchvision's documentation sentence)."""
        return f"{_ACCEPTS_IMAGES}The images are {_resize_phrase(self)}. {_rescale_phrase(self)}"


class OpticalFlow(nn.Module):
    """A pair of frames as contiguous float tensors with values in ``[-1, 1]``."""

    def forward(self, img1, img2):
        return tuple(F.normalize(_float_image(img), mean=[0.5] * 3, std=[0.5] * 3).contiguous()
                     for img in (img1, img2))

    def __repr__(self) -> str:
        return _settings_repr(self, ())

    def describe(self) -> str:
        """What the preset does, in words (torchvision's documentation sentence)."""
        return _ACCEPTS_IMAGES + "The images are rescaled to ``[-1.0, 1.0]``."
