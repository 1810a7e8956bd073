"""The traced graph: one forward pass recorded at the interception point, replayed through dispatch.

A :class:`Graph` is plain data:

* ``inputs``: the value ids of the flattened tensor inputs, in order; ``in_spec`` the structure of the
  example arguments (tensors replaced by :class:`Ref`, other arguments kept as constants);
* ``params``: ``{value id: dotted path}`` for the module's parameters and buffers;
* ``consts``: ``{value id: Tensor}`` for tensors met during the trace that are neither inputs, parameters
  nor results of a recorded op (captured globals);
* ``nodes``: a list of :class:`Node` ``(kind, op, args, outs, path)``: ``kind`` the dispatch function
  (``unary``, ``binary``, ``apply``, ``view_op``, ``inplace``, ``create`` for a factory, ``move`` for a
  device move), ``op`` the Op's key in ``ember.autograd.function.OPS`` (a factory's name for ``create``),
  ``args`` the arguments with every tensor replaced by a :class:`Ref` and every other argument kept as
  the constant it was (dims, shapes, strides, dtypes, slices), ``outs`` the value ids of the results
  (``multi`` when the op returned a tuple), ``path`` the module path it ran in;
* ``out_spec``: the output structure (tensors, tuples, lists, dicts) with :class:`Ref` leaves;
* ``meta``: ``{value id: (shape, dtype)}`` as seen in the example run;
* ``sym``: integers in ``args`` that follow an input's size (``Sym``), filled when dynamic dimensions are
  asked for.

Replay calls the same dispatch function with the same Op and arguments, so its results are
bit-identical to eager mode.
"""
from __future__ import annotations

import gc
import re
import sys
import threading
import warnings

import numpy as np

from .. import dispatch, dtypes
from ..autograd.function import OPS
from ..backend import device as _device
from ..backend import resolve
from ..ops import conversion, creation
from ..ops.shape import cat as _cat
from ..random import default_generator, default_states, native, restore_default_states
from ..tensor import Tensor, _ptr

KINDS = {"unary": dispatch.unary, "binary": dispatch.binary, "apply": dispatch.apply, "view_op": dispatch.view_op,
         "inplace": dispatch.inplace, "create": creation._create, "move": conversion._moved}
_KIND_NAMES = {fn: name for name, fn in KINDS.items()}
_SCALARS = frozenset((int, float, bool, str, type(None)))
_LOCAL = threading.local()


class TracerWarning(Warning):
    """A trace may not generalise: a traced tensor became a Python value (as PyTorch's ``TracerWarning``)."""


class Ref:
    """A tensor value of the graph (by id)."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __repr__(self):
        return f"%{self.i}"

    def __eq__(self, other):
        return type(other) is type(self) and other.i == self.i

    def __hash__(self):
        return hash((type(self).__name__, self.i))


class ARef(Ref):
    """A value passed to an op as its backend array (``t._data``) rather than as a tensor."""

    __slots__ = ()

    def __repr__(self):
        return f"%{self.i}.data"


class Sym:
    """An integer that follows the size of a dynamic input dimension: ``a * size + b``."""

    __slots__ = ("input", "dim", "a", "b")

    def __init__(self, input, dim, a, b):
        self.input, self.dim, self.a, self.b = input, dim, a, b

    def value(self, sizes):
        return self.a * sizes[self.input][self.dim] + self.b

    def __repr__(self):
        s = f"s{self.input}_{self.dim}"
        s = s if self.a == 1 else f"{self.a}*{s}"
        return s if self.b == 0 else f"({s}{self.b:+d})"


class Gen:
    """The default random generator of the node's device (resolved at replay)."""

    __slots__ = ()

    def __repr__(self):
        return "<default generator>"


