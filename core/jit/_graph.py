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

from .. import _c_functions, dtypes
from ..autograd.function import OPS
from ..backend import device as _device
from ..backend import resolve
from ..interception import KIND_NAMES, KINDS, intercept
from ..nn.modules import module as _module
from ..ops.shape import cat as _cat
from ..random import default_generator, default_states, native, restore_default_states
from ..tensor import Tensor, _ptr

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

    def __init__(self, kind, op, args, outs, multi, path, ins=None):
        self.kind, self.op, self.args, self.outs, self.multi, self.path = kind, op, args, outs, multi, path
        self.ins = ins  # the value ids args refers to (filled by the tracer; None: read args)

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
_NREFS = 2048
_REFS = [Ref(i) for i in range(_NREFS)]  # the Refs of the first value ids, shared by the graphs traced (never changed)
_OP_NAMES: dict = {}


class Graph:
    """A recorded forward pass (see the module docstring for its fields)."""

    in_spec = ()
    out_spec = None
    n_values = 0
    dynamic = ()  # (flat input index, dim) made symbolic (a list, when there are)
    modules = ()  # the modules called while the graph was recorded (ember.compile guards their hooks)

    def __init__(self):
        self.inputs = []
        self.params = {}
        self.consts = {}
        self.nodes = []
        self.meta = {}

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


_c_functions.IS_TRACING[0] = is_tracing  # what ember._C._get_tracing_state asks


_ACTIVE: list = []  # the tracers recording now, in any thread (the conversion guard's cheap test)
_EFFECTS = frozenset(("Sampled", "Drawn"))  # random draws: never pruned
# arguments recorded as they are, and which cannot be a random generator
_PLAIN = _SCALARS | {complex, type(Ellipsis), dtypes.dtype, _device}
_new = object.__new__
get_ident = threading.get_ident


