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
from ._more import (JPEG, RGB, ConvertImageDtype, FiveCrop, GaussianBlur, GaussianNoise, Identity, Lambda,
                    LinearTransformation, PILToTensor, RandomAdjustSharpness, RandomAutocontrast,
                    RandomChannelPermutation, RandomEqualize, RandomInvert, RandomOrder, RandomPhotometricDistort,
                    RandomPosterize, RandomSolarize, TenCrop, ToPILImage, ToTensor, UniformTemporalSubsample,
                    check_type, get_bounding_boxes, get_keypoints, has_all, has_any, query_chw, query_size)

__all__ = ["functional", "InterpolationMode", "Transform", "Compose", "RandomAffine", "RandomApply",
           "RandomChoice", "RandomHorizontalFlip", "RandomVerticalFlip", "Resize", "CenterCrop", "Pad", "RandomCrop",
           "RandomResizedCrop", "RandomRotation", "Normalize", "Grayscale", "RandomGrayscale", "ColorJitter",
           "ToImage", "ToPureTensor", "ToDtype", "SanitizeBoundingBoxes", "MixUp", "CutMix", "AutoAugmentPolicy",
           "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix", "RandomErasing", "RandomPerspective",
           "ElasticTransform"]
__all__ += ["Identity", "Lambda", "PILToTensor", "ToPILImage", "ToTensor", "ConvertImageDtype", "RGB", "GaussianNoise",
            "GaussianBlur", "LinearTransformation", "FiveCrop", "TenCrop", "RandomOrder", "RandomChannelPermutation",
            "RandomPhotometricDistort", "RandomAdjustSharpness", "RandomAutocontrast", "RandomEqualize",
            "RandomInvert", "RandomPosterize", "RandomSolarize", "UniformTemporalSubsample", "JPEG", "check_type",
            "has_all", "has_any", "query_chw", "query_size", "get_bounding_boxes", "get_keypoints"]
from ._boxes import (ClampBoundingBoxes, ClampKeyPoints, ConvertBoundingBoxFormat, RandomIoUCrop,  # noqa: E402
                     RandomResize, RandomShortestSize, RandomZoomOut, SanitizeKeyPoints, ScaleJitter, SetClampingMode)

__all__ += ["ClampBoundingBoxes", "ClampKeyPoints", "ConvertBoundingBoxFormat", "RandomIoUCrop", "RandomResize",
            "RandomShortestSize", "RandomZoomOut", "SanitizeKeyPoints", "ScaleJitter", "SetClampingMode"]
