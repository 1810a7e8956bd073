"""Training graphs ahead of time: the backward of a captured call, captured with it and replayed as one
autograd Function.

ember's backward formulas are written with ember ops, so a backward pass run while a capture records passes
the interception point like the forward. :func:`joint_body` runs the compiled function, then
``autograd.grad`` of its differentiable outputs with respect to every tensor that requires grad (inputs,
parameters, captured tensors), with stand-in output gradients; the one graph recorded holds the forward and
the backward. :func:`split` cuts it where the backward began: the forward part returns the outputs and the
values the backward reads (the saved values); the backward part maps those and the output gradients to the
gradients. Each part becomes a generated raw-kernel function (:mod:`.replay`), and :class:`CompiledStep`
runs them as the forward and backward of one autograd Function, so ``loss.backward()`` runs the compiled
backward and the gradients reach the leaves through the engine, as eager mode's do.

The split is refused (the dispatch replay serves the call) when the backward used a tensor it did not
compute with a recorded op (a gradient summed or filled outside the ops), or reads a forward value that a
later in-place op changed.
"""
from __future__ import annotations

from types import SimpleNamespace

from ..autograd import engine as _engine
from ..autograd.function import SAVED_HOOKS, Function, _alias, grad_edge
from ..jit import _graph
from ..jit._graph import Ref, _refs_in, lookup_op
from ..state import STATE, is_grad_enabled
from ..ops.creation import ones_like, zeros
from ..ops.nn import CompileCapture
from ..tensor import Tensor
from .replay import generate


def joint_body(fn, out_spec, holder, state):
    """``fn`` followed by the gradients of its differentiable outputs (the function the joint capture runs)."""
    def body(*args, **kwargs):
        out = fn(*args, **kwargs)
        outs = []
        holder["out"], holder["spec"] = out, out_spec(out, outs)
        tracer = _graph._LOCAL.tracer
        holder["fwd"] = {id(n) for n in tracer.nodes}
        holder["n_values"] = len(tracer.values)
        g = tracer.graph
        seen, leaves = set(), []
        for i in list(g.inputs) + list(g.params) + list(g.consts):
            t = tracer.values[i]
            if t._rg and id(t) not in seen:
                seen.add(id(t))
                leaves.append(t)
        diff = [o for o in outs if o._rg and o.dtype.is_floating_point]
        holder["guarded"] = leaves
        leaves = _cut_prefix(tracer, leaves, outs, holder)
        gouts = [ones_like(o) for o in diff]  # stand-ins (made by recorded ops: their sizes may be symbolic)
        grads = ()
        state.note_hooks(tracer.called.values())  # (a backward hook would be called by this backward too)
        if diff and leaves and not state.breaks:  # (a call with a break runs eagerly: no graph is needed)
            state.internal, CompileCapture.first_order = True, True
            _engine.TASK.zeros = _recorded_zeros
            try:  # create_graph: the engine sums and fills gradients with ops then, which the capture sees
                grads = _engine.grad(diff, leaves, gouts, retain_graph=True, create_graph=True, allow_unused=True)
            except RuntimeError:  # a formula that cannot run so (its graph freed, no double backward)
                grads = ()
            finally:
                state.internal, CompileCapture.first_order = False, False
                _engine.TASK.zeros = None
        holder.update(tracer=tracer, outs=outs, diff=diff, gouts=gouts, leaves=leaves, grads=grads)
        return tuple(outs) + tuple(x for x in grads if x is not None)
    return body


def _recorded_zeros(shape, dtype, device):
    """The engine's zeros for an output that got no gradient (an LSTM layer's unused final states), made by a
    factory the capture records, where the engine's own bare kernel call would leave them tensors of unknown
    origin to the captured backward (which then could not be split)."""
    return zeros(shape, dtype=dtype, device=device)


