"""Transform classes (``torchvision.transforms`` API) on PIL images and ember tensors.

Random transforms draw from ember's default generator, so ``ember.manual_seed(s)`` makes a
pipeline reproducible.

>>> import ember
>>> from ember_vision import transforms as T
>>> t = T.Compose([T.CenterCrop(2), T.RandomHorizontalFlip(p=1.0)])
>>> t(ember.arange(9).reshape(1, 3, 3)).tolist()
[[[1, 0], [4, 3]]]
"""
from __future__ import annotations

import math
import numbers
import random
from collections.abc import Sequence

import ember

from . import _random_ops
from . import functional as F
from .functional import InterpolationMode


def _uniform(a: float, b: float) -> float:
    return float(a + (b - a) * ember.rand(1).item())


def _randint(low: int, high: int) -> int:
    """An int in ``[low, high)``."""
    return int(ember.randint(low, high, (1,)).item())


def _coin(p: float) -> bool:
    return bool(ember.rand(1).item() < p)


def _check_ranges(name: str, scale, ratio) -> None:
    if scale[0] > scale[1] or ratio[0] > ratio[1]:
        raise ValueError(f"{name}: scale and ratio should be of kind (min, max), got {scale}, {ratio}")


def _random_sides(area: float, scale, ratio):
    """Ten draws of a rectangle of ``area * U(scale)`` with log-uniform aspect in ``ratio``: ``(a, b)`` with
    ``a / b`` the aspect."""
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target = area * _uniform(*scale)
        aspect = math.exp(_uniform(*log_ratio))
        yield int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))


def _pair(size, name: str):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) in (1, 2):
        return (int(size[0]), int(size[0])) if len(size) == 1 else (int(size[0]), int(size[1]))
    raise ValueError(f"{name}: size should be an int or a sequence of 1 or 2 ints, got {size!r}")


class _Repr:
    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class Compose(_Repr):
    """Apply ``transforms`` in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


class Lambda(_Repr):
    """Apply a user function."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Lambda: argument should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)


class ToTensor(_Repr):
    """PIL image / ndarray -> float32 ``(C, H, W)`` in ``[0, 1]``."""

    def __call__(self, pic):
        return F.to_tensor(pic)


class PILToTensor(_Repr):
    """PIL image -> ``(C, H, W)`` tensor without scaling."""

    def __call__(self, pic):
        return F.pil_to_tensor(pic)


class ToPILImage(_Repr):
    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)


class Normalize(_Repr):
    """``(x - mean) / std`` per channel."""

    def __init__(self, mean, std, inplace: bool = False):
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def __call__(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)


class Resize(_Repr):
    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        self.size, self.interpolation, self.max_size, self.antialias = size, interpolation, max_size, antialias

    def __call__(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)


class CenterCrop(_Repr):
    def __init__(self, size):
        self.size = _pair(size, "CenterCrop")

    def __call__(self, img):
        return F.center_crop(img, self.size)


