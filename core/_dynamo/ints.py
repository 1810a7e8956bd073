"""Automatic dynamic Python ints for ``ember.compile``: one graph for every value of an int argument used as data.

A compiled function given ints that change per call (a sentence's gold tag path as a list, a step counter)
would otherwise capture one variant per value.  As PyTorch's automatic dynamic does, an int argument (top
level, or inside lists and tuples) whose value changed since the last capture becomes a graph input: the ops
that read it take a :class:`~ember.jit._graph.Sym` ``v + c`` of its value at each replay, read from the sizes
list the replay already passes for dynamic dims (position ``n_tensors + k`` holds ``(value,)`` of the k-th
symbolic int).

Off by default (``config.probe_int_args``): the probes see only what Python calls on an ``int`` subclass,
and C code reads the value of one without calling anything (``lst[k]``, ``range(k)``, ``0.5 * k``,
``2.5 < k``, ``k.real``), so such code may take the probes' branch or element for every later value.

The captured call (plain ints) is compared with a few more traces of the same call (its effects on buffers and
the random state undone), each with some of the ints set to another value (another call's): trace ``j``
changes the ints whose number ``k + 1`` has bit ``j`` set, so the pattern of traces in which an op argument
changes names the int it follows.  In those traces the ints are :class:`Probe` objects: Python control flow on
one (a comparison, ``bool``, ``hash``, ``float``, ``int()`` in user code) and any arithmetic other than adding
or subtracting an int end the attempt.  Two check traces must be predicted by the symbolic graph: one with
every int changed, one with every int at a third value far from both (:func:`far`).  Where anything differs
otherwise (the ops, an argument that is not ``v + c`` of one int, a constant tensor), the ints stay
specialised, guarded by value; so do the ints of a path (a list's elements share one) of which one is read
by no op argument as ``v + c``.
"""
from __future__ import annotations

import sys
from numbers import Number

from ..jit._graph import ARef, Gen, Ref, Sym


class Decided(BaseException):
    """A probed int decided Python control flow (raised through the traced function, caught by the probe)."""


PROBING = [False]  # whether probe traces run (a Probe kept by the function acts as a plain int after them)


def _hook(name, follows=False):
    """Probe method ``name``: while probing, a result ``value + c`` of one int where ``follows`` (adding or
    subtracting an int), else a decision; a non-number operand (a tensor) is left to its reflected method,
    which takes the probe as data."""
    op = getattr(int, name)

    def method(self, *args):
        r = op(self, *args)
        if not PROBING[0] or r is NotImplemented and not (args and isinstance(args[0], Number)):
            return r
        if follows and type(r) is int:
            return Probe(r)
        raise Decided(name)  # (a float operand too: float's reflected method would read the value unseen)
    return method


def _read_int(self):
    """``int(p)``: the plain value where ember reads it (an op's index); from user code a decision, as the value may
    then steer Python control flow unseen."""
    if PROBING[0] and not sys._getframe(1).f_globals.get("__name__", "").startswith("ember."):
        raise Decided("__int__")
    return int.__int__(self)


class Probe(int):
    """An int argument during a probe trace: control flow on it and any arithmetic other than adding or
    subtracting an int raise :class:`Decided` (while ``PROBING``); a sum or difference stays a probe.
    ``int(p)`` (how ops read an index) gives the plain value; ``item()`` (how binary ops read a scalar operand)
    too."""

    __slots__ = ()

    def item(self):
        return int(self)

    __int__ = _read_int
    for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__pos__"):
        locals()[_n] = _hook(_n, follows=True)
    for _n in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__bool__", "__hash__", "__index__",
               "__float__", "__truediv__", "__rtruediv__", "__divmod__", "__rdivmod__", "__round__", "__trunc__",
               "__floor__", "__ceil__", "__str__", "__repr__", "__format__", "bit_length", "to_bytes",
               "as_integer_ratio", "conjugate", "__mul__", "__rmul__", "__floordiv__", "__rfloordiv__", "__mod__",
               "__rmod__", "__neg__", "__abs__", "__pow__", "__rpow__", "__and__", "__rand__", "__or__", "__ror__",
               "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__", "__rrshift__", "__invert__"):
        locals()[_n] = _hook(_n)
    del _n


