"""transforms.v2: conversions, colour and blur transforms, crops to several outputs, JPEG round trips, temporal
subsampling, and the sample-query helpers (``check_type``, ``has_any``, ``query_chw``, ...) as torchvision 0.28
has them.

A transform here picks the leaves it acts on by ``_transformed_types`` (types, or predicates such as
:func:`is_pure_tensor`) and torchvision's rule for plain tensors: only the first one, and only when the sample
holds no Image, Video nor PIL image.
"""
from __future__ import annotations

import warnings

import numpy as np
from PIL import Image

import ember
from ember import Tensor

from ... import tv_tensors
from .. import _random_ops
from .. import functional as F1
from .. import transforms as T1
from . import functional as F
from ._transforms import Transform, _flatten, _unflatten

_NOT_PIXELS = (tv_tensors.BoundingBoxes, tv_tensors.Mask, tv_tensors.KeyPoints)


# -- helpers on a flat list of sample leaves
def is_pure_tensor(inpt) -> bool:
    """Whether ``inpt`` is a Tensor and no TVTensor."""
    return isinstance(inpt, Tensor) and not isinstance(inpt, tv_tensors.TVTensor)


def check_type(obj, types_or_checks) -> bool:
    """Whether ``obj`` is an instance of one of ``types_or_checks`` or passes one of its predicates.

    >>> check_type(3, (str, lambda x: x > 2))
    True
    """
    return any(isinstance(obj, t) if isinstance(t, type) else t(obj) for t in types_or_checks)


def has_any(flat_inputs, *types_or_checks) -> bool:
    """Whether some leaf of ``flat_inputs`` matches one of ``types_or_checks`` (see :func:`check_type`)."""
    return any(check_type(x, types_or_checks) for x in flat_inputs)


def has_all(flat_inputs, *types_or_checks) -> bool:
    """Whether each of ``types_or_checks`` is matched by some leaf of ``flat_inputs``."""
    return all(has_any(flat_inputs, t) for t in types_or_checks)


def _sizes_str(sizes) -> str:
    return ", ".join(str(s) for s in sorted(sizes))


def query_chw(flat_inputs) -> tuple:
    """``(C, H, W)`` shared by every image and video of the sample (plain tensors and PIL images included).

    >>> query_chw([ember.zeros(3, 4, 5)])
    (3, 4, 5)
    """
    chws = {tuple(F1.get_dimensions(F._plain(x) if isinstance(x, Tensor) else x)) for x in flat_inputs
            if check_type(x, (is_pure_tensor, tv_tensors.Image, Image.Image, tv_tensors.Video))}
    if not chws:
        raise TypeError("query_chw: No image or video was found in the sample")
    if len(chws) > 1:
        raise ValueError(f"query_chw: Found multiple CxHxW dimensions in the sample: {_sizes_str(chws)}")
    return chws.pop()


def query_size(flat_inputs) -> tuple:
    """``(H, W)`` shared by every image, video, mask, box set and key-point set of the sample."""
    kinds = (is_pure_tensor, tv_tensors.Image, Image.Image, tv_tensors.Video, tv_tensors.Mask,
             tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)
    sizes = {tuple(F.get_size(x)) for x in flat_inputs if check_type(x, kinds)}
    if not sizes:
        raise TypeError("query_size: No image, video, mask, bounding box of keypoint was found in the sample")
    if len(sizes) > 1:
        raise ValueError(f"query_size: Found multiple HxW dimensions in the sample: {_sizes_str(sizes)}")
    return sizes.pop()


def get_bounding_boxes(flat_inputs) -> tv_tensors.BoundingBoxes:
    """The first BoundingBoxes of the sample."""
    for x in flat_inputs:
        if isinstance(x, tv_tensors.BoundingBoxes):
            return x
    raise ValueError("get_bounding_boxes: No bounding boxes were found in the sample")


def get_keypoints(flat_inputs) -> tv_tensors.KeyPoints:
    """The first KeyPoints of the sample."""
    for x in flat_inputs:
        if isinstance(x, tv_tensors.KeyPoints):
            return x
    raise ValueError("get_keypoints: No Keypoints were found in the sample.")


