"""``ember.jit``: tracing a forward pass into a graph (``trace``), saving it as data (``save``/``load``), and
PyTorch's scripting names (``script``, ``ignore``, ``unused``, ``export``), which run eagerly.

``trace`` runs the function or module once on example inputs and records every op at the dispatch
interception point (see ``docs/internals.md``, "Traced graphs").  The result replays the recorded ops through
dispatch, with bit-identical results to eager mode on the same inputs.  As in PyTorch, Python control flow
is specialised to the example inputs, and converting a traced tensor to a Python value warns
(:class:`TracerWarning`).

>>> import ember
>>> lin = ember.nn.Linear(3, 2)
>>> traced = ember.jit.trace(lin, ember.randn(4, 3))
>>> x = ember.randn(4, 3)
>>> bool((traced(x) == lin(x)).all())
True
>>> traced.graph.ops()
['Linear']
"""
from __future__ import annotations

import inspect

from .. import nn
from ..backend import resolve
from ..serialization import load as _load
from ..serialization import save as _save
from ..tensor import Tensor
from . import _recursive, _state, annotations  # noqa: F401  (attributes after import, as in torch.jit)
from ._graph import Graph, Program, TracerWarning, capture, flat_inputs, is_tracing
from ._io import decode_graph, encode_graph
from ._script import ScriptMethod, record, recorded_graph, script_method, source

__all__ = ["trace", "trace_module", "save", "load", "script", "script_method", "RecursiveScriptModule", "ignore",
           "unused", "export", "is_scripting",
           "is_tracing", "ScriptModule", "ScriptFunction", "TracedModule", "TracerWarning", "freeze",
           "optimize_for_inference", "annotate", "Final", "Attribute", "Error", "Graph", "fork", "wait",
           "interface", "CompilationUnit"]

FORMAT = "ember.jit"
VERSION = 1
Error = RuntimeError


# --------------------------------------------------------------------------- traced modules
class ScriptModule(nn.Module):
    """The base of modules made by ``ember.jit`` (PyTorch's ``torch.jit.ScriptModule``).  A subclass (with
    ``@jit.script_method`` methods) runs eagerly and records its forward's ``.graph`` on the first call;
    ``.code`` is its forward's source."""

    def __call__(self, *args, **kwargs):
        return record(self, super().__call__, args, kwargs, module=self)

    @property
    def graph(self) -> Graph:
        return recorded_graph(self)

    inlined_graph = graph

    @property
    def code(self) -> str:
        return self._code_of("forward")

    def _code_of(self, name: str) -> str:
        method = getattr(type(self), name)
        return source(getattr(method, "fn", method))

    def _resolve(self, path):
        """The parameter or buffer at dotted ``path`` (a graph's name for it)."""
        m = self
        *mods, leaf = path.split(".")
        for name in mods:
            m = m._modules[name]
        t = m._parameters.get(leaf)
        return t if t is not None else m._buffers[leaf]

    def save(self, f, **kwargs):
        save(self, f, **kwargs)


class _Traced:
    """What traced modules and functions share: ``.graph`` (and ``.inlined_graph``) and its text ``.code``."""

    @property
    def graph(self) -> Graph:
        return self._graph

    inlined_graph = graph

    @property
    def code(self) -> str:
        return str(self._graph)

    def _code_of(self, name: str) -> str:
        return str(self._graph)


class TracedModule(_Traced, ScriptModule):
    """A module replaying a traced graph; it shares the traced module's parameters and buffers.

    ``.graph`` prints the recorded ops; ``.code`` is the same text.
    """

    def __init__(self, graph: Graph, module: nn.Module | None = None):
        super().__init__()
        if module is not None:
            self._parameters = module._parameters
            self._buffers = module._buffers
            self._non_persistent_buffers_set = module._non_persistent_buffers_set
            self._modules = module._modules
            self.training = module.training
            self.original_name = type(module).__name__
        else:
            self.original_name = "TracedModule"
        self._graph = graph
        self._program = Program(graph)

    __call__ = nn.Module.__call__  # the graph is known: nothing to record

    @script_method
    def forward(self, *args, **kwargs):
        flat = flat_inputs(self._graph, args, kwargs, f"traced {self.original_name}")
        return self._program.run(flat, self._resolve)

    def __repr__(self):
        return f"{type(self).__name__}(original_name={self.original_name})"


