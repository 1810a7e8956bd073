"""Elementwise runs as numba kernels: the CPU fusion backend where numba is installed (``pip install ember[jit]``).

:mod:`.fusion` writes a run of pointwise ops as NumPy ufunc calls, one pass over memory per op.  Here such a run
becomes one loop compiled by numba (``@njit``): each element is read once, every op of the run is applied to
it in registers, and the run's results are written once.  A run qualifies when every op has a scalar form in
:data:`OPS`, its values are float32 or float64 (one of them for the whole run; comparisons make bools), its
shapes are static, and every value broadcasts to the run's shape along one split ``k``: the shape itself, its
leading ``k`` dims (a value per row, as a layer norm's statistics), its trailing dims (a value per column, as
a bias) or one element.  The loop is ``rows x columns``; per-row values are computed once per row.  Otherwise,
or without numba, the run stays NumPy's.

Results: ``+ - * /``, ``sqrt``, comparisons and selections are IEEE operations in the run's dtype, in the
eager order, so they are bit-identical to eager mode (numba compiles without fast-math, so nothing is
contracted or reassociated).  ``exp``, ``tanh``, ``sigmoid`` and ``erf`` of float32 use the polynomial forms
of :mod:`.jit_math`, which LLVM vectorises (libm's scalar calls would not be): within 3 ulp of the exact value,
not bit-identical to NumPy's or SciPy's.  Float64 calls libm's.

Kernels are written to source files named by a hash of their text under the user's cache
(``$EMBER_CACHE_DIR`` or ``~/.cache/ember``, in ``jit/``) and compiled with ``cache=True``, so a second process
loads the machine code (about 0.1 s a kernel) instead of compiling it (0.3-1 s).
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys

from .. import dtypes
from ..jit._graph import Ref
from ..ops.shape import broadcast_shapes

_STATE = {}  # "numba": the module or None (imported at the first run that could use it); "kernels": hash -> fn
#             (None: refused); "version": the hash of jit_math's source

MIN_OPS = 8
"""Under ``"auto"``, a run of fewer ops stays NumPy's unless its arrays are large (:data:`MIN_SIZE`): a numba
call costs about two ufunc calls of fixed overhead, and each new kernel about 0.3 s of compile time in the first
process."""
MIN_SIZE = 16384


def numba_module():
    """numba, or None where it is not installed (the import is tried once)."""
    if "numba" not in _STATE:
        try:
            import numba
        except ImportError:
            numba = None
        _STATE["numba"] = numba
    return _STATE["numba"]


# kernel name -> (the scalar expression of its arguments' names, whether the result is a bool)
OPS = {
    "add": ("({0} + {1})", False), "sub": ("({0} - {1})", False), "mul": ("({0} * {1})", False),
    "div": ("({0} / {1})", False), "neg": ("(-{0})", False), "abs": ("abs({0})", False),
    "square": ("({0} * {0})", False), "sqrt": ("math.sqrt({0})", False),
    "rsqrt": ("(F(1) / math.sqrt({0}))", False), "reciprocal": ("(F(1) / {0})", False),
    "relu": ("SEL({0} < F(0), F(0), {0})", False),
    "maximum": ("SEL(({0} > {1}) | ({0} != {0}), {0}, {1})", False),
    "minimum": ("SEL(({0} < {1}) | ({0} != {0}), {0}, {1})", False),
    "exp": ("EXP({0})", False), "tanh": ("TANH({0})", False), "sigmoid": ("SIGMOID({0})", False),
    "erf": ("ERF({0})", False),
    "tanh_backward": ("({0} * (F(1) - {1} * {1}))", False),
    "sigmoid_backward": ("({0} * ({1} * (F(1) - {1})))", False),
    "eq": ("({0} == {1})", True), "ne": ("({0} != {1})", True), "lt": ("({0} < {1})", True),
    "le": ("({0} <= {1})", True), "gt": ("({0} > {1})", True), "ge": ("({0} >= {1})", True),
    "where": ("SEL({0}, {1}, {2})", False), "masked_fill": ("SEL({1}, {2}, {0})", False),
}
_FORMS = {"float32": {"EXP(": "EXP32(", "TANH(": "TANH32(", "SIGMOID(": "SIGMOID32(", "ERF(": "ERF32("},
          "float64": {"EXP(": "math.exp(", "TANH(": "math.tanh(", "SIGMOID(": "SIGMOID64(", "ERF(": "math.erf("}}
"""The transcendental forms per dtype: float32's from :mod:`.jit_math` (vectorisable), float64's libm's."""