class _Typed(Transform):
    """A transform acting on the leaves of ``_transformed_types``; ``check_inputs`` may refuse a sample."""

    _transformed_types = (Tensor, Image.Image)

    def _needs_transform_list(self, flat):
        pure_left = not has_any(flat, tv_tensors.Image, tv_tensors.Video, Image.Image)
        out = []
        for x in flat:
            needs = check_type(x, self._transformed_types)
            if needs and is_pure_tensor(x):
                needs, pure_left = pure_left, False
            out.append(needs)
        return out

    def check_inputs(self, flat_inputs) -> None:
        pass

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves = []
        _flatten(sample, leaves)
        self.check_inputs(leaves)
        return super().forward(*inputs)


def _on_pixels(inpt, fn):
    """``fn`` on an image, video, plain tensor or PIL image (keeping its type); boxes, masks and key points
    pass through."""
    return inpt if isinstance(inpt, _NOT_PIXELS) else F._on_image(inpt, fn)


class Identity(_Typed):
    """Return the input unchanged."""

    def transform(self, inpt, params):
        return inpt


class Lambda(_Typed):
    """Apply ``lambd`` to every leaf of one of ``types`` (every leaf by default)."""

    _transformed_types = (object,)

    def __init__(self, lambd, *types):
        super().__init__()
        self.lambd, self.types = lambd, types or self._transformed_types

    def transform(self, inpt, params):
        return self.lambd(inpt) if isinstance(inpt, self.types) else inpt

    def extra_repr(self) -> str:
        name = getattr(self.lambd, "__name__", None)
        return ", ".join(([name] if name else []) + [f"types={[t.__name__ for t in self.types]}"])


class PILToTensor(_Typed):
    """A PIL image to a plain ``(C, H, W)`` tensor of its own dtype."""

    _transformed_types = (Image.Image,)

    def transform(self, inpt, params):
        return F1.pil_to_tensor(inpt)


class ToPILImage(_Typed):
    """An image tensor or ``(H, W, C)`` array to a PIL image of ``mode``."""

    _transformed_types = (is_pure_tensor, tv_tensors.Image, np.ndarray)

    def __init__(self, mode=None):
        super().__init__()
        self.mode = mode

    def transform(self, inpt, params):
        return F1.to_pil_image(F._plain(inpt) if isinstance(inpt, Tensor) else inpt, self.mode)


class ToTensor(_Typed):
    """A PIL image or ``(H, W, C)`` array to a float tensor in ``[0, 1]`` (deprecated, as in torchvision)."""

    _transformed_types = (Image.Image, np.ndarray)

    def __init__(self):
        warnings.warn("The transform `ToTensor()` is deprecated and will be removed in a future release. Instead, "
                      "please use `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`.Output is "
                      "equivalent up to float precision.", UserWarning, stacklevel=2)
        super().__init__()

    def transform(self, inpt, params):
        return F1.to_tensor(inpt)


class ConvertImageDtype(_Typed):
    """Images and videos to ``dtype`` with their values rescaled (``ToDtype(dtype, scale=True)``); PIL images
    pass through."""

    _transformed_types = (Tensor,)

    def __init__(self, dtype=ember.float32):
        super().__init__()
        self.dtype = dtype

    def transform(self, inpt, params):
        return inpt if isinstance(inpt, _NOT_PIXELS) else F.to_dtype(inpt, self.dtype, scale=True)


class RGB(_Typed):
    """Grayscale images and videos to three channels (RGB ones unchanged; PIL images converted to ``"RGB"``)."""

    def transform(self, inpt, params):
        return inpt.convert("RGB") if isinstance(inpt, Image.Image) else F.grayscale_to_rgb(inpt)


class GaussianNoise(_Typed):
    """Add ``N(mean, sigma)`` noise (in units of the ``[0, 1]`` range; times 255 for uint8) to tensor images
    and videos, clipped to their range with ``clip``."""

    def __init__(self, mean: float = 0.0, sigma: float = 0.1, clip=True):
        super().__init__()
        self.mean, self.sigma, self.clip = mean, sigma, clip

    def check_inputs(self, flat_inputs):
        if has_any(flat_inputs, Image.Image):
            raise TypeError("GaussianNoise() does not support PIL images.")

    def transform(self, inpt, params):
        return F.gaussian_noise(inpt, self.mean, self.sigma, self.clip)


