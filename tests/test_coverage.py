"""Coverage of PyTorch's public names, read from the installed PyTorch at run time.

For each namespace (``torch`` callables, ``Tensor``, ``nn``, ``nn.functional``, ``nn.init``, ``linalg``, ``fft``,
``special``, ``autograd``, ``optim``, ``optim.lr_scheduler``, ``utils.data``) every public name of PyTorch's
must exist in ember's, unless ``tests/coverage_exclusions.toml`` excludes it with a reason (compiler internals,
quantization, sparse layouts, other vendors' devices, re-exported modules and typing objects, ...).  Each
namespace must also cover at least 97% of its in-scope names.

Run ``pytest tests/test_coverage.py -rA`` (or ``python tests/test_coverage.py``) for the per-namespace report:
the coverage and every missing name.
"""
from __future__ import annotations

import fnmatch
import importlib
import pathlib
import tomllib

import pytest

NAMESPACES = {
    # namespace: (PyTorch object, ember object)
    "torch": ("torch", "ember"),
    "Tensor": ("torch.Tensor", "ember.Tensor"),
    "nn": ("torch.nn", "ember.nn"),
    "nn.functional": ("torch.nn.functional", "ember.nn.functional"),
    "nn.init": ("torch.nn.init", "ember.nn.init"),
    "linalg": ("torch.linalg", "ember.linalg"),
    "fft": ("torch.fft", "ember.fft"),
    "special": ("torch.special", "ember.special"),
    "autograd": ("torch.autograd", "ember.autograd"),
    "optim": ("torch.optim", "ember.optim"),
    "optim.lr_scheduler": ("torch.optim.lr_scheduler", "ember.optim.lr_scheduler"),
    "utils.data": ("torch.utils.data", "ember.utils.data"),
}
TARGET = 0.97
EXCLUSIONS = pathlib.Path(__file__).with_name("coverage_exclusions.toml")


def _resolve(path: str):
    """The object at dotted ``path`` (attributes first, then submodules); None when it does not exist."""
    parts = path.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i, p in enumerate(parts[1:], 1):
        nxt = getattr(obj, p, None)
        if nxt is None:
            try:
                nxt = importlib.import_module(".".join(parts[: i + 1]))
            except ImportError:
                return None
        obj = nxt
    return obj


def torch_names(ns: str) -> list:
    """PyTorch's public names in ``ns`` (for ``torch`` itself, its callables: functions and classes)."""
    obj = _resolve(NAMESPACES[ns][0])
    names = [n for n in dir(obj) if not n.startswith("_")]
    if ns == "torch":
        names = [n for n in names if callable(getattr(obj, n, None))]
    return sorted(names)


def load_exclusions(path=EXCLUSIONS) -> list:
    """``[(reason, [patterns])]`` from the exclusion file; every entry is "namespace:name-or-pattern"."""
    groups = tomllib.loads(path.read_text())["group"]
    out = []
    for g in groups:
        for entry in g["names"]:
            ns, sep, _ = entry.partition(":")
            if not sep or ns not in NAMESPACES:
                raise ValueError(f"{path.name}: bad entry {entry!r} (want 'namespace:name', namespace one of "
                                 f"{sorted(NAMESPACES)})")
        out.append((g["reason"], list(g["names"])))
    return out


def excluded_by(ns: str, name: str, exclusions) -> str | None:
    key = f"{ns}:{name}"
    for reason, patterns in exclusions:
        if any(fnmatch.fnmatchcase(key, p) for p in patterns):
            return reason
    return None


def coverage(ns: str, exclusions) -> dict:
    """In-scope names, the ones ember has, the missing ones, and the excluded ones with their reasons."""
    ember_obj = _resolve(NAMESPACES[ns][1])
    scope, excluded = [], {}
    for n in torch_names(ns):
        reason = excluded_by(ns, n, exclusions)
        if reason is None:
            scope.append(n)
        else:
            excluded[n] = reason
    missing = [n for n in scope if ember_obj is None or not hasattr(ember_obj, n)]
    return {"scope": scope, "missing": missing, "excluded": excluded,
            "fraction": 1 - len(missing) / len(scope) if scope else 1.0}


def report(ns: str, cov: dict, width: int = 110) -> str:
    """One namespace's coverage line and its missing names, wrapped."""
    n, m = len(cov["scope"]), len(cov["missing"])
    head = (f"{ns}: {n - m}/{n} in-scope names ({100 * cov['fraction']:.1f}%), {m} missing, "
            f"{len(cov['excluded'])} excluded")
    lines, line = [head], "    "
    for name in cov["missing"]:
        if len(line) + len(name) + 1 > width:
            lines.append(line.rstrip())
            line = "    "
        line += name + " "
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


# --------------------------------------------------------------------------- tests
torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def exclusions():
    return load_exclusions()


@pytest.mark.parametrize("ns", list(NAMESPACES))
def test_namespace_covers_pytorch(ns, exclusions):
    cov = coverage(ns, exclusions)
    text = report(ns, cov)
    print(text)
    assert cov["scope"], f"{ns}: no PyTorch names found"
    assert not cov["missing"], f"names PyTorch has and ember lacks (not excluded):\n{text}"
    assert cov["fraction"] >= TARGET, text


def test_exclusion_file_is_well_formed(exclusions):
    assert exclusions and all(reason and names for reason, names in exclusions)
    reasons = [r for r, _ in exclusions]
    assert len(reasons) == len(set(reasons)), "one group per reason"


def test_exclusions_match_pytorch_names(exclusions):
    """Every entry names something this PyTorch has (a stale or misspelt entry would hide nothing)."""
    keys = [f"{ns}:{n}" for ns in NAMESPACES for n in torch_names(ns)]
    stale = [p for _, patterns in exclusions for p in patterns if not fnmatch.filter(keys, p)]
    assert not stale, f"exclusions matching no PyTorch {torch.__version__} name: {stale}"


def test_no_exclusion_covers_only_names_ember_has(exclusions):
    """An exclusion is for what ember leaves out: an entry all of whose names ember has is stale (a pattern may
    still cover some names ember has, e.g. the typed storages beside ``UntypedStorage``)."""
    stale = []
    for _, patterns in exclusions:
        for p in patterns:
            ns = p.partition(":")[0]
            ember_obj = _resolve(NAMESPACES[ns][1])
            hits = [n for n in torch_names(ns) if fnmatch.fnmatchcase(f"{ns}:{n}", p)]
            if hits and all(hasattr(ember_obj, n) for n in hits):
                stale.append(p)
    assert not stale, f"exclusions whose every name ember now has (take them off the list): {stale}"


def test_report_lists_missing_names():
    cov = {"scope": ["a", "b", "c"], "missing": ["b"], "excluded": {"x": "why"}, "fraction": 2 / 3}
    text = report("demo", cov)
    assert text.splitlines()[0] == "demo: 2/3 in-scope names (66.7%), 1 missing, 1 excluded"
    assert text.splitlines()[1].split() == ["b"]


if __name__ == "__main__":  # python tests/test_coverage.py: the whole report
    ex = load_exclusions()
    for space in NAMESPACES:
        print(report(space, coverage(space, ex)))
