"""ember's signatures against PyTorch's, for every public name of the coverage test's namespaces.

PyTorch's signature is ``inspect.signature`` where PyTorch has one (Python functions; a class's ``__init__``),
else the first line of the C-bound function's docstring (``sum(input, *, dtype=None) -> Tensor``), parsed.
A Tensor method's documented line has no ``self``; ember's first parameter is dropped to compare it.

ember's signature must take PyTorch's documented call: each of PyTorch's parameters by the same name, in the
same order among the positional ones, positional or keyword-only as PyTorch has it, with the same default
(``*args`` / ``**kwargs`` of ember's take any); a parameter ember has beyond those needs a default (another
overload of PyTorch's, as ``max(input, dim=None)`` beside ``max(input)``).

``EXCLUDED`` lists what differs on purpose, each with its reason.  ``PENDING`` lists the differences not yet
fixed: a name leaves it when it matches (the test says so), and no name may join it.  Run
``python tests/test_signatures.py`` for the counts and every difference.
"""
from __future__ import annotations

import ast
import inspect
import pathlib
import re
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_coverage import NAMESPACES, _resolve, load_exclusions, excluded_by, torch_names  # noqa: E402

torch = pytest.importorskip("torch")

_EMPTY = inspect.Parameter.empty
_POS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)

# "namespace:name" -> why ember's signature differs from PyTorch's on purpose
_DOC_NOT_PARSER = "PyTorch's docstring shows a default its argument parser does not use; ember takes the parser's"
EXCLUDED = {
    **dict.fromkeys(["torch:kthvalue", "Tensor:kthvalue", "torch:topk", "Tensor:topk", "Tensor:mode"],
                    _DOC_NOT_PARSER + " (dim=-1)"),
    **dict.fromkeys(["torch:amax", "Tensor:amax", "torch:amin", "Tensor:amin"], _DOC_NOT_PARSER + " (dim=[])"),
    **dict.fromkeys(["torch:std", "Tensor:std", "torch:var", "Tensor:var", "torch:std_mean", "torch:var_mean"],
                    "correction=None means PyTorch's unbiased default (1) and lets the legacy unbiased= overload "
                    "decide, as PyTorch's parser does"),
    **dict.fromkeys(["torch:searchsorted", "torch:true_divide", "torch:set_num_threads", "Tensor:dot",
                     "torch:set_num_interop_threads"],
                    "PyTorch's docstring names parameters its argument parser does not take (values=, dividend=, "
                    "int=); ember takes the parser's names (input=, other=, ...)"),
    "torch:load": "weights_only=None resolves to True in PyTorch's body; ember writes the resolved default",
    "utils.data:random_split": "PyTorch's default is its global generator object; ember's None means its own "
                               "global generator",
}
# (parameter, ember's default, PyTorch's default) -> why they are one default
SAME_DEFAULTS = {
    ("memory_format", "None", "preserve_format"): "None keeps the input's format, as preserve_format does",
    ("memory_format", "None", "contiguous_format"): "None is the contiguous format where PyTorch's default is",
    ("layout", "None", "strided"): "None is the strided layout, ember's only dense one",
}
PENDING_FILE = pathlib.Path(__file__).with_name("signatures_pending.txt")


# --------------------------------------------------------------------------- reading signatures
class _Param:
    __slots__ = ("name", "kind", "default")

    def __init__(self, name, kind, default):
        self.name, self.kind, self.default = name, kind, default

    def __repr__(self):
        return f"{self.name}{'' if self.default is _EMPTY else '=' + self.default}"


def _norm_default(v) -> str:
    """A default as comparable text: ``torch.strided`` and ``ember.strided`` alike, numbers by value."""
    if v is _EMPTY:
        return v
    text = str(v) if isinstance(v, _Literal) else repr(v)
    text = re.sub(r"^(torch|ember)\.", "", str(text))
    text = {"long": "int64"}.get(text, text)  # dtype names PyTorch documents by their legacy alias
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value))  # 1 and 1.0 are one default
    return repr(value)


