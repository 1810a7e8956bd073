"""Automatic augmentation policies: AutoAugment, RandAugment, TrivialAugmentWide and AugMix (torchvision's
op lists, magnitude bins and rules), on uint8 tensors ``[..., 1 or 3, H, W]`` and L/RGB PIL images.

Each class draws its ops with ember's default generator (``ember.manual_seed`` makes them reproducible) and
applies them through :func:`_apply_op`.
"""
from __future__ import annotations

import enum

import ember
from ember import nn

from . import functional as F
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _affine(img, interpolation, fill, translate=(0, 0), shear=(0.0, 0.0)):
    return F.affine(img, angle=0.0, translate=list(translate), scale=1.0, shear=list(shear),
                    interpolation=interpolation, fill=fill, center=[0, 0])


# op name -> what it does with a magnitude (shears are the tangent of the angle, as in the paper)
_OPS = {
    "ShearX": lambda img, m, i, f: _affine(img, i, f, shear=(float(ember.tensor(m).atan().rad2deg()), 0.0)),
    "ShearY": lambda img, m, i, f: _affine(img, i, f, shear=(0.0, float(ember.tensor(m).atan().rad2deg()))),
    "TranslateX": lambda img, m, i, f: _affine(img, i, f, translate=(int(m), 0)),
    "TranslateY": lambda img, m, i, f: _affine(img, i, f, translate=(0, int(m))),
    # torchvision's tensor rotation samples through the affine grid (F.rotate's tensor path follows PIL's)
    "Rotate": lambda img, m, i, f: F.affine(img, -m, [0, 0], 1.0, [0.0, 0.0], interpolation=i, fill=f),
    "Brightness": lambda img, m, i, f: F.adjust_brightness(img, 1.0 + m),
    "Color": lambda img, m, i, f: F.adjust_saturation(img, 1.0 + m),
    "Contrast": lambda img, m, i, f: F.adjust_contrast(img, 1.0 + m),
    "Sharpness": lambda img, m, i, f: F.adjust_sharpness(img, 1.0 + m),
    "Posterize": lambda img, m, i, f: F.posterize(img, int(m)),
    "Solarize": lambda img, m, i, f: F.solarize(img, m),
    "AutoContrast": lambda img, m, i, f: F.autocontrast(img),
    "Equalize": lambda img, m, i, f: F.equalize(img),
    "Invert": lambda img, m, i, f: F.invert(img),
    "Identity": lambda img, m, i, f: img,
}


def _apply_op(img, op_name: str, magnitude: float, interpolation, fill):
    """Apply the augmentation ``op_name`` with ``magnitude`` (shear: tangent; translate: pixels; rotate: degrees;
    colour ops: factor - 1; posterize: bits; solarize: threshold)."""
    try:
        op = _OPS[op_name]
    except KeyError:
        raise ValueError(f"The provided operator {op_name} is not recognized.") from None
    return op(img, magnitude, interpolation, fill)


def _linspace(a: float, b: float, n: int) -> list:
    return ember.linspace(a, b, n).tolist()


def _posterize_bits(num_bins: int, spread: int, top: int = 8) -> list:
    return (top - (ember.arange(num_bins) / ((num_bins - 1) / spread)).round().int()).tolist()


def augmentation_space(num_bins: int, image_size, wide: bool = False, identity: bool = True,
                       invert: bool = False) -> dict:
    """op name -> (magnitudes per bin, whether the sign is random): RandAugment's space (``identity``),
    AutoAugment's (``invert``, no identity) or TrivialAugmentWide's (``wide``)."""
    h, w = image_size
    shear, colour = (0.99, 0.99) if wide else (0.3, 0.9)
    space = {"Identity": ([0.0], False)} if identity else {}
    space.update({
        "ShearX": (_linspace(0.0, shear, num_bins), True), "ShearY": (_linspace(0.0, shear, num_bins), True),
        "TranslateX": (_linspace(0.0, 32.0 if wide else 150.0 / 331.0 * w, num_bins), True),
        "TranslateY": (_linspace(0.0, 32.0 if wide else 150.0 / 331.0 * h, num_bins), True),
        "Rotate": (_linspace(0.0, 135.0 if wide else 30.0, num_bins), True),
        **{name: (_linspace(0.0, colour, num_bins), True) for name in ("Brightness", "Color", "Contrast",
                                                                        "Sharpness")},
        "Posterize": (_posterize_bits(num_bins, 6 if wide else 4), False),
        "Solarize": (_linspace(255.0, 0.0, num_bins), False),
        "AutoContrast": ([0.0], False), "Equalize": ([0.0], False)})
    if invert:
        space["Invert"] = ([0.0], False)
    return space


