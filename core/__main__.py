"""``python -m ember``: command-line entry points.

``python -m ember run prog.py [args...]`` runs an unmodified PyTorch program on ember (``import torch`` and every
``torch.<sub>`` resolve to ember; see :mod:`ember.torch_compat`). ``python -m ember run -m pkg.module [args...]``
runs a module the same way. ``python -m ember info`` prints what this installation can run on.
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys

from . import info, torch_compat


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a PyTorch program on ember (import torch resolves to ember)")
    run.add_argument("-m", dest="module", action="store_true", help="run a module, as python -m does")
    run.add_argument("target", help="the program's path (or module name with -m)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments")
    sub.add_parser("info", help="versions, backends and plugins")
    ns = parser.parse_args(argv)
    if ns.command == "info":
        return info.main()
    torch_compat.install()
    sys.argv = [ns.target, *ns.args]
    if ns.module:
        runpy.run_module(ns.target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(ns.target)))
        runpy.run_path(ns.target, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
