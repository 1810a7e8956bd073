"""torchvision 0.28 as a reference, in a process of its own.

``scripts/test.sh`` installs torchvision's pure-Python package into ``.cache/torchvision-ref`` (never into
site-packages).  Its compiled ops do not load against the CPU build of PyTorch, so the reference process
stands in an empty ``torchvision._meta_registrations`` before importing it; everything written in Python
(models, transforms, feature extraction, box ops) then runs on PyTorch.  :func:`run` executes a snippet
there and returns what it prints as JSON on its last line; tests skip where the package or PyTorch is absent.
"""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REF_DIR = Path(os.environ.get("EMBER_TORCHVISION_REF",
                              Path(__file__).resolve().parents[1] / ".cache" / "torchvision-ref"))

_PRELUDE = """
import json, sys, types
sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
import torch, torchvision
"""


def available() -> bool:
    return (REF_DIR / "torchvision").is_dir()


def run(code: str, timeout: float = 300):
    """Run ``code`` after importing torch and torchvision in a reference process; its last printed line,
    parsed as JSON."""
    pytest.importorskip("torch")
    if not available():
        pytest.skip(f"torchvision 0.28 reference package not installed at {REF_DIR} (scripts/test.sh installs it)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REF_DIR), os.environ.get("PYTHONPATH", "")]))
    env.pop("EMBER_DEVICE", None)
    proc = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=str(REF_DIR))
    if proc.returncode != 0:
        raise RuntimeError(f"torchvision reference process failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
