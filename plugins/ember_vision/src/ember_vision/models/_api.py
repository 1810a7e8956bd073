"""Pretrained weights: the architectures' checkpoints and how they load.

Files are fetched, cached and checked by :mod:`ember.hub`: they live in ``$EMBER_HOME/hub/checkpoints``
(default ``~/.cache/ember``), named as PyTorch names them (``resnet18-f37072fd.pth``: the part after the
last ``-`` is the start of the file's SHA-256).  A PyTorch checkpoint is read by ``ember.load`` (no torch
needed, no code from the file runs).
"""
from __future__ import annotations

import enum
import fnmatch
from functools import partial
from typing import Callable, NamedTuple

import ember

from ..transforms._presets import ImageClassification, InterpolationMode


def classification_transforms(crop_size: int, resize_size: int = 256,
                              interpolation: InterpolationMode = InterpolationMode.BILINEAR, **kwargs) -> partial:
    """A :class:`Weights` ``transforms``: :class:`ImageClassification` resizing the shorter side to
    ``resize_size`` and cropping ``crop_size``.

    >>> classification_transforms(240, 255)().crop_size
    [240]
    """
    return partial(ImageClassification, crop_size=crop_size, resize_size=resize_size, interpolation=interpolation,
                   **kwargs)


def swag_transforms(crop_size: int) -> partial:
    """The preprocessing of the SWAG checkpoints (ViT, RegNetY): a bicubic resize to the crop itself."""
    return classification_transforms(crop_size, crop_size, InterpolationMode.BICUBIC)


IMAGENET_TRANSFORMS = partial(ImageClassification, crop_size=224)
# the preprocessing of checkpoints trained with torchvision's 2021 recipe (most ``IMAGENET1K_V2`` members)
RECIPE_V2 = classification_transforms(224, 232)


def get_dir() -> str:
    """The hub directory: :func:`ember.hub.get_dir` (``$EMBER_HOME/hub``)."""
    return ember.hub.get_dir()


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = True, file_name: str | None = None) -> dict:
    """The state dict in ``url``'s file: :func:`ember.hub.load_state_dict_from_url` (the cache, the resumable
    download, the SHA-256 prefix check), checking the hash by default and loading onto the CPU unless
    ``map_location`` says otherwise."""
    return ember.hub.load_state_dict_from_url(url, model_dir, map_location=map_location or "cpu", progress=progress,
                                              check_hash=check_hash, file_name=file_name)


class Weights(NamedTuple):
    """A pretrained checkpoint: its URL, the number of classes it predicts, torchvision's other metadata
    the builder needs (``min_size``: the input side it was trained at, for models built for one size), and
    ``transforms``: a callable making its inference preprocessing (a partial of a preset in
    :mod:`ember_vision.transforms._presets`; ImageNet's 224 px crop of a 256 px bilinear resize by default)."""

    url: str
    num_classes: int = 1000
    meta: dict | None = None
    transforms: Callable = IMAGENET_TRANSFORMS


class WeightsEnum(enum.Enum):
    """The checkpoints of one architecture (``IMAGENET1K_V1``, and ``DEFAULT``)."""

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def num_classes(self) -> int:
        return self.value.num_classes

    @property
    def meta(self) -> dict:
        return {"num_classes": self.value.num_classes, **(self.value.meta or {})}

    @property
    def transforms(self) -> Callable:
        """The preprocessing factory: ``weights.transforms()`` is the module that turns a PIL image or tensor
        into the checkpoint's input, as torchvision's ``weights.transforms``."""
        return self.value.transforms

    def get_state_dict(self, progress: bool = True, check_hash: bool = True) -> dict:
        return load_state_dict_from_url(self.url, progress=progress, check_hash=check_hash)

    @classmethod
    def verify(cls, weights):
        """``weights`` as a member: a member, its name (``"DEFAULT"``) or None."""
        if weights is None or isinstance(weights, cls):
            return weights
        if isinstance(weights, str) and weights.split(".")[-1] in cls.__members__:
            return cls[weights.split(".")[-1]]
        raise ValueError(f"weights {weights!r} are not {cls.__name__}: expected one of "
                         f"{', '.join(cls.__members__)}")


def _weights_enum(name: str, url: str):
    return WeightsEnum(name, {"IMAGENET1K_V1": Weights(url), "DEFAULT": Weights(url)})


def weights_enum(name: str, default: str = "IMAGENET1K_V1", **urls: str):
    """A ``*_Weights`` enum with one member per ``urls`` entry (``IMAGENET1K_V1=url`` or a :class:`Weights`)
    and ``DEFAULT``."""
    members = {key: url if isinstance(url, Weights) else Weights(url) for key, url in urls.items()}
    return WeightsEnum(name, {**members, "DEFAULT": members[default]})


BUILTIN_MODELS: dict = {}


def register_model(weights_cls, name: str | None = None):
    """Register a builder under ``name`` (its own name by default) for :func:`get_model`, with its weights enum."""
    def wrapper(fn):
        key = name or fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        fn._weights_enum = weights_cls
        return fn
    return wrapper


def list_models(module=None, include=None, exclude=None) -> list[str]:
    """The sorted names of registered builders, optionally only those of ``module`` and filtered by ``include``
    / ``exclude`` shell-style patterns (a string or several)."""
    names = {k for k, fn in BUILTIN_MODELS.items()
             if module is None or fn.__module__.rsplit(".", 1)[0] == module.__name__}
    if include:
        names = {n for pattern in ([include] if isinstance(include, str) else include)
                 for n in fnmatch.filter(names, pattern)}
    for pattern in ([exclude] if isinstance(exclude, str) else exclude or ()):
        names -= set(fnmatch.filter(names, pattern))
    return sorted(names)


def get_model_builder(name: str):
    """The builder registered under ``name`` (lower case)."""
    try:
        return BUILTIN_MODELS[name.lower()]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config):
    """``get_model_builder(name)(**config)``: the model registered under ``name``."""
    return get_model_builder(name)(**config)


def get_model_weights(name):
    """The weights enum of a builder, given as the builder or its registered name."""
    fn = get_model_builder(name) if isinstance(name, str) else name
    try:
        return fn._weights_enum
    except AttributeError:
        raise ValueError(f"The model builder {fn!r} has no registered weights enum.") from None


def get_weight(name: str):
    """The weights member named ``"ResNet50_Weights.IMAGENET1K_V2"``."""
    enum_name, _, member = name.partition(".")
    for fn in BUILTIN_MODELS.values():
        if fn._weights_enum.__name__ == enum_name:
            return fn._weights_enum[member]
    raise ValueError(f"Unknown weights enum name: {enum_name}")


def build(model_cls_args, weights_cls, weights, pretrained: bool, kwargs: dict, progress: bool = True):
    """Construct a model (``(cls, args)``) and load ``weights`` (or ``DEFAULT`` when ``pretrained``)."""
    weights = weights_cls.verify(weights)
    if weights is None and pretrained:  # the legacy flag means the first ImageNet weights, as in torchvision
        weights = weights_cls.__members__.get("IMAGENET1K_V1", weights_cls.DEFAULT)
    if weights is not None:
        given = kwargs.setdefault("num_classes", weights.num_classes)
        if given != weights.num_classes:
            raise ValueError(f"num_classes={given} does not match the {weights.num_classes} classes of {weights}")
    cls, args = model_cls_args
    model = cls(*args, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model