class _Literal(str):
    """Default text read from a docstring (not a string default)."""


def _from_inspect(sig: inspect.Signature, drop_first: bool):
    params = list(sig.parameters.values())
    if drop_first and params and params[0].kind in _POS:
        params = params[1:]
    out = []
    for p in params:
        d = p.default if p.default is _EMPTY else _norm_default(p.default)
        out.append(_Param(p.name, p.kind, d))
    return out


_DOC_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*)\((.*)$")


def _inside_parens(rest: str):
    """The text up to the parenthesis closing the one just opened (None when the line does not close it)."""
    depth = 1
    for i, ch in enumerate(rest):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return rest[:i]
    return None


def _from_doc(obj, drop_self: bool):
    """The parameters of the first ``name(...)`` line of ``obj``'s docstring (None where there is none)."""
    doc = getattr(obj, "__doc__", None) or ""
    for line in doc.strip().splitlines()[:3]:
        m = _DOC_LINE.match(line)
        inner = _inside_parens(m.group(2)) if m else None
        if inner is not None:
            break
    else:
        return None
    out, kind = [], inspect.Parameter.POSITIONAL_OR_KEYWORD
    for part in _split(inner):
        part = part.strip()
        if not part:
            continue
        if part == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        if part == "/":
            continue
        if part.startswith("**"):
            out.append(_Param(part[2:], inspect.Parameter.VAR_KEYWORD, _EMPTY))
            continue
        if part.startswith("*"):
            out.append(_Param(part[1:].split(":")[0].strip(), inspect.Parameter.VAR_POSITIONAL, _EMPTY))
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        name, eq, default = part.partition("=")
        name = name.split(":")[0].strip()
        if not name.isidentifier():
            return None
        out.append(_Param(name, kind, _norm_default(_Literal(default.strip())) if eq else _EMPTY))
    if drop_self and out and out[0].name == "self":
        out = out[1:]
    return out


def _split(text):
    """``text`` split at the commas outside brackets."""
    depth, cur, parts = 0, "", []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _callable_of(obj):
    """What to read a signature from: a class's ``__init__`` (None when it is ``object``'s), else ``obj``."""
    if isinstance(obj, type):
        init = obj.__dict__.get("__init__") or next(
            (c.__dict__["__init__"] for c in obj.__mro__ if "__init__" in c.__dict__), None)
        return None if init in (None, object.__init__) else init
    return obj


def torch_signature(ns: str, obj):
    """PyTorch's parameters for ``obj`` (None where neither inspect nor the docstring gives them)."""
    target = _callable_of(obj)
    if target is None or not callable(target):
        return None
    method = ns == "Tensor" or isinstance(obj, type)
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        sig = None
    if sig is not None and not any(p.kind is p.VAR_POSITIONAL and p.name == "args" for p in sig.parameters.values()):
        return _from_inspect(sig, method)
    return _from_doc(obj if ns != "Tensor" else target, drop_self=True)


def ember_signature(ns: str, obj):
    target = _callable_of(obj)
    if target is None or not callable(target):
        return None
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    return _from_inspect(sig, ns == "Tensor" or isinstance(obj, type))


# --------------------------------------------------------------------------- comparing
def difference(theirs, ours) -> str | None:
    """Why ``ours`` does not take PyTorch's documented call ``theirs`` (None when it does)."""
    var_pos = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in ours)
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ours)
    by_name = {p.name: p for p in ours}
    our_pos = [p.name for p in ours if p.kind in _POS]
    their_pos = [p.name for p in theirs if p.kind in _POS]
    if our_pos[:len(their_pos)] != their_pos and not (var_pos and not our_pos):
        common = [n for n in their_pos if n in our_pos]
        if [n for n in our_pos if n in common] != common or any(n not in by_name and not var_kw for n in their_pos):
            return f"positional parameters {their_pos} != {our_pos}"
    for p in theirs:
        q = by_name.get(p.name)
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if q is None:
            if p.kind is inspect.Parameter.KEYWORD_ONLY and var_kw:
                continue
            if p.kind in _POS and var_pos and not our_pos:
                continue
            return f"no parameter {p.name!r}"
        if p.kind is inspect.Parameter.KEYWORD_ONLY and q.kind in _POS:
            continue  # ember takes it positionally too: PyTorch's call still works
        if p.kind in _POS and q.kind is inspect.Parameter.KEYWORD_ONLY:
            return f"{p.name!r} is keyword-only (PyTorch: positional)"
        if p.default != q.default and p.default is not _EMPTY and (p.name, q.default, p.default) not in SAME_DEFAULTS:
            return f"{p.name!r} default {q.default} (PyTorch: {p.default})"  # (a default PyTorch lacks is fine)
    their_names = {p.name for p in theirs}
    extra = [q.name for q in ours if q.name not in their_names and q.default is _EMPTY and q.kind in _POS
             and q.name not in ("args", "kwargs")]
    if extra and not any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in theirs):
        return f"required parameters PyTorch lacks: {extra}"
    return None


