"""``python -m ember.ecosystem [LIBRARY ...] [--smoke] [--write docs/ecosystem.md]``: the ecosystem comparison.

``--snapshot GIT_DIR@REF`` or ``--tests-from DIR`` first puts a library's test files beside its sdist (from a
repository snapshot, or from a folder they were gathered into); ``--scripts-from GIT_DIR@REF`` (or ``DIR``) puts
the repository scripts a library's canonical test runs (timm's ``train.py``) beside it; ``--subset "ARGS"`` runs
other pytest arguments;
``--version V`` runs one library at another release than its pin (``--deps "REQ ..."``: that release's non-PyTorch
requirements), kept apart from the pinned release's results and not written into the table.

Runs each library's chosen tests under PyTorch and under ember (see :mod:`ember.ecosystem`), prints the counts and
the failures under ember, and with ``--write`` puts the table of every library's latest run into the Markdown file
between its markers.
"""
from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path

from . import LIBRARIES, add_snapshot_scripts, add_snapshot_tests, compare, stored_results, table

BEGIN, END = "<!-- ecosystem-table:begin -->", "<!-- ecosystem-table:end -->"


def write_table(path: Path, text: str) -> None:
    """Replace the text between the table markers of ``path`` (appending the markers when they are absent)."""
    doc = path.read_text() if path.exists() else ""
    if BEGIN in doc and END in doc:
        head, _, rest = doc.partition(BEGIN)
        doc = f"{head}{BEGIN}\n{text}{END}{rest.partition(END)[2]}"
    else:
        doc = f"{doc}\n{BEGIN}\n{text}{END}\n"
    path.write_text(doc)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember.ecosystem", description=__doc__.splitlines()[0])
    parser.add_argument("libraries", nargs="*", metavar="LIBRARY",
                        help=f"libraries to run (default: all of {', '.join(LIBRARIES)})")
    parser.add_argument("--smoke", action="store_true", help="each library's small subset")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per test (pytest-timeout)")
    parser.add_argument("--budget", type=int, default=1800, help="seconds per library and mode")
    parser.add_argument("--write", type=Path, help="Markdown file whose table to replace")
    parser.add_argument("--failures", type=int, default=40, help="failures under ember to print per library")
    parser.add_argument("--canonical", action="store_true", help="ember's canonical-usage test of each library")
    parser.add_argument("--snapshot", metavar="GIT_DIR@REF",
                        help="first put the named library's tests from this repository snapshot beside its sdist")
    parser.add_argument("--subset", metavar="ARGS", type=shlex.split,
                        help="pytest arguments instead of the library's own subset (e.g. \"tests/x.py -k Model\")")
    parser.add_argument("--tests-from", metavar="DIR", type=Path,
                        help="first put the named library's tests from this folder (laid out as its repository) "
                             "beside its sdist; its ORIGIN file says where they came from")
    parser.add_argument("--scripts-from", metavar="GIT_DIR@REF",
                        help="first put the named library's repository scripts that its canonical test runs "
                             "(timm's train.py) from this repository snapshot, or from a folder laid out as it")
    parser.add_argument("--version", help="run the one named library at this release instead of its pinned one")
    parser.add_argument("--deps", metavar="REQS", type=shlex.split,
                        help="with --version: that release's non-PyTorch requirements instead of the pinned one's")
    ns = parser.parse_args(argv)
    unknown = sorted(set(ns.libraries) - set(LIBRARIES))
    if unknown:
        parser.error(f"unknown libraries {unknown}; choose from {', '.join(LIBRARIES)}")
    if (ns.snapshot or ns.tests_from or ns.scripts_from or ns.version) and len(ns.libraries) != 1:
        parser.error("--snapshot, --tests-from, --scripts-from and --version take exactly one LIBRARY")
    if ns.deps is not None and not ns.version:
        parser.error("--deps goes with --version")
    if ns.version and ns.write:
        parser.error("--write records the pinned releases only: run --version without it")
    if not ns.version:
        return _run(ns)
    pinned = LIBRARIES[ns.libraries[0]]
    LIBRARIES[pinned.name] = dataclasses.replace(pinned, version=ns.version,
                                                 deps=pinned.deps if ns.deps is None else tuple(ns.deps))
    try:
        return _run(ns)
    finally:
        LIBRARIES[pinned.name] = pinned


def _run(ns) -> int:
    if ns.snapshot:
        git_dir, _, ref = ns.snapshot.rpartition("@")
        add_snapshot_tests(LIBRARIES[ns.libraries[0]], Path(git_dir), ref or "HEAD")
    if ns.tests_from:
        add_snapshot_tests(LIBRARIES[ns.libraries[0]], ns.tests_from, "")
    if ns.scripts_from:
        where, at, ref = ns.scripts_from.rpartition("@")
        folder = Path(where if at else ref)  # GIT_DIR@REF, GIT_DIR (at HEAD) or a plain folder
        add_snapshot_scripts(LIBRARIES[ns.libraries[0]], folder, ref if at else "")
    results = compare(ns.libraries or None, smoke=ns.smoke, timeout=ns.timeout, budget=ns.budget,
                      canonical=ns.canonical, subset=ns.subset)
    for res in results:
        if res.mode == "ember" and res.failures:
            print(f"\n{res.library}: {len(res.failures)} failures/errors under ember")
            for name, message in res.failures[: ns.failures]:
                print(f"  {name}: {message}")
    text = table(results)
    print("\n" + text)
    if ns.write:  # every library's latest run, this one's included
        write_table(ns.write, table(stored_results()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
