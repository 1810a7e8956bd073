"""Coverage of torchvision 0.28's public names by ember-vision, read from torchvision in a reference process.

For each torchvision namespace (``torchvision`` itself, ``models`` and its sub-packages, ``transforms`` (v1 and
v2, with their ``functional``), ``tv_tensors``, ``ops``, ``io``, ``utils``, ``datasets``, ``datasets.utils``) the
public names are those torchvision defines: an object whose ``__module__`` is torchvision's, or a module that is
the namespace's own submodule.  What a module merely imports (``torch``, ``math``, typing names, PIL classes,
``OrderedDict``) is not API and is left out there, as ``tests/test_coverage.py`` leaves out re-exports.

``tests/vision_coverage_exclusions.toml`` lists the names ember-vision lacks, each group with its reason: groups
marked ``out_of_scope`` leave the coverage figures; the other groups are gaps still to build and count as missing.
Every name that is not listed must exist.  A namespace at or above 97% must stay there; the namespaces in
``BELOW_TARGET`` may not fall below their recorded figure and leave the list once they reach the target.

Run ``python tests/test_vision_coverage.py`` (or ``pytest tests/test_vision_coverage.py -rA -s``) for the report.
"""
from __future__ import annotations

import fnmatch
import importlib
import importlib.util
import pathlib
import sys
import tomllib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import vision_reference  # noqa: E402

NAMESPACES = ["torchvision", "models", "models.segmentation", "models.detection", "models.video",
              "models.optical_flow", "models.feature_extraction", "transforms", "transforms.functional",
              "transforms.v2", "transforms.v2.functional", "tv_tensors", "ops", "io", "utils", "datasets",
              "datasets.utils"]
TARGET = 0.97
# namespaces still below TARGET, with the coverage they have reached (in-scope names ember-vision has): a figure
# may only rise, and a namespace leaves this table when it reaches TARGET
BELOW_TARGET: dict = {}
EXCLUSIONS = pathlib.Path(__file__).with_name("vision_coverage_exclusions.toml")

# run in the reference process: each namespace's names that torchvision itself defines
_REFERENCE_NAMES = """
import importlib, types, typing
out = {}
for ns in %r:
    full = "torchvision" if ns == "torchvision" else "torchvision." + ns
    mod = importlib.import_module(full)
    keep = []
    for name in dir(mod):
        if name.startswith("_"):
            continue
        obj = getattr(mod, name)
        if isinstance(obj, types.ModuleType):
            own = obj.__name__ == full + "." + name
        elif isinstance(obj, typing.TypeVar):
            own = False
        else:
            own = str(getattr(obj, "__module__", None) or "").split(".")[0] == "torchvision"
        if own:
            keep.append(name)
    out[ns] = sorted(keep)
print(json.dumps(out))
"""


def torchvision_names() -> dict:
    """``{namespace: [public names torchvision 0.28 defines there]}``, read in the reference process."""
    return vision_reference.run(_REFERENCE_NAMES % (NAMESPACES,))


def ember_module(ns: str):
    """ember-vision's module for ``ns``; None where it does not import."""
    name = "ember_vision" if ns == "torchvision" else f"ember_vision.{ns}"
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def ember_has(mod, name: str) -> bool:
    """Whether ember-vision's module has ``name``, as an attribute or as a submodule not yet imported."""
    if mod is None:
        return False
    if hasattr(mod, name):
        return True
    try:
        return hasattr(mod, "__path__") and importlib.util.find_spec(f"{mod.__name__}.{name}") is not None
    except ImportError:
        return False


def load_exclusions(path=EXCLUSIONS) -> list:
    """``[(reason, out_of_scope, [patterns])]``; every pattern is "namespace:name" (fnmatch patterns allowed)."""
    out = []
    for g in tomllib.loads(path.read_text())["group"]:
        for entry in g["names"]:
            ns, sep, _ = entry.partition(":")
            if not sep or ns not in NAMESPACES:
                raise ValueError(f"{path.name}: bad entry {entry!r} (want 'namespace:name', namespace one of "
                                 f"{NAMESPACES})")
        out.append((g["reason"], bool(g.get("out_of_scope", False)), list(g["names"])))
    return out


def _group(ns: str, name: str, exclusions):
    key = f"{ns}:{name}"
    for group in exclusions:
        if any(fnmatch.fnmatchcase(key, p) for p in group[2]):
            return group
    return None