def _permute_channels(inpt, permutation):
    """v2's permute_channels, PIL images through a tensor and back."""
    if isinstance(inpt, Image.Image):
        return F1.to_pil_image(F.permute_channels(F1.pil_to_tensor(inpt), permutation), inpt.mode)
    return F.permute_channels(inpt, [int(i) for i in permutation])


class RandomChannelPermutation(_Typed):
    """Shuffle the channels of images and videos (one permutation per call)."""

    def make_params(self, flat_inputs):
        return {"permutation": ember.randperm(query_chw(flat_inputs)[0]).tolist()}

    def transform(self, inpt, params):
        return _permute_channels(inpt, params["permutation"])


class RandomPhotometricDistort(_Typed):
    """SSD's photometric distortion: brightness, contrast (before or after the colour steps), saturation, hue
    and a channel permutation, each with probability ``p`` and a factor drawn from its range."""

    def __init__(self, brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
                 p: float = 0.5):
        super().__init__()
        self.brightness, self.contrast, self.hue, self.saturation, self.p = brightness, contrast, hue, saturation, p

    def make_params(self, flat_inputs):
        channels = query_chw(flat_inputs)[0]
        ranges = (("brightness_factor", self.brightness), ("contrast_factor", self.contrast),
                  ("saturation_factor", self.saturation), ("hue_factor", self.hue))
        params = {k: ember.empty(1).uniform_(lo, hi).item() if ember.rand(1).item() < self.p else None
                  for k, (lo, hi) in ranges}
        params["contrast_before"] = bool(ember.rand(()).item() < 0.5)
        params["channel_permutation"] = ember.randperm(channels).tolist() if ember.rand(1).item() < self.p else None
        return params

    def _distort(self, img, params):
        contrast = params["contrast_factor"]
        steps = [(F1.adjust_brightness, params["brightness_factor"]),
                 (F1.adjust_contrast, contrast if params["contrast_before"] else None),
                 (F1.adjust_saturation, params["saturation_factor"]), (F1.adjust_hue, params["hue_factor"]),
                 (F1.adjust_contrast, None if params["contrast_before"] else contrast),
                 (_permute_channels, params["channel_permutation"])]
        for fn, arg in steps:
            if arg is not None:
                img = fn(img, arg)
        return img

    def transform(self, inpt, params):
        return _on_pixels(inpt, lambda t: self._distort(t, params))


class UniformTemporalSubsample(_Typed):
    """``num_samples`` evenly spaced frames (dimension -4) of videos and plain tensors."""

    _transformed_types = (Tensor,)

    def __init__(self, num_samples: int):
        super().__init__()
        self.num_samples = num_samples

    def transform(self, inpt, params):
        return F.uniform_temporal_subsample(inpt, self.num_samples)


class JPEG(_Typed):
    """A JPEG round trip at a quality drawn from ``quality`` (an int, or ``[min, max]``, within 1-100)."""

    def __init__(self, quality):
        super().__init__()
        if isinstance(quality, bool):
            raise TypeError("JPEG: quality can't be bool")
        if isinstance(quality, int):
            quality = [quality, quality]
        elif not isinstance(quality, (list, tuple)) or len(quality) != 2:
            raise ValueError(f"JPEG: quality should be an int or a sequence of length 2, got {quality!r}")
        if not (all(isinstance(q, int) for q in quality) and 1 <= quality[0] <= quality[1] <= 100):
            raise ValueError(f"JPEG: quality must be an integer from 1 to 100, got quality ={quality!r}")
        self.quality = quality

    def make_params(self, flat_inputs):
        return {"quality": int(ember.randint(self.quality[0], self.quality[1] + 1, ()).item())}

    def transform(self, inpt, params):
        return F.jpeg(inpt, params["quality"])


