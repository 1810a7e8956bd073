"""Elementwise fusion for the compiled replay: a run of pointwise ops as one generated NumPy function.

:func:`~.replay.generate` writes each op of a captured graph as a call of its Op's forward.  For a pointwise
Op whose forward is nothing but its kernel (``k["mul"](a, b)``: an ``op_class`` without parameters), that
indirection, and the floating-point-error guard each such kernel enters, is pure overhead.  A run of such
ops, consecutive in the graph, becomes one function of the arrays it reads and returns the arrays read after
it; inside, each op is a direct call of its (unguarded) kernel, and the whole function runs once inside the
error guard.  Where a kernel is a ufunc and one of its operands is a result of the run that nothing reads
later (not returned, not saved for a backward, same shape and dtype as the result), the ufunc writes into
that operand's buffer (``out=``): a chain of ``n`` ops allocates about one array instead of ``n``.

The kernels are the same and run on the same values in the same order, so results are eager mode's (an
``out=`` ufunc computes the same loop).

Where numba is installed, a run that qualifies becomes one compiled loop instead (:mod:`.jit`), chosen by
``ember.compile(options={"fusion": ...})``: "auto" (long or large runs), "numba" or "numpy".
"""
from __future__ import annotations

import numpy as np

from ..jit._graph import Ref
from ..kernels import _ignoring_fp_errors
from . import jit

_QUIET = _ignoring_fp_errors()
_NUMBERS = (int, float, bool)


def plain_kernel(Op):
    """The kernel name of ``Op`` when its forward only calls that kernel on its arguments, else None.  A forward
    marked ``dtype_check_only`` (relu's) checks its input's dtype first: a captured graph's dtype guards hold that
    check, so its runs call the kernel alone."""
    name = getattr(Op, "kernel_name", None)  # (set by op_class where the forward is the kernel, no parameters)
    code = getattr(Op.forward, "__code__", None)
    if name is None or code is None:
        return None
    return name if code.co_filename.startswith("<op_class") or getattr(Op.forward, "dtype_check_only", False) \
        else None


def fusable(n, Op, kernels) -> bool:
    """Whether node ``n`` (already found raw) can join an elementwise run: one result of a pointwise Op whose
    forward is its kernel, on values and Python numbers."""
    if n.multi or "pointwise" not in getattr(Op, "tags", ()):
        return False
    name = plain_kernel(Op)
    return name is not None and name in kernels and \
        all(type(a) is Ref or type(a) in _NUMBERS for a in n.args)


def _ufunc(fn) -> bool:
    return getattr(fn, "nout", None) == 1 and hasattr(fn, "nin")


def _emit_jit(run, w, last_use, kept, gid, fusion):
    """Write run ``run`` as one numba kernel (see :mod:`.jit`) called by function ``G<gid>``; returns the call's
    line, or None where the run stays NumPy's."""
    if w.dev.atype is not np.ndarray or fusion == "numpy" or w.dynamic or \
            (fusion != "numba" and not jit.worth_it(run, w.meta)) or jit.numba_module() is None:
        return None
    ins, outs = _ends(run, last_use, kept)
    named = [(k, n, plain_kernel(Op)) for k, n, Op in run]
    got = jit.compile_run(named, w.meta, ins, outs)
    if got is None:
        return None
    kernel, (rows, cols) = got
    w.ns.setdefault("E", np.empty)
    fn = w.const(f"J{gid}", kernel)
    lines = [f"o{i} = E({tuple(w.meta[i][0])!r}, {w.meta[i][1].name!r})" for i in outs]
    flat = ", ".join([f"x{i}.reshape(-1)" for i in ins] + [f"o{i}.reshape(-1)" for i in outs])
    lines.append(f"{fn}({rows}, {cols}, {flat})")
    src = f"def run{gid}({', '.join(f'x{i}' for i in ins)}):\n" + "".join(f"    {ln}\n" for ln in lines) + \
        f"    return ({''.join(f'o{i}, ' for i in outs)})\n"
    return _define(w, gid, src, ins, outs, quiet=False)