_HEAD = """# ember.compile elementwise kernel (jit_math {version})
import math

import numba
import numpy as np

from ember._dynamo.jit_math import ERF32, EXP32, SEL, SIGMOID32, TANH32

F = np.{dtype}


@numba.njit(error_model="numpy")
def SIGMOID64(x):
    return 1.0 / (1.0 + math.exp(-x))


@numba.njit(cache=True, error_model="numpy")
"""


def _math_version() -> str:
    """A hash of :mod:`.jit_math`'s source: part of every kernel's text, so a changed form is compiled anew."""
    if "version" not in _STATE:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jit_math.py")
        with open(path, "rb") as f:
            _STATE["version"] = hashlib.sha256(f.read()).hexdigest()[:12]
    return _STATE["version"]


def cache_dir() -> str:
    """Where kernel sources and numba's compiled code live: ``$EMBER_CACHE_DIR/jit``, else
    ``$XDG_CACHE_HOME/ember/jit`` (``~/.cache/ember/jit``)."""
    root = os.environ.get("EMBER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "ember")
    return os.path.join(root, "jit")


def _load(src, types):
    """The function ``kernel`` of module source ``src`` compiled for operand types ``types``, from its file in
    :func:`cache_dir` (written once); None where numba refuses it.  Each source is loaded once a process."""
    key = hashlib.sha256(src.encode()).hexdigest()[:24]
    kernels = _STATE.setdefault("kernels", {})
    if key not in kernels:
        kernels[key] = None
        folder = cache_dir()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"k{key}.py")
        if not os.path.exists(path):  # (a file of this name holds this text: written whole, then renamed)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.write(src)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(f"ember_jit_k{key}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # (numba's cached code finds its globals by the module's name)
        try:
            spec.loader.exec_module(module)
            module.kernel.compile(types)
        except Exception:  # noqa: BLE001 - numba refused the kernel: NumPy's passes serve the run
            return None
        kernels[key] = module.kernel
    return kernels[key]


def _static(shape) -> bool:
    return all(type(s) is int for s in shape)


def _mode(shape, full, k):
    """How a value of ``shape`` is indexed in the rows x columns loop over ``full`` split at ``k``: "all"
    (``[r*C + c]``), "row" (``[r]``), "col" (``[c]``), "one" (``[0]``), or None."""
    v = (1,) * (len(full) - len(shape)) + tuple(shape)
    if v == full:
        return "all"
    if all(s == 1 for s in v):
        return "one"
    if v[:k] == full[:k] and all(s == 1 for s in v[k:]):
        return "row"
    if v[k:] == full[k:] and all(s == 1 for s in v[:k]):
        return "col"
    return None


def _plan(run, meta):
    """``(float dtype name, full shape, k)`` for run ``run`` (``[(index, node, kernel name)]``), or None where it
    does not qualify (see the module docstring)."""
    shapes, fdt = [], None
    for _, n, name in run:
        if name not in OPS or len(n.outs) != 1:
            return None
        for v in [a.i for a in n.args if type(a) is Ref] + [n.outs[0]]:
            shape, dt = meta[v]
            if not _static(shape):
                return None
            if dt is dtypes.float32 or dt is dtypes.float64:
                if fdt not in (None, dt):
                    return None
                fdt = dt
            elif dt is not dtypes.bool:
                return None
            shapes.append(tuple(shape))
        if OPS[name][1] != (meta[n.outs[0]][1] is dtypes.bool):
            return None
    if fdt is None:
        return None
    try:
        full = tuple(broadcast_shapes(*shapes))
    except RuntimeError:
        return None
    for k in range(len(full) + 1):
        if all(_mode(s, full, k) is not None for s in shapes):
            return ("float32" if fdt is dtypes.float32 else "float64"), full, k
    return None


