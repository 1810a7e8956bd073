"""The backward engine: iterative, reverse topological order from the roots.

Dependencies are counted once per call; a node runs when every gradient for
its outputs has arrived.  Gradients are summed per (node, output) in a
buffer; leaves receive theirs through AccumulateGrad.  Saved values are
freed as nodes finish unless ``retain_graph``.
"""
from __future__ import annotations

import threading
import warnings

from .. import tensor as _tensor
from .function import AccumulateGrad, BackwardCFunction, grad_edge
from ..kernels import fp_quiet_begin, fp_quiet_end
from ..state import GRAD_OFF, is_grad_enabled, modes, set_grad
from .grad_mode import STATE

_FORMAT_NAN = "Function '{}' returned nan values in its {}th output."


_ONES = {}
class _Task(threading.local):
    current = None  # (roots, filter_state) of the backward this thread is running
    zeros = None    # zeros(shape, dtype, device) for the outputs of a node that got no gradient (None: a kernel's)


TASK = _Task()
WATCHERS = [0]  # how many multi-gradient hooks exist: only then does a backward say which one it is


def _ones_like(t):
    """The implicit gradient of a scalar output: a 0-d one per (device, dtype), cached, never written to."""
    dt = t._data.dtype
    if t._data.ndim == 0:
        key = (id(t._dev), dt)  # devices are interned; their Python-level __eq__ is slow
        one = _ONES.get(key)
        if one is None:
            if t.dtype.category < 2:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{t.dtype}")
            one = _ONES[key] = t._dev.backend.xp.ones((), dtype=dt)
        return _tensor._wrap(one, t._dev)
    return _tensor._wrap(t._dev.backend.xp.ones(t._data.shape, dtype=dt), t._dev)


def _make_grads(outputs, grads, create_graph):
    Tensor = _tensor.Tensor
    res = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if not out._rg:
                continue
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out.dtype.category < 2:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            g = _ones_like(out)
        elif not isinstance(g, Tensor):
            g = out.new_tensor(g)
        elif g._data.shape != out._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has "
                               f"a shape of {out.shape}.")
        elif g._dev is not out._dev:
            raise RuntimeError(f"Mismatch in device: grad_output[{i}] is on {g.device} and output[{i}] on "
                               f"{out.device}.")
        elif g.is_complex() != out.is_complex():
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                               f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] "
                               f"has a dtype of {out.dtype}.")
        res.append(g)
    return res


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Compute the gradients of ``tensors`` and accumulate them into the graph's leaves.

    >>> import ember
    >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
    >>> ember.autograd.backward((x * x).sum())
    >>> x.grad
    tensor([2., 4.])
    """
    Tensor = _tensor.Tensor
    if isinstance(tensors, Tensor):
        if grad_tensors is None and inputs is None and grad_variables is None and tensors._fn is not None \
                and tensors._data.ndim == 0 and not tensors._volatile:
            # the common call, loss.backward(): one scalar root with an implicit gradient
            run([(tensors._fn, tensors._nr)], [_ones_like(tensors)],
                create_graph if retain_graph is None else retain_graph, create_graph)
            return
        tensors = (tensors,)
    tensors = tuple(tensors)
    if grad_variables is not None:
        grad_tensors = grad_variables
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"backward: got {len(grad_tensors)} gradients for {len(tensors)} tensors")
    for i, t in enumerate(tensors):
        if not t._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(tensors, grad_tensors, create_graph)
    roots = [grad_edge(t) for t in tensors]
    targets = None
    if inputs is not None:
        if isinstance(inputs, Tensor):
            inputs = (inputs,)
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        targets = {}
        for t in inputs:
            if not t._rg:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            targets[grad_edge(t)] = t
    run(roots, grads, retain_graph, create_graph, targets=targets, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned rather than accumulated.

    >>> import ember
    >>> x = ember.tensor(3.0, requires_grad=True)
    >>> (g,) = ember.autograd.grad(x ** 2, x, create_graph=True)
    >>> g, ember.autograd.grad(g, x)[0]
    (tensor(6., grad_fn=<MulBackward0>), tensor(2.))
    """
    Tensor = _tensor.Tensor
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    single = isinstance(inputs, Tensor) or hasattr(inputs, "output_nr")  # a tensor or one GradientEdge
    inputs = (inputs,) if single else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, t in enumerate(outputs):
        if not t._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    targets = {}
    edges = []
    for t in inputs:
        if isinstance(t, Tensor):
            if type(t) is not Tensor and hasattr(t, "_grad_parts"):
                return _grad_by_parts(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                                      materialize_grads)
            if not t._rg:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            e = grad_edge(t)
        else:  # a GradientEdge: the gradient flowing into that node's output
            e = (t.node, t.output_nr)
        edges.append(e)
        targets[e] = t
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs, create_graph)
    captured = run([grad_edge(t) for t in outputs], grads, retain_graph, create_graph, targets=targets,
                   accumulate=False)
    result = [captured.get(e) for e in edges]
    for g in result:
        if g is None:
            break
    else:  # every input reached
        return tuple(result)
    return _unused_filled(inputs, result, allow_unused, materialize_grads)


