"""``ember.jit._state`` (``torch.jit._state``): the registries of TorchScript classes. ember compiles no TorchScript
classes, so they stay empty; clearing them (as transformers' tests do after each trace) is well defined."""
from __future__ import annotations

_script_classes: dict = {}   # Python class -> its TorchScript class
_name_to_pyclass: dict = {}  # qualified name -> Python class


def _clear_class_state() -> None:
    """Forget every TorchScript class compiled so far."""
    _script_classes.clear()
    _name_to_pyclass.clear()