def worth_it(run, meta) -> bool:
    """Whether numba would beat NumPy's passes on this run: enough ops, or large arrays."""
    size = 1
    for s in meta[run[-1][1].outs[0]][0]:
        size *= s if type(s) is int else 1
    return len(run) >= MIN_OPS or size >= MIN_SIZE


def _spelled(a) -> str:
    """Python number ``a`` as source text in the kernel's float type."""
    if type(a) is float and (a != a or abs(a) == float("inf")):
        return "F(np.nan)" if a != a else ("F(np.inf)" if a > 0 else "F(-np.inf)")
    return f"F({a!r})"


def kernel_source(run, meta, ins, outs, plan):
    """The module source of the kernel computing ``outs`` from ``ins`` (value ids) by ``run``.  Values are named
    by position (``x0``, ``v3``, ``o1``), so runs of the same ops on the same shapes share one kernel."""
    dtype, full, k = plan
    local = {i: f"v{j}" for j, i in enumerate(ins + [n.outs[0] for _, n, _ in run])}
    mode = {i: _mode(meta[i][0], full, k) for i in local}
    index = {"all": "[r * C + c]", "row": "[r]", "col": "[c]", "one": "[0]"}
    level = {"one": 0, "row": 1, "col": 2, "all": 2}  # 0: before the loops, 1: per row, 2: per element
    lines = {0: [], 1: [], 2: []}
    for j, i in enumerate(ins):
        lines[level[mode[i]]].append(f"{local[i]} = x{j}{index[mode[i]]}")
    for _, n, name in run:
        refs = [a.i for a in n.args if type(a) is Ref]
        expr = OPS[name][0].format(*[local[a.i] if type(a) is Ref else _spelled(a) for a in n.args])
        for short, form in _FORMS[dtype].items():
            expr = expr.replace(short, form)
        o = n.outs[0]
        # (a value's level is the highest of its operands': a per-row value never reads a per-column one)
        lv = max([level[mode[i]] for i in refs] + [level[mode[o]]])
        lines[lv].append(f"{local[o]} = {expr}")
        mode[o] = {0: "one", 1: "row", 2: mode[o] if level[mode[o]] == 2 else "all"}[lv]
    for j, i in enumerate(outs):
        lines[level[mode[i]]].append(f"o{j}{index[mode[i]]} = {local[i]}")
    params = ", ".join(["R", "C"] + [f"x{j}" for j in range(len(ins))] + [f"o{j}" for j in range(len(outs))])
    body = [f"def kernel({params}):"] + [f"    {ln}" for ln in lines[0]] + ["    for r in range(R):"] + \
        [f"        {ln}" for ln in lines[1]] + ["        for c in range(C):"] + \
        [f"            {ln}" for ln in lines[2] or ["pass"]]
    return _HEAD.format(dtype=dtype, version=_math_version()) + "\n".join(body) + "\n"


def rows_cols(plan):
    """``(R, C)`` of the loop over ``plan``'s shape."""
    _, full, k = plan
    return math.prod(full[:k]), math.prod(full[k:])


def compile_run(run, meta, ins, outs):
    """The numba kernel of ``run``, compiled for contiguous operands, and its ``(R, C)``; None where the run does
    not qualify, numba is absent or the compilation fails (the run then stays NumPy's)."""
    plan = _plan(run, meta)
    if plan is None:
        return None
    t = numba_module().types  # (the caller has found numba)
    operands = [t.boolean if meta[i][1] is dtypes.bool else getattr(t, plan[0]) for i in ins + outs]
    src = f"# operands: {' '.join(map(str, operands))}\n" + kernel_source(run, meta, ins, outs, plan)
    kernel = _load(src, (t.intp, t.intp) + tuple(t.Array(d, 1, "C") for d in operands))
    return None if kernel is None else (kernel, rows_cols(plan))
