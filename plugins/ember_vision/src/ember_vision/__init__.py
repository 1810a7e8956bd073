"""ember-vision: datasets, transforms, models and image utilities for ember.

Installed, it is also ``ember.vision`` (registered through the ``ember`` entry point).
Submodules load on first use, so ``import ember`` stays fast.

>>> import ember_vision
>>> ember_vision.transforms.Compose([]) is not None
True
"""
import importlib

__version__ = "0.1.0"
_SUBMODULES = ("datasets", "extension", "io", "models", "ops", "transforms", "tv_tensors", "utils", "version")
__all__ = list(_SUBMODULES) + ["get_image_backend", "set_image_backend", "get_video_backend", "set_video_backend",
                                "disable_beta_transforms_warning"]

_image_backend = "PIL"
_video_backend = "pyav"


def set_image_backend(backend: str) -> None:
    """Choose the package that loads images in the datasets: ``"PIL"`` or ``"accimage"``.

    >>> set_image_backend("PIL"); get_image_backend()
    'PIL'
    """
    global _image_backend
    if backend not in ("PIL", "accimage"):
        raise ValueError(f"Invalid backend '{backend}'. Options are 'PIL' and 'accimage'")
    _image_backend = backend


def get_image_backend() -> str:
    """The package that loads images (``"PIL"`` unless :func:`set_image_backend` chose ``"accimage"``)."""
    return _image_backend


def set_video_backend(backend: str) -> None:
    """Choose the video decoder; as in torchvision 0.28 only PyAV (``"pyav"``) decodes, so this changes nothing."""


def get_video_backend() -> str:
    """The video decoder: ``"pyav"``."""
    return _video_backend


def disable_beta_transforms_warning() -> None:
    """Nothing to do: ``transforms.v2`` gives no beta warning (kept so torchvision programs that call it run)."""


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