def _ends(run, last_use, kept):
    """The values run ``run`` reads from before it (in order of first use) and the results it returns: those the
    replay keeps or a later node reads."""
    end = run[-1][0]
    made, ins = set(), []
    for _, n, _ in run:
        ins.extend(a.i for a in n.args if type(a) is Ref and a.i not in made and a.i not in ins)
        made.add(n.outs[0])
    return ins, [n.outs[0] for _, n, _ in run if n.outs[0] in kept or last_use.get(n.outs[0], -1) > end]


def _define(w, gid, src, ins, outs, quiet):
    """Define run ``gid`` from ``src`` in ``w``'s namespace (inside the error guard where ``quiet``) and return
    the line calling it."""
    exec(compile(src, f"<ember.compile elementwise run {gid}>", "exec"), w.ns)  # noqa: S102 - generated source
    w.ns[f"G{gid}"] = _QUIET(w.ns[f"run{gid}"]) if quiet else w.ns[f"run{gid}"]
    call_args = ", ".join(w.as_array(i) for i in ins)
    w.array.update(outs)
    w.tensor.difference_update(outs)
    w.fused.append(src)
    targets = "".join(f"a{i}, " for i in outs)
    return f"{targets or '_'} = G{gid}({call_args})"


def emit(run, w, last_use, kept, gid, fusion="auto") -> str:
    """Write elementwise run ``run`` (``[(node index, node, Op)]``) as function ``G<gid>`` in the namespace of
    writer ``w``; returns the line calling it.  ``last_use``: value id -> index of the last node reading it;
    ``kept``: the values the replay returns (never written into).  ``fusion``: "auto" (a numba kernel where
    numba is installed and the run qualifies and is worth it, see :mod:`.jit`), "numba" (wherever it
    qualifies) or "numpy" (ufunc calls)."""
    line = _emit_jit(run, w, last_use, kept, gid, fusion)
    if line is not None:
        return line
    meta = w.meta
    ins, outs = _ends(run, last_use, kept)
    made, owned, lines = {}, set(), []
    for k, n, Op in run:
        kernel = w.dev.kernels[plain_kernel(Op)]
        base = getattr(kernel, "__wrapped__", kernel)  # (the whole run is inside the error guard)
        fn = w.const(f"U{k}", base)
        args = []
        for j, a in enumerate(n.args):
            if type(a) is Ref:
                args.append(made.get(a.i, f"x{a.i}"))
            else:
                args.append(w.arg(k, j, a))
        out = n.outs[0]
        shape = meta[out][0]
        into = None
        if _ufunc(base) and shape:
            into = next((a.i for a in n.args if type(a) is Ref and a.i in owned and last_use.get(a.i) == k
                         and a.i not in kept and meta[a.i] == meta[out]), None)
        if into is not None:  # the operand's buffer is free from here on: the result goes into it
            lines.append(f"{fn}({', '.join(args)}, out={made[into]})")
            owned.discard(into)
            made[out] = made[into]
        else:
            made[out] = f"v{out}"
            lines.append(f"v{out} = {fn}({', '.join(args)})")
            if not shape:  # (a ufunc on 0-d arrays returns a NumPy scalar)
                lines.append(f"if type(v{out}) is not AT: v{out} = A(v{out})")
        if _ufunc(base) and shape:
            owned.add(out)
        else:  # (a kernel that is not a ufunc may return a view of its operand: their buffers stay as they are)
            owned.difference_update(a.i for a in n.args if type(a) is Ref)
    src = f"def run{gid}({', '.join(f'x{i}' for i in ins)}):\n" + "".join(f"    {ln}\n" for ln in lines) + \
        f"    return ({''.join(made[i] + ', ' for i in outs)})\n"
    return _define(w, gid, src, ins, outs, quiet=True)