class _Tracer:
    """The state of one trace.  Values are numbered: inputs first, then the traced module's parameters and
    buffers (in ``named_modules`` order), then constants on first use and op results."""

    aliases = None       # other tensors met (a value's detach()): kept so that ids stay unique (a list)
    layouts = None       # (address, shape, strides, dtype) -> value id, built on need (by_layout)
    derived = None       # value ids computed from inputs (see derived_values)
    derived_upto = 0
    arrays_upto = 0      # the values whose arrays are in self.arrays (see array_value)
    where = ""           # the module path ops run in now
    ins = odd = None     # refs' working state
    on_conversion = None  # on_conversion(tensor, what): called for each tensor->Python conversion instead of warning

    def __init__(self):
        self.graph = g = Graph()
        self.nodes = g.nodes
        self.vals = {}       # id(tensor) -> its Ref
        self.values = []     # the tensor of each value id (meta is read from these at the end)
        self.datas = []      # the array each value had when it was made
        self.arrays = {}     # id(array) -> value id (detach() and .data share the array): see array_value
        self.names = {}      # id(submodule) -> its name in its parent (see enter)
        self.tid = get_ident()
        self.effects = set()  # nodes (by index) that change state: in-place ops and random draws
        self.used = set()     # the value ids the ops read
        self.called = {}      # id(module) -> each module called while the trace records

    # ------------------------------------------------------------------ values
    def new_value(self, t):
        values = self.values
        i = len(values)
        r = _REFS[i] if i < _NREFS else Ref(i)
        values.append(t)
        self.datas.append(t._data)
        self.vals[id(t)] = r
        return r

    def array_value(self, a):
        """The value whose array is ``a`` (the last made), or None.  The map is brought up to the values made
        so far when it is asked (a tensor met for the first time, an array argument): rarely, in most traces."""
        arrays = self.arrays
        datas = self.datas
        for i in range(self.arrays_upto, len(datas)):
            arrays[id(datas[i])] = i
        self.arrays_upto = len(datas)
        return arrays.get(id(a))

    def rebind(self, t, source):
        """``t`` now holds ``source``'s value (an in-place view op): later uses of ``t`` read that value."""
        if get_ident() == self.tid:
            r = self.vals.get(id(source))
            if r is not None:
                self.vals[id(t)] = r
                self.keep(t)

    def alias(self, t, i):
        r = self.vals[id(t)] = _REFS[i] if i < _NREFS else Ref(i)
        self.keep(t)
        return r

    def keep(self, t):
        """Keep ``t`` alive while the trace records: ``self.vals`` is keyed by the ids of live tensors only."""
        if self.aliases is None:
            self.aliases = []
        self.aliases.append(t)

    def ref_of(self, t):
        """The Ref of a tensor met for the first time: an alias of a value's array, else a new value (a
        constant: the traced module's parameters and buffers are values from the start)."""
        i = self.array_value(t._data)
        if i is not None:  # detach() or .data of a value: the same array
            return self.alias(t, i)
        r = self.new_value(t)
        self.graph.consts[r.i] = t
        return r

    def value_of(self, t):
        r = self.vals.get(id(t))
        if r is None:
            r = self.ref_of(t)
        return r.i

    def input_value(self, t):
        """An input's value id (inputs are never parameters or constants of the graph)."""
        r = self.vals.get(id(t))
        if r is not None:
            return r.i
        i = self.array_value(t._data)
        if i is not None:
            return self.alias(t, i).i
        return self.new_value(t).i

    def derived_values(self):
        """The value ids computed from inputs (or drawn by factories), brought up to the ops recorded."""
        derived = self.derived
        if derived is None:
            derived = self.derived = set(self.graph.inputs)
        nodes = self.nodes
        for k in range(self.derived_upto, len(nodes)):
            n = nodes[k]
            if n.kind == "create" or not derived.isdisjoint(n.ins):
                derived.update(n.outs)
        self.derived_upto = len(nodes)
        return derived

    def finish(self):
        """``graph.meta`` from the tensors kept (an in-place op's result keeps its tensor's shape and dtype)."""
        g = self.graph
        meta = g.meta
        from_np = dtypes.FROM_NP
        last = dt = None
        for i, t in enumerate(self.values):
            a = t._data
            d = a.dtype
            if d is not last:  # (consecutive values mostly have the same array dtype object)
                dt = from_np.get(d) if isinstance(d, np.dtype) else None
                if dt is None:  # other libraries' dtypes must not be compared with NumPy's: ask the tensor
                    dt = t.dtype
                    d = None
                last = d
            meta[i] = (tuple(a.shape), dt)
        g.n_values = len(self.values)

    # ------------------------------------------------------------------ module paths
    def enter(self, module):
        """Make the parameters and buffers of ``module`` values, each under its dotted path (in
        ``named_modules`` order: a tensor or module met twice keeps its first path), and note each submodule's
        name: while the trace records, each call of a named submodule extends ``self.where``, the module path
        ops run in (see :meth:`scope`).  An input that is also a parameter stays an input."""
        self.own(module, "")
        self.visit(module, "", module)

    def own(self, m, dot):
        """Record the parameters and buffers of module ``m`` (at ``dot``, its path and a dot)."""
        vals = self.vals
        values = self.values
        datas = self.datas
        params = self.graph.params
        b = m._buffers
        for store in (m._parameters, b) if b else (m._parameters,):
            for k, t in store.items():
                if t is not None:
                    key = id(t)
                    if key not in vals:  # self.new_value(t), inline
                        i = len(values)
                        vals[key] = _REFS[i] if i < _NREFS else Ref(i)
                        values.append(t)
                        datas.append(t._data)
                        params[i] = dot + k

    def visit(self, m, dot, root):
        """:meth:`enter` below module ``m``, whose own parameters are recorded."""
        names = self.names
        for k, c in m._modules.items():
            if c is None or c is root:
                continue
            key = id(c)
            if key in names:
                continue
            names[key] = k
            cdot = dot + k + "."
            if c._parameters or c._buffers:
                self.own(c, cdot)
            if c._modules:
                self.visit(c, cdot, root)

    def scope(self, module, args, kwargs):
        """``module(*args, **kwargs)`` while this trace records: a named submodule of the traced module extends
        ``self.where``, the module path ops run in, while it runs in the tracing thread."""
        self.called[id(module)] = module
        leaf = self.names.get(id(module))
        if leaf is None or get_ident() != self.tid:
            return module._call(args, kwargs)
        where = self.where
        self.where = where + "." + leaf if where else leaf
        try:  # module._call(args, kwargs), inline (a module call is on every forward's path)
            if not (module._forward_pre_hooks or module._forward_hooks or module._backward_hooks
                    or module._backward_pre_hooks):
                return module.forward(*args, **kwargs)
            return module._call_with_hooks(args, kwargs)
        finally:
            self.where = where

    # ------------------------------------------------------------------ ops
    def by_layout(self, a):
        """The value whose array has ``a``'s memory and layout (built on first need: it is rare)."""
        kept = self.values + (self.aliases or [])
        if self.layouts is None or self.layouts[None] != len(kept):
            vals = self.vals
            self.layouts = {_layout(t._data): vals[id(t)].i for t in kept}
            self.layouts[None] = len(kept)
        return self.layouts.get(_layout(a))

    def refs(self, a):
        """``a`` with tensors (and arrays of values) replaced by references; their ids go to ``self.ins``."""
        ta = type(a)
        if ta in _PLAIN:
            return a
        if isinstance(a, Tensor):
            r = self.vals.get(id(a))
            if r is None:
                r = self.ref_of(a)
            self.ins.append(r.i)
            return r
        if ta is tuple or ta is list:
            for x in a:
                if type(x) not in _PLAIN:
                    return ta([self.refs(x) for x in a])
            return a if ta is tuple else list(a)  # plain data (a list is copied: it could change later)
        if ta is slice:
            return slice(self.refs(a.start), self.refs(a.stop), self.refs(a.step))
        if ta is dict:
            return {k: self.refs(v) for k, v in a.items()}
        self.odd = True
        if hasattr(a, "shape") and hasattr(a, "dtype") and hasattr(a, "ndim"):
            i = self.array_value(a)
            if i is None:  # a same-layout view of a value's array (``xp.reshape(index._data, (-1,))``)
                i = self.by_layout(a)
            if i is not None:
                self.ins.append(i)
                return ARef(i)
        return a

    def handler(self, kind, Op, args, run):
        if get_ident() != self.tid:
            return run(*args)
        out = run(*args)  # (the op as called: a node named per overload keeps its name)
        kname = KIND_NAMES[kind]
        vals = self.vals
        ins = []
        rargs = []
        odd = False
        for a in args:  # the top level inline: most arguments are tensors or numbers
            r = vals.get(id(a))  # (the keys are ids of tensors the trace keeps alive: a hit is that tensor)
            if r is not None:
                ins.append(r.i)
                rargs.append(r)
            elif type(a) in _PLAIN:
                rargs.append(a)
            elif isinstance(a, Tensor):
                r = self.ref_of(a)
                ins.append(r.i)
                rargs.append(r)
            else:
                self.ins = ins
                self.odd = odd
                rargs.append(self.refs(a))
                odd = self.odd
        rargs = tuple(rargs)
        if kname == "create":
            key = Op
            odd = True
        else:
            key = _OP_NAMES.get(Op) or op_key(Op)
        nodes = self.nodes
        multi = type(out) is tuple or type(out) is list
        if odd:  # an argument that is not plain data: it may be the default random generator
            gen = native(None, args[0] if kname == "create" else (out[0] if multi else out)._dev)
            if any(a is gen for a in args):  # resolved again at each replay
                rargs = tuple(Gen() if a is gen else r for a, r in zip(args, rargs))
                self.effects.add(len(nodes))
        if multi:
            ids = tuple([self.new_value(o).i for o in out])
        else:  # self.new_value(out), inline
            values = self.values
            i = len(values)
            vals[id(out)] = _REFS[i] if i < _NREFS else Ref(i)
            values.append(out)
            self.datas.append(out._data)
            ids = (i,)
        if kname == "inplace":
            self.effects.add(len(nodes))
            tgt = rargs[0].i
            if tgt in self.graph.inputs:
                warnings.warn(f"trace: {key} modifies input {self.graph.inputs.index(tgt)} in place; the traced "
                              "graph repeats the modification on every call", TracerWarning, stacklevel=4)
        elif key in _EFFECTS:
            self.effects.add(len(nodes))
        self.used.update(ins)
        n = _new(Node)  # Node(kname, key, rargs, ids, multi, self.where, ins), inline
        n.kind, n.op, n.args, n.outs, n.multi, n.path, n.ins = kname, key, rargs, ids, multi, self.where, ins
        nodes.append(n)
        return out


