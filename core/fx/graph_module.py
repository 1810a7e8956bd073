"""``GraphModule``: a Module whose ``forward`` is generated from a :class:`~ember.fx.Graph`.

It holds the submodules, parameters and buffers the graph reads (copied by reference from the root it
was made from, so the weights are shared), regenerates ``forward`` from the graph on :meth:`recompile`,
shows the source as ``code``, and pickles as that source plus its attributes (the graph is rebuilt by
tracing the source again, with every submodule a leaf), as PyTorch's does.
"""
from __future__ import annotations

import copy
import itertools
import linecache

from ..nn import Module, Parameter
from ..tensor import Tensor
from ._symbolic_trace import Tracer
from .graph import Graph, _CodeWriter

_KEYS = itertools.count()


def _exec_forward(src: str, globals_: dict):
    """Compile generated source under a unique file name kept in ``linecache`` (tracebacks show the line)."""
    key = f"<eval_with_key>.{next(_KEYS)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    ns = dict(globals_)
    exec(compile(src, key, "exec"), ns)  # noqa: S102 - source generated from the graph
    return ns["forward"]


def _copy_attr(src: Module, dst: Module, target: str) -> None:
    """Give ``dst`` the attribute ``src`` has at dotted ``target``, making empty parent modules as needed."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(src, item)
        t = getattr(dst, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(dst, item, t)
        src, dst = f, t
    orig = getattr(src, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):  # a plain tensor attribute: a buffer here
        persistent = field not in getattr(src, "_non_persistent_buffers_set", ())
        dst.register_buffer(field, orig, persistent=persistent)
    else:
        setattr(dst, field, orig)


def _assign_attr(obj, dst: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(dst, item, None)
        if t is None:
            t = Module()
            setattr(dst, item, t)
        dst = t
    setattr(dst, field, obj)


class GraphModule(Module):
    """A Module running a :class:`Graph` (see the module docstring).  ``root`` is the Module (or a dict of
    qualified name to object) that the graph's ``get_attr`` and ``call_module`` targets are read from."""

    def __new__(cls, *args, **kwargs):
        # each instance gets a class of its own, so that forward can be set on the class (as PyTorch does)
        for base in cls.__mro__:
            if base.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = base
                break

        class GraphModuleImpl(cls):
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           "provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"Unsupported type {type(root).__name__} passed for root! (a Module or a dict)")
        self.meta = dict(getattr(root, "meta", {}) or {})
        self.graph = graph

    # ------------------------------------------------------------------ the graph and its code
    @property
    def graph(self) -> Graph:
        """The graph ``forward`` is generated from; assigning one recompiles."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be an ember.fx.Graph, not {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``, generated from the graph."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to ember")
        return self._code

    def recompile(self):
        """Generate ``forward`` again from the graph (after changing it)."""
        code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = code.src
        self.__dict__["_code_globals"] = code.globals
        cls = type(self)
        cls.forward = _exec_forward(code.src, code.globals)
        return code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class definition with its generated ``forward`` (printed unless told not to)."""
        body = self.code.strip("\n").rstrip()
        lines = [f"class {type(self).__name__}(torch.nn.Module):"]
        lines += ["    " + ln if ln else ln for ln in body.splitlines()]
        text = "\n".join(lines) + "\n"
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return super().__str__() + "\n\n" + self.code + "\n# To see more debug info, please use " \
            "`graph_module.print_readable()`"

    # ------------------------------------------------------------------ submodules
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at dotted ``target`` (making parents); False if a parent is not a Module."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at dotted ``target``; False if there is none."""
        *path, field = target.split(".")
        mod = self
        for item in path:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule that no ``call_module`` or ``get_attr`` node reaches."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":
                    sub = self.get_submodule(node.target)
                    used.update(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    # ------------------------------------------------------------------ copies and pickling
    def __reduce__(self):
        state = {k: v for k, v in self.__dict__.items() if k not in _GENERATED}
        return _rebuild, (state, _import_block(self._code_globals) + self._code, type(self).__name__)

    def __deepcopy__(self, memo):
        res = Module.__new__(Module)
        memo[id(self)] = res
        fake = Module()
        fake.__dict__ = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in _GENERATED}, memo)
        gm = GraphModule(fake, copy.deepcopy(self.graph, memo), type(self).__name__)
        memo[id(self)] = gm
        return gm

    def __copy__(self):
        gm = GraphModule(self, self.graph, type(self).__name__)
        gm.meta = dict(self.meta)
        return gm


_GENERATED = ("_graph", "_code", "_code_globals")  # made again from the graph, never pickled or copied


def _import_block(globals_: dict) -> str:
    """Import lines giving generated code the globals it reads beyond the standard ones (functions and
    classes importable by module and qualified name), for code compiled in another process."""
    standard = _CodeWriter(Graph(), "self").globals
    lines = []
    for name, obj in globals_.items():
        if name in standard:
            continue
        mod, qual = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
        if mod and qual and "<" not in qual:
            head, _, tail = qual.rpartition(".")
            lines.append(f"from {mod} import {qual} as {name}" if not head else
                         f"from {mod} import {head.split('.')[0]} as _{name}_owner; {name} = _{name}_owner."
                         f"{'.'.join(qual.split('.')[1:])}")
    return "".join(line + "\n" for line in lines)


def _rebuild(state: dict, code: str, class_name: str) -> GraphModule:
    """A pickled GraphModule back: its attributes, and its graph traced again from its source."""
    class Loaded(Module):
        pass

    root = Module.__new__(Loaded)
    root.__dict__.update(state)
    Loaded.forward = _exec_forward(code, _CodeWriter(Graph(), "self").globals)

    class KeepModules(Tracer):
        def is_leaf_module(self, m, qualname):
            return True

    graph = KeepModules().trace(root)
    return GraphModule(root, graph, class_name)


def symbolic_trace(root, concrete_args=None) -> GraphModule:
    """Trace ``root`` (a Module or a function) into a :class:`GraphModule` with the same behaviour.

    >>> import ember, ember.fx
    >>> gm = ember.fx.symbolic_trace(lambda x: x * 2 + 1)
    >>> print(gm.code.strip())
    def forward(self, x):
        mul = x * 2;  x = None
        add = mul + 1;  mul = None
        return add
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__", "GraphModule")
    if name == "<lambda>":
        name = "GraphModule"
    return GraphModule(tracer.root, graph, name)

