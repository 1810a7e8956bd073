"""The one graph of a program, in both of its forms: the op-level record and the fx graph.

A capture (:func:`ember.jit._graph.capture`, at the interception point every op passes) records a forward
pass as an op-level :class:`~ember.jit._graph.Graph`: each node a dispatch kind and an Op with its arguments,
dynamic sizes as affine :class:`~ember.jit._graph.Sym` values, the module path each op ran in.  That record
is what replays (``jit.trace``, ``compile``) and what the ONNX exporter maps.  :func:`to_fx` writes it as an
fx graph, PyTorch's public form (``ExportedProgram.graph_module``), and :func:`from_fx` reads such a graph
back, so that an fx pass (``replace_pattern``, a hand edit) reaches every reader of the record:

* each op-level node is a ``call_function`` node whose target is an :class:`OpOverload`, the callable
  ``ops.<Op>.<kind>`` (PyTorch's ``torch.ops.aten.<op>.<overload>``), which runs the op through dispatch
  exactly as eager mode does; an op returning several tensors is followed by ``operator.getitem`` nodes;
* a dynamic size is ``sym_size_int(x, dim)`` followed by ``operator.mul``/``operator.add`` nodes;
* an argument passed to a kernel as its backend array is ``data(x)``;
* parameters, buffers and captured tensors are placeholders (``p_``, ``b_``, ``c_`` names and an
  :class:`InputSpec` each) in the lifted graph, ``get_attr`` nodes in the module form.

>>> import ember
>>> from ember.export import export
>>> ep = export(ember.nn.Linear(3, 2), (ember.randn(4, 3),))
>>> [n.op for n in ep.graph.nodes]
['placeholder', 'placeholder', 'placeholder', 'call_function', 'output']
"""
from __future__ import annotations

import enum
import inspect
import operator
from dataclasses import dataclass

from ..fx._symbolic_trace import _find_proxy
from ..fx.graph import Graph as FxGraph
from ..fx.graph_module import GraphModule
from ..fx.node import Node as FxNode
from ..fx.node import has_side_effect
from ..fx.proxy import Proxy
from ..interception import KINDS
from ..jit._graph import _EFFECTS, ARef, Graph, Node, Ref, Sym, _flatten, _refs_in, _unflatten, lookup_op
from ..jit._graph import replay_args
from ..nn import Module, Parameter
from ..tensor import Size, Tensor

__all__ = ["OpOverload", "ops", "to_fx", "from_fx", "InputKind", "OutputKind", "InputSpec", "OutputSpec",
           "TensorArgument", "ExportGraphSignature", "TensorMeta"]


class OpOverload:
    """Op ``op`` (its key in ``OPS``, a factory's name for ``create``) called through dispatch kind ``kind``:
    the target of an fx node standing for an op-level node.  Calling it runs the op as eager mode does."""

    def __init__(self, kind: str, op: str):
        self.kind, self.op = kind, op
        self.__name__ = op.rsplit(".", 1)[-1].lower()  # the node names made from it: linear, relu, add
        self.__qualname__ = f"ops.{op}.{kind}"
        self.__module__ = __name__
        self._Op = None

    def __call__(self, *args):
        if _has_proxy(args):  # fx tracing the generated code (a pickled GraphModule loaded): one node
            return _find_proxy(args).tracer.create_proxy("call_function", self, args, {})
        Op = self._Op
        if Op is None:
            Op = self._Op = self.op if self.kind == "create" else lookup_op(self.op)
            if Op is None:
                raise RuntimeError(f"ember.export: the graph uses op {self.op!r}, which is not in ember's Op "
                                   "registry (a plugin op whose plugin is not installed?)")
        return KINDS[self.kind](Op, *replay_args(self.kind, args, {}, None))

    def fx_code_name(self, add_global) -> str:
        """How generated fx code spells this target (``ops.Linear.apply``)."""
        owner = add_global("ops", ops)
        packet = f"{owner}.{self.op}" if self.op.isidentifier() else f"getattr({owner}, {self.op!r})"
        return f"{packet}.{self.kind}"

    def __repr__(self):
        return f"ember.{self.op}.{self.kind}"


