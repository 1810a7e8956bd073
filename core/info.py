"""``python -m ember.info``: what this ember installation can run on, and which plugins shaped it.

Shows the versions, the CPU side (threads, NumPy's BLAS and the kernel family
it runs, the CPU's vector extensions), each backend (device type, plugin,
availability, device count, array library), the loaded plugins with their
distributions, the ops plugins added under ``ember.ops``, and which kernel
serves each built-in op a plugin overrode.

>>> import ember.info
>>> "backends" in ember.info.report()
True
"""
from __future__ import annotations

import os
import platform
import sys

import numpy
import pluggy

import ember

from .plugins import REGISTRY


def _versions() -> list:
    return [f"ember {ember.__version__}", f"python {platform.python_version()}", f"numpy {numpy.__version__}",
            f"pluggy {pluggy.__version__}", f"plugin API version {ember.plugins.API_VERSION}"]


# OpenBLAS kernel families with AVX-512 GEMMs (the rest of x86-64 stops at AVX2 or below)
_AVX512_FAMILIES = {"skylakex", "cooperlake", "sapphirerapids", "zen4", "zen5"}


def _blas() -> list:
    try:
        from threadpoolctl import threadpool_info  # optional: the 'threads' extra
    except ImportError:
        return []
    return [i for i in threadpool_info() if i.get("user_api") == "blas"]


def _simd() -> list:
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:
        return []
    return [name for name in ("AVX2", "AVX512F", "AVX512_SPR") if features.get(name)]


def _cpu(blas=None, simd=None, env=None) -> list:
    """Threads, BLAS and vector extensions; a note when the BLAS runs narrower kernels than the CPU has."""
    blas = _blas() if blas is None else blas
    simd = _simd() if simd is None else simd
    env = os.environ if env is None else env
    lines = [f"  threads {ember.get_num_threads()} (ember.set_num_threads, OMP_NUM_THREADS)",
             f"  vector extensions {', '.join(simd) or 'unknown'}"]
    narrow = []
    for lib in blas:
        arch = lib.get("architecture") or "unknown kernels"
        lines.append(f"  BLAS {lib.get('internal_api')} {lib.get('version')} ({arch}), "
                     f"{lib.get('num_threads')} thread(s): {lib.get('filepath')}")
        if lib.get("internal_api") == "openblas" and "AVX512F" in simd and arch.lower() not in _AVX512_FAMILIES:
            narrow.append(arch)
    if narrow:
        pinned = env.get("OPENBLAS_CORETYPE")
        why = f"OPENBLAS_CORETYPE={pinned} holds it there" if pinned else "it chose them at start"
        lines.append(f"  note: this CPU has AVX-512 but OpenBLAS runs {narrow[0]} kernels ({why}); GEMM-bound work "
                     f"(convolutions, linear and recurrent layers) runs at up to half the speed it could")
    if not blas:
        lines.append("  BLAS: install threadpoolctl (the 'threads' extra) to see which BLAS NumPy runs")
    return lines


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
    sections = [("versions", ["  " + v for v in _versions()]), ("cpu", _cpu()), ("backends", _backends(REGISTRY)),
                ("plugins", _plugins(REGISTRY)), ("plugin ops", _ops(REGISTRY)),
                ("overridden kernels", _overrides(REGISTRY))]
    return "\n".join(f"{title}:\n" + "\n".join(lines) for title, lines in sections)


def main() -> int:
    print(report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
