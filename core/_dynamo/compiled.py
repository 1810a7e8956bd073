"""What ``ember.compile`` builds: a callable that captures each new kind of call once and replays it.

A call is captured at the op level (``ember.jit``'s :func:`capture`, at the interception point every op
passes) the first time its *guards* are met: the flattened inputs' shapes, dtypes, devices and
``requires_grad``, the other arguments' values, the grad and inference modes, and the training flags of the
compiled module's submodules and of every module the call ran, and whether each has hooks. The captured run
is the call itself, so its result is eager's. Later calls
that meet the same guards replay the graph (a :class:`Variant`): the generated raw-kernel function of
:mod:`.replay` when no autograd graph is needed; where one is, the forward and the backward compiled ahead
of time as one autograd Function (:mod:`.aot`), or, where that split is refused, the graph's ops through
dispatch, which records the autograd graph exactly as eager mode does. A guard miss captures a new variant,
up to ``config.recompile_limit`` (or ``compile``'s own); past it calls run eagerly.

A *graph break* is anything the op-level capture cannot see: a tensor turned into a Python value
(``item``, ``tolist``, ``bool`` in data-dependent control flow, ``numpy``), a backward pass run inside
the function, a call of a function marked :func:`disable`, :func:`graph_break`, an output that is not
tensors in tuples, lists and dicts, a module with forward or backward hooks (registered before or after the
first call: a hook is Python run at each call). The variant with a break runs eagerly at every call (never a wrong
result); ``fullgraph=True`` raises :class:`Unsupported` instead, and :func:`explain` reports the breaks.
Python side effects other than tensor writes (a counter in ``self``, a print) happen at the capture only.
"""
from __future__ import annotations

import threading
import warnings
import weakref

from ..autograd import engine as _engine
from ..interception import HANDLERS
from ..jit._graph import (
    Program, Ref, TracerWarning, _restore, _rng_state, _set_rng_state, _snapshot, capture, capture_dynamic,
)
from ..nn.modules.module import Module
from ..ops.nn import CompileCapture
from ..overrides import _is_torch_function_mode_enabled
from ..state import is_grad_enabled, is_inference
from ..tensor import Tensor
from . import config
from . import ints as _ints
from .aot import joint_body, split
from .exc import FailOnRecompileLimitHit, Unsupported
from .replay import generate

_LOCAL = threading.local()  # .capture: the _Capture recording in this thread
_ALL = weakref.WeakSet()     # every CompiledFunction, for reset()
STANCE = ["default"]


class _Capture:
    """The state of one capture: the graph breaks met."""

    def __init__(self, fullgraph):
        self.fullgraph = fullgraph
        self.breaks = []
        self.converted = None  # the tensor of the last conversion met
        self.internal = False  # the compiler's own backward pass (aot) runs
        self.tid = threading.get_ident()

    def note_hooks(self, modules):
        """A graph break where one of ``modules`` (those the call ran) has hooks (noted once)."""
        reason = "a module with forward or backward hooks (a replay would not call them)"
        if reason not in self.breaks and any(_hooked(m) for m in modules):
            self.note(reason)

    def note(self, reason):
        if self.fullgraph:
            raise Unsupported(f"ember.compile(fullgraph=True): graph break: {reason}")
        self.breaks.append(reason)


def current_capture():
    """The capture recording in this thread, or None."""
    return getattr(_LOCAL, "capture", None)


def note_break(reason: str) -> None:
    """Record a graph break in this thread's capture, if one is recording (raises under ``fullgraph=True``)."""
    c = current_capture()
    if c is not None:
        c.note(reason)


def _on_conversion(t, what):
    c = current_capture()
    if c is not None and c.converted is not t:  # (bool(t) calls t.item(): one break)
        c.converted = t
        c.note(f"data-dependent: a tensor converted to {what} (Tensor.item, tolist, bool, numpy or the like)")


def _backward_breaks(run):
    def traced_run(*args, **kwargs):
        c = current_capture()
        if c is not None and c.tid == threading.get_ident() and not c.internal:
            c.note("a backward pass (Tensor.backward or autograd.grad) inside the compiled function")
        return run(*args, **kwargs)
    return traced_run


