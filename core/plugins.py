"""The plugin host: one pluggy PluginManager named ``ember``.

Plugins are found through the entry-point group ``ember`` (the built-in CPU
and CUDA backends register this way too) unless
``EMBER_DISABLE_PLUGIN_AUTOLOAD=1`` is set; then call :func:`register`.
Hooks fill the plain dicts below once, at registration; operators look
kernels up in those dicts and never call pluggy.
"""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

import pluggy

from . import hookspecs

API_VERSION = 1
hookimpl = pluggy.HookimplMarker("ember")


class PluginError(RuntimeError):
    """A plugin was refused (API-version mismatch, name clash, malformed op)."""


class PluginWarning(UserWarning):
    """A plugin found through an entry point failed to load; ember carries on without it."""


class Registry:
    """What hooks fill: backends by device type, kernel sources, ops by namespace."""

    def __init__(self):
        self.backends = {}        # device type -> Backend
        self.kernel_source = {}   # (device type, op) -> (plugin name, priority)
        self.pending = []         # kernels for backends not registered yet
        self.ops = {}             # namespace -> {name: OpEntry}
        self.plugins = {}         # plugin name -> distribution string
        self.current = "<manual>"

    @contextlib.contextmanager
    def registering(self, name):
        prev, self.current = self.current, name
        try:
            yield
        finally:
            self.current = prev

    # -- backends
    def add_backend(self, backend) -> None:
        """Register a :class:`ember.backend.Backend` for its device type."""
        version = getattr(backend, "api_version", None)
        if version != API_VERSION:
            raise PluginError(
                f"plugin {self.current!r}: backend {getattr(backend, 'name', backend)!r} was written for ember "
                f"plugin API version {version}, but this ember provides version {API_VERSION}; "
                f"upgrade the plugin or ember")
        name = backend.name
        if name in self.backends and self.backends[name] is not backend:
            raise PluginError(
                f"plugin {self.current!r}: device type {name!r} is already provided by "
                f"{self.backends[name].plugin!r}")
        backend.plugin = self.current
        self.backends[name] = backend
        for op in backend.kernels:
            self.kernel_source.setdefault((name, op), (self.current, 0))
        still = []
        for item in self.pending:
            if item[0] == name:
                self._install_kernel(*item)
            else:
                still.append(item)
        self.pending = still

    # -- kernels
    def add_kernel(self, device_type: str, op: str, fn, priority: int = 0) -> None:
        """Give backend ``device_type`` a kernel for ``op`` (see the ``ember_kernels`` hook)."""
        if not callable(fn):
            raise PluginError(f"plugin {self.current!r}: kernel {op!r} for {device_type!r} is not callable")
        item = (device_type, op, fn, priority, self.current)
        if device_type in self.backends:
            self._install_kernel(*item)
        else:
            self.pending.append(item)

    def _install_kernel(self, device_type, op, fn, priority, plugin):
        backend = self.backends[device_type]
        if op in backend.kernels:
            owner, prio = self.kernel_source.get((device_type, op), ("<built-in>", 0))
            if priority == prio and owner != plugin:
                raise PluginError(
                    f"kernel clash: plugin {plugin!r} and plugin {owner!r} both provide kernel {op!r} for "
                    f"{device_type!r} at priority {priority}; give one a higher priority")
            if priority < prio:
                return
        backend.kernels[op] = fn
        self.kernel_source[(device_type, op)] = (plugin, priority)
        backend.kernels_changed()

    # -- ops (filled in by ember.ops)
    def add_op(self, namespace: str, name: str, fn, **options) -> None:
        """Expose ``fn`` as ``ember.ops.<namespace>.<name>`` (see the ``ember_ops`` hook)."""
        from .ops.plugin_ops import add_op

        add_op(self, namespace, name, fn, **options)


REGISTRY = Registry()
pm = pluggy.PluginManager("ember")
pm.add_hookspecs(hookspecs)
for _hook in ("ember_backends", "ember_kernels", "ember_ops"):
    getattr(pm.hook, _hook).call_historic(kwargs={"registry": REGISTRY})


def register(plugin, name: str | None = None) -> None:
    """Register ``plugin`` (a module or object with hook implementations) by hand.

    Raises :class:`PluginError` if a hook refuses it; the plugin is then unregistered.
    """
    name = name or getattr(plugin, "__name__", None) or repr(plugin)
    with REGISTRY.registering(name):
        try:
            pm.register(plugin, name=name)
        except PluginError:
            with contextlib.suppress(Exception):
                pm.unregister(plugin)
            raise
    REGISTRY.plugins.setdefault(name, "<manual>")


def _entry_points():
    if sys.version_info >= (3, 10):
        from importlib.metadata import entry_points
    else:  # pragma: no cover
        from importlib_metadata import entry_points
    return entry_points(group="ember")


def load_entry_points() -> None:
    """Load every plugin advertised under the ``ember`` entry-point group.

    A plugin that fails is reported with a :class:`PluginWarning` naming its
    distribution; the others load and ember stays importable.
    """
    seen = set()
    for ep in _entry_points():
        dist = getattr(ep, "dist", None)
        dist_name = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "unknown distribution"
        if ep.name in seen or pm.has_plugin(ep.name):
            continue
        seen.add(ep.name)
        try:
            plugin = ep.load()
            with REGISTRY.registering(ep.name):
                pm.register(plugin, name=ep.name)
            REGISTRY.plugins[ep.name] = dist_name
        except Exception as exc:  # noqa: BLE001 - any plugin failure must not break import
            with contextlib.suppress(Exception):
                if pm.has_plugin(ep.name):
                    pm.unregister(name=ep.name)
            warnings.warn(
                f"ember plugin {ep.name!r} from distribution {dist_name} failed to load and was skipped: "
                f"{type(exc).__name__}: {exc}", PluginWarning, stacklevel=2)


def autoload_enabled() -> bool:
    return os.environ.get("EMBER_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0")
