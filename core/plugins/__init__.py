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
import types
import warnings

import pluggy

from .. import hookspecs
from .. import backend as _backend
from ..backend import API_VERSION, BACKENDS, refresh_kernels
from ..hookspecs import PluginError
from ..plugin_ops import add_op as _add_op
from ..plugin_ops import remove_ops as _remove_ops

hookimpl = pluggy.HookimplMarker("ember")
_EMBER = __name__.rpartition(".")[0]  # the package plugins extend: ember


class PluginWarning(UserWarning):
    """A plugin found through an entry point failed to load; ember carries on without it."""


class Registry:
    """What hooks fill: backends by device type, kernel sources, ops by namespace."""

    def __init__(self, backends: dict | None = None):
        self.backends = {} if backends is None else backends  # device type -> Backend
        self.kernel_source = {}   # (device type, op) -> (plugin name, priority)
        self.pending = []         # kernels for backends not registered yet
        self.ops = {}             # namespace -> {name: OpEntry}
        self.plugins = {}         # plugin name -> distribution string
        self.methods = {}         # Tensor method name -> plugin that added it
        self.replaced = {}        # (device type, op) -> [(fn, plugin, priority) it replaced, ...]
        self.modules = {}         # name -> plugin that installed ember.<name>
        self.current = "<manual>"

    @contextlib.contextmanager
    def registering(self, name, dist="<manual>"):
        prev, self.current = self.current, name
        self.plugins.setdefault(name, dist)
        try:
            yield
        finally:
            self.current = prev

    def describe(self, plugin: str) -> str:
        """``'name' (distribution D V)``: how errors name a plugin."""
        dist = self.plugins.get(plugin)
        return f"{plugin!r}" if dist in (None, "<manual>") else f"{plugin!r} (distribution {dist})"

    # -- backends
    def add_backend(self, backend) -> None:
        """Register a :class:`ember.backend.Backend` for its device type."""
        version = getattr(backend, "api_version", None)
        if version != API_VERSION:
            raise PluginError(
                f"plugin {self.describe(self.current)}: backend {getattr(backend, 'name', backend)!r} was written "
                f"for ember plugin API version {version}, but this ember provides version {API_VERSION}; "
                f"upgrade the plugin or ember")
        name = backend.name
        if name in self.backends and self.backends[name] is not backend:
            raise PluginError(
                f"plugin {self.describe(self.current)}: device type {name!r} is already provided by plugin "
                f"{self.describe(self.backends[name].plugin)}")
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
            raise PluginError(f"plugin {self.describe(self.current)}: kernel {op!r} for {device_type!r} "
                              f"is not callable")
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
                    f"kernel clash: plugin {self.describe(plugin)} and plugin {self.describe(owner)} both provide "
                    f"kernel {op!r} for {device_type!r} at priority {priority}; a plugin overrides a kernel only "
                    f"with a higher priority (registry.add_kernel(..., priority={priority + 1}))")
            if priority < prio:
                return
            self.replaced.setdefault((device_type, op), []).append((backend.kernels[op], owner, prio))
        backend.kernels[op] = fn
        self.kernel_source[(device_type, op)] = (plugin, priority)
        backend.kernels_changed()

    # -- ops (filled in by ember.ops)
    def add_op(self, namespace: str, name: str, fn=None, **options) -> None:
        """Expose an operator as ``ember.ops.<namespace>.<name>`` (see the ``ember_ops`` hook).

        ``fn``: a function of tensors or an ``ember.autograd.Function`` subclass;
        or ``forward=`` (a kernel on arrays) with ``backward=`` (``(ctx, *grads)``
        written with ember ops; ``ctx.inputs``, ``ctx.output``).  Options:
        ``kernels={device_type: kernel}``, ``method=True|"name"``,
        ``module=ModuleClass``, ``differentiable=True``.
        """
        _add_op(self, namespace, name, fn, **options)

    # -- submodules
    def add_module(self, name: str, module) -> None:
        """Expose a plugin's package as ``ember.<name>`` (attribute and ``sys.modules`` entry).

        ``registry.add_module("vision", ember_vision)`` makes ``ember.vision`` and
        ``from ember.vision import transforms`` work; a name ember already has is refused.
        """
        ember = sys.modules[_EMBER]
        if self.modules.get(name, self.current) != self.current or (name not in self.modules and hasattr(ember, name)):
            raise PluginError(f"plugin {self.describe(self.current)}: ember.{name} already exists")
        self.modules[name] = self.current
        setattr(ember, name, module)
        sys.modules[f"{_EMBER}.{name}"] = module

    def overridden(self) -> list:
        """``[(device type, op, serving plugin, priority, replaced plugin)]`` for kernels a plugin replaced."""
        return [(dev, op, *self.kernel_source[(dev, op)], stack[0][1])
                for (dev, op), stack in sorted(self.replaced.items()) if stack]

    def forget(self, plugin: str) -> None:
        """Undo what ``plugin`` registered: its ops, methods, kernels and backends."""
        _remove_ops(self, plugin)
        for (dev, op), (owner, _) in list(self.kernel_source.items()):
            backend = self.backends.get(dev)
            if owner != plugin or backend is None:
                continue
            stack = self.replaced.get((dev, op))
            if stack:
                fn, prev_owner, prev_prio = stack.pop()
                backend.kernels[op] = fn
                self.kernel_source[(dev, op)] = (prev_owner, prev_prio)
            else:
                backend.kernels.pop(op, None)
                del self.kernel_source[(dev, op)]
            backend.kernels_changed()
        self.pending = [p for p in self.pending if p[4] != plugin]
        for name in [n for n, owner in self.modules.items() if owner == plugin]:
            del self.modules[name]
            delattr(sys.modules[_EMBER], name)
            sys.modules.pop(f"{_EMBER}.{name}", None)
        for dev, backend in list(self.backends.items()):
            if backend.plugin == plugin:
                del self.backends[dev]
                for key in [k for k in self.kernel_source if k[0] == dev]:
                    del self.kernel_source[key]
        self.plugins.pop(plugin, None)


