"""The compiled forward: a captured graph turned into one generated Python function on backend arrays.

For a call that records no autograd graph (grad mode off, or nothing requiring grad), most ops need none of
dispatch's per-call work: the device, dtypes and shapes were fixed when the graph was captured and are
guarded. :func:`generate` writes one straight-line function in which each such op is a direct call of its
kernel, ``Op.forward(ctx, kernels, arrays...)``, on raw arrays, with no Tensor built, no interception check
and no promotion test. So does a view op in a graph without in-place writes, where its result is not
an output the caller sees (an array view then serves: nothing can write through it). The rest (returned
views, in-place writes, factories, random draws, ops whose operands need a promotion) go through their
dispatch kind as in eager mode, on tensors made for them. Results are the same
kernel calls on the same arrays as eager's, so they are bit-identical.

Passes on the way: dead ops were pruned at capture; values that depend on no input, parameter or random
draw (a mask built by ``ones``/``tril`` in the forward) are computed once here and kept as constants, in
graphs with no in-place op (where nothing could write into such a constant).

:mod:`.aot` generates a training call's forward and backward with the same function.

Runs of consecutive pointwise ops whose Op's forward is only its kernel are fused (:mod:`.fusion`): one
generated function per run calls the kernels directly inside one floating-point-error guard, and writes a
ufunc's result into the buffer of an operand that dies there (``out=``).
"""
from __future__ import annotations

from .. import dtypes
from ..jit._graph import ARef, Ref, Sym, _refs_in, has_ref, lookup_op, replay_args
from ..interception import KINDS
from ..tensor import _wrap
from ..ops.shape import IndexPutZeros
from . import fusion

_RAW_KINDS = frozenset(("unary", "binary", "apply"))
_PY_SCALARS = (int, float, bool)


def _raw_arg(a):
    """Whether argument ``a`` can be passed to a kernel as it is recorded (a Ref becomes its array)."""
    ta = type(a)
    if ta is Ref or ta is ARef:
        return True
    if ta is list or ta is tuple:
        refs = [type(x) is Ref for x in a]
        return all(refs) or not any(has_ref(x) for x in a)
    return not has_ref(a)


def _is_raw(n, meta, views=False):
    """Whether node ``n`` can call its kernel directly: dispatch would do nothing but unwrap and wrap.
    ``views``: a view op may too (its result is an array view, without the Tensor's view links: right for a
    value no in-place op writes and the replay does not return)."""
    if n.kind == "view_op":
        return views and all(_raw_arg(a) for a in n.args)
    if n.kind not in _RAW_KINDS or not all(_raw_arg(a) for a in n.args):
        return False
    if n.kind != "binary":
        return n.kind == "unary" or any(type(a) in (Ref, list, tuple) for a in n.args)
    a, b = n.args[0], n.args[1]
    if type(a) is Ref and type(b) is Ref:
        return meta[a.i][1] is meta[b.i][1]
    t, s = (a, b) if type(a) is Ref else (b, a)
    if type(t) is not Ref or type(s) not in _PY_SCALARS:
        return False
    d = meta[t.i][1]
    return dtypes.scalar_category(s) <= d.category and d not in dtypes.SCALAR_FIX