class Pad(_Repr):
    def __init__(self, padding, fill=0, padding_mode: str = "constant"):
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def __call__(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class RandomCrop(_Repr):
    """A random ``size`` crop, after optional ``padding`` (and padding up to ``size`` if ``pad_if_needed``)."""

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant"):
        self.size = _pair(size, "RandomCrop")
        self.padding, self.pad_if_needed, self.fill, self.padding_mode = padding, pad_if_needed, fill, padding_mode

    @staticmethod
    def get_params(img, output_size):
        w, h = F.get_image_size(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"RandomCrop: required crop size {(th, tw)} is larger than input image size {(h, w)}")
        return _randint(0, h - th + 1), _randint(0, w - tw + 1), th, tw

    def __call__(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        w, h = F.get_image_size(img)
        if self.pad_if_needed and (w < self.size[1] or h < self.size[0]):
            img = F.pad(img, [max(self.size[1] - w, 0), max(self.size[0] - h, 0)], self.fill, self.padding_mode)
        return F.crop(img, *self.get_params(img, self.size))


class RandomResizedCrop(_Repr):
    """A random crop of random area (``scale``) and aspect ``ratio``, resized to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        _check_ranges("RandomResizedCrop", scale, ratio)
        self.size = _pair(size, "RandomResizedCrop")
        self.scale, self.ratio, self.interpolation = tuple(scale), tuple(ratio), interpolation
        self.antialias = antialias

    @staticmethod
    def get_params(img, scale, ratio):
        width, height = F.get_image_size(img)
        for w, h in _random_sides(height * width, scale, ratio):
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        # fallback: the central crop with the ratio clamped into range
        in_ratio = width / height
        w, h = width, height
        if in_ratio < ratio[0]:
            h = int(round(width / ratio[0]))
        elif in_ratio > ratio[1]:
            w = int(round(height * ratio[1]))
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, self.antialias)


class RandomHorizontalFlip(_Repr):
    def __init__(self, p: float = 0.5):
        self.p = p

    def __call__(self, img):
        return F.hflip(img) if _coin(self.p) else img


class RandomVerticalFlip(_Repr):
    def __init__(self, p: float = 0.5):
        self.p = p

    def __call__(self, img):
        return F.vflip(img) if _coin(self.p) else img


class RandomRotation(_Repr):
    """Rotate by an angle drawn from ``degrees`` (``d`` means ``(-d, d)``)."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None, fill=0):
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ValueError(f"RandomRotation: If degrees is a single number, it must be positive, got {degrees}")
            degrees = (-degrees, degrees)
        self.degrees = (float(degrees[0]), float(degrees[1]))
        self.interpolation, self.expand, self.center, self.fill = interpolation, expand, center, fill

    @staticmethod
    def get_params(degrees) -> float:
        return _uniform(*degrees)

    def __call__(self, img):
        return F.rotate(img, self.get_params(self.degrees), self.interpolation, self.expand, self.center, self.fill)


def _jitter_range(value, name: str, center: float = 1.0, bound=(0.0, float("inf"))):
    """``(lo, hi)`` to draw a factor from (a number ``v`` means ``center -/+ v``), or None for "no change"."""
    if value is None:
        return None
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"ColorJitter: If {name} is a single number, it must be non negative, got {value}")
        value = (max(center - value, bound[0]), center + value)
    lo, hi = float(value[0]), float(value[1])
    if not bound[0] <= lo <= hi <= bound[1]:
        raise ValueError(f"ColorJitter: {name} values should be between {bound}, got {(lo, hi)}")
    return None if lo == hi == center else (lo, hi)


class ColorJitter(_Repr):
    """Random brightness, contrast, saturation and hue changes, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0.0, bound=(-0.5, 0.5))

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        order = ember.randperm(4).tolist()
        factors = [None if r is None else _uniform(*r) for r in (brightness, contrast, saturation, hue)]
        return (order, *factors)

    def __call__(self, img):
        order, *factors = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        adjust = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for k in order:
            if factors[k] is not None:
                img = adjust[k](img, factors[k])
        return img


class Grayscale(_Repr):
    def __init__(self, num_output_channels: int = 1):
        self.num_output_channels = num_output_channels

    def __call__(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)


class RandomGrayscale(_Repr):
    """Grayscale (keeping the channel count) with probability ``p``."""

    def __init__(self, p: float = 0.1):
        self.p = p

    def __call__(self, img):
        c = F.get_image_num_channels(img)
        return F.rgb_to_grayscale(img, c) if _coin(self.p) else img


class RandomApply(_Repr):
    """Apply the list of ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p: float = 0.5):
        self.transforms, self.p = list(transforms), p

    def __call__(self, img):
        if not _coin(self.p):
            return img
        for t in self.transforms:
            img = t(img)
        return img


