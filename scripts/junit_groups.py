#!/usr/bin/env python3
"""Group a JUnit XML report's failures and errors by root cause, as Markdown.

    python scripts/junit_groups.py cuda-suite.xml [--examples 3] > suite-groups.md

A root cause is the exception line of the failure with numbers, shapes, addresses and quoted names
masked, so "shape (3, 4)" and "shape (5, 6)" fall in one group.  Groups are listed largest first with
their count, a few test ids and one traceback tail each.
"""
import argparse
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict

_MASKS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<addr>"),
    (re.compile(r"'[^']*'"), "'?'"),
    (re.compile(r'"[^"]*"'), '"?"'),
    (re.compile(r"\(\s*\d+(?:\s*,\s*\d*)*\s*\)"), "(?)"),
    (re.compile(r"\[\s*\d+(?:\s*,\s*\d*)*\s*\]"), "[?]"),
    (re.compile(r"-?\d+(\.\d+)?(e-?\d+)?"), "N"),
]


def cause(message: str) -> str:
    """The masked first line of an exception message: the key failures are grouped by."""
    line = next((ln for ln in message.strip().splitlines() if ln.strip()), "(no message)")
    for pat, rep in _MASKS:
        line = pat.sub(rep, line)
    return line.strip()[:200]


def read(path):
    """(test id, kind, message, text) for every failed or erroring test case of the report."""
    rows = []
    for case in ET.parse(path).getroot().iter("testcase"):
        for kind in ("failure", "error"):
            for el in case.findall(kind):
                tid = f"{case.get('classname', '')}::{case.get('name', '')}"
                rows.append((tid, kind, el.get("message") or "", el.text or ""))
    return rows


def counts(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report")
    ap.add_argument("--examples", type=int, default=3)
    args = ap.parse_args(argv)
    try:
        rows = read(args.report)
        total = counts(args.report)
    except (OSError, ET.ParseError) as exc:
        print(f"junit_groups: cannot read {args.report}: {exc}", file=sys.stderr)
        return 1
    groups = defaultdict(list)
    for row in rows:
        groups[cause(row[2] or row[3])].append(row)
    passed = total["tests"] - total["failures"] - total["errors"] - total["skipped"]
    print(f"# {args.report}\n\n{total['tests']} tests: {passed} passed, {total['failures']} failed, "
          f"{total['errors']} errors, {total['skipped']} skipped; {len(groups)} root causes\n")
    for key, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"## {len(members)} x `{key}`\n")
        for tid, kind, _, _ in members[:args.examples]:
            print(f"- {kind}: {tid}")
        if len(members) > args.examples:
            print(f"- ... and {len(members) - args.examples} more")
        tail = "\n".join(members[0][3].strip().splitlines()[-12:])
        print(f"\n```\n{tail}\n```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
