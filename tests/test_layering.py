"""The core's floors: imports only go down, and the module-level import graph has no cycle.

Floors, bottom up: dtypes/storage/backend/kernels -> tensor -> autograd -> dispatch/interception/writes/registry
-> ops -> the rest (nn, optim, utils.data, serialization, linalg, distributed, ...).  A module may import its own
floor and the floors below.  An import inside a function is allowed upward only where it breaks a genuine cycle,
and then it says so in a ``# cycle:`` comment on its line or the line above.
"""
from __future__ import annotations

import ast
import pathlib

import pytest

CORE = pathlib.Path(__file__).resolve().parents[1] / "core"

# module prefix -> floor (the longest matching prefix wins); every module of the core must match one
FLOORS = {
    "ember.dtypes": 0, "ember.state": 0, "ember.storage": 0, "ember.shared_memory": 0, "ember.backend": 0,
    "ember.kernels": 0, "ember.hookspecs": 0, "ember._printing": 0,
    "ember.layouts": 0, "ember.arguments": 0,
    "ember.tensor": 1, "ember.random": 1,
    "ember.autograd": 2,
    "ember.dispatch": 3, "ember.interception": 3, "ember.writes": 3, "ember.registry": 3,
    "ember.ops": 4,
    "ember": 5,
}


def module_name(path: pathlib.Path) -> str:
    parts = ["ember", *path.relative_to(CORE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def floor(mod: str) -> int:
    best = max((p for p in FLOORS if mod == p or mod.startswith(p + ".")), key=len)
    return FLOORS[best]


def is_package(mod: str) -> bool:
    return (CORE.joinpath(*mod.split(".")[1:]) / "__init__.py").exists()


def _exists(mod: str) -> bool:
    rel = mod.split(".")[1:]
    return not rel or is_package(mod) or CORE.joinpath(*rel).with_suffix(".py").exists()


def imports(path: pathlib.Path):
    """``(target module, line, at module level, source lines)`` for each import of an ember module in ``path``."""
    mod = module_name(path)
    src = path.read_text()
    tree = ast.parse(src)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    top = {id(n) for n in tree.body}
    top |= {id(n) for stmt in tree.body if isinstance(stmt, (ast.If, ast.Try)) for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target != "ember" and not target.startswith("ember."):
                continue
            names = [f"{target}.{a.name}" for a in node.names]
            found = [n for n in names if _exists(n)] or [target]
        elif isinstance(node, ast.Import):
            found = [a.name for a in node.names if a.name == "ember" or a.name.startswith("ember.")]
        else:
            continue
        for target in found:
            yield target, node.lineno, id(node) in top, src.splitlines()


def all_modules():
    return sorted(p for p in CORE.rglob("*.py"))


def edges():
    for path in all_modules():
        mod = module_name(path)
        for target, line, at_top, lines in imports(path):
            yield mod, target, line, at_top, lines, path


def test_every_module_has_a_floor():
    assert all(floor(module_name(p)) is not None for p in all_modules())
    assert floor("ember.ops.pointwise") == 4 and floor("ember.nn.functional") == 5


def test_no_module_level_import_goes_up():
    upward = [f"{mod}:{line} imports {target} (floor {floor(mod)} -> {floor(target)})"
              for mod, target, line, at_top, _, _ in edges()
              if at_top and target != "ember" and floor(target) > floor(mod)]
    assert not upward, "module-level imports that go up a floor:\n" + "\n".join(upward)


def test_upward_imports_in_functions_say_which_cycle_they_break():
    def commented(lines, line):
        return any("# cycle:" in lines[i] for i in (line - 1, line - 2) if 0 <= i < len(lines))

    bare = [f"{mod}:{line} imports {target}" for mod, target, line, at_top, lines, _ in edges()
            if not at_top and floor(target) > floor(mod) and not commented(lines, line)]
    assert not bare, "upward imports inside functions without a '# cycle:' comment:\n" + "\n".join(bare)


def _commented(lines, line):
    return any("# cycle:" in lines[i] for i in (line - 1, line - 2) if 0 <= i < len(lines))


def test_every_import_in_a_function_says_which_cycle_it_breaks():
    """Any floor: an ember import inside a function either breaks a cycle (and says which) or sits at the top."""
    bare = [f"{mod}:{line} imports {target}" for mod, target, line, at_top, lines, _ in edges()
            if not at_top and not _commented(lines, line)]
    assert not bare, "imports inside functions without a '# cycle:' comment:\n" + "\n".join(bare)


def test_module_level_imports_have_no_cycle():
    graph: dict = {}
    for mod, target, _, at_top, _, _ in edges():
        if at_top and target != mod and target != "ember":
            graph.setdefault(mod, set()).add(target)
    # a package's __init__ may import its own submodules; a submodule importing its package is the loop
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components, iteratively
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        cycles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles at module level:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("planted", ["from .ops.creation import zeros\n", "from ..nn import Module\n"])
def test_a_planted_upward_import_is_caught(tmp_path, monkeypatch, planted):
    """The checks fail when an upward import is planted (in a copy of the core)."""
    import shutil

    copy = tmp_path / "core"
    shutil.copytree(CORE, copy)
    target = copy / ("tensor.py" if planted.startswith("from .ops") else "autograd/engine.py")
    target.write_text(planted + target.read_text())
    monkeypatch.setattr(__import__(__name__), "CORE", copy)
    with pytest.raises(AssertionError, match="go up a floor"):
        test_no_module_level_import_goes_up()


def test_a_planted_function_level_import_is_caught(tmp_path, monkeypatch):
    """An uncommented import inside a function is reported, even one going down a floor; a commented one is not."""
    import shutil

    copy = tmp_path / "core"
    shutil.copytree(CORE, copy)
    target = copy / "nn" / "init.py"
    src = target.read_text()
    planted = ("\n\ndef _planted():\n    from ..tensor import Tensor\n    return Tensor\n"
               "\n\ndef _explained():\n    # cycle: planted for the test\n"
               "    from ..tensor import Tensor\n    return Tensor\n")
    target.write_text(src + planted)
    line = len(src.splitlines()) + 4
    monkeypatch.setattr(__import__(__name__), "CORE", copy)
    explained = line + 6
    assert target.read_text().splitlines()[explained - 1] == "    from ..tensor import Tensor"
    with pytest.raises(AssertionError, match=f"ember.nn.init:{line} imports ember.tensor(\n|$)") as e:
        test_every_import_in_a_function_says_which_cycle_it_breaks()
    assert f"ember.nn.init:{explained} " not in str(e.value)