class Node:
    __slots__ = ("kind", "op", "args", "outs", "multi", "path", "ins")

    def __init__(self, kind, op, args, outs, multi, path):
        self.kind, self.op, self.args, self.outs, self.multi, self.path = kind, op, args, outs, multi, path
        self.ins = None  # the value ids args refers to (filled by the tracer; None: read args)

    def __repr__(self):
        outs = ", ".join(f"%{i}" for i in self.outs)
        args = ", ".join(_show(a) for a in self.args)
        where = f"  # {self.path}" if self.path else ""
        return f"{outs} = {self.kind}::{self.op}({args}){where}"


def _show(a):
    if isinstance(a, (Ref, Sym, Gen)):  # ARef is a Ref
        return repr(a)
    if isinstance(a, tuple):
        return "(" + ", ".join(_show(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_show(x) for x in a) + "]"
    if isinstance(a, _device):
        return repr(str(a))
    if callable(a) and hasattr(a, "__name__"):
        return a.__name__
    if hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, (np.number, np.bool_)):
        return f"<array {list(a.shape)} {a.dtype}>"
    r = repr(a)
    return r if len(r) < 60 else r[:57] + "..."


def op_key(Op) -> str:
    """The name of Op class ``Op`` in the graph: its key in ``OPS``, or ``ember.ops.<ns>.<name>`` for a
    plugin's kernel op."""
    names = _OP_NAMES
    key = names.get(Op)
    if key is None:
        m = _QUALNAME.search(getattr(Op, "_origin", "") or "")
        if m is not None:
            key = names[Op] = m.group(1)
            return key
        for k, cls in list(OPS.items()):
            if cls not in names:
                q = _QUALNAME.search(getattr(cls, "_origin", "") or "")
                names[cls] = q.group(1) if q is not None else k
        key = names.get(Op)
        if key is None:
            raise RuntimeError(f"trace: op {type.__getattribute__(Op, '__name__')} is not in the Op registry")
    return key


def lookup_op(key):
    """The Op class named ``key`` in a graph (None when ember has no such op)."""
    Op = OPS.get(key)
    if Op is None and key.startswith("ember.ops."):
        for cls in list(OPS.values()):
            m = _QUALNAME.search(getattr(cls, "_origin", "") or "")
            if m is not None and m.group(1) == key:
                return cls
    return Op


_QUALNAME = re.compile(r"op (ember\.ops\.[\w.]+) from plugin")
_OP_NAMES: dict = {}


class Graph:
    """A recorded forward pass (see the module docstring for its fields)."""

    def __init__(self):
        self.inputs = []
        self.in_spec = ()
        self.params = {}
        self.consts = {}
        self.nodes = []
        self.out_spec = None
        self.meta = {}
        self.n_values = 0
        self.dynamic = []  # (flat input index, dim) made symbolic

    def __repr__(self):
        lines = ["graph("]
        for i, r in enumerate(self.inputs):
            lines.append(f"    %{r} : input {i} {_meta(self.meta.get(r))}")
        for r, p in self.params.items():
            lines.append(f"    %{r} : {p} {_meta(self.meta.get(r))}")
        for r in self.consts:
            lines.append(f"    %{r} : constant {_meta(self.meta.get(r))}")
        lines.append("):")
        for n in self.nodes:
            lines.append(f"  {n!r}")
        lines.append(f"  return {_show(_spec_show(self.out_spec))}")
        return "\n".join(lines)

    __str__ = __repr__

    def ops(self):
        """The op keys of the nodes, in order."""
        return [n.op for n in self.nodes]


def _meta(m):
    if m is None:
        return ""
    shape, dt = m
    return f"{dt}{list(shape)}".replace("ember.", "")


def _spec_show(spec):
    if isinstance(spec, dict):
        return {k: _spec_show(v) for k, v in spec.items()}
    return spec


# --------------------------------------------------------------------------- tracing
def is_tracing() -> bool:
    """Whether a trace is being recorded in this thread."""
    return getattr(_LOCAL, "tracer", None) is not None


