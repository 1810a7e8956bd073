"""``ember.ops.<namespace>.<name>``: operators added by plugins through the ``ember_ops`` hook."""
from __future__ import annotations

import types


class OpNamespace(types.SimpleNamespace):
    """The operators of one plugin namespace."""

    def __init__(self, name):
        super().__init__()
        self._name = name

    def __getattr__(self, op):
        raise AttributeError(f"ember.ops.{self._name} has no operator {op!r}")


NAMESPACES: dict = {}


def add_op(registry, namespace, name, fn, **options):
    """Register ``fn`` as ``ember.ops.<namespace>.<name>``; a second owner of the same name is refused."""
    from ..plugins import PluginError

    ns_ops = registry.ops.setdefault(namespace, {})
    if name in ns_ops and ns_ops[name]["plugin"] != registry.current:
        raise PluginError(f"op clash: ember.ops.{namespace}.{name} is provided by plugin "
                          f"{ns_ops[name]['plugin']!r} and plugin {registry.current!r}")
    if not callable(fn):
        raise PluginError(f"plugin {registry.current!r}: op ember.ops.{namespace}.{name} is not callable")
    ns_ops[name] = {"fn": fn, "plugin": registry.current, **options}
    ns = NAMESPACES.setdefault(namespace, OpNamespace(namespace))
    setattr(ns, name, fn)
    method = options.get("method")
    if method:
        from ..tensor import Tensor

        setattr(Tensor, method if isinstance(method, str) else name, fn)


def namespace_getattr(name):
    if name in NAMESPACES:
        return NAMESPACES[name]
    raise AttributeError(f"module 'ember.ops' has no attribute {name!r} (no plugin registered that namespace)")