def compare_all():
    """``{"ns:name": difference}`` over every compared name, and the count compared."""
    exclusions = load_exclusions()
    diffs, compared = {}, 0
    for ns in NAMESPACES:
        t_owner, e_owner = _resolve(NAMESPACES[ns][0]), _resolve(NAMESPACES[ns][1])
        for name in torch_names(ns):
            if excluded_by(ns, name, exclusions) or not hasattr(e_owner, name):
                continue
            theirs = torch_signature(ns, getattr(t_owner, name, None))
            ours = ember_signature(ns, getattr(e_owner, name))
            if theirs is None or ours is None:
                continue
            compared += 1
            why = difference(theirs, ours)
            if why:
                diffs[f"{ns}:{name}"] = why
    return diffs, compared


def load_pending() -> set:
    lines = PENDING_FILE.read_text().splitlines() if PENDING_FILE.exists() else []
    return {ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip()}


# --------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def compared():
    return compare_all()


def test_signatures_take_pytorch_calls(compared):
    diffs, count = compared
    pending = load_pending()
    new = {k: v for k, v in diffs.items() if k not in EXCLUDED and k not in pending}
    assert count > 1000, f"only {count} signatures compared"
    assert not new, "signatures that do not take PyTorch's documented call:\n" + "\n".join(
        f"  {k}: {v}" for k, v in sorted(new.items()))


def test_pending_list_only_holds_real_differences(compared):
    diffs, _ = compared
    fixed = sorted(load_pending() - set(diffs))
    assert not fixed, f"these now match PyTorch: take them off {PENDING_FILE.name}: {fixed}"


def test_excluded_entries_still_differ(compared):
    diffs, _ = compared
    assert not sorted(set(EXCLUDED) - set(diffs)), "exclusions that now match PyTorch"


def test_doc_line_parser():
    class F:
        """sum(input, dim, keepdim=False, *, dtype=None) -> Tensor"""
    got = _from_doc(F, drop_self=False)
    pos, kw = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
    assert [(p.name, p.kind, p.default) for p in got] == [
        ("input", pos, _EMPTY), ("dim", pos, _EMPTY), ("keepdim", pos, "False"), ("dtype", kw, "None")]
    assert difference(got, _from_doc(F, drop_self=False)) is None
    missing = [p for p in got if p.name != "keepdim"]
    assert "keepdim" in difference(got, missing)


if __name__ == "__main__":  # python tests/test_signatures.py: the counts and every difference
    d, n = compare_all()
    pend = load_pending()
    print(f"{n} signatures compared, {len(d)} differ ({len(set(d) & set(EXCLUDED))} excluded, "
          f"{len(set(d) & pend)} pending, {len(set(d) - pend - set(EXCLUDED))} new)")
    for k in sorted(d):
        print(f"{k}  # {d[k]}")