class _Writer:
    """The generated function's lines and namespace; each value lives as ``t<i>`` (tensor) and/or ``a<i>``."""

    def __init__(self, dev):
        self.lines = []
        self.ns = {"W": _wrap, "D": dev, "K": dev.kernels, "A": dev.backend.as_array, "AT": dev.atype,
                   "N": object.__new__}
        self.tensor, self.array = set(), set()
        self.dev = dev
        self.meta = {}
        self.fused = []  # the sources of the elementwise runs (see .fusion)
        self.sized = False  # whether the inputs' shapes are read (a graph with dynamic sizes)
        self.dynamic = False  # whether some sizes are symbolic

    def const(self, name, v):
        self.ns[name] = v
        return name

    def as_array(self, i):
        if i not in self.array:
            self.lines.append(f"a{i} = t{i}._data")
            self.array.add(i)
        return f"a{i}"

    def as_tensor(self, i):
        if i not in self.tensor:
            self.lines.append(f"t{i} = W(a{i}, D)")
            self.tensor.add(i)
        return f"t{i}"

    def arg(self, k, j, a):
        ta = type(a)
        if ta is Ref or ta is ARef:
            return self.as_array(a.i)
        if (ta is list or ta is tuple) and a and all(type(x) is Ref for x in a):
            return "[" + ", ".join(self.as_array(x.i) for x in a) + "]"
        if ta in _PY_SCALARS or a is None:
            return repr(a) if ta is not float or a == a and abs(a) != float("inf") else self.const(f"c{k}_{j}", a)
        return self.const(f"c{k}_{j}", a)


def _raw_call(w, k, n, Op):
    F = w.const(f"F{k}", Op.forward)
    O = w.const(f"O{k}", Op)
    args = ", ".join(w.arg(k, j, a) for j, a in enumerate(n.args))
    return f"{F}(N({O}), K, {args})"


def _fallback(kind, Op, args, ins, sized=False):
    """A step calling ``Op`` through its dispatch kind on the tensors of value ids ``ins``; ``sized``: it
    takes the inputs' shapes first (its arguments hold sizes that follow a dynamic dimension)."""
    fn = KINDS[kind]

    def step(*tensors):
        return fn(Op, *replay_args(kind, args, dict(zip(ins, tensors)), None))

    def sized_step(sizes, *tensors):
        return fn(Op, *replay_args(kind, args, dict(zip(ins, tensors)), sizes))
    return sized_step if sized else step


def _has_sym(a) -> bool:
    ta = type(a)
    if ta is Sym:
        return True
    if ta is tuple or ta is list:
        return any(_has_sym(x) for x in a)
    if ta is slice:
        return _has_sym((a.start, a.stop, a.step))
    if ta is dict:
        return _has_sym(tuple(a.values()))
    return False


def _sized_expr(w, name, a):
    """Python source of node argument ``a`` in the generated function, its symbolic sizes read from ``SZ``;
    None where only :func:`replay_args` can resolve it (a generator, an array, a dict)."""
    ta = type(a)
    if ta is Ref:
        return w.as_tensor(a.i)
    if ta is ARef:
        return w.as_array(a.i)
    if ta is Sym:
        return f"({a.a} * SZ[{a.input}][{a.dim}] + {a.b})"
    if ta is tuple or ta is list or ta is slice:
        items = (a.start, a.stop, a.step) if ta is slice else a
        parts = [_sized_expr(w, f"{name}_{m}", x) for m, x in enumerate(items)]
        if None in parts:
            return None
        inner = ", ".join(parts)
        if ta is not tuple:
            return f"slice({inner})" if ta is slice else f"[{inner}]"
        return f"({inner},)" if len(parts) == 1 else f"({inner})"
    if ta in _PY_SCALARS or a is None:
        return w.arg(name, "", a)
    if ta is dict or has_ref(a) or hasattr(a, "shape"):
        return None
    return w.const(f"c{name}", a)


def _foldable(n, folded, effects):
    if n.kind == "create":
        return not any(has_ref(a) for a in n.args) and not effects  # (no random draw, no dynamic size)
    return n.kind in _RAW_KINDS and bool(n.ins) and all(i in folded for i in n.ins) and not effects


def _emit_raw(w, k, n, Op):
    """The lines of raw node ``n``: its Op's forward on arrays."""
    call = _raw_call(w, k, n, Op)
    if n.multi:
        w.lines.append(f"r{k} = {call}")
        for j, i in enumerate(n.outs):
            w.lines.append(f"a{i} = r{k}[{j}] if type(r{k}[{j}]) is AT else A(r{k}[{j}])")
    else:
        i = n.outs[0]
        w.lines.append(f"a{i} = {call}")
        w.lines.append(f"if type(a{i}) is not AT: a{i} = A(a{i})")
    w.array.update(n.outs)


