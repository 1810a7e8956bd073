"""``ember.export``: capture a module's forward pass as a graph (PyTorch's ``torch.export`` basics).

``export(module, args)`` records one forward pass at the dispatch interception point, the same graph
``ember.jit.trace`` makes (see ``docs/internals.md``, "Traced graphs"), and wraps it in an
:class:`ExportedProgram`: ``.graph`` (the printable graph), ``.state_dict`` (the parameters and buffers it
reads), ``.module()`` (a module replaying the graph).  ``dynamic_shapes`` marks input dimensions whose size
may change: integers in the graph that follow them (view shapes, factory sizes) become symbolic.

>>> import ember
>>> from ember.export import Dim, export
>>> ep = export(ember.nn.Linear(3, 2), (ember.randn(4, 3),), dynamic_shapes=({0: Dim("batch")},))
>>> ep.module()(ember.randn(7, 3)).shape
ember.Size([7, 2])
"""
from __future__ import annotations

import inspect

from .. import nn
from .. import jit as _jit
from ..jit import TracedModule
from ..jit._graph import Ref, _flatten, _refs_in, _unflatten, capture_dynamic, check_devices
from ..tensor import Tensor
from .graph import (
    ExportedModule, ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec, TensorArgument, from_fx,
    input_names, lookup, non_persistent, positions, to_fx,
)

__all__ = ["export", "ExportedProgram", "Dim", "ShapesCollection", "save", "load", "ExportGraphSignature",
           "InputKind", "InputSpec", "OutputKind", "OutputSpec", "TensorArgument"]


class Dim:
    """A named dynamic dimension, ``Dim("batch", min=1, max=1024)`` (PyTorch's ``torch.export.Dim``)."""

    AUTO = "AUTO"
    DYNAMIC = "DYNAMIC"
    STATIC = "STATIC"

    def __init__(self, name, *, min=None, max=None):  # noqa: A002
        self.__name__ = self.name = name
        self.min, self.max = min, max

    def __repr__(self):
        return f"Dim({self.name!r})"


class ShapesCollection(dict):
    """``{tensor: {dim: Dim}}``, a ``dynamic_shapes`` built per tensor."""

    def __setitem__(self, t, spec):
        super().__setitem__(id(t), (t, spec))

    def dynamic_shapes(self, m, args, kwargs=None):
        return self


def _is_dynamic(spec) -> bool:
    return spec is not None and spec != Dim.STATIC and not isinstance(spec, int)


def _dims_of(spec, t):
    """The dynamic dims of tensor ``t`` from its ``dynamic_shapes`` entry."""
    if spec is None:
        return []
    if isinstance(spec, dict):
        return [d for d, s in spec.items() if _is_dynamic(s)]
    if isinstance(spec, (list, tuple)):
        return [d for d, s in enumerate(spec) if _is_dynamic(s)]
    raise TypeError(f"export: dynamic_shapes entry for a tensor must be a dict {{dim: Dim}} or a list, got "
                    f"{type(spec).__name__}")


def dynamic_dims(fn, args, kwargs, dynamic_shapes) -> list:
    """``dynamic_shapes`` (PyTorch's forms: a tuple per positional argument, or a dict by parameter name, or a
    :class:`ShapesCollection`) as a list of ``(flat input index, dim)``."""
    if dynamic_shapes is None:
        return []
    flat = []
    _flatten((tuple(args), dict(kwargs or {})), flat)
    where = {id(t): i for i, t in reversed(list(enumerate(flat)))}
    out = []
    if isinstance(dynamic_shapes, ShapesCollection):
        for t, spec in dict.values(dynamic_shapes):
            out += [(where[id(t)], d) for d in _dims_of(spec, t)]
        return out
    if isinstance(dynamic_shapes, dict):
        try:
            bound = inspect.signature(fn).bind(*args, **(kwargs or {}))
        except (TypeError, ValueError) as e:
            raise TypeError(f"export: cannot match dynamic_shapes to the arguments: {e}") from None
        pairs = [(bound.arguments.get(k), v) for k, v in dynamic_shapes.items()]
    else:
        specs = list(dynamic_shapes)
        values = list(args) + list((kwargs or {}).values())
        if len(specs) != len(values):
            raise ValueError(f"export: dynamic_shapes has {len(specs)} entries for {len(values)} arguments")
        pairs = list(zip(values, specs))
    for value, spec in pairs:
        if isinstance(value, Tensor):
            out += [(where[id(value)], d) for d in _dims_of(spec, value)]
        elif isinstance(value, (tuple, list)) and isinstance(spec, (tuple, list)):
            for v, s in zip(value, spec):
                if isinstance(v, Tensor):
                    out += [(where[id(v)], d) for d in _dims_of(s, v)]
    return out