def _unused_filled(inputs, grads, allow_unused, materialize_grads) -> tuple:
    """``grads`` of ``inputs``, where one is None (its input unused): zeros with ``materialize_grads``, refused
    without ``allow_unused``."""
    result = []
    for t, g in zip(inputs, grads):
        if g is None:
            if materialize_grads and isinstance(t, _tensor.Tensor):
                g = t.new_zeros(t.shape)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        result.append(g)
    return tuple(result)


def _grad_by_parts(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad`` where an input's gradient reaches other tensors than itself (a sparse tensor's reaches its values):
    such an input names those parts (``_grad_parts()``), they are differentiated, and it joins their gradients
    into its own (``_grad_join(*grads)``)."""
    flat, spans = [], []
    for t in inputs:
        parts = t._grad_parts() if hasattr(t, "_grad_parts") else (t,)
        spans.append((len(flat), len(parts)))
        flat.extend(parts)
    grads = grad(outputs, flat, grad_outputs, retain_graph, create_graph, allow_unused=True)
    joined = [t._grad_join(*grads[start:start + n]) if hasattr(t, "_grad_parts") else grads[start]
              for t, (start, n) in zip(inputs, spans)]
    return _unused_filled(inputs, joined, allow_unused, materialize_grads)


VMAP: list = [None]  # ember.func.vmap, which batches the ops on floors above the engine, enters itself here


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize):
    """``grad`` with ``is_grads_batched``: dimension 0 of each grad_output is a batch of cotangents, all run in
    one vmapped backward pass (as PyTorch does), each result with the batch dimension in front."""
    vmap = VMAP[0]
    Tensor = _tensor.Tensor
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(g, Tensor):
            raise RuntimeError(f"grad: with is_grads_batched=True grad_outputs[{i}] must be a Tensor whose first "
                               f"dimension is the batch, got {type(g).__name__}")
        if g._data.ndim == 0 or tuple(g._data.shape[1:]) != tuple(out._data.shape):
            raise RuntimeError(f"If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                               f"as the batch dimension. The sizes of the remaining dimensions are expected to "
                               f"match the shape of corresponding output, but a mismatch was detected: "
                               f"grad_output[{i}] has a shape of {g.shape} and output[{i}] has a shape of "
                               f"{out.shape}. If you only want some tensors in `grad_output` to be considered "
                               f"batched, consider using vmap.")
    unused = [False] * len(inputs)

    def one(*gos):
        res = grad(outputs, inputs, gos, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
        filled = []
        for k, (g, t) in enumerate(zip(res, inputs)):
            if g is None:  # (vmap returns tensors only: a zero stands in, put back to None below)
                unused[k] = True
                g = t.new_zeros(t.shape)
            filled.append(g)
        return tuple(filled)

    result = []
    for g, was_unused in zip(vmap(one)(*grad_outputs), unused):
        if was_unused and not materialize:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
            g = None
        result.append(g)
    return tuple(result)


def _count_deps(roots):
    """Dependency counts of every node reachable from ``roots``, leaves (AccumulateGrad) left out."""
    deps = {}
    stack = [fn for fn, _ in roots if fn is not None]
    several = set(stack) if len(stack) > 1 else ()  # roots: already on the stack (one alone is reached by none)
    pop, push, leaf = stack.pop, stack.append, AccumulateGrad
    while stack:
        for nxt in pop()._next:
            if nxt is None or type(nxt) is leaf:
                continue
            if nxt in deps:
                deps[nxt] += 1
            else:
                deps[nxt] = 1
                if nxt not in several:
                    push(nxt)
    return deps


def _discover_needed(roots, target_nodes, count_leaves):
    """One post-order walk for a run with targets: ``(deps, needed)``.

    ``needed``: the nodes that lead to a target (targets included).  ``deps`` counts only the edges from
    needed nodes to needed nodes, the only ones that run; leaves are counted when ``count_leaves``, else
    their gradients wait in the buffers until the end.  Leaves that are not targets are never walked.
    """
    leaf = AccumulateGrad
    needed = {fn for fn in target_nodes if type(fn) is leaf}
    deps = {}
    seen = {None}
    stack = [fn for fn, _ in roots if type(fn) is not leaf and fn is not None]
    pop, push = stack.pop, stack.append
    while stack:
        fn = pop()
        if fn is None:  # the marker: the node under it is finished, every child before it (a DAG)
            fn = pop()
            nf = fn._next
            need = fn in target_nodes
            if not need:
                for nxt in nf:
                    if nxt in needed:
                        need = True
                        break
            if need:
                needed.add(fn)
                for nxt in nf:
                    if nxt in needed and (count_leaves or type(nxt) is not leaf):
                        deps[nxt] = deps.get(nxt, 0) + 1
            continue
        if fn in seen:
            continue
        seen.add(fn)
        push(fn)
        push(None)
        for nxt in fn._next:
            if nxt not in seen and type(nxt) is not leaf:
                push(nxt)
    return deps, needed


def run(roots, grads, retain_graph, create_graph, targets=None, accumulate=True):
    """Run backward from root edges with root gradients.

    ``targets``: ``{edge: tensor}``; when given, only nodes leading to them
    run, and (without ``accumulate``) their gradients are returned instead
    of stored.  Returns ``{edge: grad}`` for the targets.

    A node's pending gradient waits in ``buffers``: the tensor itself for a
    single-output node, a list by output number otherwise.  Built-in
    single-output Ops without hooks (``_plain``) take the short path.
    Without targets, leaves are not counted as dependencies: their summed
    gradients wait in ``buffers`` and are accumulated once the graph is done.
    """
    filter_state = None
    filtered = targets is not None
    target_nodes = ()  # with targets: only the needed nodes run; the plain ones that are no target take the
    # short path; without accumulate the leaves' gradients wait in the buffers and are captured at the end
    if filtered:
        target_nodes = {e[0] for e in targets}
        deps, needed = _discover_needed(roots, target_nodes, accumulate)
    else:
        deps = _count_deps(roots)
    captured = {}
    if filtered:
        filter_state = (needed, targets, target_nodes, captured, accumulate)
    buffers = {}
    summed = set()  # nodes whose pending gradient is a sum this run made: nobody else holds it, added to in place
    for (fn, nr), g in zip(roots, grads):
        if fn is not None:
            _add(buffers, fn, nr, g, create_graph)
    shared = set(map(id, grads))  # gradients the caller or another edge also holds: copied before storing
    prev = is_grad_enabled()
    set_grad(create_graph)
    quiet = fp_quiet_begin()  # backward formulas meet inf * 0 on the way to PyTorch's results: no NumPy warnings
    anomaly = STATE.anomaly and STATE.anomaly_nan
    watched = WATCHERS[0]
    if watched:
        prev_task = TASK.current
        TASK.current = (roots, filter_state)
    try:
        # without targets a leaf given as a root joins the other gradients for it at the end
        # with targets, only needed nodes run (leaves only when accumulating into them)
        if len(roots) == 1:  # a DAG: a single root depends on nothing
            fn = roots[0][0]
            ready = [fn] if fn is not None and (type(fn) is not AccumulateGrad or filtered and accumulate) \
                and (not filtered or fn in needed) else []
        else:
            ready = list(dict.fromkeys(fn for fn, _ in roots if fn is not None and deps.get(fn, 0) == 0
                                       and (type(fn) is not AccumulateGrad or filtered and accumulate)
                                       and (not filtered or fn in needed)))
        pop, push = ready.pop, ready.append
        while ready:
            fn = pop()
            if fn._plain and (not filtered or fn not in target_nodes):
                gin = buffers.pop(fn, None)
                if gin is None:  # no gradient reached this node: nothing flows on from it
                    if not retain_graph:
                        fn.release()
                    _release_edges(fn, deps, ready)
                    continue
                res = fn.backward(fn, gin)
                if type(res) is not tuple:
                    res = (res,)
                nf = fn._next
                if len(res) != len(nf):
                    raise _count_error(fn, len(res))
                if not retain_graph and (fn._saved is not None or fn._out is not None):
                    fn.release()
            else:
                grads_out = buffers.pop(fn, None)
                if grads_out is not None and fn.n_outputs == 1:
                    grads_out = [grads_out]
                res = _step(fn, grads_out, deps, ready, retain_graph, create_graph, shared, filter_state)
                if res is None:
                    continue
                gin = None  # _step has marked the gradients it passed through
                nf = fn._next
            shapes = fn._shapes
            i = -1
            for nxt in nf:  # by position: a zip of the four tuples cost ~0.15 us a node more
                i += 1
                if nxt is None:
                    continue
                g = res[i]
                d = deps.get(nxt)
                if g is not None:
                    meta = shapes[i]
                    try:
                        arr = g._data
                        if arr.shape != meta[0] or arr.dtype is not meta[1]:
                            g = _conform(fn, _position(fn, nxt, fn._nrs[i]), g, meta, create_graph)
                    except (AttributeError, TypeError):
                        g = _conform(fn, _position(fn, nxt, fn._nrs[i]), g, meta, create_graph)
                    if anomaly:
                        _check_nan(fn, g, _position(fn, nxt, fn._nrs[i]))
                    if g is gin:  # passed through unchanged: someone else holds it too
                        shared.add(id(g))
                    if d is None and filtered and nxt not in target_nodes:
                        pass  # with targets: a node that leads to none (a leaf target waits in the buffers)
                    elif nxt.n_outputs == 1:
                        buf = buffers.get(nxt)
                        buffers[nxt] = g if buf is None else _sum_grads(buf, g, create_graph, summed, nxt)
                    else:
                        _add(buffers, nxt, fn._nrs[i], g, create_graph)
                if d is not None:  # None: a leaf (with targets: a leaf target, or a node that leads to none)
                    if d == 1:  # its last gradient: ready (its count is read no more)
                        push(nxt)
                    else:
                        deps[nxt] = d - 1
        for fn, g in buffers.items():  # what is left are the leaves' gradients
            if filtered:  # without accumulate: the leaf targets' gradients, captured after the leaves' hooks
                if (fn, 0) in targets:
                    t = fn._variable()
                    captured[(fn, 0)] = g if t is None or not t._hooks else _leaf_hooks(t, g, shared)
                continue
            if fn._hooked:
                _step(fn, [g], deps, ready, retain_graph, create_graph, shared, None)
            else:
                _accumulate(fn._variable(), g, create_graph, shared)
    finally:
        fp_quiet_end(quiet)
        set_grad(prev)
        if watched:
            TASK.current = prev_task
    return captured


def _step(fn, grads_out, deps, ready, retain_graph, create_graph, shared, filter_state):
    """One node's backward in full generality: hooks, custom Functions, leaves, filtered runs.

    ``filter_state``: None, or ``(needed, targets, target_nodes, captured, accumulate)`` for a run
    restricted to some targets.  Returns the node's input gradients, or None when nothing flows on.
    """
    filtered = filter_state is not None
    if filtered:
        needed, targets, target_nodes, captured, accumulate = filter_state
    if grads_out is None:
        if filtered and fn not in needed:
            _release_edges(fn, deps, ready)
            return None
        grads_out = [None] * fn.n_outputs
    hooked = fn._hooked
    if hooked and (fn._pre_hooks is not None or fn._retain is not None):
        grads_out = _run_tensor_hooks(fn, grads_out, shared)
    if filtered:
        if fn not in needed:
            _release_edges(fn, deps, ready)
            return None
        for nr in range(fn.n_outputs):
            if (fn, nr) in targets:
                captured[(fn, nr)] = grads_out[nr]
        if not accumulate and fn in target_nodes and not any(
                n in needed for n in fn._next if n is not None):
            _release_edges(fn, deps, ready)
            return None
    if type(fn) is AccumulateGrad:
        if not filtered or (accumulate and (fn, 0) in targets):
            _accumulate(fn._variable(), grads_out[0], create_graph, shared)
        return None
    if hooked and fn._node_pre_hooks:
        for hook in fn._node_pre_hooks:
            r = hook(tuple(grads_out))
            if r is not None:
                grads_out = list(r)
    if fn._op:
        unreached = False
        for g in grads_out:
            if g is None:  # some output got no gradient
                unreached = all(x is None for x in grads_out)
                if not unreached:
                    grads_out = _materialize(fn, grads_out)
                break
        if unreached:  # no gradient reached this node: nothing flows on from it
            if not retain_graph:
                fn.release()
            _release_edges(fn, deps, ready)
            return None
        res = fn.backward(fn, *grads_out)
        if type(res) is not tuple:
            res = (res,)
        if len(res) != len(fn._next):
            raise _count_error(fn, len(res))
    else:
        res = _call(fn, grads_out)
    if hooked and fn._hooks:
        res = _validated(fn, res)
        for hook in fn._hooks:
            r = hook(tuple(res), tuple(grads_out))
            if r is not None:
                if len(r) != len(res):
                    raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an incorrect number "
                                       f"of values (got {len(r)}, but expected {len(res)})")
                res = tuple(r)
    if not retain_graph and (fn._saved is not None or fn._out is not None):
        fn.release()
    for g in res:
        if g is not None and any(g is x for x in grads_out):  # passed through: someone else holds it too
            shared.add(id(g))
    return res


def _sum_grads(a, b, create_graph, summed=None, node=None):
    """Two gradients for one edge, added (straight on the arrays when no graph is being built and both are
    plain tensors: a subclass, such as a vmap-batched gradient, adds through its op).  A sum made on the arrays
    is a tensor nobody else sees: ``node`` joins ``summed``, and later gradients for it are added into it in place
    (no new array and tensor per gradient: a parameter used at every step of a loop receives hundreds)."""
    T = _tensor.Tensor
    if create_graph or type(a) is not T or type(b) is not T or a._data.shape != b._data.shape \
            or a._data.dtype != b._data.dtype:
        if summed is not None:
            summed.discard(node)  # (a sum made through an op: someone may hold it)
        return a + b
    if summed is not None:
        if node in summed:
            a._data += b._data
            return a
        summed.add(node)
    return _tensor._wrap(a._dev.kernels["add"](a._data, b._data), a._dev)


def _release_edges(fn, deps, ready):
    for nxt in fn._next:
        d = deps.get(nxt)
        if d is None:  # no node, or a leaf
            continue
        d -= 1
        deps[nxt] = d
        if d == 0:
            ready.append(nxt)


def _add(buffers, fn, nr, g, create_graph):
    """Add ``g`` to the pending gradient of output ``nr`` of ``fn``."""
    if fn.n_outputs == 1:
        prev = buffers.get(fn)
        buffers[fn] = g if prev is None else _sum_grads(prev, g, create_graph)
        return
    buf = buffers.get(fn)
    if buf is None:
        buf = buffers[fn] = [None] * fn.n_outputs
    prev = buf[nr]
    buf[nr] = g if prev is None else _sum_grads(prev, g, create_graph)


def _run_tensor_hooks(fn, grads, shared):
    grads = list(grads)
    if fn._pre_hooks:
        for nr, hooks in fn._pre_hooks.items():
            for hook in hooks:
                if grads[nr] is None:
                    continue
                r = hook(grads[nr])
                if r is not None:
                    grads[nr] = r
    if fn._retain:
        for nr, ref in fn._retain.items():
            t = ref()
            if t is not None and grads[nr] is not None:
                g = grads[nr]
                if t._grad is None:
                    t._grad = g if (not GRAD_OFF or (m := modes()) is None or m.grad) else _owned(g, shared)
                else:
                    t._grad = t._grad + g
    return grads


def _owned(g, shared):
    """``g`` detached, copied unless it is a fresh tensor nobody else holds."""
    if g._base is not None or g._vo is not None or g._fn is not None or g._rg or id(g) in shared:
        return g.detach().clone()
    return g


def _call(fn, grads_out):
    """Run ``fn``'s backward on its output gradients; one result per input edge."""
    custom = isinstance(fn, BackwardCFunction)
    if not custom or fn.materialize_grads:
        for g in grads_out:
            if g is None:
                grads_out = _materialize(fn, grads_out)
                break
    res = fn._fn_cls.backward(fn, *grads_out) if custom else fn.backward(fn, *grads_out)
    if type(res) is not tuple:
        res = (res,)
    n_in = len(fn._next)
    if len(res) != n_in:
        if custom and len(res) > n_in and all(r is None for r in res[n_in:]):
            return res[:n_in]
        raise _count_error(fn, len(res))
    return res