def _module_scope(module, args, kwargs):
    """``module(*args, **kwargs)`` while traces record in several threads (``Module.__call__`` routes here; with
    one trace, to its :meth:`_Tracer.scope`): the tracer of the calling thread, if any, keeps the module path."""
    tracer = getattr(_LOCAL, "tracer", None)
    if tracer is None:
        return module._call(args, kwargs)
    return tracer.scope(module, args, kwargs)


def _route_calls():
    """Point ``Module.__call__`` at the tracers recording now: the one tracer's own scope, or the thread lookup."""
    _module.CALL_SCOPE[0] = None if not _ACTIVE else _ACTIVE[0].scope if len(_ACTIVE) == 1 else _module_scope


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


def _flatten_args(args, kwargs, tensors):
    """``_flatten((tuple(args), dict(kwargs)), tensors)``, quick for the usual positional tensors."""
    if not kwargs:
        spec = []
        for a in args:
            if type(a) is not Tensor:
                break
            r = _new(Ref)
            r.i = len(tensors)
            tensors.append(a)
            spec.append(r)
        else:
            return (tuple(spec), {})
        del tensors[len(tensors) - len(spec):]
    return _flatten((tuple(args), dict(kwargs or {})), tensors)


# The tensor->Python conversions warn while a trace records (PyTorch's TracerWarning).  They are wrapped
# once, at the first trace, rather than patched per trace: changing the Tensor class costs every later
# attribute lookup on tensors (and the interpreter's per-class budget of such changes).
_CONVERSIONS = (("item", "a Python number"), ("__bool__", "a Python boolean"), ("__int__", "a Python number"),
                ("__float__", "a Python number"), ("__index__", "a Python index"),
                ("__complex__", "a Python number"), ("tolist", "a Python list"), ("numpy", "a NumPy array"))