def coverage(ns: str, names: list, exclusions) -> dict:
    """In-scope names, the ones ember-vision has, the listed gaps, the unlisted missing names and the coverage."""
    mod = ember_module(ns)
    scope, gaps, unlisted, out_of_scope = [], [], [], []
    for n in names:
        group = _group(ns, n, exclusions)
        if group is not None and group[1]:
            out_of_scope.append(n)
            continue
        scope.append(n)
        if not ember_has(mod, n):
            (gaps if group is not None else unlisted).append(n)
    missing = gaps + unlisted
    return {"scope": scope, "missing": missing, "unlisted": unlisted, "out_of_scope": out_of_scope,
            "fraction": 1 - len(missing) / len(scope) if scope else 1.0}


def report(ns: str, cov: dict, width: int = 110) -> str:
    """One namespace's coverage line and its missing names, wrapped."""
    n, m = len(cov["scope"]), len(cov["missing"])
    lines = [f"{ns}: {n - m}/{n} in-scope names ({100 * cov['fraction']:.1f}%), {m} missing, "
             f"{len(cov['out_of_scope'])} out of scope"]
    line = "    "
    for name in cov["missing"]:
        if len(line) + len(name) + 1 > width:
            lines.append(line.rstrip())
            line = "    "
        line += name + " "
    if line.strip():
        lines.append(line.rstrip())
    return "\n".join(lines)


# --------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def reference():
    return torchvision_names()


@pytest.fixture(scope="module")
def exclusions():
    return load_exclusions()


@pytest.mark.parametrize("ns", NAMESPACES)
def test_namespace_covers_torchvision(ns, reference, exclusions):
    cov = coverage(ns, reference[ns], exclusions)
    text = report(ns, cov)
    print(text)
    assert cov["scope"], f"{ns}: no torchvision names found"
    assert not cov["unlisted"], f"{ns}: names torchvision has, ember-vision lacks and the exclusions do not list: " \
                                f"{cov['unlisted']}\n{text}"
    floor = BELOW_TARGET.get(ns)
    if floor is None:
        assert cov["fraction"] >= TARGET, text
    else:
        assert cov["fraction"] < TARGET, f"{ns} reached the target: take it off BELOW_TARGET\n{text}"
        assert cov["fraction"] >= floor - 1e-9, f"{ns} fell below its recorded {floor:.3f}\n{text}"


def test_exclusion_file_is_well_formed(exclusions):
    assert exclusions and all(reason and names for reason, _, names in exclusions)
    reasons = [r for r, _, _ in exclusions]
    assert len(reasons) == len(set(reasons)), "one group per reason"


def test_exclusions_are_current(reference, exclusions):
    """Every entry names something torchvision has and ember-vision lacks (an entry for a name ember-vision now
    has would hide a regression: take it off the list)."""
    keys = [f"{ns}:{n}" for ns in NAMESPACES for n in reference[ns]]
    stale = [p for _, _, patterns in exclusions for p in patterns if not fnmatch.filter(keys, p)]
    assert not stale, f"exclusions matching no torchvision 0.28 name: {stale}"
    present = [p for _, _, patterns in exclusions for p in patterns
               if all(ember_has(ember_module(p.partition(":")[0]), k.partition(":")[2])
                      for k in fnmatch.filter(keys, p))]
    assert not present, f"exclusions whose every name ember-vision now has (take them off the list): {present}"


def test_report_lists_missing_names():
    cov = {"scope": ["a", "b", "c"], "missing": ["b"], "unlisted": [], "out_of_scope": ["x"], "fraction": 2 / 3}
    text = report("demo", cov)
    assert text.splitlines()[0] == "demo: 2/3 in-scope names (66.7%), 1 missing, 1 out of scope"
    assert text.splitlines()[1].split() == ["b"]


def test_reference_leaves_out_imported_names(reference):
    """What torchvision's modules merely import (torch, typing names, PIL classes) is not counted."""
    assert "torch" not in reference["torchvision"] and "Module" not in reference["torchvision"]
    assert "Optional" not in reference["datasets.utils"] and "Image" not in reference["utils"]
    assert "resnet50" in reference["models"] and "detection" in reference["models"]


if __name__ == "__main__":  # python tests/test_vision_coverage.py: the whole report
    ref, ex = torchvision_names(), load_exclusions()
    for space in NAMESPACES:
        print(report(space, coverage(space, ref[space], ex)))