class ExportedProgram:
    """A captured forward pass (PyTorch's ``torch.export.ExportedProgram``).

    ``graph_module`` is an fx :class:`~ember.fx.GraphModule` whose placeholders are the parameters, buffers,
    lifted constants and then the user's tensor inputs (``graph_signature`` says which is which), whose
    ``call_function`` nodes call ember's ops (``ops.Linear.apply``) and whose output is the flat tuple of
    results; ``module()`` is the same graph with the state read from attributes, called like the exported
    module.  See :mod:`ember.export.graph` for how the graph relates to the op-level record."""

    def __init__(self, graph, state, example_inputs, names=None, nonpersistent=()):
        self.example_inputs = example_inputs
        self._in_spec, self._out_spec = graph.in_spec, positions(graph.out_spec)
        self._dynamic = list(graph.dynamic)
        names = names or [f"arg{k}" for k in range(len(graph.inputs))]
        self.graph_module, self.graph_signature, self.constants = to_fx(graph, state, names,
                                                                        nonpersistent=nonpersistent)
        self.state_dict = {s.target: state[s.target] for s in self.graph_signature.input_specs
                           if s.kind in (InputKind.PARAMETER, InputKind.BUFFER)}
        self.range_constraints = {}
        self._names = names

    @property
    def graph(self):
        """The fx graph of ``graph_module``."""
        return self.graph_module.graph

    def op_graph(self):
        """The op-level graph (what replays and what the ONNX exporter maps), read from ``graph_module``: an
        fx pass applied to it is seen by every reader."""
        g = from_fx(self.graph_module, self.graph_signature, self.constants)
        g.in_spec = self._in_spec
        g.out_spec = _unflatten(self._out_spec, dict(enumerate(_refs_in(g.out_spec))))
        g.out_spec = _as_refs(g.out_spec)
        g.dynamic = list(self._dynamic)
        return g

    def module(self):
        """A GraphModule running the program, called like the exported module (it shares the program's
        parameters and buffers)."""
        g = self.op_graph()
        gm = to_fx(g, self.state_dict, self._names, lifted=False, cls=ExportedModule)
        gm._in_spec, gm._out_spec = self._in_spec, self._out_spec
        return gm

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """The program itself: its graph is already of ember's primitive ops."""
        return self

    def parameters(self):
        return iter(t for t in self.state_dict.values() if isinstance(t, nn.Parameter))

    def named_parameters(self):
        return iter((k, t) for k, t in self.state_dict.items() if isinstance(t, nn.Parameter))

    def buffers(self):
        return iter(t for t in self.state_dict.values() if not isinstance(t, nn.Parameter))

    def named_buffers(self):
        return iter((k, t) for k, t in self.state_dict.items() if not isinstance(t, nn.Parameter))

    def __str__(self):
        code = self.graph_module.print_readable(print_output=False)
        code = "\n".join("    " + ln for ln in code.splitlines())
        sig = "\n".join("    " + ln for ln in str(self.graph_signature).splitlines())
        return f"ExportedProgram:\n{code}\nGraph signature:\n{sig}\nRange constraints: {self.range_constraints}\n"

    __repr__ = __str__


def _as_refs(spec):
    """An out_spec whose leaves are value ids (from :func:`_unflatten`) with Ref leaves again."""
    t = type(spec)
    if t is int:
        return Ref(spec)
    if t in (tuple, list):
        return t(_as_refs(x) for x in spec)
    if t is dict:
        return {k: _as_refs(v) for k, v in spec.items()}
    return spec


EXPORTING = [0]  # above 0 while export runs a forward to capture it (ember.compiler.is_exporting)


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False, preserve_module_call_signature=(),
           prefer_deferred_runtime_asserts_over_guards=False):
    """Capture ``mod(*args, **kwargs)`` as an :class:`ExportedProgram`.

    Inputs must all be on one device.  ``dynamic_shapes`` (a tuple with one entry per positional argument, a
    dict by parameter name, or a :class:`ShapesCollection`; each entry ``{dim: Dim(...)}`` or ``None``) makes
    those input sizes symbolic in the graph.
    """
    if not isinstance(mod, nn.Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    flat = []
    _flatten((args, dict(kwargs or {})), flat)
    check_devices(flat, "export")
    dyn = dynamic_dims(mod.forward, args, kwargs, dynamic_shapes)
    EXPORTING[0] += 1
    try:
        graph, _ = capture_dynamic(mod, args, kwargs or {}, mod, dyn, "export")
    finally:
        EXPORTING[0] -= 1
    state = {p: lookup(mod, p) for p in graph.params.values()}
    return ExportedProgram(graph, state, (args, dict(kwargs or {})), input_names(mod.forward, args, kwargs),
                           non_persistent(mod))


def _state_module(state: dict) -> nn.Module:
    """A module holding ``state`` (dotted path -> parameter or buffer) at those paths."""
    root = nn.Module()
    for path, t in state.items():
        m = root
        *mods, leaf = path.split(".")
        for name in mods:
            if name not in m._modules:
                m.add_module(name, nn.Module())
            m = m._modules[name]
        if isinstance(t, nn.Parameter):
            m.register_parameter(leaf, t)
        else:
            m.register_buffer(leaf, t)
    return root


def save(ep, f, **kwargs):
    """Write an :class:`ExportedProgram` as ``ember.jit.save`` does (a graph as data, no code)."""
    _jit.save(TracedModule(ep.op_graph(), _state_module(ep.state_dict)), f)


def load(f, **kwargs):
    """Read a program written by :func:`save`; ``.module()`` replays it."""
    m = _jit.load(f)
    g = m._graph
    return ExportedProgram(g, {p: m._resolve(p) for p in g.params.values()}, None)
