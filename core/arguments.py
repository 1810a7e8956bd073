"""NumPy-style keyword names for the parameters of public functions, as PyTorch's argument parser takes them.

PyTorch's C-bound functions and methods (``python_arg_parser.cpp``) take ``axis=`` for ``dim``, ``keepdims=``
for ``keepdim``, ``x=`` / ``a=`` / ``x1=`` for ``input`` and ``x2=`` for ``other``.  The registry passes each
function it exports through :func:`numpy_names`, which reads the parameters once and gives back the same
function recompiled from its own source with a ``**`` parameter that catches the aliases and a one-line
preamble that takes them in when one is given: no wrapper, so the method and the namespace still show one
function (the cost of a call: an empty keyword dict and one test).  The recompiled code is cached beside the
module's bytecode, keyed by the source's modification time and size, so an import compiles only what changed.

>>> import ember
>>> ember.ones(2, 3).sum(axis=1, keepdims=True).shape
ember.Size([2, 1])
"""
from __future__ import annotations

import ast
import inspect
import marshal
import os
import sys
import types

NUMPY_NAMES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"), "other": ("x2",)}
ALIAS_OF = {alias: name for name, aliases in NUMPY_NAMES.items() for alias in aliases}
ALIASED_NAMESPACES = ("torch", "Tensor", "linalg", "special", "fft")
# The functions PyTorch writes in Python (torch/functional.py, torch/_tensor.py) take no aliases; in
# nn.functional it is the other way round: only its C-bound functions take them.  tests/test_aliases_kw.py
# checks both tables against the installed PyTorch.
PYTHON_DEFINED = {"torch": frozenset({"split", "norm", "unique", "unique_consecutive", "stft"}),
                  "Tensor": frozenset({"split", "unflatten", "module_load", "norm", "unique", "unique_consecutive",
                                       "stft", "istft"})}
C_BOUND_FUNCTIONAL = frozenset({
    "softplus", "prelu", "hardshrink", "softshrink", "gelu", "logsigmoid", "linear", "bilinear",
    "cosine_similarity", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "native_channel_shuffle", "pdist", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "conv_tbc",
    "relu_", "elu_", "rrelu_", "hardtanh_", "leaky_relu_", "celu_", "selu_", "threshold_"})

_FORMAT = 2           # the cache's format: raised when the generated code changes
_NO = object()        # no value given for an alias
_ALIASED: dict = {}   # function -> the same function taking its aliases
_TAKING: set = set()  # ids of the functions made here
_SOURCE_TREES: dict = {}  # file -> {first line: its function definition}
_CACHES: dict = {}        # file -> (stamp, {key: code}) read from or written to its cache file


def takes_numpy_names(ns: str, name: str) -> bool:
    """Whether PyTorch's ``ns.name`` takes the NumPy-style keyword aliases of :data:`NUMPY_NAMES`."""
    if name.startswith("_"):
        return False
    if ns == "nn.functional":
        return name in C_BOUND_FUNCTIONAL
    return ns in ALIASED_NAMESPACES and name not in PYTHON_DEFINED.get(ns, ())


def numpy_names(namespaces, names, fn):
    """``fn`` taking ``axis=`` for ``dim``, ``keepdims=`` for ``keepdim``, ``x=`` / ``a=`` / ``x1=`` for
    ``input`` and ``x2=`` for ``other`` where PyTorch's function of one of ``names`` in one of ``namespaces``
    does; ``fn`` itself where there is nothing to alias or its source cannot be read.  (As a method, the
    bound ``input`` given again by an alias is refused as PyTorch refuses it: a TypeError.)"""
    if type(fn) is not types.FunctionType or id(fn) in _TAKING or (fn.__module__ or "").partition(".")[0] != "ember":
        return fn  # (ops of plugins and users are shown as they are)
    if not any(takes_numpy_names(ns, n) for ns in namespaces for n in names):
        return fn
    if fn not in _ALIASED:
        _ALIASED[fn] = new = _with_aliases(fn) or fn
        _TAKING.add(id(new))
    return _ALIASED[fn]