class RandomErasing(_Repr):
    """Erase a random rectangle of a tensor image with ``value`` (a number, per-channel list or ``'random'``)."""

    def __init__(self, p: float = 0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace: bool = False):
        if not 0 <= p <= 1:
            raise ValueError(f"RandomErasing: Random erasing probability should be between 0 and 1, got {p}")
        _check_ranges("RandomErasing", scale, ratio)
        if not isinstance(value, (numbers.Number, str, tuple, list)) or (isinstance(value, str) and value != "random"):
            raise ValueError(f"RandomErasing: value should be a number, a sequence or 'random', got {value!r}")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, tuple(scale), tuple(ratio), value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        c, h, w = int(img.shape[-3]), int(img.shape[-2]), int(img.shape[-1])
        for eh, ew in _random_sides(h * w, scale, ratio):
            if not (eh < h and ew < w):
                continue
            v = ember.randn(c, eh, ew, dtype=img.dtype, device=img.device) if value is None else \
                ember.as_tensor(value, dtype=img.dtype, device=img.device).reshape(-1, 1, 1)
            return _randint(0, h - eh + 1), _randint(0, w - ew + 1), eh, ew, v
        return 0, 0, h, w, img

    def __call__(self, img):
        if not isinstance(img, ember.Tensor):
            raise TypeError(f"RandomErasing: img should be Tensor Image. Got {type(img).__name__}")
        if not _coin(self.p):
            return img
        value = None if self.value == "random" else self.value
        n = 1 if isinstance(value, numbers.Number) or value is None else len(value)
        if n not in (1, int(img.shape[-3])):
            raise ValueError(f"RandomErasing: value has {n} values but the image has {int(img.shape[-3])} channels "
                             f"(shape {tuple(img.shape)})")
        i, j, h, w, v = self.get_params(img, self.scale, self.ratio, value)
        return F.erase(img, i, j, h, w, v, self.inplace)


def _fill_per_channel(img, fill):
    if isinstance(img, ember.Tensor) and fill is not None:
        c = F.get_dimensions(img)[0]
        return [float(fill)] * c if isinstance(fill, numbers.Number) else [float(v) for v in fill]
    return fill