def _count_error(fn, n):
    return RuntimeError(f"function {_who(fn)} returned an incorrect number of gradients "
                        f"(expected {len(fn.next_functions)}, got {n})")


def _who(fn):
    """The node's name, and for a plugin op which op and plugin it comes from."""
    return type(fn).__name__ + fn._origin


def _validated(fn, res):
    return tuple(g if g is None or nxt is None or meta is None else _conform(fn, i, g, meta)
                 for i, (g, nxt, meta) in enumerate(zip(res, fn._next, fn._shapes)))


def _position(fn, nxt, nr) -> int:
    """The input position of edge ``(nxt, nr)`` of ``fn`` (its first, for an input given twice)."""
    return fn.next_functions.index((nxt, nr))


def _conform(fn, i, g, meta, create_graph=True):
    """``g`` checked against the input it is for: summed to its shape when broadcast (on the arrays when no graph
    is being built and ``g`` is a plain tensor, as :func:`_sum_grads` adds), cast to its dtype."""
    Tensor = _tensor.Tensor
    if not isinstance(g, Tensor):
        raise RuntimeError(f"function {_who(fn)} returned a gradient of type {type(g).__name__} at "
                           f"index {i}; expected a Tensor or None")
    shape, dt = meta
    arr = g._data
    if arr.shape != shape:
        if _broadcastable(shape, arr.shape):
            if create_graph or type(g) is not Tensor or arr.dtype != dt:
                g = g.sum_to_size(shape)
            else:
                return _tensor._wrap(g._dev.kernels["sum_to"](arr, shape), g._dev)
        else:
            raise RuntimeError(f"Function {_who(fn)} returned an invalid gradient at index {i} - got "
                               f"{list(arr.shape)} but expected shape compatible with {list(shape)}")
    if arr.dtype is not dt and arr.dtype != dt:
        g = g.to(g._dev.backend.dtype_of(_empty_of(g, dt)))
    return g


