"""What the examples share: a clear one-line exit when an optional package (an extra) is missing."""
from __future__ import annotations

import importlib
import os
import sys


def need(module: str, extra: str = "examples", install: str | None = None):
    """``import module``, or exit with one line naming the extra (or the ``install`` command) that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "this example"
        how = install or f"pip install -e \".[{extra}]\" (in ember's checkout; the '{extra}' extra)"
        raise SystemExit(f"{prog}: needs the '{module}' package: {how}") from None
