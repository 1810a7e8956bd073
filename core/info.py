"""``python -m ember.info``: what this ember installation can run on, and which plugins shaped it.

Shows the versions, each backend (device type, plugin, availability, device
count, array library), the loaded plugins with their distributions, the ops
plugins added under ``ember.ops``, and which kernel serves each built-in op a
plugin overrode.

>>> import ember.info
>>> "backends" in ember.info.report()
True
"""
from __future__ import annotations

import platform
import sys

import numpy
import pluggy

import ember

from .plugins import REGISTRY


def _versions() -> list:
    return [f"ember {ember.__version__}", f"python {platform.python_version()}", f"numpy {numpy.__version__}",
            f"pluggy {pluggy.__version__}", f"plugin API version {ember.plugins.API_VERSION}"]


def _backends(registry) -> list:
    lines = []
    for name, b in sorted(registry.backends.items()):
        ok = b.is_available()
        state = f"available, {b.device_count()} device(s); {b.version() or 'version unknown'}" if ok \
            else f"unavailable: {b.unavailable_reason()}"
        lines.append(f"  {name:<10} {state}; from plugin {registry.describe(b.plugin)}")
    return lines or ["  (none)"]


def _plugins(registry) -> list:
    return [f"  {name:<16} {dist}" for name, dist in sorted(registry.plugins.items())] or ["  (none)"]


def _ops(registry) -> list:
    lines = []
    width = max((len(f"ember.ops.{ns}.{name}") for ns, ops in registry.ops.items() for name in ops), default=0)
    for ns, ops in sorted(registry.ops.items()):
        for name, entry in sorted(ops.items()):
            extra = [f"Tensor.{entry['method'] if isinstance(entry['method'], str) else name}"] \
                if entry["method"] else []
            if entry["module"] is not None:
                extra.append(f"module {entry['module'].__name__}")
            if entry["kernels"]:
                extra.append("kernels for " + ", ".join(entry["kernels"]))
            lines.append(f"  {f'ember.ops.{ns}.{name}':<{width}} plugin {registry.describe(entry['plugin'])}"
                         + (f"; {'; '.join(extra)}" if extra else ""))
    return lines or ["  (none)"]


def _overrides(registry) -> list:
    return [f"  {dev}:{op} served by plugin {registry.describe(plugin)} at priority {prio} "
            f"(replacing {registry.describe(replaced)})"
            for dev, op, plugin, prio, replaced in registry.overridden()] or ["  (none)"]


def report() -> str:
    """The whole report as text."""
    sections = [("versions", ["  " + v for v in _versions()]), ("backends", _backends(REGISTRY)),
                ("plugins", _plugins(REGISTRY)), ("plugin ops", _ops(REGISTRY)),
                ("overridden kernels", _overrides(REGISTRY))]
    return "\n".join(f"{title}:\n" + "\n".join(lines) for title, lines in sections)


def main() -> int:
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