def _empty_of(g, dt):
    return g._dev.backend.xp.empty((0,), dtype=dt)


def _materialize(fn, grads_out):
    grads_out = list(grads_out)
    shapes = getattr(fn, "_out_meta", None)
    zeros = TASK.zeros or _kernel_zeros
    for i, g in enumerate(grads_out):
        if g is None and shapes is not None:
            grads_out[i] = zeros(*shapes[i])
    return grads_out


def _kernel_zeros(shape, dt, dev):
    return _tensor._wrap(dev.kernels["full"](shape, 0, dev.backend.array_dtype(dt)), dev)


def _check_nan(fn, g, i):
    xp = g._dev.backend.xp
    if g.dtype.category >= 2 and bool(xp.any(xp.isnan(g._data))):
        if fn._trace:
            warnings.warn("Error detected in " + type(fn).__name__ + ". Traceback of forward call that caused the "
                          "error:\n" + fn._trace, RuntimeWarning, stacklevel=3)
        raise RuntimeError(_FORMAT_NAN.format(type(fn).__name__, i))


def _broadcastable(shape, gshape):
    """Whether a gradient of ``gshape`` can be summed down to ``shape``."""
    if len(gshape) < len(shape):
        return False
    return all(s == g or s == 1 for s, g in zip(reversed(shape), reversed(gshape)))