class _Puts:
    """The in-place accumulations ``acc[index] += g`` (see :func:`_accumulate_put`) not written yet, by the
    value each chain of them into one buffer ends in.  A chain is written when that value is read, or at the
    end: where every index of it picks one element (a tuple of ints) and every ``g`` is the same value, as one
    ``index_put_acc`` over the index arrays (NumPy's ``add.at``: the additions in the chain's order, so the
    sums are bit-identical), else one call per accumulation."""

    def __init__(self, w):
        self.w = w
        self.chains = {}  # value id the chain ends in -> [buffer's value id, [(index, its code, g, its code)]]

    def add(self, acc, out, put):
        chain = self.chains.pop(acc, None) or [acc, []]
        chain[1].append(put)
        self.chains[out] = chain

    def flush(self, ins=None):
        """Write the chains whose results ``ins`` read (all of them when None)."""
        for out in [o for o in self.chains if ins is None or o in ins]:
            root, puts = self.chains.pop(out)
            w = self.w
            put = w.const("PUT", w.dev.kernels["index_put_acc"])
            acc = w.as_array(root)
            rank = len(w.meta[root][0])
            for j, run in enumerate(_runs(puts, rank)):
                if len(run) > 1:  # (each element's ints, as one index array per dim)
                    columns = tuple(w.dev.backend.as_array(list(c)) for c in zip(*[p for p, _ in run]))
                    w.lines.append(f"{put}({acc}, {w.const(f'I{out}_{j}', columns)}, {run[0][1][3]})")
                else:
                    w.lines.append(f"{put}({acc}, {run[0][1][1]}, {run[0][1][3]})")
            w.lines.append(f"a{out} = {acc}")


def _runs(puts, rank):
    """``puts`` cut into runs that one call can add: consecutive ones of one ``g`` each picking one element,
    as ``[(the element's ints, put)]``; any other put is a run of its own."""
    runs = []
    for put in puts:
        point = _point(put[0], rank)
        last = runs[-1] if runs else None
        if point is not None and last and last[0][0] is not None and type(put[2]) is Ref and last[0][1][2] == put[2]:
            last.append((point, put))
        else:
            runs.append([(point, put)])
    return runs


def _point(index, rank):
    """``index`` as the ints of one element of a ``rank``-d array (a trailing ``...`` dropped), else None."""
    if type(index) is tuple and index and index[-1] is Ellipsis:
        index = index[:-1]
    if type(index) is not tuple or len(index) != rank or any(type(j) is not int for j in index):
        return None
    return index


def _accumulate_put(w, nodes, k, n, owned, uses, returned, puts) -> bool:
    """Emit ``IndexPutZeros`` node ``k`` and the ``Add`` after it as one in-place accumulation, where that
    ``Add`` is the only use of the zeros-with-``g``-put and of the same-shaped buffer it adds that to, one
    ``owned`` by this replay (so no view of it exists): ``acc[index] += g``, left to ``puts`` (a :class:`_Puts`).
    A backward summing the gradients of many indexings (a CRF's gold score) then builds no zeros per indexing,
    and its additions into one buffer become one call. Returns whether it did."""
    if k + 1 >= len(nodes):
        return False
    nxt, (p,) = nodes[k + 1], n.outs
    if getattr(lookup_op(nxt.op), "op_name", None) != "Add" or nxt.kind != "binary" or len(nxt.args) != 2 \
            or not all(type(a) is Ref for a in nxt.args) or uses.get(p) != 1 or p in returned:
        return False
    a, b = (x.i for x in nxt.args)
    acc = b if a == p else a
    if acc == p or acc not in owned or uses.get(acc) != 1 or acc in returned \
            or w.meta[acc] != w.meta[p] or w.meta[nxt.outs[0]] != w.meta[p]:
        return False
    g, _, index = n.args
    out = nxt.outs[0]
    puts.add(acc, out, (index, w.arg(k, 2, index), g, w.arg(k, 0, g)))
    w.array.add(out)
    owned.add(out)
    return True