REGISTRY = Registry(BACKENDS)  # ember.backend.BACKENDS is the table the core reads
pm = pluggy.PluginManager("ember")
pm.add_hookspecs(hookspecs)
for _hook in ("ember_backends", "ember_kernels", "ember_ops"):
    getattr(pm.hook, _hook).call_historic(kwargs={"registry": REGISTRY})


def register(plugin, name: str | None = None) -> None:
    """Register ``plugin`` (a module or object with hook implementations) by hand.

    Raises :class:`PluginError` if a hook refuses it; the plugin is then unregistered.
    """
    name = name or getattr(plugin, "__name__", None) or repr(plugin)
    _register(plugin, name, "<manual>")


def _register(plugin, name, dist):
    if pm.has_plugin(name) or name in REGISTRY.plugins:
        raise PluginError(f"a plugin named {name!r} is already registered (from {REGISTRY.plugins.get(name)})")
    with REGISTRY.registering(name, dist):
        try:
            pm.register(plugin, name=name)
        except BaseException:  # a hook's SystemExit too: the half-registered plugin is taken out either way
            with contextlib.suppress(Exception):
                pm.unregister(name=name)
            REGISTRY.forget(name)
            raise


def unregister(name: str) -> None:
    """Remove plugin ``name`` and everything it registered (its ops, methods, kernels, backends).

    >>> import ember
    >>> class Demo:
    ...     @ember.plugins.hookimpl
    ...     def ember_ops(self, registry):
    ...         registry.add_op("demo2", "twice", lambda x: x * 2)
    >>> ember.plugins.register(Demo(), name="demo2")
    >>> ember.plugins.unregister("demo2")
    >>> hasattr(ember.ops, "demo2")
    False
    """
    if pm.has_plugin(name):
        pm.unregister(name=name)
    REGISTRY.forget(name)
    refresh_kernels()