# --------------------------------------------------------------------------- guards
def _guard_key(obj, flat, dyn=None, ints=None, path=None):
    """A hashable key of ``obj``'s structure, non-tensor values and tensor metadata; tensors go to ``flat``.
    ``dyn``: the ``(flat index, dim)`` that are dynamic (see :func:`_masked`); ``ints``: the paths (see
    :mod:`.ints`) of the int arguments that are symbolic, whose values the key leaves out (``obj`` is at
    ``path``)."""
    if isinstance(obj, Tensor):
        flat.append(obj)
        a = obj._data
        return (_masked(a.shape, len(flat) - 1, dyn) if dyn else a.shape, a.dtype, obj._dev, obj._rg)
    t = type(obj)
    if t is int and ints and path in ints:
        return (t, None)
    if t is tuple or t is list:
        return (t, tuple(_guard_key(x, flat, dyn, ints, ints and _ints._child(path, i)) for i, x in enumerate(obj)))
    if t is dict:
        return (t, tuple((k, _guard_key(v, flat, dyn, ints, ints and _ints._child(path, k))) for k, v in obj.items()))
    hash(obj)  # (an unhashable argument: the caller runs eagerly)
    return (t, obj)


def _masked(shape, k, dyn):
    """``shape`` of flat input ``k`` as a guard sees it: a dynamic dim of size 2 or more is None (one variant
    serves every such size); sizes 0 and 1 stay (they specialise, as PyTorch's 0/1 specialisation does)."""
    return tuple([None if s >= 2 and (k, j) in dyn else s for j, s in enumerate(shape)])


def _out_spec(out, flat):
    """``out`` with tensors replaced by their index in ``flat``; None for a structure that cannot be rebuilt."""
    if isinstance(out, Tensor):
        flat.append(out)
        return Ref(len(flat) - 1)
    t = type(out)
    if t is tuple or t is list:
        parts = [_out_spec(x, flat) for x in out]
        return None if any(p is None and x is not None for p, x in zip(parts, out)) else t(parts)
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        parts = [_out_spec(x, flat) for x in out]
        return None if any(p is None and x is not None for p, x in zip(parts, out)) else (t, parts)
    if t is dict:
        parts = {k: _out_spec(v, flat) for k, v in out.items()}
        return None if any(parts[k] is None and v is not None for k, v in out.items()) else parts
    if out is None or t in (int, float, bool, str, complex):
        return ("const", out)
    return None


def _rebuild(spec, outs):
    t = type(spec)
    if t is Ref:
        return outs[spec.i]
    if t is list:
        return [_rebuild(x, outs) for x in spec]
    if t is dict:
        return {k: _rebuild(v, outs) for k, v in spec.items()}
    if spec[0] == "const":
        return spec[1]
    if t is tuple and type(spec[0]) is type and issubclass(spec[0], tuple):  # a namedtuple
        return spec[0](*[_rebuild(x, outs) for x in spec[1]])
    return tuple(_rebuild(x, outs) for x in spec)


def _param_slots(module, graph):
    """``[(store, key)]`` for the graph's parameters and buffers: the dict each lives in, read at every call."""
    slots = []
    for path in graph.params.values():
        m = module
        *owners, key = path.split(".")
        for name in owners:
            m = m._modules[name]
        slots.append((m._parameters if key in m._parameters else m._buffers, key))
    return slots


def _plain_body(fn, holder):
    """``fn`` returning its tensors flat, its result and their structure left in ``holder``."""
    def body(*args, **kwargs):
        out = fn(*args, **kwargs)
        outs = []
        holder["out"], holder["spec"] = out, _out_spec(out, outs)
        return tuple(outs)
    return body


