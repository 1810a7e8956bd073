"""ember-vision: datasets, transforms, models and image utilities for ember.

Installed, it is also ``ember.vision`` (registered through the ``ember`` entry point).
Submodules load on first use, so ``import ember`` stays fast.

>>> import ember_vision
>>> ember_vision.transforms.Compose([]) is not None
True
"""
import importlib

__version__ = "0.1.0"
_SUBMODULES = ("datasets", "io", "models", "ops", "transforms", "tv_tensors", "utils")
__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_SUBMODULES))
