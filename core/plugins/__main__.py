"""``python -m ember.plugins new NAME [--dir DIR]``: write a complete, installable op plugin distribution.

It writes ``DIR/ember-NAME/`` with a ``pyproject.toml`` (the ``ember`` entry point), one op with a forward
kernel that runs on every backend and a backward written with ember ops, a README, and a test that runs the
conformance kit. ``pip install -e ember-NAME && pytest ember-NAME`` passes right away.
"""
from __future__ import annotations

import argparse
import keyword
import pathlib
import string
import sys

from .template import FILES


def new(name: str, directory: str | pathlib.Path = ".") -> pathlib.Path:
    """Write the plugin ``ember-<name>`` under ``directory`` and return its root."""
    if not name.isidentifier() or keyword.iskeyword(name) or name != name.lower():
        raise ValueError(f"plugin name {name!r} must be a lower-case Python identifier (it becomes "
                         f"ember.ops.<name> and the package ember_<name>)")
    root = pathlib.Path(directory) / f"ember-{name}"
    if root.exists():
        raise FileExistsError(f"{root} already exists; choose another name or directory")
    values = {"name": name, "package": f"ember_{name}", "dist": f"ember-{name}"}
    for rel, text in FILES.items():
        path = root / string.Template(rel).substitute(values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(string.Template(text).substitute(values))
    return root


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.plugins", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("new", help="write a new op plugin distribution")
    p.add_argument("name", help="the plugin's name: ember.ops.<name>, package ember_<name>")
    p.add_argument("--dir", default=".", help="where to write ember-<name>/ (default: here)")
    ns = parser.parse_args(argv)
    try:
        root = new(ns.name, ns.dir)
    except (ValueError, FileExistsError) as e:
        parser.error(str(e))
    print(f"wrote {root}\nnext: pip install -e \"{root}[test]\" && pytest {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