def _cut_prefix(tracer, leaves, outs, holder):
    """The leaves to differentiate with respect to, where the forward has an op whose backward cannot be
    recorded (``once_differentiable``: a fused recurrent layer's backward is a kernel).  Such ops and every op
    they depend on form a *prefix* replayed through dispatch, so eager autograd records it; the rest is
    differentiated with respect to its own leaves and the prefix's results it reads.  ``holder["prefix"]``
    gets the prefix's nodes (by id) and ``holder["cut"]`` the value ids of those results (None: no prefix;
    an empty leaf list: no split, as when an output is a prefix result)."""
    nodes = tracer.nodes
    holder["prefix"] = holder["cut"] = None
    todo = [k for k, n in enumerate(nodes)
            if n.kind != "create" and getattr(lookup_op(n.op), "once_differentiable", False)]
    if not todo:
        return leaves
    maker = {i: k for k, n in enumerate(nodes) for i in n.outs}
    ins = [n.ins if n.ins is not None else _refs_in(n.args) for n in nodes]
    prefix = set()
    while todo:
        k = todo.pop()
        if k not in prefix:
            prefix.add(k)
            todo.extend(maker[i] for i in ins[k] if i in maker)
    made = {i for k in prefix for i in nodes[k].outs}
    read = [i for k in range(len(nodes)) if k not in prefix for i in ins[k]]
    cut = sorted(made.intersection(read))
    values, vals = tracer.values, tracer.vals
    after = set(read)
    wanted = [t for t in leaves if vals[id(t)].i in after] + [values[i] for i in cut if values[i]._rg]
    upstream = {i for k in prefix for i in ins[k]}  # (a wanted value here: the backward would cross the prefix)
    if any(vals[id(o)].i in made for o in outs) or any(nodes[k].kind == "inplace" for k in prefix) or \
            any(vals[id(t)].i in upstream for t in wanted):
        return []
    holder["prefix"], holder["cut"] = {id(nodes[k]) for k in prefix}, cut
    return wanted


