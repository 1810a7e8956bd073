"""Run unmodified PyTorch programs on ember: ``import torch`` resolves to ember for the whole process.

After :func:`install`, ``import torch``, ``import torch.nn.functional as F``, ``from torch import nn, optim`` and
``from torch.utils.data import DataLoader`` give ember's modules, whether or not PyTorch is installed; PyTorch
itself is never loaded. ``import torchvision`` resolves to ember-vision the same way. A name ember does not have
raises ``AttributeError("ember has no torch.<name> yet")`` (``ModuleNotFoundError`` for a submodule), so a program
stops at the first gap with the gap's PyTorch name.

To the program ember is then PyTorch 2.13: ``torch.__version__`` is :data:`ember.version.__version__` ("2.13.0";
``ember.__version__`` stays ember's own release number), and ``importlib.metadata.version("torch")`` answers the
same through a distribution finder that lives only in this process (nothing is written to disk).

From a shell, ``python -m ember run prog.py [args]`` runs a program this way; in a notebook call
``ember.torch_compat.install()`` before the first ``import torch``.

>>> import ember.torch_compat
>>> ember.torch_compat.install()
>>> import torch
>>> torch.ones(2).sum().item(), torch.__version__
(2.0, '2.13.0')
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import sys
import types

from . import dtypes
from .version import __version__ as _torch_version

__all__ = ["install", "uninstall", "installed"]

# the names a program imports -> ember's package for it, and the release whose API that package follows
_ROOTS = {"torch": "ember", "torchvision": "ember_vision"}
_VERSIONS = {"torch": "2.13.0", "torchvision": "0.28.0"}


def _root(name: str) -> str:
    return name.partition(".")[0]


def _ember_name(torch_name: str) -> str:
    root = _root(torch_name)
    return _ROOTS[root] + torch_name[len(root):]


def _aliased(name: str) -> bool:
    return _root(name) in _ROOTS


class _TorchAlias(types.ModuleType):
    """``torch.<sub>`` as seen by a program: every attribute read, write and delete goes to ember's module, and
    ``vars()``/``__dict__`` show that module's members."""

    def __init__(self, torch_name: str, target: types.ModuleType):
        super().__init__(torch_name)
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "__path__", [])  # a package, so that ``import torch.x.y`` is looked up here
        if torch_name in _VERSIONS:
            object.__setattr__(self, "__version__", _version(torch_name))

    @property
    def __dict__(self):
        return object.__getattribute__(self, "_target").__dict__

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
        if name.startswith("__"):  # the import system's own attributes (__spec__, __loader__, ...) stay here
            object.__setattr__(self, name, value)
            return
        if isinstance(value, _TorchAlias):  # ``torch.nn`` set back (an import, a monkeypatch's undo): ember's own
            value = object.__getattribute__(value, "_target")
        setattr(object.__getattribute__(self, "_target"), name, value)

    def __delattr__(self, name):
        delattr(object.__getattribute__(self, "_target"), name)

    def __dir__(self):
        return dir(object.__getattribute__(self, "_target"))

    def __repr__(self):
        return f"<module {self.__name__!r} (ember's {object.__getattribute__(self, '_target').__name__})>"


def _version(name: str):
    if name == "torch":
        return _torch_version
    return _VERSIONS[name]


class _Distribution(importlib.metadata.Distribution):
    """The installed-package metadata of ``torch`` (or ``torchvision``) as this process sees it: the version
    ember implements, held in memory only."""

    def __init__(self, name: str):
        self._name = name

    def read_text(self, filename):
        if filename in ("METADATA", "PKG-INFO"):
            return (f"Metadata-Version: 2.1\nName: {self._name}\nVersion: {_version(self._name)}\n"
                    f"Summary: {self._name} API served by {_ROOTS[self._name]}\n")
        return None

    def locate_file(self, path):
        return importlib.import_module(_ROOTS[self._name]).__path__[0] + "/" + str(path)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``torch``/``torchvision`` and their submodules before any other finder, so PyTorch's own files are
    never imported, and answers ``importlib.metadata`` for them."""

    def find_spec(self, fullname, path=None, target=None):
        if not _aliased(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def find_distributions(self, context=None):
        wanted = None if context is None else context.name
        if wanted is not None:
            wanted = wanted.lower().replace("-", "_").replace(".", "_")
        return iter([_Distribution(n) for n in _ROOTS if wanted is None or wanted == n])

    def create_module(self, spec):
        ember_name = _ember_name(spec.name)
        try:
            target = importlib.import_module(ember_name)
        except ModuleNotFoundError as e:
            if e.name is not None and _root(e.name) == _ROOTS[_root(spec.name)] and ember_name.startswith(e.name):
                raise ModuleNotFoundError(f"ember has no {spec.name} yet", name=spec.name) from None
            raise
        return _TorchAlias(spec.name, target)

    def exec_module(self, module):
        pass


_FINDER = _Finder()


class _AliasInChild:
    """Carried in the start-up data of a child started by multiprocessing's ``spawn`` method: unpickling it
    installs the alias there before the child imports its parent's main module, so ``import torch`` in the child
    (mnist_hogwild's workers) is ember as in the parent."""

    def __reduce__(self):
        return install, ()


_BASE_PREPARATION = []  # multiprocessing.spawn.get_preparation_data while the alias has it wrapped


def _preparation_data(name):
    data = _BASE_PREPARATION[0](name)
    data["ember_torch_alias"] = _AliasInChild()
    return data


def installed() -> bool:
    """Whether ``import torch`` resolves to ember in this process."""
    return _FINDER in sys.meta_path


def _aliased_modules():
    return [n for n in sys.modules if _aliased(n)]


def install() -> None:
    """Make ``import torch`` and ``import torchvision`` (and every submodule) resolve to ember for the rest of the
    process.

    If PyTorch's own modules were imported before (a notebook that already ran ``import torch``), they are
    dropped from ``sys.modules`` so the next import sees ember; objects made from them are unaffected.  While it is
    installed, dtypes, ``Size``, layouts and legacy type names print as PyTorch's (``torch.float32``): programs
    written for PyTorch print and parse them (``str(dtype).replace("torch.", "")``).
    """
    if installed():
        return
    for name in _aliased_modules():
        if not isinstance(sys.modules[name], _TorchAlias):
            del sys.modules[name]
    sys.meta_path.insert(0, _FINDER)
    dtypes.NAMESPACE[0] = "torch"  # dtypes, Size and type names print as PyTorch's: programs parse them
    import multiprocessing.spawn  # its children start with the alias too (function-level: most programs fork none)
    _BASE_PREPARATION.append(multiprocessing.spawn.get_preparation_data)
    multiprocessing.spawn.get_preparation_data = _preparation_data


def uninstall() -> None:
    """Undo :func:`install`: ``import torch`` finds PyTorch again (if installed)."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    dtypes.NAMESPACE[0] = "ember"
    if _BASE_PREPARATION:
        import multiprocessing.spawn
        multiprocessing.spawn.get_preparation_data = _BASE_PREPARATION.pop()
    for name in _aliased_modules():
        if isinstance(sys.modules[name], _TorchAlias):
            del sys.modules[name]
