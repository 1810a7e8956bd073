"""torchvision.transforms.v2 on ember: transforms that carry images, videos, masks, bounding boxes and key
points (:mod:`ember_vision.tv_tensors`) through one set of random parameters per call."""
from ... import tv_tensors  # noqa: F401  (the types these transforms dispatch on)
from . import functional
from ..functional import InterpolationMode
from ..autoaugment import AutoAugmentPolicy
from ._transforms import (AugMix, AutoAugment, CenterCrop, ColorJitter, Compose, CutMix, ElasticTransform, Grayscale,
                          MixUp, Normalize, Pad, RandAugment, RandomAffine, RandomApply, RandomChoice, RandomCrop,
                          RandomErasing, RandomGrayscale, RandomHorizontalFlip, RandomPerspective, RandomResizedCrop,
                          RandomRotation, RandomVerticalFlip, Resize, SanitizeBoundingBoxes, ToDtype, ToImage,
                          ToPureTensor, Transform, TrivialAugmentWide)

__all__ = ["functional", "InterpolationMode", "Transform", "Compose", "RandomAffine", "RandomApply",
           "RandomChoice", "RandomHorizontalFlip", "RandomVerticalFlip", "Resize", "CenterCrop", "Pad", "RandomCrop",
           "RandomResizedCrop", "RandomRotation", "Normalize", "Grayscale", "RandomGrayscale", "ColorJitter",
           "ToImage", "ToPureTensor", "ToDtype", "SanitizeBoundingBoxes", "MixUp", "CutMix", "AutoAugmentPolicy",
           "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix", "RandomErasing", "RandomPerspective",
           "ElasticTransform"]
