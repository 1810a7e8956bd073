"""Image transforms (``torchvision.transforms`` API) on PIL images and ember tensors.

>>> from ember_vision import transforms as T
>>> T.Normalize([0.5], [0.5])
Normalize(mean=[0.5], std=[0.5], inplace=False)
"""
from . import functional
from .functional import InterpolationMode
from .autoaugment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from .transforms import (
    CenterCrop, ColorJitter, Compose, ConvertImageDtype, ElasticTransform, FiveCrop, GaussianBlur, Grayscale, Lambda,
    LinearTransformation, Normalize, Pad, PILToTensor, RandomAdjustSharpness, RandomAffine, RandomApply,
    RandomAutocontrast, RandomChoice, RandomCrop, RandomEqualize, RandomErasing, RandomGrayscale, RandomHorizontalFlip,
    RandomInvert, RandomOrder, RandomPerspective, RandomPosterize, RandomResizedCrop, RandomRotation, RandomSolarize,
    RandomVerticalFlip, Resize, TenCrop, ToPILImage, ToTensor,
)