class _Packet:
    """The overloads of one op (``ops.Add.binary``, ``ops.Add.inplace``), made on first use."""

    def __init__(self, op):
        self._op = op

    def __getattr__(self, kind):
        if kind not in KINDS:
            raise AttributeError(f"ember.export.graph.ops: no dispatch kind {kind!r} (one of {sorted(KINDS)})")
        return overload(kind, self._op)


class _Ops:
    """``ops.<Op>.<kind>``: the call targets of exported graphs."""

    def __init__(self):
        self.__qualname__ = "ops"  # (the name a pickled GraphModule's code imports it by)

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        return _Packet(op)


ops = _Ops()
_OVERLOADS: dict = {}


def overload(kind: str, op: str) -> OpOverload:
    """The one :class:`OpOverload` of ``(kind, op)`` (the same object each time: fx compares targets by
    identity).  In-place ops and random draws are marked as side effects (never removed as dead code)."""
    o = _OVERLOADS.get((kind, op))
    if o is None:
        o = _OVERLOADS[(kind, op)] = OpOverload(kind, op)
        if kind == "inplace" or op in _EFFECTS:
            has_side_effect(o)
    return o


def _has_proxy(args) -> bool:
    for a in args:
        if type(a) is Proxy or type(a) in (list, tuple) and _find_proxy(a) is not None:
            return True
    return False


def sym_size_int(t, dim):
    """The size of dimension ``dim`` of ``t``: a dynamic size in an exported graph."""
    if type(t) is Proxy:
        return t.tracer.create_proxy("call_function", sym_size_int, (t, dim), {})
    return t.shape[dim]


def data(t):
    """``t``'s backend array, for an op that takes its operand as an array."""
    if type(t) is Proxy:
        return t.tracer.create_proxy("call_function", data, (t,), {})
    return t._data


@dataclass(frozen=True)
class TensorMeta:
    """A value's shape and dtype as the capture saw them (``node.meta["val"]``)."""

    shape: Size
    dtype: object


class InputKind(enum.Enum):
    """What a placeholder of an exported graph stands for (PyTorch's ``torch.export.graph_signature``)."""

    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()
    CUSTOM_OBJ = enum.auto()
    TOKEN = enum.auto()


class OutputKind(enum.Enum):
    """What an output of an exported graph is."""

    USER_OUTPUT = enum.auto()
    LOSS_OUTPUT = enum.auto()
    BUFFER_MUTATION = enum.auto()
    GRADIENT_TO_PARAMETER = enum.auto()
    GRADIENT_TO_USER_INPUT = enum.auto()
    USER_INPUT_MUTATION = enum.auto()
    TOKEN = enum.auto()


@dataclass
class TensorArgument:
    """A tensor of the graph, by its node's name."""

    name: str


@dataclass
class InputSpec:
    """One placeholder: its kind, its node, the state-dict key or constant name it reads (``target``)."""

    kind: InputKind
    arg: TensorArgument
    target: str | None
    persistent: bool | None = None


@dataclass
class OutputSpec:
    """One output: its kind, its node, and the state it writes (``target``, for mutations)."""

    kind: OutputKind
    arg: TensorArgument
    target: str | None