def sequence_arg(values: tuple, kw: dict, op: str, keyword: str) -> tuple:
    """The sequence argument of a varargs method (``view``, ``reshape``, ``permute``...) as PyTorch's parser
    takes it: ``f(2, 3)``, ``f((2, 3))`` or ``f(keyword=(2, 3))``.  Gives back the positional form (``values``,
    or a 1-tuple of the keyword's sequence); raises PyTorch's TypeError for a missing, doubled or unknown
    argument.  Only the rare path calls it: a keyword given, or no value at all.

    >>> sequence_arg((), {"size": (2, 3)}, "view", "size")
    ((2, 3),)
    """
    kw = dict(kw)
    given = kw.pop(keyword, _NO)
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kw))}'")
    if given is _NO:
        if values:
            return values
        raise TypeError(f"{op}() missing 1 required positional argument: '{keyword}'")
    if values:
        raise TypeError(f"{op}() got multiple values for argument '{keyword}'")
    if not isinstance(given, (tuple, list)):
        raise TypeError(f"{op}(): argument '{keyword}' must be tuple of ints, not {type(given).__name__}")
    return (given,)


def _take(given, op, names, values, defaults):
    """The values of the parameters ``names`` once the aliases in ``given`` are taken in (the rare path: an
    alias given, or a parameter that an alias could have given missing), with PyTorch's TypeErrors."""
    values = list(values)
    for alias, value in given.items():
        target = ALIAS_OF.get(alias)
        if target not in names:
            raise TypeError(f"{op}() got an unexpected keyword argument '{alias}'")
        i = names.index(target)
        if values[i] is not defaults[i]:
            raise TypeError(f"{op}() got multiple values for argument '{target}' (also given as '{alias}')")
        values[i] = value
    for name, value in zip(names, values):
        if value is _NO:
            raise TypeError(f"{op}() missing required argument '{name}'")
    return values


def _with_aliases(fn):
    """``fn`` recompiled to take the aliases of its parameters: it gains a ``**`` parameter that catches them,
    and its body starts by taking them in when one is given.  None when ``fn`` has nothing to alias."""
    if "__wrapped__" in fn.__dict__ or "__signature__" in fn.__dict__:
        return None
    P = inspect.Parameter
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if any(p.kind is P.VAR_KEYWORD for p in params):
        return None
    targets = [p.name for p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)
               and any(a not in sig.parameters for a in NUMPY_NAMES.get(p.name, ()))]
    if not targets:
        return None
    # a required positional parameter that an alias may give, and the required ones after it, default to _NO
    positional = [p for p in params if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    first = next((i for i, p in enumerate(positional) if p.name in targets and p.default is P.empty), None)
    loose = [p.name for p in positional[first:] if p.default is P.empty] if first is not None else []
    kw_loose = [p.name for p in params if p.kind is P.KEYWORD_ONLY and p.default is P.empty and p.name in targets]
    names = [p.name for p in params if p.name in targets or p.name in loose or p.name in kw_loose]
    c = fn.__code__
    key = (c.co_firstlineno, c.co_name, tuple(names), tuple(loose), tuple(kw_loose))
    code = _cached(c.co_filename, key)
    if code is None:
        code = _compile(fn, names, loose + kw_loose)
        if code is None:
            return None
        _store(c.co_filename, key, code)
    cells = dict(zip(c.co_freevars, fn.__closure__ or ()))
    defaults = tuple(_NO if sig.parameters[n].default is P.empty else sig.parameters[n].default for n in names)
    cells.update(_ember_NO=types.CellType(_NO), _ember_take=types.CellType(_take),
                 _ember_defaults=types.CellType(defaults))
    new = types.FunctionType(code, fn.__globals__, fn.__name__, (_NO,) * len(loose) + (fn.__defaults__ or ()),
                             tuple(cells[v] for v in code.co_freevars))
    new.__kwdefaults__ = {**(fn.__kwdefaults__ or {}), **{n: _NO for n in kw_loose}} or None
    for attr in ("__qualname__", "__doc__", "__module__", "__annotations__"):
        setattr(new, attr, getattr(fn, attr))
    new.__dict__.update(fn.__dict__)
    new.__signature__ = sig  # PyTorch's documented signature: the aliases are unlisted there too
    return new


def _compile(fn, names, required):
    """The code of ``fn``'s definition with the ``**`` parameter and the preamble that takes the aliases of
    ``names`` in (None without its source).  ``required``: the parameters now defaulting to ``_NO``."""
    node = _def_node(fn)
    if node is None:
        return None
    args = node.args
    args.defaults = [ast.Constant(None) for _ in range(len(fn.__defaults__ or ()) + sum(
        n in required for n in (a.arg for a in args.posonlyargs + args.args)))]  # the values are set on the function
    args.kw_defaults = [ast.Constant(None) for _ in args.kwonlyargs]
    args.kwarg = ast.arg("_ember_kw")
    test = " or ".join(["_ember_kw"] + [f"{n} is _ember_NO" for n in required])
    values = ", ".join(names) + ("," if len(names) == 1 else "")
    preamble = ast.parse(f"if {test}:\n    {values} = _ember_take(_ember_kw, {fn.__name__!r}, {tuple(names)!r}, "
                         f"({values}), _ember_defaults)").body
    ast.increment_lineno(ast.Module(body=preamble, type_ignores=[]), node.lineno - 1)
    first = node.body[0] if node.body else None
    doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    body = node.body[:1] + preamble + node.body[1:] if doc else preamble + node.body
    free = list(fn.__code__.co_freevars) + ["_ember_NO", "_ember_take", "_ember_defaults"]
    node.name = "_ember_fn"  # not fn's own name: the body may call the module's function of that name
    node.body = []
    maker = ast.FunctionDef(name="_ember_make", args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[],
                            kw_defaults=[], defaults=[]), body=[ast.parse(f"{v} = None").body[0] for v in free]
                            + [node, ast.Return(ast.Name("_ember_fn", ast.Load()))], decorator_list=[])
    module = ast.Module(body=[ast.copy_location(maker, node)], type_ignores=[])
    ast.fix_missing_locations(module)  # the new nodes only: the body's statements keep their own lines
    node.body = body
    outer = compile(module, fn.__code__.co_filename, "exec").co_consts[0]
    inner = next(k for k in outer.co_consts if isinstance(k, types.CodeType))
    return inner.replace(co_name=fn.__code__.co_name, co_qualname=fn.__code__.co_qualname)