def _fill_for(img, fill):
    """torchvision's fill handling: one float per channel for tensors."""
    if isinstance(img, ember.Tensor) and fill is not None:
        c = F.get_dimensions(img)[0]
        return [float(fill)] * c if isinstance(fill, (int, float)) else [float(v) for v in fill]
    return fill


def _randint(n: int) -> int:
    return int(ember.randint(n, (1,)).item())


class AutoAugmentPolicy(enum.Enum):
    """AutoAugment policies learned on ImageNet, CIFAR10 and SVHN."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# each sub-policy: two (op, probability, magnitude bin) steps
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None))],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None))],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None))],
}


class _Augment(nn.Module):
    """``draw(height, width)`` picks the ``(op, magnitude)`` steps of one call; ``forward`` applies them."""

    def __init__(self, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.interpolation, self.fill = interpolation, fill

    def draw(self, height: int, width: int) -> list:
        raise NotImplementedError

    def forward(self, img):
        _, height, width = F.get_dimensions(img)
        fill = _fill_for(img, self.fill)
        for op_name, magnitude in self.draw(height, width):
            img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img


def _signed(magnitude: float, signed: bool, negate: bool) -> float:
    return -magnitude if signed and negate else magnitude


class AutoAugment(_Augment):
    """AutoAugment (Cubuk et al. 2019): one of the ``policy``'s 25 sub-policies per call, each of its two ops
    applied with its probability and a random sign."""

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation=InterpolationMode.NEAREST, fill=None) -> None:
        super().__init__(interpolation, fill)
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy, self.policies = policy, _POLICIES[policy]

    @staticmethod
    def get_params(transform_num: int):
        """A sub-policy index, two probabilities and two signs."""
        return _randint(transform_num), ember.rand((2,)), ember.randint(2, (2,))

    def draw(self, height: int, width: int) -> list:
        policy_id, probs, signs = self.get_params(len(self.policies))
        space = augmentation_space(10, (height, width), identity=False, invert=True)
        steps = []
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[policy_id]):
            if probs[i] <= p:
                magnitudes, signed = space[op_name]
                magnitude = float(magnitudes[magnitude_id]) if magnitude_id is not None else 0.0
                steps.append((op_name, _signed(magnitude, signed, int(signs[i]) == 0)))
        return steps

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(_Augment):
    """RandAugment (Cubuk et al. 2020): ``num_ops`` ops drawn uniformly, all at bin ``magnitude`` of
    ``num_magnitude_bins``, each with a random sign."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation=InterpolationMode.NEAREST, fill=None) -> None:
        super().__init__(interpolation, fill)
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins

    def draw(self, height: int, width: int) -> list:
        space = augmentation_space(self.num_magnitude_bins, (height, width))
        steps = []
        for _ in range(self.num_ops):
            op_name = list(space)[_randint(len(space))]
            magnitudes, signed = space[op_name]
            magnitude = float(magnitudes[self.magnitude]) if len(magnitudes) > 1 else 0.0
            steps.append((op_name, _signed(magnitude, signed, bool(_randint(2)))))
        return steps

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, "
                f"fill={self.fill})")