@dataclass
class ExportGraphSignature:
    """The placeholders and outputs of an exported graph, in order, with what each stands for."""

    input_specs: list
    output_specs: list

    def _names(self, kind):
        return tuple(s.arg.name for s in self.input_specs if s.kind == kind)

    @property
    def parameters(self) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind == InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind == InputKind.BUFFER)

    @property
    def lifted_tensor_constants(self) -> tuple:
        return tuple(s.target for s in self.input_specs if s.kind == InputKind.CONSTANT_TENSOR)

    @property
    def user_inputs(self) -> tuple:
        return self._names(InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple:
        return tuple(s.arg.name for s in self.output_specs if s.kind == OutputKind.USER_OUTPUT)

    @property
    def inputs_to_parameters(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.BUFFER}

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict:
        return {s.arg.name: s.target for s in self.input_specs if s.kind == InputKind.CONSTANT_TENSOR}

    @property
    def buffers_to_mutate(self) -> dict:
        return {s.arg.name: s.target for s in self.output_specs if s.kind == OutputKind.BUFFER_MUTATION}

    def __str__(self):
        ins = [f"    {s.arg.name}: {s.kind.name}" + (f" target={s.target!r}" if s.target else "")
               for s in self.input_specs]
        outs = [f"    {s.arg.name}: {s.kind.name}" for s in self.output_specs]
        return "\n".join(["# inputs", *ins, "", "# outputs", *outs])


def lookup(module: Module, path: str):
    """The parameter or buffer of ``module`` at dotted ``path``."""
    m = module
    *mods, leaf = path.split(".")
    for name in mods:
        m = m._modules[name]
    t = m._parameters.get(leaf)
    return t if t is not None else m._buffers[leaf]


def non_persistent(module: Module) -> set:
    """The dotted paths of ``module``'s buffers that its state dict leaves out."""
    return {f"{name}.{b}" if name else b for name, m in module.named_modules()
            for b in m._non_persistent_buffers_set}


# --------------------------------------------------------------------------- op-level -> fx
def to_fx(g: Graph, state: dict, input_names: list, lifted: bool = True, nonpersistent=(), cls=GraphModule):
    """``g`` as an fx graph; ``state`` maps the paths of ``g.params`` to their tensors.  ``lifted``:
    parameters, buffers and captured tensors are placeholders and the result is ``(GraphModule,
    ExportGraphSignature, constants)``; else they are ``get_attr`` nodes and the result is a GraphModule
    (of class ``cls``) holding those tensors."""
    fg = FxGraph()
    env, specs, attrs, constants = {}, [], {}, {}
    params = [(i, p) for i, p in g.params.items() if isinstance(state[p], Parameter)]
    buffers = [(i, p) for i, p in g.params.items() if not isinstance(state[p], Parameter)]
    consts = [(i, f"lifted_tensor_{k}", t) for k, (i, t) in enumerate(g.consts.items())]
    users = []
    if not lifted:
        users = [fg.placeholder(name) for name in input_names]
    for i, p in params:
        env[i] = _state(fg, lifted, "p_" + p.replace(".", "_"), p, attrs, state[p])
        specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(env[i].name), p))
    for i, p in buffers:
        env[i] = _state(fg, lifted, "b_" + p.replace(".", "_"), p, attrs, state[p])
        specs.append(InputSpec(InputKind.BUFFER, TensorArgument(env[i].name), p, p not in nonpersistent))
    for i, name, t in consts:
        env[i] = _state(fg, lifted, "c_" + name, name, attrs, t)
        constants[name] = t
        specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(env[i].name), name))
    if lifted:
        users = [fg.placeholder(name) for name in input_names]
    for i, node in zip(g.inputs, users):
        env.setdefault(i, node)
        specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.target), None))
    for i, node in env.items():
        _set_meta(node, g.meta.get(i))
    _Writer(fg, env, users, g.meta).nodes(g.nodes)
    outs = tuple(env[i] for i in _refs_in(g.out_spec))
    fg.output(outs)
    if not lifted:
        return cls(attrs, fg, "GraphModule")
    out_specs = [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(n.name), None) for n in outs]
    return GraphModule({}, fg, "GraphModule"), ExportGraphSignature(specs, out_specs), constants


def _state(fg, lifted, name, target, attrs, t):
    if lifted:
        return fg.placeholder(name)
    attrs[target] = t
    return fg.get_attr(target)


def _set_meta(node, m):
    if m is not None:
        node.meta["val"] = TensorMeta(Size(m[0]), m[1])