class _Tracer:
    def __init__(self, module):
        self.graph = Graph()
        self.vals = {}       # id(tensor) -> value id
        self.arrays = {}     # id(array) -> value id (detach() and .data share the array)
        self.layouts = {}    # (address, shape, strides, dtype) -> value id
        self.keep = []       # every tensor seen, so ids stay unique
        self.kept = []       # the value id each new value got (meta is filled from these at the end)
        self.keep_values = []
        self.params = {}     # id(param) -> path
        self.path = []
        self.tid = threading.get_ident()
        self.derived = set()  # value ids computed from inputs
        self.hooks = []       # (module, name) while collecting; (hook dict, key) once installed
        if module is not None:
            for prefix, m in module.named_modules():
                for store in (m._parameters, m._buffers):
                    for k, t in store.items():
                        if t is not None:
                            self.params.setdefault(id(t), prefix + "." + k if prefix else k)
                if prefix:
                    self.hooks.append((m, prefix.rsplit(".", 1)[-1]))

    def new_value(self, t):
        g = self.graph
        i = g.n_values
        g.n_values = i + 1
        self.vals[id(t)] = i
        self.arrays[id(t._data)] = i
        self.keep.append(t)
        self.kept.append(i)
        self.keep_values.append(t)
        return i

    def fill_meta(self):
        """``graph.meta`` from the tensors kept (an in-place op's result keeps its tensor's shape and dtype)."""
        meta = self.graph.meta
        for i, t in zip(self.kept, self.keep_values):
            meta[i] = (tuple(t._data.shape), t.dtype)

    def value_of(self, t):
        i = self.vals.get(id(t))
        if i is not None:
            return i
        i = self.arrays.get(id(t._data))
        if i is not None:  # detach() or .data of a value: the same array
            self.vals[id(t)] = i
            self.keep.append(t)
            return i
        p = self.params.get(id(t))
        i = self.new_value(t)
        if p is not None:
            self.graph.params[i] = p
        else:
            self.graph.consts[i] = t
        return i

    def install_hooks(self):
        """Forward hooks on every submodule, keeping ``self.path`` (the module path each op runs in)."""
        installed = []
        try:
            for m, leaf in self.hooks:
                pre, post = _path_hooks(self, leaf)
                for hooks, fn in ((m._forward_pre_hooks, pre), (m._forward_hooks, post)):
                    key = object()
                    hooks[key] = (fn, False)
                    installed.append((hooks, key))
        finally:
            self.hooks = installed

    def remove_hooks(self):
        for hooks, key in self.hooks:
            hooks.pop(key, None)
        self.hooks = []

    def by_layout(self, a):
        """The value whose array has ``a``'s memory and layout (built on first need: it is rare)."""
        if len(self.layouts) != len(self.keep):
            self.layouts = {_layout(t._data): self.vals[id(t)] for t in self.keep}
        return self.layouts.get(_layout(a))

    def refs(self, a):
        """``a`` with tensors (and arrays of values) replaced by references; their ids go to ``self.ins``."""
        ta = type(a)
        if ta in _SCALARS:
            return a
        if isinstance(a, Tensor):
            i = self.vals.get(id(a))
            if i is None:
                i = self.value_of(a)
            self.ins.append(i)
            return Ref(i)
        if ta is tuple or ta is list:
            return ta([self.refs(x) for x in a])
        if ta is slice:
            return slice(self.refs(a.start), self.refs(a.stop), self.refs(a.step))
        if ta is dict:
            return {k: self.refs(v) for k, v in a.items()}
        self.odd = True
        if hasattr(a, "shape") and hasattr(a, "dtype") and hasattr(a, "ndim"):
            i = self.arrays.get(id(a))
            if i is None:  # a same-layout view of a value's array (``xp.reshape(index._data, (-1,))``)
                i = self.by_layout(a)
            if i is not None:
                self.ins.append(i)
                return ARef(i)
        return a

    def handler(self, kind, Op, args, run):
        if threading.get_ident() != self.tid:
            return run(*args)
        out = run(*args)
        kname = _KIND_NAMES[kind]
        key = Op if kname == "create" else (_OP_NAMES.get(Op) or op_key(Op))
        self.ins = ins = []
        self.odd = kname == "create"
        vals = self.vals
        rargs = []
        for a in args:  # the top level inline: most arguments are tensors or numbers
            if type(a) in _SCALARS:
                rargs.append(a)
            elif isinstance(a, Tensor):
                i = vals.get(id(a))
                if i is None:
                    i = self.value_of(a)
                ins.append(i)
                rargs.append(Ref(i))
            else:
                rargs.append(self.refs(a))
        rargs = tuple(rargs)
        multi = type(out) in (tuple, list)
        outs = out if multi else (out,)
        if self.odd:  # an argument that is not plain data: it may be the default random generator
            gen = native(None, args[0] if kname == "create" else outs[0]._dev)
            if any(a is gen for a in args):  # resolved again at each replay
                rargs = tuple(Gen() if a is gen else r for a, r in zip(args, rargs))
        ids = tuple([self.new_value(o) for o in outs])
        if kname == "inplace":
            tgt = rargs[0].i
            if tgt in self.graph.inputs:
                warnings.warn(f"trace: {key} modifies input {self.graph.inputs.index(tgt)} in place; the traced "
                              "graph repeats the modification on every call", TracerWarning, stacklevel=4)
        derived = self.derived
        if kname == "create" or not derived.isdisjoint(ins):
            derived.update(ids)
        node = Node(kname, key, rargs, ids, multi, ".".join(self.path) if self.path else "")
        node.ins = ins
        self.graph.nodes.append(node)
        return out