class Variant:
    """One compiled variant: the graph, its dispatch replay, its raw replay (None when it has none), or the
    graph breaks that make it run eagerly."""

    __slots__ = ("graph", "program", "fast", "aot", "source", "slots", "consts", "out_spec", "breaks", "int_paths")

    def __init__(self, breaks=(), graph=None, out_spec=None):
        self.breaks = list(breaks)
        self.graph, self.out_spec = graph, out_spec
        self.program = self.fast = self.aot = self.source = None
        self.slots, self.consts = [], []
        self.int_paths = None  # the paths of the int arguments that are graph inputs (None: none is)

    def run(self, flat, ints=None):
        """The outputs of a call with tensors ``flat``; ``ints``: ``[(value,)]`` of its symbolic ints."""
        g = self.graph
        params = [store[key] for store, key in self.slots]
        tensors = flat + params + self.consts
        fast = self.fast
        if fast is not None and (not is_grad_enabled() or not any(t._rg for t in tensors)):
            outs = fast(tensors, ints) if ints else fast(tensors)
        elif self.aot is not None and is_grad_enabled() and self.aot.matches(tensors):
            outs = self.aot.run(tensors, ints) if ints else self.aot.run(tensors)
        else:
            by_path = dict(zip(g.params.values(), params))
            if ints:  # (the dispatch replay reads sizes from its inputs: the ints ride as shapes (value,))
                flat = flat + [_IntSize(v) for v in ints]
            outs = self.program.run(flat, by_path.__getitem__)
        return _rebuild(self.out_spec, outs)


class _IntSize:
    """A symbolic int's value where the dispatch replay reads an input's shape: ``_data.shape`` is ``(v,)``."""

    __slots__ = ("_data", "shape")

    def __init__(self, shape):
        self._data = self
        self.shape = shape


def _hooked(m) -> bool:
    """Whether module ``m`` has forward or backward hooks (Python that a replayed graph would not run)."""
    return bool(m._forward_pre_hooks or m._forward_hooks or m._backward_hooks or m._backward_pre_hooks)


def _module_flags(modules) -> tuple:
    """The guarded state of ``modules``: each one's training flag, plus 2 where it has hooks."""
    return tuple([m.training + 2 if m._forward_pre_hooks or m._forward_hooks or m._backward_hooks or
                  m._backward_pre_hooks else m.training for m in modules])


def _own_torch_function(cls) -> bool:
    """Whether tensor subclass ``cls`` overrides ``__torch_function__`` (its calls then run eagerly)."""
    f = cls.__torch_function__
    return getattr(f, "__func__", f) is not _TENSOR_TF


_TENSOR_TF = Tensor.__torch_function__.__func__