class _Writer:
    """Writes op-level nodes into an fx graph (``env``: value id -> fx node)."""

    def __init__(self, fg, env, users, meta):
        self.fg, self.env, self.users, self.meta = fg, env, users, meta
        self.syms, self.arrays = {}, {}

    def nodes(self, nodes):
        fg, env = self.fg, self.env
        for n in nodes:
            fx = fg.call_function(overload(n.kind, n.op), tuple(self.arg(a) for a in n.args))
            fx.meta["module_path"] = n.path
            if n.path:
                fx.meta["nn_module_stack"] = {n.path: (n.path, None)}
            if n.multi:
                fx.meta["multi"] = len(n.outs)
                for j, i in enumerate(n.outs):
                    env[i] = fg.call_function(operator.getitem, (fx, j))
                    _set_meta(env[i], self.meta.get(i))
            else:
                env[n.outs[0]] = fx
                _set_meta(fx, self.meta.get(n.outs[0]))

    def arg(self, a):
        ta = type(a)
        if ta is Ref:
            return self.env[a.i]
        if ta is ARef:
            if a.i not in self.arrays:
                self.arrays[a.i] = self.fg.call_function(data, (self.env[a.i],))
            return self.arrays[a.i]
        if ta is Sym:
            return self.sym(a)
        if ta is tuple or ta is list:
            return ta(self.arg(x) for x in a)
        if ta is slice:
            return slice(self.arg(a.start), self.arg(a.stop), self.arg(a.step))
        if ta is dict:
            return {k: self.arg(v) for k, v in a.items()}
        return a

    def sym(self, s):
        key = (s.input, s.dim, s.a, s.b)
        node = self.syms.get(key)
        if node is None:
            base = self.syms.get((s.input, s.dim, 1, 0))
            if base is None:
                base = self.syms[(s.input, s.dim, 1, 0)] = self.fg.call_function(
                    sym_size_int, (self.users[s.input], s.dim))
            node = base
            if s.a != 1:
                node = self.fg.call_function(operator.mul, (node, s.a))
            if s.b:
                node = self.fg.call_function(operator.add, (node, s.b))
            self.syms[key] = node
        return node


# --------------------------------------------------------------------------- fx -> op-level
class _Multi:
    """An fx node of an op returning several tensors: the value ids of its results."""

    def __init__(self, ids):
        self.ids = ids


def from_fx(gm: GraphModule, signature: ExportGraphSignature | None = None, constants: dict | None = None) -> Graph:
    """The op-level graph of an fx graph written by :func:`to_fx` (and possibly edited since): lifted, with
    ``signature`` and ``constants`` saying what its placeholders are, or in the module form (``get_attr``
    nodes read from ``gm``).  Raises ``RuntimeError`` on a node that is not one of ember's graph ops."""
    kinds = {s.arg.name: s for s in signature.input_specs} if signature is not None else {}
    g = Graph()
    env, user_pos, meta = {}, {}, g.meta

    def new(fx):
        i = len(meta)
        val = fx.meta.get("val")
        meta[i] = (tuple(val.shape), val.dtype) if val is not None else ((), None)
        return i

    def arg(a):
        if isinstance(a, FxNode):
            return env[a]
        ta = type(a)
        if ta is tuple or ta is list:
            return ta(arg(x) for x in a)
        if ta is slice:
            return slice(arg(a.start), arg(a.stop), arg(a.step))
        if ta is dict:
            return {k: arg(v) for k, v in a.items()}
        return a

    for fx in gm.graph.nodes:
        if fx.op == "placeholder":
            spec = kinds.get(fx.target)
            i = new(fx)
            env[fx] = Ref(i)
            if spec is None or spec.kind == InputKind.USER_INPUT:
                user_pos[fx] = len(g.inputs)
                g.inputs.append(i)
            elif spec.kind == InputKind.CONSTANT_TENSOR:
                g.consts[i] = constants[spec.target]
            else:
                g.params[i] = spec.target
        elif fx.op == "get_attr":
            i = new(fx)
            env[fx] = Ref(i)
            t = _attr(gm, fx.target)
            if _is_state(gm, fx.target):
                g.params[i] = fx.target
            else:
                g.consts[i] = t
        elif fx.op == "output":
            g.out_spec = tuple(arg(a) for a in fx.args[0]) if isinstance(fx.args[0], (tuple, list)) \
                else arg(fx.args[0])
        else:
            env[fx] = _read(fx, arg, user_pos, g, new)
    g.n_values = len(meta)
    return g