class RecursiveScriptModule(ScriptModule):
    """What :func:`script` makes of a module: it shares the module's parameters, buffers and children, runs the
    module's own forward eagerly (Python control flow kept), records ``.graph`` on the first call, and shows
    the forward's source as ``.code``; other attributes and methods are the module's."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self._parameters = module._parameters
        self._buffers = module._buffers
        self._non_persistent_buffers_set = module._non_persistent_buffers_set
        self._modules = module._modules
        self.training = module.training
        self.original_name = type(module).__name__
        object.__setattr__(self, "_original", module)  # not a child: its children are this module's
        for cls in type(module).__mro__:  # the module's own methods (an exported ``double``) over Module's
            if cls is nn.Module or issubclass(nn.Module, cls):
                break
            for name, value in vars(cls).items():
                if inspect.isfunction(value) and name != "forward" and not name.startswith("__") \
                        and name not in self.__dict__:
                    object.__setattr__(self, name, getattr(module, name))

    @script_method
    def forward(self, *args, **kwargs):
        return self._original(*args, **kwargs)

    def _code_of(self, name: str) -> str:
        return source(getattr(type(self._original), name))

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            original = self.__dict__.get("_original")
            if original is None:
                raise
            return getattr(original, name)

    def train(self, mode: bool = True) -> "RecursiveScriptModule":
        super().train(mode)
        self._original.train(mode)
        return self

    def __repr__(self):
        return f"RecursiveScriptModule(original_name={self.original_name})"


class ScriptFunction(_Traced):
    """A traced function: call it like the function; ``.graph`` prints the recorded ops."""

    def __init__(self, graph: Graph, name: str = "traced"):
        self._graph = graph
        self._program = Program(graph)
        self.__name__ = self.name = name

    def __call__(self, *args, **kwargs):
        flat = flat_inputs(self._graph, args, kwargs, f"traced {self.name}")
        return self._program.run(flat, _no_params)

    def save(self, f, **kwargs):
        save(self, f, **kwargs)


class _ScriptedFunction(ScriptFunction):
    """What :func:`script` makes of a function: it runs the function eagerly (Python control flow kept), records
    ``.graph`` on the first call, and shows the function's source as ``.code``."""

    def __init__(self, fn):
        self._fn = fn
        self.__name__ = self.name = getattr(fn, "__name__", "scripted")
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        return record(self, self._fn, args, kwargs)

    @property
    def graph(self) -> Graph:
        return recorded_graph(self)

    inlined_graph = graph

    @property
    def code(self) -> str:
        return source(self._fn)


def _no_params(path):
    raise RuntimeError(f"traced function has no parameter {path!r}")


def _as_tuple(example_inputs):
    if isinstance(example_inputs, Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs)
    if isinstance(example_inputs, dict):
        return (example_inputs,)
    raise TypeError(f"trace: example_inputs must be a Tensor or a tuple of Tensors, got "
                    f"{type(example_inputs).__name__}")


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """Record one run of ``func`` (a function or an ``nn.Module``) on ``example_inputs``.

    Returns a :class:`TracedModule` for a module (sharing its parameters) or a :class:`ScriptFunction` for
    a function; either replays the recorded ops with results bit-identical to eager mode.  The trace is
    specialised to the example: Python control flow, and shapes used as Python numbers, are fixed (a
    traced tensor converted to a Python value warns with :class:`TracerWarning`).  The function must return
    tensors, or tuples, lists or dicts of them.
    """
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("trace: example_inputs (or example_kwarg_inputs) must be given")
    args = _as_tuple(example_inputs) if example_inputs is not None else ()
    kwargs = dict(example_kwarg_inputs or {})
    if isinstance(func, nn.Module):
        graph, _ = capture(func, args, kwargs, module=func)
        return TracedModule(graph, func)
    if isinstance(func, ScriptFunction) or isinstance(func, ScriptModule):
        return func
    if not callable(func):
        raise TypeError(f"trace: expected a function or an nn.Module, got {type(func).__name__}")
    owner = getattr(func, "__self__", None)
    graph, _ = capture(func, args, kwargs, module=owner if isinstance(owner, nn.Module) else None)
    return ScriptFunction(graph, getattr(func, "__name__", "traced"))