class CompiledFunction:
    """``fn`` compiled: a cache of :class:`Variant` keyed by guards (see the module docstring)."""

    def __init__(self, fn, module=None, fullgraph=False, backend="inductor", dynamic=None, fusion="auto",
                 recompile_limit=None, name=None):
        self.fn, self.module, self.fullgraph, self.backend, self.dynamic = fn, module, fullgraph, backend, dynamic
        self.recompile_limit = recompile_limit  # (None: ``config.recompile_limit``)
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self.fusion = fusion  # elementwise runs: "auto", "numba" or "numpy" (see .fusion)
        self.modules = list(module.modules()) if module is not None else []
        self.cache = {}
        self.dyn = set()     # (flat input index, dim) whose size is symbolic in the variants captured from now on
        self.static = set()  # dims that could not be made dynamic (the function specialises on their size)
        self.ties = []       # groups of dynamic dims captured as one size: guarded to be equal
        self.last = None     # the shapes of the flat inputs of the last capture (automatic dynamic compares)
        self.ints = set()        # paths of int arguments (see .ints) symbolic in the variants captured from now on
        self.int_static = set()  # paths of int arguments that decide the trace: guarded by value
        self.last_ints = []      # the int arguments of the last capture, [(path, value)]
        _ALL.add(self)

    def key(self, args, kwargs, flat, dyn=(), ints=None):
        """The guards of a call (None: run it eagerly); its tensors go to ``flat``.  ``dyn``: the dims whose
        size the key leaves out (a dynamic variant's key); without, the exact shapes (a static variant's).
        ``ints``: the paths of the int arguments whose values it leaves out."""
        head = (is_grad_enabled(), is_inference(), _module_flags(self.modules))
        if not kwargs and not dyn and not ints:  # the usual call, tensors and lists of ints: inline
            metas = []
            for a in args:
                ta = type(a)
                if ta is Tensor:
                    d = a._data
                    metas.append((d.shape, d.dtype, a._dev, a._rg))
                    flat.append(a)
                elif (ta is list or ta is tuple) and all([type(x) is int for x in a]):  # (a tag path: by value)
                    metas.append((ta, tuple(a)))
                else:
                    break
            else:
                return head, tuple(metas)
            flat.clear()
        try:
            key = head, _guard_key(args, flat, dyn, ints, ("a",)), \
                _guard_key(kwargs, flat, dyn, ints, ("k",)) if kwargs else None
        except TypeError:  # an unhashable argument
            return None
        if any(type(t) is not Tensor and _own_torch_function(type(t)) for t in flat):
            return None
        if dyn and self.ties:  # the sizes captured as one are guarded to be equal
            sizes = [t._data.shape for t in flat]
            key += (tuple([len({sizes[k][j] if k < len(sizes) and j < len(sizes[k]) else None
                                for k, j in group}) == 1 for group in self.ties]),)
        return key

    def widen(self, flat) -> bool:
        """Make dynamic the dims this call asks to be: every dim with ``dynamic=True``, those marked by
        :func:`mark_dynamic`, and (automatic dynamic, PyTorch's default) those whose size changed since the
        last capture.  Whether any dim became dynamic."""
        if self.dynamic is False:
            return False
        new = set()
        last = self.last if config.automatic_dynamic_shapes and self.last is not None and \
            len(self.last) == len(flat) else None
        for k, t in enumerate(flat):
            shape = t._data.shape
            if self.dynamic:
                new.update((k, j) for j in range(len(shape)))
            marks = t.__dict__.get("_dynamo_dynamic_indices")
            if marks:
                new.update((k, j % len(shape)) for j in marks if -len(shape) <= j < len(shape))
            if last is not None and len(last[k]) == len(shape):
                new.update((k, j) for j, (a, b) in enumerate(zip(shape, last[k])) if a != b)
            fixed = t.__dict__.get("_dynamo_static_indices")
            if fixed:
                new.difference_update((k, j % len(shape)) for j in fixed if -len(shape) <= j < len(shape))
        new -= self.dyn | self.static
        self.dyn |= new
        return bool(new)

    def widen_ints(self, args, kwargs) -> bool:
        """With ``config.probe_int_args`` on, make symbolic the int arguments this call asks to be (automatic
        dynamic, as for dims): every one with ``dynamic=True``, else those whose values changed since the last
        capture (by path: a list's elements together).  Whether any became symbolic."""
        if self.dynamic is False or not config.probe_int_args or \
                not (self.dynamic or config.automatic_dynamic_shapes and self.last_ints):
            return False
        leaves = _ints.int_leaves(args, kwargs)
        if self.dynamic:
            new = {p for p, _ in leaves}
        else:
            now, last = {}, {}
            for p, v in leaves:
                now.setdefault(p, []).append(v)
            for p, v in self.last_ints:
                last.setdefault(p, []).append(v)
            new = {p for p, vs in now.items() if p in last and last[p] != vs}
        new -= self.ints | self.int_static
        self.ints |= new
        return bool(new)

    def __call__(self, *args, **kwargs):
        if STANCE[0] == "force_eager" or current_capture() is not None or HANDLERS or \
                _is_torch_function_mode_enabled():  # a tracer, autocast, vmap or a mode must see every op: eager
            return self.fn(*args, **kwargs)
        flat = []
        key = self.key(args, kwargs, flat)  # a static variant first: it replays fastest
        if key is None:
            return self.fn(*args, **kwargs)
        v = self.cache.get(key)
        if v is None and (self.dyn or self.ints):  # a variant with some sizes or ints symbolic may serve
            v = self.cache.get(self.key(args, kwargs, [], self.dyn, self.ints))
        if v is None and self.widen(flat) | self.widen_ints(args, kwargs):  # (more of them symbolic now)
            v = self.cache.get(self.key(args, kwargs, [], self.dyn, self.ints))
        if v is not None:
            if v.graph is None:
                return self.fn(*args, **kwargs)
            if v.int_paths:
                return v.run(flat, [(x,) for p, x in _ints.int_leaves(args, kwargs) if p in v.int_paths])
            return v.run(flat)
        if self.cache:
            if STANCE[0] == "fail_on_recompile":
                raise RuntimeError("ember.compile: a recompilation was needed under set_stance('fail_on_recompile')")
            if STANCE[0] == "eager_on_recompile":
                return self.fn(*args, **kwargs)
            limit = config.recompile_limit if self.recompile_limit is None else self.recompile_limit
            if len(self.cache) >= limit:
                if self.fullgraph and self.recompile_limit is not None:  # (only a limit of the call's own: ember
                    # keeps variants PyTorch's symbolic shapes would merge, so the global limit runs eagerly)
                    raise FailOnRecompileLimitHit(f"ember.compile: {self.name} hit its recompile limit ({limit} "
                                                  "variants), and fullgraph=True forbids running it eagerly")
                return self.fn(*args, **kwargs)
        known = len(self.modules)
        v, out = self.capture(args, kwargs, flat)
        if v.graph is not None and (v.graph.dynamic or v.int_paths):  # guarded but for its symbolic sizes, ints
            key = self.key(args, kwargs, [], self.dyn, self.ints)
        elif len(self.modules) != known:  # (modules met for the first time: their flags join the guards)
            key = self.key(args, kwargs, [])
        self.cache[key] = v
        return out

    def capture(self, args, kwargs, flat=None):
        """Run the call once under capture; returns ``(variant, result)``."""
        if flat is None:
            flat = []
            _guard_key((args, kwargs), flat)
        self.last = [tuple(t._data.shape) for t in flat]
        dims = sorted((k, j) for k, j in self.dyn if k < len(flat) and j < flat[k].ndim and flat[k].shape[j] >= 2)
        state = _Capture(self.fullgraph)
        runs = []  # what each run of the function left (a dynamic capture runs it more than once)
        joint = [is_grad_enabled() and self.backend in ("inductor", "ember")]  # with the backward, ahead of time
        leaves = _ints.int_leaves(args, kwargs)
        sel = [k for k, (p, _) in enumerate(leaves) if p in self.ints]  # the ints to make symbolic
        before = (_snapshot(self.module), _rng_state()) if sel else None  # (the probes start from here)

        def body(*a, **k):
            h = {}
            runs.append(h)
            return (joint_body(self.fn, _out_spec, h, state) if joint[0] else _plain_body(self.fn, h))(*a, **k)

        run = _engine.run
        _LOCAL.capture = state
        _engine.run = _backward_breaks(run)
        # (the replay runs the one-node normalisations: they need not be composed)
        CompileCapture.native = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", TracerWarning)
                if dims:  # with the backward where its sizes can be symbolic too, else the forward alone
                    got = self.capture_dynamic(body, runs, args, kwargs, flat, dims)
                    if got is None and joint[0]:  # (the backward then recorded through dispatch at each call)
                        joint[0] = False
                        got = self.capture_dynamic(body, runs, args, kwargs, flat, dims)
                        joint[0] = got is None  # static sizes below keep the backward ahead of time
                    if got is None:  # no dim can be symbolic (a loop over a sentence's words): static sizes
                        got = self.capture_static(body, runs, args, kwargs, dims)
                    graph = got[0]
                else:
                    graph, _ = capture(body, args, kwargs, self.module, on_conversion=_on_conversion)
                if sel and not state.breaks:
                    try:
                        self.symbolic_ints(graph, body, runs, args, kwargs, flat, leaves, sel, *before)
                    except (_ints.Decided, Exception):  # noqa: BLE001 - a probe failed: they decide
                        pass
                    del state.breaks[:]  # (what the probes met; the call itself met no break)
        finally:
            _engine.run = run
            _LOCAL.capture = None
            CompileCapture.native = False
        paths = {leaves[k][0] for k in sel} - getattr(graph, "int_paths", frozenset())
        self.int_static |= paths  # (ints the graph does not take as inputs: their values stay in its guards)
        self.ints -= paths
        self.last_ints = leaves
        holder = runs[0]  # the call itself (the graph is its trace; later runs only grew the sizes)
        out, spec = holder["out"], holder["spec"]
        known = {id(m) for m in self.modules}
        self.modules += [m for m in graph.modules if id(m) not in known]
        state.note_hooks(graph.modules)
        if spec is None:
            state.note(f"an output of type {type(out).__name__} (only tensors in tuples, lists and dicts are "
                       "rebuilt from a graph)")
        if state.breaks:
            return Variant(state.breaks), out
        return self.build(graph, spec, flat, holder), out

    def capture_dynamic(self, body, runs, args, kwargs, flat, dims):
        """``(graph, results)`` of ``body`` with ``dims`` symbolic.  Dims of one size in this call are captured as one
        size (a batch axis of two inputs) and guarded to stay equal.  Where the function specialises on a
        dim's size (its ops change with it), that dim stays static: when the whole set fails, each group is
        tried alone (its effects on buffers and random state undone) and the graph captured with those that
        hold.  Where none holds: None (the caller tries another way)."""
        groups = self.groups(flat, dims)
        got = self.try_dynamic(body, runs, args, kwargs, groups, keep=True)
        if got is None and len(groups) > 1:
            held = [g for g in groups if self.try_dynamic(body, runs, args, kwargs, [g], keep=False) is not None]
            got = self.try_dynamic(body, runs, args, kwargs, held, keep=True) if held else None
            groups = held
        if got is None:
            return None
        kept = {d for g in groups for d in g}
        self.static.update(d for d in dims if d not in kept)
        self.dyn.difference_update(self.static)
        self.ties = [g for g in groups if len(g) > 1] or self.ties
        return got

    def capture_static(self, body, runs, args, kwargs, dims):
        """``(graph, results)`` of ``body`` with static sizes; ``dims``, which could not be symbolic, stay static."""
        runs.clear()
        got = capture(body, args, kwargs, self.module, on_conversion=_on_conversion)
        self.static.update(dims)
        self.dyn.difference_update(self.static)
        return got

    def symbolic_ints(self, graph, body, runs, args, kwargs, flat, leaves, sel, saved, rng):
        """Make the ints ``sel`` (positions in ``leaves``) of ``graph`` symbolic (see :mod:`.ints`), from probe
        traces of the call with static sizes (its effects undone between them; the call's own kept at the end);
        raises where none can be.  The graph then has ``n_ints`` and ``int_paths`` (of the ints kept symbolic)."""
        vals = [leaves[k][1] for k in sel]
        alts = _ints.alternates(leaves, sel, self.last_ints)
        after, rng_after = _snapshot(self.module), _rng_state()
        values = [[alts[j] if j in changed else vals[j] for j in range(len(sel))] for changed in _ints.groups(len(sel))]
        n_probes = len(values)  # (then two checks)
        values += [alts, _ints.far(vals, alts)]
        traces = []
        _ints.PROBING[0] = True
        try:
            for vs in values:
                _restore(saved)
                _set_rng_state(rng)
                new = iter(_ints.Probe(v) for v in vs)
                pos = set(sel)
                every = iter([next(new) if k in pos else v for k, (_, v) in enumerate(leaves)])
                a2, k2 = _ints.with_ints(tuple(args), every), _ints.with_ints(kwargs, every)
                traces.append(capture(body, a2, k2, self.module, on_conversion=_on_conversion)[0])
        finally:
            _ints.PROBING[0] = False
            del runs[1:]
            _restore(after)
            _set_rng_state(rng_after)
        changes = [[w - v for v, w in zip(vals, vs)] for vs in values[:n_probes]]
        sizes = [tuple(t._data.shape) for t in flat]
        args_of, kept = _ints.symbolize(graph, traces[:n_probes], changes, vals, sizes,
                                        list(zip(traces[n_probes:], values[n_probes:])),
                                        [leaves[k][0] for k in sel])
        for node, a in zip(graph.nodes, args_of):
            node.args = a
        graph.n_ints = len(kept)
        graph.int_paths = frozenset(leaves[sel[k]][0] for k in kept)

    @staticmethod
    def groups(flat, dims) -> list:
        """``dims`` grouped by their size in this call (each group captured as one size)."""
        by_size = {}
        for k, j in dims:
            by_size.setdefault(flat[k].shape[j], []).append((k, j))
        return [tuple(g) for g in by_size.values()]

    def try_dynamic(self, body, runs, args, kwargs, groups, keep):
        """``(graph, results of the call)`` of ``body`` with the dims of ``groups`` symbolic (each group one
        size), or None where the function specialises on one of them."""
        dims = [d for g in groups for d in g]
        tied = {g[0]: g[1:] for g in groups if len(g) > 1}
        runs.clear()
        try:
            return capture_dynamic(body, args, kwargs, self.module, dims, "ember.compile", tied,
                                   on_conversion=_on_conversion, keep=keep)
        except Unsupported:
            raise
        except Exception:  # noqa: BLE001 - the grown trace failed or changed the graph: not dynamic
            return None

    def build(self, graph, spec, flat, holder):
        v = Variant(graph=graph, out_spec=spec)
        v.int_paths = getattr(graph, "int_paths", None)
        aot = None
        if "tracer" in holder:  # a joint graph: its backward part becomes the aot step, the rest the forward
            devs = {t._dev for t in holder["tracer"].values}
            if len(devs) == 1 and not any(n.kind == "move" for n in graph.nodes):
                order = list(graph.inputs) + list(graph.params) + list(graph.consts)
                aot = split(graph, holder, order, devs.pop(), self.fusion)
            graph.nodes = [n for n in graph.nodes if id(n) in holder["fwd"]]
            graph.out_spec = graph.out_spec[:len(holder["outs"])]
        try:
            v.program = Program(graph)
        except RuntimeError as exc:
            note = f"the graph cannot be replayed ({exc})"
            if self.fullgraph:
                raise Unsupported(note) from None
            return Variant([note])
        v.slots = _param_slots(self.module, graph) if graph.params else []
        v.consts = list(graph.consts.values())
        if self.backend in ("inductor", "ember") and flat:
            devs = {t._dev for t in flat + [s[k] for s, k in v.slots] + v.consts}
            if len(devs) == 1 and not any(n.kind == "move" for n in graph.nodes):
                order = list(graph.inputs) + list(graph.params) + list(graph.consts)
                v.fast, v.source = generate(graph, order, devs.pop(), fuse=self.fusion)
        v.aot = aot
        return v

    def reset(self):
        self.cache.clear()


