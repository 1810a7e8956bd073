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
import keyword
import pathlib
import re
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from test_coverage import NAMESPACES, _resolve, load_exclusions, excluded_by, torch_names  # noqa: E402

torch = pytest.importorskip("torch")

_EMPTY = inspect.Parameter.empty
_POS = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)

# "namespace:name" -> why ember's signature differs from PyTorch's on purpose.  (Where a C-bound function's
# docstring shows a call its own argument parser refuses, the parser's overloads decide: ``parser_overloads``.)
EXCLUDED = {
    **dict.fromkeys(["torch:set_num_threads", "torch:set_num_interop_threads"],
                    "PyTorch's docstring names the parameter int=, which its parser (no ATen schema to read) does not "
                    "take; ember names it n"),
    "Tensor:new_tensor": "PyTorch's docstring lists layout=, which its parser refuses (new_tensor has no ATen "
                         "schema to read); ember refuses it too",
    "utils.data:random_split": "PyTorch's default is its global generator object; ember's None means its own "
                               "global generator",
}
# (parameter, ember's default, PyTorch's default) -> why they are one default
SAME_DEFAULTS = {
    ("memory_format", "None", "preserve_format"): "None keeps the input's format, as preserve_format does",
    ("memory_format", "None", "contiguous_format"): "None is the contiguous format where PyTorch's default is",
    ("layout", "None", "strided"): "None is the strided layout, ember's only dense one",
    ("pin_memory", "False", "None"): "None is False: PyTorch's parser pins nothing unless asked",
    ("requires_grad", "False", "None"): "None is False: PyTorch's asarray records no gradient unless asked",
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
    if callable(v) and not isinstance(v, type):
        return f"<function {getattr(v, '__name__', text)}>"  # F.relu of either library
    try:
        value = ast.literal_eval(text) if not re.fullmatch(r"[\d.]+\s*/\s*[\d.]+", text) else eval(text)  # 1./8
    except (ValueError, SyntaxError):
        return text
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value))  # 1 and 1.0 are one default
    if isinstance(value, list):
        return repr(tuple(value))  # dim=[] and dim=() alike
    return repr(value)


def _spelled(name: str) -> str:
    """A parameter named by a Python keyword (``from``) is passed by position only; ember spells it ``from_``."""
    return name + "_" if keyword.iskeyword(name) else name


class _Literal(str):
    """Default text read from a docstring (not a string default)."""


def _from_inspect(sig: inspect.Signature, drop_first: bool):
    params = list(sig.parameters.values())
    if drop_first and params and params[0].kind in _POS:
        params = params[1:]
    out = []
    for p in params:
        d = p.default if p.default is _EMPTY else _norm_default(p.default)
        out.append(_Param(_spelled(p.name), p.kind, d))
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
        name = _spelled(name.split(":")[0].strip())
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


# a schema's dtype default is the ScalarType's number
_SCALAR_TYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex32", "complex64",
                 "complex128", "bool")
_ATEN_PREFIX = {"linalg": "linalg_", "special": "special_", "fft": "fft_"}


def parser_overloads(ns: str, name: str, obj):
    """The overloads PyTorch's argument parser takes for a C-bound ``obj``, read from its ATen schemas (``self`` is
    the method's receiver, ``input`` in a function; ``out=`` overloads and those on Python numbers left out)."""
    if isinstance(obj, type) or inspect.isfunction(obj) or not callable(obj):
        return []
    out = []
    for schema in torch._C._jit_get_schemas_for_operator(f"aten::{_ATEN_PREFIX.get(ns, '')}{name}"):
        args = schema.arguments
        on_numbers = not any(str(a.type).startswith("Tensor") for a in [*args, *schema.returns])
        if on_numbers or any(a.is_out for a in args) or (ns == "Tensor" and not any(a.name == "self" for a in args)):
            continue
        params = []
        for a in args:
            if a.name == "self" and ns == "Tensor":
                continue
            kind = inspect.Parameter.KEYWORD_ONLY if a.kwarg_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
            default = _EMPTY if not a.has_default_value() else _norm_default(
                _Literal(_SCALAR_TYPES[a.default_value]) if a.name == "dtype" and isinstance(a.default_value, int)
                else a.default_value)
            params.append(_Param("input" if a.name == "self" else _spelled(a.name), kind, default))
        out.append(params)
    return out


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
            overloads = parser_overloads(ns, name, getattr(t_owner, name, None)) if why else []
            if overloads and not any(difference(theirs, o) is None for o in overloads):
                # the docstring shows a call PyTorch's own parser refuses (Tensor.div(value)): the parser decides
                parser_why = [difference(o, ours) for o in overloads]
                why = None if None in parser_why else f"parser's call: {parser_why[0]}"
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