def split(graph, holder, order, dev, fusion="auto"):
    """The compiled forward and backward of a joint graph, or None where it cannot be split safely; ``fusion``:
    how elementwise runs are fused (see :func:`.replay.generate`)."""
    tracer = holder["tracer"]
    vals = tracer.vals
    n_ints = getattr(graph, "n_ints", 0)  # (symbolic ints: their values follow the inputs' sizes)
    fwd_ids = holder["fwd"]
    gout_ids = [vals[id(t)].i if id(t) in vals else None for t in holder["gouts"]]
    fwd = [n for n in graph.nodes if id(n) in fwd_ids]
    stand_ins = set(gout_ids)
    bwd = [n for n in graph.nodes if id(n) not in fwd_ids and stand_ins.isdisjoint(n.outs)]
    made = {i for n in bwd for i in n.outs}
    read = {i for n in bwd for i in _refs_in(n.args)}
    late = [i for i in graph.consts if i >= holder["n_values"] and i not in gout_ids]
    if late or not bwd:
        return None
    saved = sorted(read - made - set(gout_ids))
    saved_set = set(saved)
    if any(n.kind == "inplace" and n.args[0].i in saved_set for n in fwd):
        return None
    out_ids = [vals[id(o)].i for o in holder["outs"]]
    diff_pos = [k for k, o in enumerate(holder["outs"]) if any(o is d for d in holder["diff"])]
    grads = holder["grads"]
    grad_ids = [vals[id(g)].i if g is not None else None for g in grads]
    leaf_ids = [vals[id(t)].i for t in holder["leaves"]]
    guarded = [pos_in(order, vals[id(t)].i) for t in holder["guarded"]]
    root = {i: i for i in order}  # a value that is a tensor of the call or an array view of one -> that tensor
    for n in fwd:
        if n.kind == "view_op" and type(n.args[0]) is Ref and n.args[0].i in root:
            root.update((o, root[n.args[0].i]) for o in n.outs)
    watched = sorted({pos_in(order, root[i]) for i in saved if i in root})
    prefix = None
    if holder["prefix"] is not None:  # its results join the compiled forward's tensors
        pre = [n for n in fwd if id(n) in holder["prefix"]]
        fwd = [n for n in fwd if id(n) not in holder["prefix"]]
        if not saved_set <= {i for n in fwd for i in n.outs}.union(order, holder["cut"]):
            return None
        p_graph = SimpleNamespace(nodes=pre, meta=graph.meta, inputs=graph.inputs, n_ints=n_ints,
                                  out_spec=tuple(Ref(i) for i in holder["cut"]))
        prefix, psrc = generate(p_graph, order, dev, fold=False, fuse=False, dispatch=True)
        order = list(order) + holder["cut"]
    f_graph = SimpleNamespace(nodes=fwd, meta=graph.meta, inputs=graph.inputs, dynamic=graph.dynamic, n_ints=n_ints,
                              out_spec=tuple(Ref(i) for i in out_ids + saved))
    used_gouts = [(k, i) for k, i in enumerate(gout_ids) if i is not None]
    b_graph = SimpleNamespace(nodes=bwd, meta=graph.meta, inputs=None,  # (its sizes: the forward's inputs')
                              dynamic=graph.dynamic, out_spec=tuple(Ref(i) for i in grad_ids if i is not None))
    # (saved values are the backward's alone: arrays, but for the call's own tensors and its outputs)
    inner = frozenset(saved).difference(order, out_ids)
    forward, fsrc = generate(f_graph, order, dev, fuse=fusion, shown=out_ids, array_ids=inner)
    backward, bsrc = generate(b_graph, saved + [i for _, i in used_gouts], dev, fuse=fusion, array_ids=inner)
    step = CompiledStep(forward, backward, n_out=len(out_ids), diff_pos=diff_pos,
                        used_gouts=[k for k, _ in used_gouts], leaf_pos=[pos_in(order, i) for i in leaf_ids],
                        has_grad=[g is not None for g in grads], source=fsrc + "\n" + bsrc)
    # (a dynamic graph's backward reads the inputs' sizes, and the symbolic ints after them)
    step.n_inputs = len(graph.inputs) if graph.dynamic or n_ints else 0
    step.guarded, step.prefix, step.watched = guarded, prefix, watched
    step.backward_ops = tuple(n.op for n in bwd)
    if prefix is not None:
        step.source = psrc + "\n" + step.source
    return step


def pos_in(order, i):
    """The first position of value id ``i`` in ``order``."""
    return order.index(i)