def trace_module(mod, inputs, **kwargs):
    """Trace ``mod``'s methods: ``inputs`` maps method names to example inputs; ``forward`` gives the module."""
    if not isinstance(mod, nn.Module):
        raise AttributeError("expected torch.nn.Module as the main argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    traced = None
    for name, example in inputs.items():
        if name == "forward":
            traced = trace(mod, example, **kwargs)
    if traced is None:
        raise RuntimeError("trace_module: only the 'forward' method can be traced")
    return traced


# --------------------------------------------------------------------------- saving
def save(m, f, _extra_files=None):
    """Write a traced module or function to ``f`` in ember's safe checkpoint format (a graph of op names
    plus tensors; loading it runs no code from the file)."""
    if not isinstance(m, (ScriptModule, ScriptFunction)):
        raise RuntimeError(f"jit.save: expected a module or function made by ember.jit.trace or script, got "
                           f"{type(m).__name__} (save a plain module's state_dict with ember.save)")
    g = m.graph  # a scripted one's recorded graph: it loads as a traced module, specialised to that call
    params, buffers = {}, {}
    device = None
    if isinstance(m, ScriptModule):
        for path in g.params.values():
            t = m._resolve(path)
            device = device or t.device
            (params if isinstance(t, nn.Parameter) else buffers)[path] = t.detach()
    device = getattr(g, "_devices", None) and sorted(map(str, g._devices))[0] or device
    obj = {"format": FORMAT, "version": VERSION, "graph": encode_graph(g, device and resolve(device)),
           "parameters": params,
           "buffers": buffers, "kind": "module" if isinstance(m, ScriptModule) else "function",
           "name": getattr(m, "original_name", type(m).__name__) if isinstance(m, ScriptModule) else m.name,
           "extra_files": dict(_extra_files or {})}
    _save(obj, f)


def load(f, map_location=None, _extra_files=None):
    """Read a traced module or function written by :func:`save`.

    The file is data: op names are looked up in ember's Op registry, tensors read as in ``ember.load``
    with ``weights_only=True``; nothing from the file is executed.
    """
    obj = _load(f, map_location=map_location)
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise RuntimeError("jit.load: the file is not a traced module written by ember.jit.save")
    if obj.get("version") != VERSION:
        raise RuntimeError(f"jit.load: file format version {obj.get('version')} is not supported (this ember "
                           f"reads version {VERSION})")
    g = decode_graph(obj["graph"], map_location)
    if _extra_files is not None:
        for k in _extra_files:
            _extra_files[k] = obj["extra_files"].get(k, "")
    if obj["kind"] == "function":
        return ScriptFunction(g, obj["name"])
    holder = nn.Module()
    for store, items in (("p", obj["parameters"]), ("b", obj["buffers"])):
        for path, t in items.items():
            m = holder
            *mods, leaf = path.split(".")
            for name in mods:
                if name not in m._modules:
                    m._modules[name] = nn.Module()
                m = m._modules[name]
            if store == "p":
                m.register_parameter(leaf, nn.Parameter(t, requires_grad=t.dtype.is_floating_point or
                                                        t.dtype.is_complex))
            else:
                m.register_buffer(leaf, t)
    tm = TracedModule(g, holder)
    tm.original_name = obj["name"]
    return tm


# --------------------------------------------------------------------------- scripting (runs eagerly)
def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """A scripted function (:class:`ScriptFunction`) or module (a :class:`ScriptModule`) with ``.graph`` and
    ``.code``: it runs ``obj`` eagerly, so results and Python control flow are eager mode's (PyTorch's contract
    for ``torch.jit.script``), and records its graph on the first call (or on ``example_inputs``, a list of
    argument tuples, or for a module a dict from method to such a list).  ``.code`` is the Python source.
    Scripted and traced objects, and classes, are returned as they are.

    >>> import ember
    >>> f = ember.jit.script(lambda t: t.relu() + 1)
    >>> f(ember.tensor([-1.0, 2.0])), f.graph.ops()
    (tensor([1., 3.]), ['relu', 'Add'])
    """
    if isinstance(obj, (ScriptModule, ScriptFunction, type)) or not callable(obj):
        return obj
    scripted = RecursiveScriptModule(obj) if isinstance(obj, nn.Module) else _ScriptedFunction(obj)
    if isinstance(example_inputs, dict):
        example_inputs = example_inputs.get(getattr(obj, "forward", None)) or example_inputs.get(obj)
    if example_inputs:
        scripted(*example_inputs[0])
    return scripted


def ignore(drop=False, **kwargs):
    """Mark a function to be left to Python by the compiler; ember runs everything eagerly, so the function
    is returned unchanged (usable as ``@ignore`` or ``@ignore(drop=True)``)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """Mark a method the compiler should not compile; ember runs everything eagerly, so ``fn`` is returned
    unchanged."""
    return fn


def export(fn):
    """Mark a method to be compiled as an entry point; ember runs everything eagerly, so ``fn`` is returned
    unchanged."""
    return fn


def is_scripting() -> bool:
    """False: ember never compiles TorchScript, code always runs eagerly."""
    return False


def _script_if_tracing(fn):
    """Script ``fn`` only while a trace records: ember's trace records the ops ``fn`` runs and its scripting
    is eager, so ``fn`` is returned unchanged."""
    return fn


def _overload_method(func):
    """Declare one signature of an overloaded TorchScript method; the body that follows in the class replaces
    it, so in eager mode ``func`` is returned unchanged."""
    return func


def interface(obj):
    """A class decorator for TorchScript interfaces; returns the class unchanged (eager)."""
    return obj


def annotate(the_type, the_value):
    """Return ``the_value`` (a type hint for the TorchScript compiler, which ember does not need)."""
    return the_value


class Attribute:
    """``Attribute(value, type)``: a TorchScript attribute hint; ``ScriptModule`` attributes are ``value``."""

    def __new__(cls, value, type=None):
        return value


class _FinalMeta(type):
    def __getitem__(cls, item):
        return item


class Final(metaclass=_FinalMeta):
    """``Final[T]``: a constant-attribute hint, ``T`` itself in eager mode."""


class _Future:
    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` now (eager) and return a future whose ``wait()`` gives its result."""
    return _Future(func(*args, **kwargs))


def wait(future):
    """The result of a :func:`fork`."""
    return future.wait()


class CompilationUnit:
    """A TorchScript compilation unit; ember compiles nothing, so it only holds Python functions given to it."""

    def __init__(self, lang=None, _frames_up=0):
        if lang is not None:
            raise RuntimeError("CompilationUnit: ember does not compile TorchScript source; define the functions "
                               "in Python (they run eagerly)")


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Return ``mod`` (a module in eval mode): a traced module's constants are already fixed by the trace."""
    if getattr(mod, "training", False):
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """Return ``mod`` frozen (eval mode required as in :func:`freeze`); ember adds no graph rewrites."""
    if getattr(mod, "training", False):
        mod = mod.eval()
    return freeze(mod)

