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
from ..jit._graph import _flatten, capture_dynamic, check_devices
from ..tensor import Tensor

__all__ = ["export", "ExportedProgram", "Dim", "ShapesCollection", "save", "load"]


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
    """A captured forward pass: ``.graph``, ``.state_dict``, ``.module()``, ``.example_inputs``."""

    def __init__(self, graph, module, example_inputs):
        self.graph = graph
        self._module = module
        self.example_inputs = example_inputs
        self.state_dict = {p: module._resolve(p) for p in graph.params.values()}
        self.constants = dict(graph.consts)
        self.range_constraints = {}

    @property
    def graph_module(self) -> TracedModule:
        return self._module

    def module(self) -> TracedModule:
        """A module replaying the graph (it shares the exported module's parameters and buffers)."""
        return self._module

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

    def __str__(self):
        return f"ExportedProgram:\n{self.graph}"

    __repr__ = __str__


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
    return ExportedProgram(graph, TracedModule(graph, mod), (args, dict(kwargs or {})))


def save(ep, f, **kwargs):
    """Write an :class:`ExportedProgram` as ``ember.jit.save`` does (a graph as data, no code)."""
    _jit.save(ep.module(), f)


def load(f, **kwargs):
    """Read a program written by :func:`save`; ``.module()`` replays it."""
    m = _jit.load(f)
    return ExportedProgram(m.graph, m, None)
