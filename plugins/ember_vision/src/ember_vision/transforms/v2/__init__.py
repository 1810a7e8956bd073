"""torchvision.transforms.v2 on ember: transforms that carry images, videos, masks, bounding boxes and key
points (:mod:`ember_vision.tv_tensors`) through one set of random parameters per call."""
from ... import tv_tensors  # noqa: F401  (the types these transforms dispatch on)
from . import functional
from ..functional import InterpolationMode
from ._transforms import (CenterCrop, ColorJitter, Compose, CutMix, Grayscale, MixUp, Normalize, Pad, RandomAffine,
                          RandomApply, RandomChoice, RandomCrop, RandomGrayscale, RandomHorizontalFlip,
                          RandomResizedCrop, RandomRotation, RandomVerticalFlip, Resize, SanitizeBoundingBoxes,
                          ToDtype, ToImage, ToPureTensor, Transform)

__all__ = ["functional", "InterpolationMode", "Transform", "Compose", "RandomAffine", "RandomApply",
           "RandomChoice", "RandomHorizontalFlip", "RandomVerticalFlip", "Resize", "CenterCrop", "Pad", "RandomCrop",
           "RandomResizedCrop", "RandomRotation", "Normalize", "Grayscale", "RandomGrayscale", "ColorJitter",
           "ToImage", "ToPureTensor", "ToDtype", "SanitizeBoundingBoxes", "MixUp", "CutMix"]
