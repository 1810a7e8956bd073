"""Image transforms (``torchvision.transforms`` API) on PIL images and ember tensors.

>>> from ember_vision import transforms as T
>>> T.Normalize([0.5], [0.5])
Normalize(mean=[0.5], std=[0.5], inplace=False)
"""
from . import functional
from .functional import InterpolationMode
from .autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .transforms import (
    CenterCrop, ColorJitter, Compose, ElasticTransform, Grayscale, Lambda, Normalize, Pad, PILToTensor, RandomApply,
    RandomCrop, RandomErasing, RandomGrayscale, RandomHorizontalFlip, RandomPerspective, RandomResizedCrop,
    RandomRotation, RandomVerticalFlip, Resize, ToPILImage, ToTensor,
)