def generate(graph, order, dev, fold=True, fuse="auto", shown=None, dispatch=False, array_ids=frozenset()):
    """A function ``replay(tensors, sizes=None)`` computing ``graph``'s outputs (its ``out_spec`` filled) from the
    tensors of the value ids in ``order`` (inputs, parameters and buffers, constants), and its source text.
    Symbolic sizes are read from ``graph.inputs``' shapes, or, where ``graph.inputs`` is None (a backward),
    from ``sizes``; where the graph has symbolic ints (``graph.n_ints``), ``sizes`` gives their values after
    the inputs' shapes.  ``fuse``: runs of pointwise ops become one function each (:mod:`.fusion`: "auto",
    numba kernels where numba is installed and they pay; "numba"; "numpy"; False: no fusion).  ``shown``:
    the value ids of the outputs the caller sees (by default all): a view among them is made through
    dispatch, keeping its links to its base; other views are array views.  ``dispatch``: every op goes through
    its dispatch kind (autograd then records the ops, where grad mode is on).  ``array_ids``: the value ids given
    (in ``order``) and returned (in the ``out_spec``) as backend arrays, not tensors (a training call's saved
    values, which only its compiled backward reads: no tensor is made for them)."""
    w = _Writer(dev)
    meta = w.meta = graph.meta
    w.dynamic = bool(getattr(graph, "dynamic", ()))  # (its shapes in meta are one call's: not to be built in)
    effects = any(n.kind == "inplace" for n in graph.nodes)
    w.tensor.update(i for i in order if i not in array_ids)
    w.array.update(i for i in order if i in array_ids)
    folded = {}  # value id -> array computed here once
    returned = set(_refs_in(graph.out_spec))  # (a result is the caller's to change: never a kept constant)
    shown = returned if shown is None else set(shown)
    body = w.lines
    last_use, uses = {}, {}
    for k, n in enumerate(graph.nodes):
        for i in set(n.ins if n.ins is not None else _refs_in(n.args)):
            last_use[i] = k
            uses[i] = uses.get(i, 0) + 1
    run = []
    owned = set()  # values in fresh buffers of this replay's own, which an accumulation may write into
    puts = _Puts(w)  # the accumulations into such buffers not written yet
    skip = set()  # nodes already emitted with the one before them

    def flush():
        if len(run) > 1:
            body.append(fusion.emit(run, w, last_use, returned, len(w.fused), fuse))
        elif run:
            _emit_raw(w, *run[0])
        run.clear()

    for k, n in enumerate(graph.nodes):
        if k in skip:
            continue
        if puts.chains:  # (a chain of accumulations is written before its result is read)
            puts.flush(n.ins if n.ins is not None else _refs_in(n.args))
        Op = n.op if n.kind == "create" else lookup_op(n.op)
        if fold and returned.isdisjoint(n.outs) and _foldable(n, folded, effects) and \
                (n.kind == "create" or _is_raw(n, meta)):
            if n.kind == "create":
                out = _fallback(n.kind, Op, n.args, [])()
                outs = out if n.multi else (out,)
                folded.update((i, o._data) for i, o in zip(n.outs, outs))
            else:
                arrays = [folded[a.i] if type(a) in (Ref, ARef) else
                          [folded[x.i] for x in a] if type(a) in (list, tuple) and a and type(a[0]) is Ref else a
                          for a in n.args]
                out = Op.forward(object.__new__(Op), dev.kernels, *arrays)
                outs = out if n.multi else (out,)
                folded.update((i, o if type(o) is dev.atype else dev.backend.as_array(o))
                              for i, o in zip(n.outs, outs))
            for i in n.outs:
                w.const(f"a{i}", folded[i])
                w.array.add(i)
            continue
        raw = not dispatch and _is_raw(n, meta, views=not effects and shown.isdisjoint(n.outs))
        if raw and Op is IndexPutZeros:
            flush()
            if _accumulate_put(w, graph.nodes, k, n, owned, uses, returned, puts):
                skip.add(k + 1)
                continue
        if raw and fuse and fusion.fusable(n, Op, dev.kernels):
            run.append((k, n, Op))
            continue
        flush()
        if raw:
            _emit_raw(w, k, n, Op)
            if Op is IndexPutZeros:
                owned.add(n.outs[0])
            continue
        ins = sorted(set(_refs_in(n.args)))
        sized = _has_sym(n.args)
        if sized and not w.sized and graph.inputs is not None:  # the inputs' shapes, read once (else given)
            w.sized = True
            body.insert(0, "SZ = [" + "".join(f"t{i}._data.shape, " for i in graph.inputs) + "]" +
                        (" + SZ" if getattr(graph, "n_ints", 0) else ""))  # (symbolic ints: given, see .ints)
        # (the arguments written in line: no walk of them at each call; a factory's go through replay_args, which
        # copies a host constant for each call)
        exprs = [_sized_expr(w, f"{k}_{j}", a) for j, a in enumerate(n.args)] if n.kind != "create" else [None]
        if None in exprs:
            step = w.const(f"S{k}", _fallback(n.kind, Op, n.args, ins, sized))
            call = f"{step}(" + ", ".join((["SZ"] if sized else []) + [w.as_tensor(i) for i in ins]) + ")"
        else:
            call = f"{w.const(f'KIND{k}', KINDS[n.kind])}({w.const(f'O{k}', Op)}, {', '.join(exprs)})"
        targets = ", ".join(f"t{i}" for i in n.outs) + ("," if n.multi and len(n.outs) == 1 else "")
        body.append(f"{targets} = {call}")
        w.tensor.update(n.outs)
        w.array.difference_update(n.outs)
    flush()
    puts.flush()
    tainted = set(folded)  # values that may be views of a kept constant: their results are copied out
    for n in graph.nodes:  # (an Op whose results are always fresh arrays says so: ``fresh_outputs``)
        if n.kind != "binary" and n.ins and not tainted.isdisjoint(n.ins) and \
                not (n.kind == "apply" and getattr(lookup_op(n.op), "fresh_outputs", False)):
            tainted.update(n.outs)
    copy = w.const("COPY", dev.kernels["copy"])
    for i in sorted(returned & tainted):
        if i in w.tensor and i not in array_ids:
            body.append(f"t{i} = W({copy}(t{i}._data), D)")
        else:
            body.append(f"a{i} = {copy}({w.as_array(i)})")
    result = _spec_code(graph.out_spec, w, array_ids)
    names = ", ".join(f"a{i}" if i in array_ids else f"t{i}" for i in order)
    head = f"def replay(T, SZ=None):\n    {names}{',' if len(order) == 1 else ''} = T\n" \
        if order else "def replay(T, SZ=None):\n"
    src = head + "".join(f"    {line}\n" for line in body) + f"    return {result}\n"
    exec(compile(src, "<ember.compile replay>", "exec"), w.ns)  # noqa: S102 - code generated above
    return w.ns["replay"], "".join(w.fused) + src


def _spec_code(spec, w, array_ids=frozenset()):
    ts = type(spec)
    if ts is Ref:
        return w.as_array(spec.i) if spec.i in array_ids else w.as_tensor(spec.i)
    if ts is tuple:
        return "(" + "".join(_spec_code(x, w, array_ids) + ", " for x in spec) + ")"
    if ts is list:
        return "[" + ", ".join(_spec_code(x, w, array_ids) for x in spec) + "]"
    raise TypeError(f"ember.compile: unexpected output structure {ts.__name__}")
