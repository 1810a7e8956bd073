"""Run unmodified PyTorch programs on ember: ``import torch`` resolves to ember for the whole process.

After :func:`install`, ``import torch``, ``import torch.nn.functional as F``, ``from torch import nn, optim`` and
``from torch.utils.data import DataLoader`` give ember's modules, whether or not PyTorch is installed; PyTorch
itself is never loaded. A name ember does not have raises ``AttributeError("ember has no torch.<name> yet")``
(``ModuleNotFoundError`` for a submodule), so a program stops at the first gap with the gap's PyTorch name.

From a shell, ``python -m ember run prog.py [args]`` runs a program this way; in a notebook call
``ember.torch_compat.install()`` before the first ``import torch``.

>>> import ember.torch_compat
>>> ember.torch_compat.install()
>>> import torch
>>> torch.ones(2).sum().item()
2.0
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

__all__ = ["install", "uninstall", "installed"]


def _ember_name(torch_name: str) -> str:
    return "ember" + torch_name[len("torch"):]


class _TorchAlias(types.ModuleType):
    """``torch.<sub>`` as seen by a program: every attribute read, write and delete goes to ember's module."""

    def __init__(self, torch_name: str, target: types.ModuleType):
        super().__init__(torch_name)
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "__path__", [])  # a package, so that ``import torch.x.y`` is looked up here

    def __getattr__(self, name):
        target = object.__getattribute__(self, "_target")
        try:
            value = getattr(target, name)
        except AttributeError:
            pass
        else:
            if isinstance(value, types.ModuleType) and value.__name__ == f"{target.__name__}.{name}":
                return importlib.import_module(f"{self.__name__}.{name}")  # torch.nn stays an alias
            return value
        if not name.startswith("__"):
            try:  # a submodule not imported yet (``torch.utils.data`` read as an attribute)
                return importlib.import_module(f"{self.__name__}.{name}")
            except ModuleNotFoundError:
                pass
        raise AttributeError(f"ember has no {self.__name__}.{name} yet")

    def __setattr__(self, name, value):
        # the import system's own attributes (__spec__, __loader__, ...) and aliased submodules stay here
        if name.startswith("__") or isinstance(value, _TorchAlias):
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, "_target"), name, value)

    def __delattr__(self, name):
        delattr(object.__getattribute__(self, "_target"), name)

    def __dir__(self):
        return dir(object.__getattribute__(self, "_target"))

    def __repr__(self):
        return f"<module {self.__name__!r} (ember's {object.__getattribute__(self, '_target').__name__})>"


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``torch`` and ``torch.*`` before any other finder, so PyTorch's own files are never imported."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        try:
            target = importlib.import_module(_ember_name(spec.name))
        except ModuleNotFoundError as e:
            if e.name is not None and e.name.startswith("ember") and _ember_name(spec.name).startswith(e.name):
                raise ModuleNotFoundError(f"ember has no {spec.name} yet", name=spec.name) from None
            raise
        return _TorchAlias(spec.name, target)

    def exec_module(self, module):
        pass


_FINDER = _Finder()


def installed() -> bool:
    """Whether ``import torch`` resolves to ember in this process."""
    return _FINDER in sys.meta_path


def install() -> None:
    """Make ``import torch`` (and every ``torch.<sub>``) resolve to ember for the rest of the process.

    If PyTorch's own modules were imported before (a notebook that already ran ``import torch``), they are
    dropped from ``sys.modules`` so the next import sees ember; objects made from them are unaffected.
    """
    if installed():
        return
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if not isinstance(sys.modules[name], _TorchAlias):
            del sys.modules[name]
    sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Undo :func:`install`: ``import torch`` finds PyTorch again (if installed)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if isinstance(sys.modules[name], _TorchAlias):
            del sys.modules[name]