def reset_all():
    """Forget every compiled variant of every compiled function."""
    for cf in list(_ALL):
        cf.reset()


class ExplainOutput:
    """What :func:`explain` found: ``graphs``, ``graph_count``, ``graph_break_count``, ``break_reasons``
    (each with ``reason``), ``op_count`` and ``ops_per_graph``."""

    def __init__(self, graphs, breaks):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.break_reasons = [BreakReason(r) for r in breaks]
        self.graph_break_count = len(breaks)
        self.ops_per_graph = [g.ops() for g in graphs]
        self.op_count = sum(len(o) for o in self.ops_per_graph)

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        lines += [f"  Break Reason {i + 1}:\n    Reason: {b.reason}" for i, b in enumerate(self.break_reasons)]
        return "\n".join(lines)


class BreakReason:
    """One graph break: ``reason`` says what could not be captured."""

    def __init__(self, reason):
        self.reason = reason
        self.user_stack = []

    def __repr__(self):
        return f"BreakReason({self.reason!r})"


def explain(f, *extra_args, **extra_kwargs):
    """``explain(f)(*args, **kwargs)`` runs ``f`` once under capture and reports its graphs and graph breaks
    (``torch._dynamo.explain``). A call with a break runs eagerly as a whole in ember, so it has no graph.

    >>> import ember
    >>> def f(x):
    ...     return x * 2 if x.sum() > 0 else x
    >>> ember._dynamo.explain(f)(ember.ones(3)).graph_break_count
    1
    """
    def inner(*args, **kwargs):
        module = f if isinstance(f, Module) else None
        cf = CompiledFunction(f, module, backend="eager")
        v, _ = cf.capture(args, kwargs)
        return ExplainOutput([v.graph] if v.graph is not None else [], v.breaks)

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