class TrivialAugmentWide(_Augment):
    """TrivialAugment Wide (Müller & Hutter 2021): one op and one magnitude bin drawn uniformly per call."""

    def __init__(self, num_magnitude_bins: int = 31, interpolation=InterpolationMode.NEAREST, fill=None) -> None:
        super().__init__(interpolation, fill)
        self.num_magnitude_bins = num_magnitude_bins

    def draw(self, height: int, width: int) -> list:
        space = augmentation_space(self.num_magnitude_bins, (height, width), wide=True)
        op_name = list(space)[_randint(len(space))]
        magnitudes, signed = space[op_name]
        magnitude = float(magnitudes[_randint(len(magnitudes))]) if len(magnitudes) > 1 else 0.0
        return [(op_name, _signed(magnitude, signed, bool(_randint(2))))]

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class AugMix(nn.Module):
    """AugMix (Hendrycks et al. 2020): ``mixture_width`` chains of 1-3 (or ``chain_depth``) ops of severity
    ``severity``, mixed with Dirichlet weights and blended with the original by a Beta(alpha, alpha) draw."""

    _PARAMETER_MAX = 10

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation=InterpolationMode.BILINEAR, fill=None) -> None:
        super().__init__()
        if not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, chain_depth
        self.alpha, self.all_ops, self.interpolation, self.fill = alpha, all_ops, interpolation, fill

    def _augmentation_space(self, num_bins: int, image_size) -> dict:
        h, w = image_size
        space = {
            "ShearX": (_linspace(0.0, 0.3, num_bins), True), "ShearY": (_linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (_linspace(0.0, w / 3.0, num_bins), True),
            "TranslateY": (_linspace(0.0, h / 3.0, num_bins), True),
            "Rotate": (_linspace(0.0, 30.0, num_bins), True),
            "Posterize": (_posterize_bits(num_bins, 4, top=4), False),
            "Solarize": (_linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": ([0.0], False), "Equalize": ([0.0], False)}
        if self.all_ops:
            space.update({name: (_linspace(0.0, 0.9, num_bins), True)
                          for name in ("Brightness", "Color", "Contrast", "Sharpness")})
        return space

    def _sample_dirichlet(self, params):
        """One Dirichlet draw per row of ``params`` (a method, so tests can fix it)."""
        return ember.distributions.Dirichlet(params).sample()

    def forward(self, orig_img):
        channels, height, width = F.get_dimensions(orig_img)
        fill = _fill_for(orig_img, self.fill)
        img = orig_img if isinstance(orig_img, ember.Tensor) else F.pil_to_tensor(orig_img)
        space = self._augmentation_space(self._PARAMETER_MAX, (height, width))
        orig_dims = list(img.shape)
        batch = img.reshape([1] * max(4 - img.ndim, 0) + orig_dims)
        dims = [batch.shape[0]] + [1] * (batch.ndim - 1)
        # the original's weight and the chains' share (a Beta draw), then the chains' split of that share
        m = self._sample_dirichlet(ember.tensor([self.alpha, self.alpha], device=batch.device).expand(dims[0], -1))
        weights = self._sample_dirichlet(ember.tensor([self.alpha] * self.mixture_width, device=batch.device)
                                         .expand(dims[0], -1)) * m[:, 1].reshape(dims[0], -1)
        mix = m[:, 0].reshape(dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else int(ember.randint(1, 4, (1,)).item())
            for _ in range(depth):
                op_name = list(space)[_randint(len(space))]
                magnitudes, signed = space[op_name]
                magnitude = float(magnitudes[_randint(self.severity)]) if len(magnitudes) > 1 else 0.0
                aug = _apply_op(aug, op_name, _signed(magnitude, signed, bool(_randint(2))), self.interpolation,
                                fill)
            mix = mix + weights[:, i].reshape(dims) * aug
        mix = mix.reshape(orig_dims).to(dtype=img.dtype)
        return mix if isinstance(orig_img, ember.Tensor) else F.to_pil_image(mix)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(severity={self.severity}, mixture_width={self.mixture_width}, "
                f"chain_depth={self.chain_depth}, alpha={self.alpha}, all_ops={self.all_ops}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