class RandomPerspective(_Repr):
    """With probability ``p``, a perspective transform moving each corner inwards by up to ``distortion_scale``
    of half the image's side."""

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.distortion_scale, self.p, self.interpolation, self.fill = distortion_scale, p, interpolation, fill

    @staticmethod
    def get_params(width: int, height: int, distortion_scale: float):
        """``(startpoints, endpoints)``: the image's corners and their random images, top-left first, clockwise."""
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))
        topleft = [_randint(0, dx + 1), _randint(0, dy + 1)]
        topright = [_randint(width - dx - 1, width), _randint(0, dy + 1)]
        botright = [_randint(width - dx - 1, width), _randint(height - dy - 1, height)]
        botleft = [_randint(0, dx + 1), _randint(height - dy - 1, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def __call__(self, img):
        fill = _fill_per_channel(img, self.fill)
        _, height, width = F.get_dimensions(img)
        if _coin(self.p):
            startpoints, endpoints = self.get_params(width, height, self.distortion_scale)
            return F.perspective(img, startpoints, endpoints, self.interpolation, fill)
        return img


def _pair_of_floats(value, name: str) -> list:
    if isinstance(value, float):
        return [value, value]
    if isinstance(value, Sequence) and len(value) in (1, 2) and all(isinstance(v, float) for v in value):
        return [value[0], value[0]] if len(value) == 1 else list(value)
    raise TypeError(f"{name} should be a float or a sequence of 1 or 2 floats. Got {value!r}")


class ElasticTransform(_Repr):
    """Displace every pixel by smoothed uniform noise: ``alpha`` the strength, ``sigma`` the smoothness (each a
    float or ``(x, y)``)."""

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        self.alpha = _pair_of_floats(alpha, "alpha")
        self.sigma = _pair_of_floats(sigma, "sigma")
        if not isinstance(fill, (int, float, list, tuple)):
            raise TypeError(f"fill should be int or float or a list or tuple of them. Got {type(fill)}")
        self.interpolation = interpolation
        self.fill = [float(fill)] if isinstance(fill, (int, float)) else [float(f) for f in fill]

    @staticmethod
    def get_params(alpha, sigma, size):
        """A [1, H, W, 2] displacement: uniform noise in [-1, 1], Gaussian-smoothed (kernel 8 sigma + 1, made
        odd), scaled by alpha over the side."""
        parts = []
        for axis, side in ((0, size[1]), (1, size[0])):
            d = ember.rand([1, 1] + list(size)) * 2 - 1
            if sigma[axis] > 0.0:
                k = int(8 * sigma[axis] + 1)
                k += 1 - k % 2
                d = F.gaussian_blur(d, [k, k], sigma)
            parts.append(d * alpha[axis] / side)
        return ember.cat(parts, 1).permute(0, 2, 3, 1)

    def __call__(self, img):
        _, height, width = F.get_dimensions(img)
        displacement = self.get_params(self.alpha, self.sigma, [height, width])
        return F.elastic_transform(img, displacement, self.interpolation, self.fill)


class ConvertImageDtype(_Repr):
    """A tensor image in ``dtype``, its values rescaled (see :func:`functional.convert_image_dtype`)."""

    def __init__(self, dtype):
        self.dtype = dtype

    def __call__(self, image):
        return F.convert_image_dtype(image, self.dtype)


class FiveCrop(_Repr):
    """The four corner crops and the central crop of ``size``, as a tuple."""

    def __init__(self, size):
        self.size = F._crop_size(size)

    def __call__(self, img):
        return F.five_crop(img, self.size)


class TenCrop(_Repr):
    """:class:`FiveCrop` of the image and of its mirror (top-bottom with ``vertical_flip``)."""

    def __init__(self, size, vertical_flip: bool = False):
        self.size, self.vertical_flip = F._crop_size(size), vertical_flip

    def __call__(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)


def _blur_sigma(sigma) -> tuple:
    if isinstance(sigma, numbers.Number):
        if sigma <= 0:
            raise ValueError(f"GaussianBlur: If sigma is a single number, it must be positive, got {sigma}")
        return float(sigma), float(sigma)
    if isinstance(sigma, Sequence) and len(sigma) == 2:
        if not 0.0 < sigma[0] <= sigma[1]:
            raise ValueError(f"GaussianBlur: sigma values should be positive and of the form (min, max), got {sigma}")
        return float(sigma[0]), float(sigma[1])
    raise ValueError(f"GaussianBlur: sigma should be a single number or a list/tuple with length 2, got {sigma!r}")


class GaussianBlur(_Repr):
    """Blur with an odd ``kernel_size`` and a sigma drawn uniformly from ``sigma`` (a number or ``(min, max)``)."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        self.kernel_size = _pair(kernel_size, "GaussianBlur")
        if any(k <= 0 or k % 2 == 0 for k in self.kernel_size):
            raise ValueError(f"GaussianBlur: Kernel size value should be an odd and positive number, got "
                             f"{self.kernel_size}")
        self.sigma = _blur_sigma(sigma)

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        return _uniform(sigma_min, sigma_max)

    def __call__(self, img):
        sigma = self.get_params(*self.sigma)
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])


class LinearTransformation(_Repr):
    """``(x.flatten() - mean_vector) @ transformation_matrix`` per image (e.g. ZCA whitening), reshaped back."""

    def __init__(self, transformation_matrix, mean_vector):
        m, v = transformation_matrix, mean_vector
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ValueError(f"LinearTransformation: transformation_matrix should be square. Got {tuple(m.shape)} "
                             f"rectangular matrix.")
        if v.shape[0] != m.shape[0]:
            raise ValueError(f"LinearTransformation: mean_vector should have the same length {v.shape[0]} as any one "
                             f"of the dimensions of the transformation_matrix [{tuple(m.shape)}]")
        if m.device != v.device:
            raise ValueError(f"LinearTransformation: Input tensors should be on the same device. Got {m.device} and "
                             f"{v.device}")
        if m.dtype != v.dtype:
            raise ValueError(f"LinearTransformation: Input tensors should have the same dtype. Got {m.dtype} and "
                             f"{v.dtype}")
        self.transformation_matrix, self.mean_vector = m, v

    def __call__(self, tensor):
        shape = tuple(tensor.shape)
        n = math.prod(shape[-3:])
        if n != self.transformation_matrix.shape[0]:
            raise ValueError(f"LinearTransformation: Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != {self.transformation_matrix.shape[0]}")
        if tensor.device != self.mean_vector.device:
            raise ValueError(f"LinearTransformation: Input tensor should be on the same device as transformation "
                             f"matrix and mean vector. Got {tensor.device} vs {self.mean_vector.device}")
        flat = tensor.reshape(-1, n) - self.mean_vector
        return ember.mm(flat, self.transformation_matrix.to(flat.dtype)).reshape(shape)


class _RandomOp(_Repr):
    """Apply ``_op(img, *self._args())`` with probability ``p``."""

    _op = None

    def __init__(self, p: float = 0.5):
        self.p = p

    _params: tuple = ()  # the op's own parameters, attributes of the transform

    def _args(self) -> tuple:
        return tuple(getattr(self, n) for n in self._params)

    def __call__(self, img):
        return type(self)._op(img, *self._args()) if _coin(self.p) else img


_random_ops.build(_RandomOp, F, globals())


def _sequence(value, name: str, sizes=(2,)):
    if not isinstance(value, Sequence) or len(value) not in sizes:
        kind = TypeError if not isinstance(value, Sequence) else ValueError
        raise kind(f"RandomAffine: {name} should be a sequence of length {' or '.join(map(str, sizes))}, got "
                   f"{value!r}")
    return [float(v) for v in value]


def _angle_range(value, name: str, sizes=(2,)):
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"RandomAffine: If {name} is a single number, it must be positive, got {value}")
        return [-float(value), float(value)]
    return _sequence(value, name, sizes)


class RandomAffine(_Repr):
    """A random affine map keeping the centre: rotation from ``degrees``, translation up to ``translate``
    (fractions of width and height), ``scale`` and ``shear`` (x range, or x and y ranges) drawn per call."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        self.degrees = _angle_range(degrees, "degrees")
        if translate is not None and not all(0.0 <= t <= 1.0 for t in _sequence(translate, "translate")):
            raise ValueError(f"RandomAffine: translation values should be between 0 and 1, got {translate}")
        if scale is not None and any(s <= 0 for s in _sequence(scale, "scale")):
            raise ValueError(f"RandomAffine: scale values should be positive, got {scale}")
        self.shear = None if shear is None else _angle_range(shear, "shear", (2, 4))
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("RandomAffine: Fill should be either a sequence or a number.")
        if center is not None:
            _sequence(center, "center")
        self.translate, self.scale, self.interpolation, self.fill, self.center = translate, scale, interpolation, \
            fill, center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """``(angle, (tx, ty), scale, (shear_x, shear_y))`` for an image of ``img_size`` ``[width, height]``."""
        angle = _uniform(float(degrees[0]), float(degrees[1]))
        tx = ty = 0
        if translate is not None:
            dx, dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            tx, ty = int(round(_uniform(-dx, dx))), int(round(_uniform(-dy, dy)))
        scale = 1.0 if scale_ranges is None else _uniform(scale_ranges[0], scale_ranges[1])
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, (tx, ty), scale, (shear_x, shear_y)

    def __call__(self, img):
        fill = _fill_per_channel(img, self.fill)
        params = self.get_params(self.degrees, self.translate, self.scale, self.shear, F.get_image_size(img))
        return F.affine(img, *params, interpolation=self.interpolation, fill=fill, center=self.center)


class RandomChoice(_Repr):
    """Apply one of ``transforms``, picked by Python's ``random`` with weights ``p`` (uniform by default)."""

    def __init__(self, transforms, p=None):
        if not isinstance(transforms, Sequence):
            raise TypeError("RandomChoice: Argument transforms should be a sequence")
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("RandomChoice: Argument p should be a sequence")
        self.transforms, self.p = transforms, p

    def __call__(self, *args):
        return random.choices(self.transforms, weights=self.p)[0](*args)


class RandomOrder(_Repr):
    """Apply ``transforms`` in an order shuffled by Python's ``random``."""

    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("RandomOrder: Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img