# calls by PyTorch's parameter names and positions, each run in both libraries (``m``: ember or torch)
CALLS = {
    "div_other": lambda m, x: x.div(other=x + 2),
    "cumsum_dtype_kw": lambda m, x: x.cumsum(0, dtype=m.float64),
    "cholesky_solve_input2": lambda m, x: (x @ x.mT).cholesky_solve(input2=m.eye(3, dtype=x.dtype) * 2),
    "orgqr_input2": lambda m, x: m.orgqr(*m.geqrf(x)).abs(),
    "ormqr_input3": lambda m, x: m.ormqr(*m.geqrf(x), input3=m.eye(3, dtype=x.dtype), left=False).abs(),
    "linalg_norm_input": lambda m, x: m.linalg.norm(input=x, ord=2, dim=1),
    "det_input": lambda m, x: m.det(input=x),
    "slogdet_input": lambda m, x: m.slogdet(input=x).logabsdet,
    "matrix_power_input": lambda m, x: m.linalg.matrix_power(input=x, n=3),
    "split_size": lambda m, x: x.split(split_size=2, dim=1)[1],
    "unsafe_split": lambda m, x: m.unsafe_split(x, split_size=1)[2],
    "dsplit_sections": lambda m, x: x.reshape(1, 3, 3).dsplit(sections=3)[1],
    "hsplit_indices": lambda m, x: m.hsplit(x, indices=[1])[1],
    "narrow_copy_dim": lambda m, x: m.narrow_copy(x, dim=1, start=1, length=2),
    "is_inference_input": lambda m, x: m.tensor(m.is_inference(input=x)),
    "norm_out_positional": lambda m, x: m.norm(x, 2, 1, False, m.empty(0, dtype=m.float64), m.float64),
    "tensor_norm_dtype_positional": lambda m, x: x.norm(2, 1, False, m.float64),
    "new_full_layout": lambda m, x: x.new_full((2,), 3.0, layout=m.strided, pin_memory=False),
    "tril_indices_pin_memory": lambda m, x: m.tril_indices(3, 3, pin_memory=False),
    "hann_window_pin_memory": lambda m, x: m.hann_window(5, pin_memory=False),
    "from_dlpack_copy": lambda m, x: m.from_dlpack(x, device="cpu", copy=True).add_(1) - x,
    "stft_align_to_window": lambda m, x: m.stft(x.reshape(-1).repeat(3), 8, hop_length=2, win_length=4,
                                                window=m.hann_window(4, dtype=x.dtype), center=False,
                                                return_complex=True, align_to_window=True),
    "uniform_from": lambda m, x: x.clone().uniform_(2.0, 2.0),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_pytorch_calls_run_alike(name):
    """Each call spelled with PyTorch's parameter names runs in ember and gives PyTorch's result."""
    import numpy as np

    import ember
    x = np.random.RandomState(0).randn(3, 3)
    want = CALLS[name](torch, torch.tensor(x))
    got = CALLS[name](ember, ember.tensor(x))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-9)


def test_modules_take_pytorch_arguments():
    """The module constructors' positional and keyword forms of PyTorch: RNN's fourth positional argument, the
    lazy norms' defaults and bias=, Hardtanh's deprecated spellings (with PyTorch's warning), the transformer
    layers' activation default."""
    import warnings

    import ember
    for m in (torch, ember):
        rnn = m.nn.RNN(2, 3, 1, "relu", False)
        assert (rnn.nonlinearity, rnn.bias) == ("relu", False)
        lazy = m.nn.LazyInstanceNorm1d()
        assert (lazy.affine, lazy.track_running_stats) == (True, True)
        bn = m.nn.LazyBatchNorm1d(bias=False)
        bn(m.randn(4, 3))
        assert bn.bias is None and bn.weight.shape == (3,)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            h = m.nn.Hardtanh(min_value=-2.0)
        assert h.min_val == -2.0 and [x.category for x in w] == [FutureWarning]
        with pytest.raises(AssertionError, match="must be greater than min_val"):
            m.nn.Hardtanh(1.0, 0.0)
        assert m.nn.TransformerEncoderLayer(4, 2).activation is m.nn.functional.relu


if __name__ == "__main__":  # python tests/test_signatures.py: the counts and every difference
    d, n = compare_all()
    pend = load_pending()
    print(f"{n} signatures compared, {len(d)} differ ({len(set(d) & set(EXCLUDED))} excluded, "
          f"{len(set(d) & pend)} pending, {len(set(d) - pend - set(EXCLUDED))} new)")
    for k in sorted(d):
        print(f"{k}  # {d[k]}")