def _entry_points():
    if sys.version_info >= (3, 10):
        from importlib.metadata import entry_points
    else:  # pragma: no cover
        from importlib_metadata import entry_points
    return entry_points(group="ember")


_DEFERRED: list = []   # [module, name, dist]: plugins found half-imported, registered once their import ends
_WATCHED: dict = {}    # a module spec class -> its subclass with _Watched mixed in


def _half_imported(obj) -> bool:
    """Whether ``obj`` is a module whose import is still running (it imported ember, which is loading it)."""
    return isinstance(obj, types.ModuleType) and bool(getattr(getattr(obj, "__spec__", None), "_initializing", False))


class _Watched:
    """Mixed into a half-imported plugin's module spec: when the import system marks the import finished
    (``spec._initializing = False``), the deferred plugins are registered."""

    @property
    def _initializing(self):
        return self.__dict__.get("_ember_initializing", False)

    @_initializing.setter
    def _initializing(self, value):
        self.__dict__["_ember_initializing"] = value
        if not value:
            register_deferred()


def register_or_defer(module, name: str, dist: str) -> None:
    """Register plugin ``module``, or, when it is half-imported, once its import has run to the end.

    A program that imports a plugin before ember (``import ember_swish; import ember``, or a pickle naming a
    plugin's class) starts ember's import from inside the plugin's, before the plugin has defined its hooks:
    registered then, it would have none.  Such a plugin waits, and is registered as soon as its import ends
    (or, failing that, when a device type is asked for that no registered backend provides).
    """
    if not _half_imported(module):
        _register(module, name, dist)
        return
    if any(item[0] is module for item in _DEFERRED):
        return
    _DEFERRED.append([module, name, dist])
    spec = module.__spec__
    if not isinstance(spec, _Watched):
        initializing = spec._initializing
        spec.__class__ = _WATCHED.setdefault(type(spec), type("Watched" + type(spec).__name__,
                                                               (_Watched, type(spec)), {}))
        spec._initializing = initializing


def register_deferred() -> bool:
    """Register the deferred plugins whose import has ended; whether any was."""
    done = [item for item in _DEFERRED if not _half_imported(item[0])]
    for item in done:
        _DEFERRED.remove(item)
    registered = False
    for module, name, dist in done:
        if sys.modules.get(module.__name__) is not module:  # its import failed
            continue
        try:
            _register(module, name, dist)
            registered = True
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - as at import: reported, the others stay
            _report_failure(name, dist, exc)
    if registered:
        refresh_kernels()
    return registered


_backend.LATE_PLUGINS[0] = register_deferred


def load_entry_points() -> None:
    """Load every plugin advertised under the ``ember`` entry-point group.

    A plugin that fails is reported with a :class:`PluginWarning` naming its
    distribution; the others load and ember stays importable.  A plugin whose own
    import started ember's is registered when its import ends (:func:`register_or_defer`).
    """
    seen = set()
    for ep in _entry_points():
        dist = getattr(ep, "dist", None)
        dist_name = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "unknown distribution"
        if ep.name in seen or pm.has_plugin(ep.name) or ep.name in (item[1] for item in _DEFERRED):
            continue
        seen.add(ep.name)
        try:
            register_or_defer(ep.load(), ep.name, dist_name)
        except KeyboardInterrupt:  # the user's own interrupt stops the import, as anywhere else
            raise
        except BaseException as exc:  # noqa: BLE001 - any plugin failure, SystemExit too, must not break import
            _report_failure(ep.name, dist_name, exc)


def _report_failure(name: str, dist: str, exc: BaseException) -> None:
    """The warning for a plugin that raised (at import or registration) and was left out."""
    warnings.warn(f"ember plugin {name!r} from distribution {dist} failed to load and was skipped: "
                  f"{type(exc).__name__}: {exc}", PluginWarning, stacklevel=3)


def autoload_enabled() -> bool:
    return os.environ.get("EMBER_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0")