class LinearTransformation(_Typed):
    """See :class:`ember_vision.transforms.LinearTransformation` (tensor images and videos; no PIL images)."""

    _transformed_types = (is_pure_tensor, tv_tensors.Image, tv_tensors.Video)

    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        self._v1 = T1.LinearTransformation(transformation_matrix, mean_vector)
        self.transformation_matrix, self.mean_vector = transformation_matrix, mean_vector

    def check_inputs(self, flat_inputs):
        if has_any(flat_inputs, Image.Image):
            raise TypeError("LinearTransformation() does not support PIL images.")

    def transform(self, inpt, params):
        return F._rewrap(self._v1(F._plain(inpt)), inpt)


class GaussianBlur(_Typed):
    """Blur images and videos with an odd ``kernel_size`` and a sigma drawn from ``sigma`` per call."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        v1 = T1.GaussianBlur(kernel_size, sigma)
        self.kernel_size, self.sigma = v1.kernel_size, v1.sigma

    def make_params(self, flat_inputs):
        sigma = ember.empty(1).uniform_(self.sigma[0], self.sigma[1]).item()
        return {"sigma": [sigma, sigma]}

    def transform(self, inpt, params):
        return F.gaussian_blur(inpt, list(self.kernel_size), params["sigma"])


class _MultiCrop(_Typed):
    """Crops returned as a tuple per image; boxes and masks are refused."""

    def check_inputs(self, flat_inputs):
        if has_any(flat_inputs, tv_tensors.BoundingBoxes, tv_tensors.Mask):
            raise TypeError(f"BoundingBoxes'es and Mask's are not supported by {type(self).__name__}()")

    def _crops(self, img):
        raise NotImplementedError

    def transform(self, inpt, params):
        if isinstance(inpt, tv_tensors.KeyPoints):
            warnings.warn(f"{type(self).__name__}() is currently passing through inputs of type "
                          f"tv_tensors.KeyPoints. This will likely change in the future.", UserWarning)
            return inpt
        return self._crops(inpt)


class FiveCrop(_MultiCrop):
    """The four corner crops and the central crop of ``size`` of each image and video, as a tuple."""

    def __init__(self, size):
        super().__init__()
        self.size = F1._crop_size(size)

    def _crops(self, img):
        return F.five_crop(img, self.size)


class TenCrop(_MultiCrop):
    """:class:`FiveCrop` of each image and of its mirror (top-bottom with ``vertical_flip``)."""

    def __init__(self, size, vertical_flip: bool = False):
        super().__init__()
        self.size, self.vertical_flip = F1._crop_size(size), vertical_flip

    def _crops(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)


class RandomOrder(Transform):
    """Apply ``transforms`` in an order drawn by ``ember.randperm``."""

    def __init__(self, transforms):
        if not isinstance(transforms, (list, tuple)):
            raise TypeError("RandomOrder: Argument transforms should be a sequence of callables")
        if not transforms:
            raise ValueError("RandomOrder: Pass at least one transform")
        super().__init__()
        self.transforms = transforms

    def forward(self, *inputs):
        unpack = len(inputs) > 1
        outputs = inputs if unpack else inputs[0]
        for i in ember.randperm(len(self.transforms)).tolist():
            outputs = self.transforms[i](*inputs)
            inputs = outputs if unpack else (outputs,)
        return outputs


class _RandomApplyOp(_Typed):
    """``_op(inpt, *self._args())`` on images and videos with probability ``p`` (drawn once per call)."""

    _op = None

    def __init__(self, p: float = 0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__()
        self.p = p

    _params: tuple = ()  # the op's own parameters, attributes of the transform

    def _args(self) -> tuple:
        return tuple(getattr(self, n) for n in self._params)

    def forward(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves = []
        spec = _flatten(sample, leaves)
        self.check_inputs(leaves)
        if ember.rand(1).item() >= self.p:
            return sample
        needs = self._needs_transform_list(leaves)
        return _unflatten(spec, [self.transform(x, {}) if n else x for x, n in zip(leaves, needs)])

    def transform(self, inpt, params):
        return type(self)._op(inpt, *self._args())


_random_ops.build(_RandomApplyOp, F, globals())