def _layout(a):
    try:
        return (_ptr(a), tuple(a.shape), tuple(getattr(a, "strides", ()) or ()), str(a.dtype))
    except Exception:  # noqa: BLE001 - an array type without an address
        return id(a)


def _refs_in(a, acc=None):
    acc = [] if acc is None else acc
    if type(a) is Ref or type(a) is ARef:
        acc.append(a.i)
    elif type(a) in (tuple, list):
        for x in a:
            _refs_in(x, acc)
    elif type(a) is slice:
        _refs_in((a.start, a.stop, a.step), acc)
    elif type(a) is dict:
        _refs_in(tuple(a.values()), acc)
    return acc


def _flatten(obj, tensors):
    """``obj`` with tensors replaced by their position in ``tensors`` (appended)."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return Ref(len(tensors) - 1)
    if type(obj) in (tuple, list):
        return type(obj)(_flatten(x, tensors) for x in obj)
    if type(obj) is dict:
        return {k: _flatten(v, tensors) for k, v in obj.items()}
    return obj


def _conversion_guard(tracer):
    """Patch the tensor->Python conversions to warn while ``tracer`` records (PyTorch's TracerWarning)."""
    saved = {}

    def wrap(name, what):
        orig = Tensor.__dict__[name]
        saved[name] = orig

        def method(self, *a, **k):
            t = getattr(_LOCAL, "tracer", None)
            if t is not None and threading.get_ident() == t.tid and \
                    not sys._getframe(1).f_globals.get("__name__", "").startswith("ember."):
                i = t.vals.get(id(self))
                if i is not None and i in t.derived:
                    warnings.warn(f"Converting a tensor to {what} might cause the trace to be incorrect. We can't "
                                  "record the data flow of Python values, so this value will be treated as a "
                                  "constant in the future. This means that the trace might not generalize to other "
                                  "inputs!", TracerWarning, stacklevel=2)
            return orig(self, *a, **k)

        method.__name__ = name
        method.__doc__ = orig.__doc__
        setattr(Tensor, name, method)

    wrap("item", "a Python number")
    for name in ("__bool__", "__int__", "__float__", "__index__", "__complex__"):
        wrap(name, "a Python " + {"__bool__": "boolean", "__index__": "index"}.get(name, "number"))
    wrap("tolist", "a Python list")
    wrap("numpy", "a NumPy array")
    return saved


def _path_hooks(tracer, leaf):
    def pre(mod, args):
        if threading.get_ident() == tracer.tid:
            tracer.path.append(leaf)

    def post(mod, args, out):
        if threading.get_ident() == tracer.tid and tracer.path:
            tracer.path.pop()

    return pre, post


def capture(fn, args, kwargs=None, module=None) -> tuple:
    """Run ``fn(*args, **kwargs)`` once, recording every op; returns ``(graph, result)``."""
    kwargs = kwargs or {}
    if is_tracing():
        raise RuntimeError("trace: a trace is already being recorded in this thread (nested tracing is not "
                           "supported)")
    tracer = _Tracer(module)
    g = tracer.graph
    flat = []
    g.in_spec = _flatten((tuple(args), dict(kwargs)), flat)
    devs = {str(t._dev) for t in flat}
    for t in flat:
        i = tracer.value_of(t)
        g.consts.pop(i, None)
        g.params.pop(i, None)
        g.inputs.append(i)
        tracer.derived.add(i)
    g._devices = devs
    saved = _conversion_guard(tracer)
    _LOCAL.tracer = tracer
    collecting = gc.isenabled()
    gc.disable()  # a trace allocates many small containers and frees none: no cycle collection meanwhile
    try:
        tracer.install_hooks()
        with dispatch.intercept(tracer.handler):
            out = fn(*args, **kwargs)
    finally:
        _LOCAL.tracer = None
        if collecting:
            gc.enable()
        for name, orig in saved.items():
            setattr(Tensor, name, orig)
        tracer.remove_hooks()
    g.out_spec = _out_spec(out, tracer)
    tracer.fill_meta()
    _prune(g)
    return g, out


def _prune(g):
    """Drop ops whose results nothing uses (a comparison only read by Python, say); in-place ops and random
    draws stay (they change state)."""
    live = set(_refs_in(g.out_spec))
    keep = []
    for n in reversed(g.nodes):
        effect = n.kind == "inplace" or any(type(a) is Gen for a in n.args) or n.op in ("Sampled", "Drawn")
        if effect or any(i in live for i in n.outs):
            keep.append(n)
            live.update(n.ins if n.ins is not None else _refs_in(n.args))
    keep.reverse()
    g.nodes = keep
    for store in (g.params, g.consts):
        for i in [i for i in store if i not in live]:
            del store[i]


def _out_spec(out, tracer):
    if isinstance(out, Tensor):
        return Ref(tracer.value_of(out))
    if type(out) in (tuple, list):
        return type(out)(_out_spec(x, tracer) for x in out)
    if isinstance(out, dict):
        return {k: _out_spec(v, tracer) for k, v in out.items()}
    if hasattr(out, "_fields") and isinstance(out, tuple):  # namedtuple
        return tuple(_out_spec(x, tracer) for x in out)
    raise RuntimeError(f"Only tensors, lists, tuples of tensors, or dictionary of tensors can be output from traced "
                       f"functions; got {type(out).__name__}")


# --------------------------------------------------------------------------- replay
def _subst(a, env, sizes):
    ta = type(a)
    if ta is Ref:
        return env[a.i]
    if ta is ARef:
        return env[a.i]._data
    if ta is tuple or ta is list:
        return ta(_subst(x, env, sizes) for x in a)
    if ta is Sym:
        return a.value(sizes)
    if ta is slice:
        return slice(_subst(a.start, env, sizes), _subst(a.stop, env, sizes), _subst(a.step, env, sizes))
    if ta is dict:
        return {k: _subst(v, env, sizes) for k, v in a.items()}
    return a


def _has_ref(a):
    ta = type(a)
    if ta is Ref or ta is Sym or ta is Gen or ta is ARef:
        return True
    if ta is tuple or ta is list:
        return any(_has_ref(x) for x in a)
    if ta is slice:
        return _has_ref((a.start, a.stop, a.step))
    if ta is dict:
        return _has_ref(tuple(a.values()))
    return False


class Program:
    """A graph compiled for replay: one step per node, arguments prebuilt where they are constants."""

    def __init__(self, graph: Graph):
        self.graph = graph
        steps = []
        for n in graph.nodes:
            fn = KINDS[n.kind]
            Op = n.op if n.kind == "create" else lookup_op(n.op)
            if Op is None:
                raise RuntimeError(f"trace: the graph uses op {n.op!r}, which is not in ember's Op registry (a "
                                   f"plugin op whose plugin is not installed?)")
            args = n.args
            direct = [(j, a.i) for j, a in enumerate(args) if type(a) is Ref]
            nested = any(_has_ref(a) for j, a in enumerate(args) if type(a) is not Ref)
            fresh = n.kind == "create" and args[3] is None and len(args) > 4 and not isinstance(args[4], (Ref, Gen))
            steps.append((fn, Op, list(args), direct, nested or fresh, n.outs, n.multi, n.kind))
        self.steps = steps

    def run(self, flat_inputs, resolve_param):
        g = self.graph
        env = {}
        for i, t in zip(g.inputs, flat_inputs):
            env[i] = t
        for i, p in g.params.items():
            env[i] = resolve_param(p)
        env.update(g.consts)
        sizes = [tuple(t._data.shape) for t in flat_inputs]
        for fn, Op, args, direct, general, outs, multi, kind in self.steps:
            if general:
                a = _subst(args, env, sizes)
                if kind == "create":
                    a = _fresh_create(a)
                elif any(type(x) is Gen for x in a):
                    dev = next(x for x in a if isinstance(x, Tensor))._dev
                    a = [native(None, dev) if type(x) is Gen else x for x in a]
            else:
                a = args.copy() if direct else args
                for j, i in direct:
                    a[j] = env[i]
            out = fn(Op, *a)
            if multi:
                for i, o in zip(outs, out):
                    env[i] = o
            else:
                env[outs[0]] = out
        return _subst(g.out_spec, env, sizes)


def _fresh_create(a):
    dev = a[0]
    a = [native(None, dev) if type(x) is Gen else x for x in a]
    if a[3] is None and len(a) > 4 and hasattr(a[4], "shape") and hasattr(a[4], "dtype"):
        a[4] = dev.kernels["copy"](a[4])  # a host constant: every call gets its own array
    return a


def flat_inputs(graph, args, kwargs, where="trace"):
    flat = []
    _flatten((tuple(args), dict(kwargs or {})), flat)
    if len(flat) != len(graph.inputs):
        raise RuntimeError(f"{where}: expected {len(graph.inputs)} tensor inputs as in the trace, got {len(flat)}")
    return flat


def check_devices(flat, where):
    devs = []
    for t in flat:
        if t._dev not in devs:
            devs.append(t._dev)
    if len(devs) > 1:
        raise RuntimeError(f"{where}: expected all inputs on the same device, but found at least two devices, "
                           f"{devs[0]} and {devs[1]}")


__all__ = ["Graph", "Node", "Ref", "Sym", "Gen", "TracerWarning", "capture", "Program", "is_tracing", "resolve",
           "dtypes"]


# --------------------------------------------------------------------------- dynamic dimensions
def _unflatten(spec, tensors):
    if type(spec) is Ref:
        return tensors[spec.i]
    if type(spec) in (tuple, list):
        return type(spec)(_unflatten(x, tensors) for x in spec)
    if type(spec) is dict:
        return {k: _unflatten(v, tensors) for k, v in spec.items()}
    return spec


def _cat_first(t, dim):
    return _cat([t.detach(), t.detach().narrow(dim, 0, 1)], dim)


def _snapshot(module):
    if module is None:
        return []
    return [(b, b.detach().clone()) for _, b in module.named_buffers()]


def _restore(saved):
    for b, v in saved:
        b.detach().copy_(v)


def capture_dynamic(fn, args, kwargs, module, dynamic, where="export", tied=None):
    """:func:`capture`, with ``dynamic`` (a list of ``(flat input index, dim)``) made symbolic.

    One more trace per dynamic dimension, with that dimension one longer: integers in the op arguments
    that change with it become :class:`Sym` (``a * size + b``); a graph whose ops change raises.  The
    module's buffers and the random state are left as they were before (as ``torch.export`` leaves them).
    ``tied`` maps a dimension of ``dynamic`` to the others that always have its size (a batch axis shared by
    two inputs): they grow with it rather than alone.
    """
    tied = tied or {}
    followers = {m for group in tied.values() for m in group}
    saved = _snapshot(module)
    rng = _rng_state()
    flat = []
    spec = _flatten((tuple(args), dict(kwargs or {})), flat)
    try:
        graph, out = capture(fn, args, kwargs, module)
        for inp, dim in dynamic:
            if (inp, dim) in followers:
                continue
            t = flat[inp]
            if not -t.ndim <= dim < t.ndim:
                raise IndexError(f"{where}: dynamic dimension {dim} is out of range for input {inp} of shape "
                                 f"{list(t.shape)}")
            dim = dim % t.ndim
            grown = list(flat)
            grown[inp] = _cat_first(t, dim)
            for j, dj in tied.get((inp, dim), ()):
                grown[j] = _cat_first(flat[j], dj)
            a2, k2 = _unflatten(spec, grown)
            _restore(saved)
            _set_rng_state(rng)
            g2, _ = capture(fn, a2, k2, module)
            _merge(graph, g2, inp, dim, t.shape[dim], [tuple(x.shape) for x in flat], where)
    finally:
        _restore(saved)
        _set_rng_state(rng)
    graph.dynamic = [(i, d % flat[i].ndim) for i, d in dynamic]
    return graph, out


def _rng_state():
    default_generator("cpu")  # made now if it is not yet, so that it is restored too
    return default_states()  # every device's stream: a dropout on any device draws from its own


def _set_rng_state(s):
    restore_default_states(s)


def _merge(g, g2, inp, dim, size, sizes, where):
    def fail(n, why):
        loc = f" (in {n.path})" if n is not None and n.path else ""
        op = f"op {n.op}{loc}" if n is not None else "the graph"
        raise RuntimeError(f"{where}: dimension {dim} of input {inp} cannot be dynamic: when its size changes, "
                           f"{op} {why}. The model specialises on that size (Python control flow or a value "
                           f"computed from it)")

    if len(g.nodes) != len(g2.nodes):
        fail(None, f"changes ({len(g.nodes)} ops, then {len(g2.nodes)})")

    def sym(a, b, n):
        ta = type(a)
        if ta is bool or type(b) is bool:
            if a != b:
                fail(n, "has an argument that changes")
            return a
        if ta is int and type(b) is int:
            if a == b:
                return a
            k = b - a
            return Sym(inp, dim, k, a - k * size)
        if ta is Sym:
            if a.value(sizes) != b:
                fail(n, "has an argument that follows the sizes of two dynamic dimensions")
            return a
        if ta in (tuple, list):
            if type(b) is not ta or len(a) != len(b):
                fail(n, "has arguments that change")
            return ta(sym(x, y, n) for x, y in zip(a, b))
        if ta is slice:
            return slice(sym(a.start, b.start, n), sym(a.stop, b.stop, n), sym(a.step, b.step, n))
        if ta is Ref or ta is ARef:
            if type(b) is not ta or a.i != b.i:
                fail(n, "changes its inputs")
            return a
        if hasattr(a, "shape") and hasattr(a, "dtype") and hasattr(b, "shape"):
            if tuple(a.shape) != tuple(b.shape):
                fail(n, f"uses a constant array whose shape changes ({list(a.shape)}, then {list(b.shape)})")
        return a

    for n, n2 in zip(g.nodes, g2.nodes):
        if n.kind != n2.kind or n.op != n2.op:
            fail(n, f"becomes {n2.op}")
        n.args = sym(n.args, n2.args, n)
    for i, t in g.consts.items():
        t2 = g2.consts.get(i)
        if t2 is not None and tuple(t.shape) != tuple(t2.shape):
            fail(None, "captures a constant tensor whose shape changes")