def _child(path, i):
    """The path of element ``i`` of the container at ``path``: top-level arguments by position or name, the
    elements of a list or tuple as one path (every tag of a tag list is the same kind of int)."""
    return path + (i,) if len(path) == 1 else path + (None,)


def int_leaves(args, kwargs) -> list:
    """``[(path, value)]`` of the int arguments of a call (top level and inside lists, tuples and dicts), in
    walk order."""
    out = []
    _leaves(tuple(args), ("a",), out)
    if kwargs:
        _leaves(kwargs, ("k",), out)
    return out


def _leaves(obj, path, out):
    t = type(obj)
    if t is int:
        out.append((path, obj))
    elif t is tuple or t is list:
        for i, x in enumerate(obj):
            _leaves(x, _child(path, i), out)
    elif t is dict:
        for k, x in obj.items():
            _leaves(x, _child(path, k), out)


def with_ints(obj, new):
    """``obj`` with its int leaves replaced by the values of iterator ``new`` (walk order)."""
    t = type(obj)
    if t is int:
        return next(new)
    if t is tuple or t is list:
        return t([with_ints(x, new) for x in obj])
    if t is dict:
        return {k: with_ints(x, new) for k, x in obj.items()}
    return obj


def alternates(leaves, sel, last) -> list:
    """Another value for each selected leaf: the last capture's at that place, else another value met at its
    path, else value - 1 (value + 1 for one <= 0)."""
    alts = []
    for k in sel:
        path, v = leaves[k]
        if k < len(last) and last[k][0] == path and last[k][1] != v:
            alts.append(last[k][1])
            continue
        seen = [x for p, x in leaves + last if p == path and x != v]
        alts.append(seen[0] if seen else v - 1 if v > 0 else v + 1)  # (v - 1: a valid index where v is)
    return alts


def far(vals, alts) -> list:
    """Each int's value in the last check trace: far from both values tried (``vals``, ``alts``) yet a valid
    index wherever both are, the mirror ``-1 - v`` of the one of larger size (``-1 - hi`` for two indices from
    the front, ``-1 - lo`` for two from the back); below both for one of each sign."""
    out = []
    for v, w in zip(vals, alts):
        lo, hi = min(v, w), max(v, w)
        out.append(-1 - hi if lo >= 0 else -1 - lo if hi < 0 else 2 * lo - hi - 1)
    return out


def groups(n) -> list:
    """The positions (of ``n`` ints) each trace changes: trace j those whose number k + 1 has bit j set."""
    return [{k for k in range(n) if (k + 1) >> j & 1} for j in range(n.bit_length())]


class Differs(Exception):
    """The traces differ other than by ints used as data."""