class CompiledStep:
    """A split joint graph: ``run(tensors)`` computes the outputs through :class:`_Joint` (one autograd node)."""

    n_inputs = 0  # the inputs whose sizes the backward reads (a graph with dynamic sizes)
    prefix = None  # the generated function replaying the prefix through dispatch (see _cut_prefix), if any
    guarded = ()   # the positions of the tensors that required grad at the capture
    watched = ()   # the positions of the tensors whose values the backward reads (their versions are checked)
    backward_ops = ()  # the names of the ops the compiled backward runs, in order

    def __init__(self, forward, backward, n_out, diff_pos, used_gouts, leaf_pos, has_grad, source):
        self.forward, self.backward = forward, backward
        self.n_out, self.diff_pos, self.used_gouts = n_out, diff_pos, used_gouts
        self.leaf_pos, self.has_grad, self.source = leaf_pos, has_grad, source
        self.needs = (False,) + (True,) * len(leaf_pos)

    def matches(self, tensors):
        """Whether exactly the captured leaves require grad now."""
        return {id(tensors[j]) for j in self.guarded} == {id(t) for t in tensors if t._rg}

    def run(self, tensors, ints=None):
        """The outputs of a call on ``tensors`` (``ints``: ``[(value,)]`` of its symbolic ints, if any)."""
        if self.prefix is not None:  # (through dispatch: eager autograd records it)
            tensors = list(tensors) + list(self.prefix(tensors, ints))
        if STATE.anomaly or SAVED_HOOKS.stack:  # (the general path: a forward trace, saved-tensor hooks)
            call = SimpleNamespace(step=self, tensors=tensors, outs=None, ints=ints)
            diff = _Joint.apply(call, *[tensors[j] for j in self.leaf_pos])
            outs = list(call.outs)
            for k, t in zip(self.diff_pos, diff):
                outs[k] = t
            return tuple(outs)
        return self.apply(tensors, ints)

    def apply(self, tensors, ints=None):
        """What ``_Joint.apply`` does, without a general Function's checks that a compiled call never needs: the
        forward under no_grad, then one node whose inputs are the leaves and whose outputs are the
        differentiable outputs (every leaf requires grad: the guards say so)."""
        leaves = [tensors[j] for j in self.leaf_pos]
        prev = STATE.enabled
        STATE.enabled = False
        try:
            values = self.forward(tensors, ints)
        finally:
            STATE.enabled = prev
        ctx = _NODE.__new__(_NODE)
        _fill(ctx, self, tensors, values, ints)
        ctx.needs_input_grad = self.needs
        ctx.next_functions = ((None, 0),) + tuple([grad_edge(t) for t in leaves])
        ctx._shapes = (None,) + tuple([(t._data.shape, t._data.dtype) for t in leaves])
        outs = list(values[:self.n_out])
        meta = []
        for nr, k in enumerate(self.diff_pos):
            o = outs[k]
            if o._fn is not None or o._base is not None or any(o is t for t in tensors):
                o = outs[k] = _alias(o)  # (an output that is a given tensor, or a view: a new tensor object)
            o._rg, o._fn, o._nr = True, ctx, nr
            meta.append((o._data.shape, o.dtype, o._dev))
        ctx.n_outputs = len(meta)
        ctx._out_meta = tuple(meta)
        return tuple(outs)


def _fill(ctx, step, tensors, values, ints=None):
    """What the node of compiled ``step`` keeps for its backward, from its call's ``tensors`` and the forward's
    ``values`` (outputs, then what the backward reads): the saved values, the inputs' sizes and the versions of the
    inputs it watches for in-place changes.  The saved values sit where the engine frees a node's saved values after
    a backward without ``retain_graph`` (even none: a second backward then raises, as PyTorch's compiled one)."""
    ctx.step, ctx._saved = step, tuple(values[step.n_out:])
    ctx.sizes = [t._data.shape for t in tensors[:step.n_inputs]] + (ints or []) if step.n_inputs else None
    ctx.watched = [(tensors[j], tensors[j]._version) for j in step.watched]


class _Joint(Function):
    """The compiled forward and backward of one captured call, as one autograd Function."""

    @staticmethod
    def forward(ctx, call, *leaves):
        step = call.step
        values = step.forward(call.tensors, call.ints)
        call.outs = values[:step.n_out]
        _fill(ctx, step, call.tensors, values, call.ints)
        return tuple(call.outs[k] for k in step.diff_pos)

    @staticmethod
    def backward(ctx, *gouts):
        if is_grad_enabled():
            raise RuntimeError("ember.compile: a compiled backward cannot be differentiated again "
                               "(create_graph=True); compile with backend='aot_eager' for higher-order gradients")
        ctx._check_released()
        for t, v in ctx.watched:  # (eager mode's saved-value check, for the tensors the call was given)
            if t._version != v:
                raise RuntimeError(f"one of the variables needed for gradient computation has been modified by an "
                                   f"inplace operation: a tensor of shape {list(t.shape)} given to a compiled "
                                   f"call is at version {t._version}; expected version {v} instead. Hint: do not "
                                   f"change it in place before backward, or clone() it first.")
        step = ctx.step
        gs = [gouts[k] for k in step.used_gouts]
        if any(not isinstance(g, Tensor) for g in gs):
            raise RuntimeError("ember.compile: the compiled backward needs every output's gradient")
        computed = iter(step.backward(list(ctx._saved) + gs, ctx.sizes))
        return (None, *[next(computed) if h else None for h in step.has_grad])


_NODE = _Joint._backward_cls