def _leaf_hooks(t, g, shared):
    """``g`` through leaf ``t``'s tensor hooks, each returning a replacement or None."""
    for hook in t._hooks:
        r = hook(g)
        if r is not None:
            g = r
    shared.add(id(g))  # a hook may keep it: .grad gets its own copy
    return g


def _accumulate(t, g, create_graph, shared):
    if g is None or t is None:  # t is None: the leaf has been freed, nobody can see its gradient
        return
    if t._hooks:
        g = _leaf_hooks(t, g, shared)
    want = t.grad_dtype
    if want is not None and g.dtype is not want:
        g = g.to(want)  # .grad keeps the leaf's grad_dtype
    old = t._grad
    if old is None:
        t._grad = g if create_graph else _owned(g, shared)
    elif create_graph:
        t._grad = old + g
    elif old._data.shape == g._data.shape and old._data.dtype == g._data.dtype and old._dev is g._dev:
        old._data += g._data  # in place into the grad buffer, as PyTorch does (a .grad with a graph of its own too)
        old._bump()
    else:
        t._grad = old + (g if not g._rg else g.detach())
    if t._post_acc_hooks:
        for hook in t._post_acc_hooks:
            hook(t)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate the gradient of this tensor into the leaves' ``.grad``.

    >>> import ember
    >>> x = ember.ones(2, requires_grad=True)
    >>> (x * 3).sum().backward(); x.grad
    tensor([3., 3.])
    """
    backward(self, None if gradient is None else (gradient,), retain_graph, create_graph, inputs=inputs)


_tensor_backward.__name__ = _tensor_backward.__qualname__ = "backward"
_tensor.Tensor.backward = _tensor_backward  # the method lives with the engine it runs: the tensor is a floor below
