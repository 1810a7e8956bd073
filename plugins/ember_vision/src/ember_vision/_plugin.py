"""The ``ember`` entry point: exposes this package as ``ember.vision``.

``import ember.vision.transforms`` resolves to ``ember_vision.transforms`` (the same module
object, not a copy) through a small import finder.
"""
import importlib
import importlib.abc
import importlib.util
import sys

from ember.plugins import hookimpl

ALIAS = "ember.vision."


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolve ``ember.vision.<sub>`` to the already-importable ``ember_vision.<sub>``."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(ALIAS):
            return None
        real = "ember_vision." + fullname[len(ALIAS):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return importlib.import_module("ember_vision." + spec.name[len(ALIAS):])

    def exec_module(self, module):
        pass


@hookimpl
def ember_ops(registry):
    import ember_vision

    registry.add_module("vision", ember_vision)
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