def same(a, b) -> bool:
    """Whether graph arguments ``a`` and ``b`` are the same (values by value, graph values by id)."""
    ta, tb = type(a), type(b)
    if isinstance(a, int) and isinstance(b, int) and ta is not bool and tb is not bool:
        return int(a) == int(b)
    if ta is not tb:
        return False
    if ta is Ref or ta is ARef:
        return a.i == b.i
    if ta is Sym:
        return (a.input, a.dim, a.a, a.b) == (b.input, b.dim, b.a, b.b)
    if ta is tuple or ta is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if ta is dict:
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if ta is slice:
        return same((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    if ta is float or ta is complex:
        return a == b or (a != a and b != b)
    if ta is Gen or a is b:
        return True
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype and bool((a == b).all())
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object without a usable equality: not provably the same
        return False


def _fit(a, bs, fit):
    """Argument ``a`` of the captured trace, given its values ``bs`` in the probe traces, as a Sym where it
    follows one int; raises :class:`Differs` otherwise.  ``fit``: ``(changes, vals, sizes)``, where
    ``changes[j][k]`` is how much trace j moved int k, ``vals[k]`` its captured value and ``sizes`` the
    call's input shapes (a size already symbolic has its value there in every probe)."""
    changes, vals, sizes = fit
    base = len(sizes)
    ta = type(a)
    if ta is Sym:
        if not all(isinstance(b, int) and int(b) == a.value(sizes) for b in bs):
            raise Differs("an argument follows both a size and an int")
        return a
    if ta is int:
        deltas = [int(b) - a if isinstance(b, int) and type(b) is not bool else None for b in bs]
        if None in deltas:
            raise Differs("an int argument became another kind of value")
        if not any(deltas):
            return a
        k = sum(1 << j for j, d in enumerate(deltas) if d) - 1  # (the int numbered by the traces that moved it)
        if k >= len(vals) or any(d != ch[k] for d, ch in zip(deltas, changes)):
            raise Differs("an argument follows no one int as value + constant")
        return Sym(base + k, 0, 1, a - vals[k])
    if ta is tuple or ta is list:
        if any(type(b) is not ta or len(b) != len(a) for b in bs):
            raise Differs("an argument's structure changes")
        return ta([_fit(x, [b[i] for b in bs], fit) for i, x in enumerate(a)])
    if ta is slice:
        if any(type(b) is not slice for b in bs):
            raise Differs("an argument's structure changes")
        return slice(*_fit((a.start, a.stop, a.step), [(b.start, b.stop, b.step) for b in bs], fit))
    if ta is dict:
        if any(type(b) is not dict or b.keys() != a.keys() for b in bs):
            raise Differs("an argument's structure changes")
        return {k: _fit(v, [b[k] for b in bs], fit) for k, v in a.items()}
    if not all(same(a, b) for b in bs):
        raise Differs("an argument other than an int changes")
    return a


def _syms(a, f):
    """Graph argument ``a`` with each Sym ``s`` in it replaced by ``f(s)``."""
    ta = type(a)
    if ta is Sym:
        return f(a)
    if ta is tuple or ta is list:
        return ta([_syms(x, f) for x in a])
    if ta is slice:
        return slice(*_syms((a.start, a.stop, a.step), f))
    if ta is dict:
        return {k: _syms(v, f) for k, v in a.items()}
    return a


def _at(a, sizes):
    """Graph argument ``a`` with its Syms evaluated at ``sizes`` (the inputs' shapes, then ``(value,)`` of each
    symbolic int)."""
    return _syms(a, lambda s: s.value(sizes))


def _same_frame(g, others):
    """Raise :class:`Differs` unless graphs ``others`` have ``g``'s ops, inputs, parameters, constants and
    value shapes."""
    for g2 in others:
        if len(g2.nodes) != len(g.nodes) or any(n.kind != m.kind or n.op != m.op for n, m in zip(g.nodes, g2.nodes)):
            raise Differs("the ops change")
        if list(g2.inputs) != list(g.inputs) or g2.params != g.params or g2.consts.keys() != g.consts.keys() or \
                not same(g.out_spec, g2.out_spec):
            raise Differs("the graph's inputs or outputs change")
        if not all(same(t._data, g2.consts[i]._data) for i, t in g.consts.items()):
            raise Differs("a constant tensor changes")
        if g2.meta != g.meta:  # (the replay of a graph with static sizes may build its shapes in)
            raise Differs("a value's shape or dtype changes")


def symbolize(g, probes, changes, vals, sizes, checks, paths):
    """The node arguments of ``g`` (the captured trace) with the ints they follow as Syms, fitted on the
    ``probes`` (traces with ``changes``) and checked on ``checks`` (``[(trace, the ints' values in it)]``),
    and the positions of the ints kept symbolic: those whose path (``paths[k]``) has every int read as a Sym
    by some argument (an int no argument reads may still decide unseen, as a list index).  Raises
    :class:`Differs` where the traces differ otherwise or no int is kept."""
    _same_frame(g, probes + [t for t, _ in checks])
    fit = (changes, vals, sizes)
    args = [_fit(n.args, [p.nodes[i].args for p in probes], fit) for i, n in enumerate(g.nodes)]
    for trace, values in checks:
        at = list(sizes) + [(v,) for v in values]
        for a, m in zip(args, trace.nodes):
            if not same(_at(a, at), m.args):
                raise Differs("the graph fitted does not predict a trace with other values")
    base, read = len(sizes), set()
    _syms(args, lambda s: read.add(s.input - base))
    unread = {paths[k] for k in range(len(vals)) if k not in read}
    kept = [k for k in range(len(vals)) if paths[k] not in unread]
    if not kept:
        raise Differs("no argument reads an int")
    if unread:  # (their ints are guarded by value: the Syms of a kept int renumbered, the others constants)
        new, at = {base + k: base + j for j, k in enumerate(kept)}, list(sizes) + [(v,) for v in vals]
        args = _syms(args, lambda s: Sym(new[s.input], 0, 1, s.b) if s.input in new else
                     s if s.input < base else s.value(at))
    return args, kept