def _read(fx, arg, user_pos, g, new):
    """The op-level value of call node ``fx`` (a node appended to ``g`` for an op)."""
    t = fx.target
    if isinstance(t, OpOverload):
        n_out = fx.meta.get("multi") or max([u.args[1] + 1 for u in fx.users if u.target is operator.getitem],
                                            default=0)
        outs = [new(fx) for _ in range(n_out or 1)]
        args = tuple(arg(a) for a in fx.args)
        g.nodes.append(Node(t.kind, t.op, args, outs, bool(n_out), fx.meta.get("module_path", "")))
        return _Multi(outs) if n_out else Ref(outs[0])
    if fx.op == "call_function" and not fx.kwargs:
        a = [arg(x) for x in fx.args]
        if t is operator.getitem and isinstance(a[0], _Multi):
            return Ref(a[0].ids[a[1]])
        if t is sym_size_int:
            return Sym(user_pos[fx.args[0]], a[1], 1, 0)
        if t is data:
            return ARef(a[0].i)
        if type(a[0]) is Sym and type(a[1]) is int and t in (operator.mul, operator.add, operator.sub):
            s, k = a
            if t is operator.mul:
                return Sym(s.input, s.dim, s.a * k, s.b * k)
            return Sym(s.input, s.dim, s.a, s.b + (k if t is operator.add else -k))
    raise RuntimeError(f"ember.export: node {fx.name} ({fx.op} {fx._pretty_print_target()}) is not one of "
                       "ember's graph ops (ops.<Op>.<kind>, sym_size_int, data, operator.getitem); an exported "
                       "graph edited with other calls can be run as a GraphModule but not lowered")


def _attr(gm, target):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _is_state(gm, target):
    *mods, leaf = target.split(".")
    m = gm
    for name in mods:
        m = getattr(m, name)
    return isinstance(m, Module) and (leaf in m._parameters or leaf in m._buffers)


# --------------------------------------------------------------------------- calling the module form
class ExportedModule(GraphModule):
    """The module form of an exported program: a GraphModule over the flat tensor inputs, called with the
    user's structured arguments (flattened as the capture flattened them) and returning the results in
    their structure."""

    _in_spec = _out_spec = None

    def __call__(self, *args, **kwargs):
        flat = []
        _flatten((tuple(args), dict(kwargs or {})), flat)
        n_in = len(_refs_in(self._in_spec))
        if len(flat) != n_in:
            raise RuntimeError(f"exported program: expected {n_in} tensor inputs as in the export, got "
                               f"{len(flat)}")
        outs = super().__call__(*flat)
        return _unflatten(self._out_spec, dict(enumerate(outs)))


def positions(spec):
    """``spec`` (an op-level ``out_spec``) with each Ref numbered by its position among the flat outputs."""
    k = iter(range(len(_refs_in(spec))))

    def walk(s):
        ts = type(s)
        if ts is Ref:
            return Ref(next(k))
        if ts in (tuple, list):
            return ts(walk(x) for x in s)
        if ts is dict:
            return {key: walk(v) for key, v in s.items()}
        return s
    return walk(spec)


def input_names(fn, args, kwargs) -> list:
    """Placeholder names for the flat tensor inputs of ``fn(*args, **kwargs)``: a parameter's name, with
    ``_0``, ``_1``... for the tensors inside a structured argument (as ``torch.export`` names them)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    named = []
    for k, a in enumerate(args):
        p = params[min(k, len(params) - 1)] if params else None
        base = p.name if p is not None and p.kind != p.VAR_POSITIONAL else (f"{p.name}_{k}" if p else f"arg{k}")
        named.append((base, a))
    named += list((kwargs or {}).items())
    names = []
    for base, a in named:
        flat = []
        _flatten(a, flat)
        names += [base] if isinstance(a, Tensor) else [f"{base}_{j}" for j in range(len(flat))]
    return names