_GUARDED: list = []


def _caller_module(frame) -> str:
    """The module that asked for a conversion: ``frame``'s, past the ``__torch_function__`` check's wrappers
    (which stand between a Tensor method and its caller once a subclass has armed them)."""
    while frame is not None and frame.f_globals.get("__name__") == "ember.overrides":
        frame = frame.f_back
    return "" if frame is None else frame.f_globals.get("__name__", "")


def _warn_conversion(t, what):
    tracer = getattr(_LOCAL, "tracer", None)
    if tracer is not None and tracer.on_conversion is not None and get_ident() == tracer.tid:
        tracer.on_conversion(t, what)  # a compiler's capture: any conversion ends the graph
        return
    if tracer is not None and get_ident() == tracer.tid and not _caller_module(sys._getframe(2)).startswith("ember."):
        r = tracer.vals.get(id(t))
        if r is not None and r.i in tracer.derived_values():
            warnings.warn(f"Converting a tensor to {what} might cause the trace to be incorrect. We can't "
                          "record the data flow of Python values, so this value will be treated as a "
                          "constant in the future. This means that the trace might not generalize to other "
                          "inputs!", TracerWarning, stacklevel=3)


def _guarded(orig, name, what):
    if name == "numpy":
        def method(self, *a, **k):
            if _ACTIVE:
                _warn_conversion(self, what)
            return orig(self, *a, **k)
    else:
        def method(self):
            if _ACTIVE:
                _warn_conversion(self, what)
            return orig(self)

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(method, attr, getattr(orig, attr))
    method.__wrapped__ = orig
    return method


def _guard_conversions():
    if not _GUARDED:
        for name, what in _CONVERSIONS:
            setattr(Tensor, name, _guarded(Tensor.__dict__[name], name, what))
        _GUARDED.append(True)


def capture(fn, args, kwargs=None, module=None, on_conversion=None) -> tuple:
    """Run ``fn(*args, **kwargs)`` once, recording every op; returns ``(graph, result)``.  ``on_conversion(t,
    what)``, when given, hears of every tensor->Python conversion (``item``, ``bool``, ``numpy``...) instead of
    the trace warning about it."""
    if getattr(_LOCAL, "tracer", None) is not None:
        raise RuntimeError("trace: a trace is already being recorded in this thread (nested tracing is not "
                           "supported)")
    if not _GUARDED:
        _guard_conversions()
    tracer = _Tracer()
    tracer.on_conversion = on_conversion
    g = tracer.graph
    flat = []
    g.in_spec = _flatten_args(args, kwargs, flat)
    g._devices = [t._dev for t in flat]
    inputs = g.inputs
    for t in flat:
        inputs.append(tracer.input_value(t))
    _LOCAL.tracer = tracer
    _ACTIVE.append(tracer)
    _route_calls()
    collecting = gc.isenabled()
    gc.disable()  # a trace allocates many small containers and frees none: no cycle collection meanwhile
    try:
        if module is not None:
            tracer.enter(module)
        with intercept(tracer.handler, rebind=tracer.rebind):
            out = fn(*args, **kwargs) if kwargs else fn(*args)
    finally:
        _LOCAL.tracer = None
        _ACTIVE.remove(tracer)
        _route_calls()
        if collecting:
            gc.enable()
    g.out_spec = _out_spec(out, tracer)
    g.modules = list(tracer.called.values())
    tracer.finish()
    _prune(g, tracer.effects, tracer.used)
    return g, out