def _def_node(fn):
    """The ``def`` of ``fn`` from its file, without decorators and annotations (None where it is not in a file);
    its body's statements are shared with the parsed file and never changed."""
    path = fn.__code__.co_filename
    if path not in _SOURCE_TREES:
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, ValueError):
            tree = None
        _SOURCE_TREES[path] = {} if tree is None else {
            min([n.lineno] + [d.lineno for d in n.decorator_list]): n for n in _defs(tree.body)}
    node = _SOURCE_TREES[path].get(fn.__code__.co_firstlineno)
    if node is None or node.name != fn.__code__.co_name:
        return None

    def bare(a):
        return None if a is None else ast.copy_location(ast.arg(a.arg), a)

    args = node.args
    new = ast.FunctionDef(name=node.name, body=list(node.body), decorator_list=[], returns=None, type_comment=None,
                          args=ast.arguments(posonlyargs=[bare(a) for a in args.posonlyargs],
                                             args=[bare(a) for a in args.args], vararg=bare(args.vararg),
                                             kwonlyargs=[bare(a) for a in args.kwonlyargs], kw_defaults=[],
                                             kwarg=bare(args.kwarg), defaults=[]))
    return ast.copy_location(new, node)


def _defs(statements):
    """The function definitions among ``statements`` and the statements they nest (expressions not searched)."""
    for st in statements:
        if isinstance(st, ast.FunctionDef):
            yield st
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(st, field, None)
            if isinstance(inner, list):
                yield from _defs(inner)
        for h in getattr(st, "handlers", ()):
            yield from _defs(h.body)


# --------------------------------------------------------------------------- the cache beside the bytecode
def _cache_path(source: str) -> str:
    head, tail = os.path.split(source)
    return os.path.join(head, "__pycache__", f"{os.path.splitext(tail)[0]}.{sys.implementation.cache_tag}.aliases")


def _stamp(source: str):
    try:
        st = os.stat(source)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, _FORMAT


def _cached(source: str, key):
    if source not in _CACHES:
        stamp, codes = _stamp(source), {}
        try:
            with open(_cache_path(source), "rb") as f:
                saved_stamp, saved = marshal.load(f)
            if saved_stamp == stamp:
                codes = saved
        except (OSError, EOFError, ValueError, TypeError):
            pass
        _CACHES[source] = (stamp, codes)
    return _CACHES[source][1].get(key)


def _store(source: str, key, code) -> None:
    """Remember ``code`` for ``key`` and rewrite the source's cache file (atomically; skipped where the
    folder cannot be written)."""
    stamp, codes = _CACHES[source]
    codes[key] = code
    if stamp is None:
        return
    path = _cache_path(source)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as f:
            marshal.dump((stamp, codes), f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.remove(tmp)
        except OSError:
            pass