def _prune(g, effects=None, used=None):
    """Drop ops whose results nothing uses (a comparison only read by Python, say); in-place ops and random
    draws stay (they change state).  ``effects``: the indices of those nodes (read from the nodes when not
    given); ``used``: the value ids the ops read, when known."""
    nodes = g.nodes
    spec = g.out_spec
    live = {spec.i} if type(spec) is Ref else set(_refs_in(spec))
    if used is not None and len(used.union(live, g.inputs, g.consts)) == g.n_values:
        return  # every op's result and parameter is read by an op or returned: every op is live
    keep = []
    dead = 0
    for k in range(len(nodes) - 1, -1, -1):
        n = nodes[k]
        for i in n.outs:
            if i in live:
                break
        else:
            if not (k in effects if effects is not None else
                    n.kind == "inplace" or n.op in _EFFECTS or any(type(a) is Gen for a in n.args)):
                dead += 1
                continue
        keep.append(n)
        live.update(n.ins if n.ins is not None else _refs_in(n.args))
    if dead:
        keep.reverse()
        g.nodes = keep
    for store in (g.params, g.consts):
        if len(store) > len(live) or not live.issuperset(store):
            for i in [i for i in store if i not in live]:
                del store[i]


def _out_spec(out, tracer):
    if isinstance(out, Tensor):
        r = tracer.vals.get(id(out))
        return r if r is not None else tracer.ref_of(out)  # (a Ref is never changed: the tracer's is shared)
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


def has_ref(a) -> bool:
    """Whether graph argument ``a`` holds a graph value (a Ref, Sym or Gen) anywhere inside it."""
    ta = type(a)
    if ta is Ref or ta is Sym or ta is Gen or ta is ARef:
        return True
    if ta is tuple or ta is list:
        return any(has_ref(x) for x in a)
    if ta is slice:
        return has_ref((a.start, a.stop, a.step))
    if ta is dict:
        return has_ref(tuple(a.values()))
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
            nested = any(has_ref(a) for j, a in enumerate(args) if type(a) is not Ref)
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
                a = replay_args(kind, args, env, sizes)
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


def replay_args(kind, args, env, sizes):
    """A node's arguments for a call of its kind: values from ``env`` (value id -> tensor), sizes from
    ``sizes`` (the inputs' shapes), the default generator resolved, a factory's host constant copied."""
    a = _subst(args, env, sizes)
    if kind == "create":
        return _fresh_create(a)
    if any(type(x) is Gen for x in a):
        dev = next(x for x in a if isinstance(x, Tensor))._dev
        a = [native(None, dev) if type(x) is Gen else x for x in a]
    return a


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


def capture_dynamic(fn, args, kwargs, module, dynamic, where="export", tied=None, on_conversion=None,
                    keep=False):
    """:func:`capture`, with ``dynamic`` (a list of ``(flat input index, dim)``) made symbolic.

    One more trace per dynamic dimension, with that dimension one longer: integers in the op arguments
    that change with it become :class:`Sym` (``a * size + b``); a graph whose ops change raises.  The
    module's buffers and the random state are left as they were before (as ``torch.export`` leaves them),
    or, with ``keep``, as the first trace (the call itself) left them.  ``tied`` maps a dimension of
    ``dynamic`` to the others that always have its size (a batch axis shared by two inputs): they grow with
    it rather than alone.  ``on_conversion`` as in :func:`capture`.
    """
    tied = tied or {}
    followers = {m for group in tied.values() for m in group}
    saved = _snapshot(module)
    rng = _rng_state()
    flat = []
    spec = _flatten((tuple(args), dict(kwargs or {})), flat)
    try:
        graph, out = capture(fn, args, kwargs, module, on_conversion=on_conversion)
        if keep:
            after, rng_after = _snapshot(module), _rng_state()
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
            g2, _ = capture(fn, a2, k2, module, on_conversion=on_conversion)
            _merge(graph, g2, inp, dim, t.shape[dim], [tuple(x.shape) for x in flat], where)
        if keep:
            saved, rng = after, rng_after
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
        elif ta in (float, complex) and a != b and not (a != a and b != b):
            fail(n, f"has a number computed from the size ({a!r}, then {b!r})")  # (n / (n - 1), say)
        return a

    for n, n2 in zip(g.nodes, g2.nodes):
        if n.kind != n2.kind or n.op != n2.op:
            fail(n, f"becomes {n2.op}")
        n.args = sym(n.args, n2.args, n)
    for i, t in g.consts.items():
        t2 = g2.consts.get(i)
        if t2 is not None and tuple(t.shape) != tuple(t2.shape):
            fail(None, "captures a constant tensor whose shape changes")
