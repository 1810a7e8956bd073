"""``Graph``: a program as a list of :class:`~ember.fx.Node`, and the Python source generated from it.

The graph is PyTorch fx's: nodes in execution order in a doubly linked list, one ``output`` node last,
unique names, and :meth:`Graph.python_code` turning the list back into a ``forward`` function whose
text matches the shape of PyTorch's (``add = x + param;  x = param = None``).  Calls of ember's public
functions are written by their public path (``torch.relu``, ``torch.nn.functional.gelu``) with ``torch``
bound to ember, so the same code reads the same under either name.

>>> import ember, ember.fx, operator
>>> g = ember.fx.Graph()
>>> x = g.placeholder("x")
>>> s = g.call_function(operator.add, (x, 1))
>>> _ = g.output(g.call_function(ember.relu, (s,)))
>>> print(g.python_code("self").src.strip())
def forward(self, x):
    add = x + 1;  x = None
    relu = torch.relu(add);  add = None
    return relu
"""
from __future__ import annotations

import builtins
import contextlib
import copy
import importlib
import inspect
import keyword
import math
import operator
import re
from collections import defaultdict
from dataclasses import dataclass

from ..backend import device
from ..dtypes import dtype
from .node import Node, _format_arg, is_wrapped, map_arg, public_name

# the operator functions written as Python expressions in generated code
_MAGIC = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}",
    "and_": "{} & {}", "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}",
}
_MAGIC_FNS = {getattr(operator, k): v for k, v in _MAGIC.items() if hasattr(operator, k)}


def _snake(name: str) -> str:
    """CamelCase to snake_case, as node names are made from call targets."""
    chars = []
    for i, c in enumerate(name):
        if c.isupper() and i and (name[i - 1].islower() or (i + 1 < len(name) and name[i + 1].islower())):
            chars.append("_")
        chars.append(c.lower())
    return "".join(chars)


class _Namespace:
    """Unique, legal Python names for nodes and globals: ``add``, ``add_1``, ``add_2``; a builtin or keyword
    (``sum``, ``getattr``) starts at ``_1``."""

    def __init__(self):
        self._used: set = set()
        self._base_count: dict = defaultdict(int)
        self._obj_to_name: dict = {}

    def create_name(self, candidate: str, obj=None) -> str:
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = "_" + candidate
        m = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (m.group(1), int(m.group(2))) if m else (candidate, None)
        while candidate in self._used or self._illegal(candidate):
            num = max(self._base_count[base], num or 0) + 1
            self._base_count[base] = num
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        if obj is not None:
            self._obj_to_name[id(obj)] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj) -> None:
        self._obj_to_name[id(obj)] = name

    @staticmethod
    def _illegal(name: str) -> bool:
        return keyword.iskeyword(name) or name in builtins.__dict__ or name in ("torch", "ember", "self", "inf",
                                                                               "nan", "device", "fx_pytree")


@dataclass
class PythonCode:
    """What :meth:`Graph.python_code` returns: the source of ``forward`` and the globals it reads."""

    src: str
    globals: dict


def _format_target(base: str, target: str) -> str:
    """``self.layer1`` / ``getattr(self.layer1, "0")`` for the dotted path ``target`` under ``base``."""
    out = base
    for part in target.split("."):
        out = f"{out}.{part}" if part.isidentifier() and not keyword.iskeyword(part) else f'getattr({out}, "{part}")'
    return out


class _NodeList:
    """The nodes of a graph in order (``reversed`` walks them backwards); a live view."""

    def __init__(self, graph, reverse=False):
        self._graph, self._reverse = graph, reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        n = root._prev if self._reverse else root._next
        while n is not root:
            nxt = n._prev if self._reverse else n._next
            if not n._erased:
                yield n
            n = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))

    def __repr__(self):
        return repr(list(self))


class Graph:
    """A program as an ordered list of nodes (see the module docstring)."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(None, "", "root", "", (), {})
        self._root.graph = self
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owners = 0
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen_hooks: list = []

    # ------------------------------------------------------------------ structure
    @property
    def owning_module(self):
        """The :class:`~ember.fx.GraphModule` this graph belongs to (None for a free graph)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes, in execution order (a live view: ``len``, iteration, ``reversed``)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target=None, sort: bool = True) -> list:
        """The nodes with ``op`` (and ``target``, when given)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def output_node(self) -> Node:
        """The graph's ``output`` node."""
        for n in reversed(self.nodes):
            if n.op == "output":
                return n
        raise RuntimeError("Graph.output_node: the graph has no output node")

    def create_node(self, op: str, target, args=None, kwargs=None, name: str | None = None,
                    type_expr=None) -> Node:
        """A new node, inserted at the current insertion point (the end, unless :meth:`inserting_before`
        or :meth:`inserting_after` say otherwise)."""
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        candidate = name if name is not None else self._target_to_str(target)
        node = Node(self, self._graph_namespace.create_name(candidate, None), op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    def _target_to_str(self, target) -> str:
        """The name a node calling or reading ``target`` starts from (``add``, ``layer1_0_conv1``); the
        namespace makes it legal and unique (``*args`` becomes ``_args``)."""
        name = getattr(target, "__name__", None) or type(target).__name__ if callable(target) else str(target)
        return _snake(name.replace(".", "_"))

    def placeholder(self, name: str, type_expr=None, default_value=inspect.Signature.empty) -> Node:
        """An input of the program (``default_value`` where the argument has one)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None) -> Node:
        """A read of the owning module's attribute at ``qualified_name`` (a parameter, buffer or tensor)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        """A call of the owning module's submodule at ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        """A call of method ``method_name`` on ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None) -> Node:
        """A call of the function ``the_function``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        """The program's result: the graph's last node."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing reads any more."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                               f"the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    @contextlib.contextmanager
    def inserting_before(self, n: Node | None = None):
        """New nodes go right before ``n`` (the start of the graph if None) while the context is open."""
        if n is None:
            n = self._root._next
        saved = self._insert
        self._insert = n.prepend
        try:
            yield
        finally:
            self._insert = saved

    @contextlib.contextmanager
    def inserting_after(self, n: Node | None = None):
        """New nodes go right after ``n`` (each after the last inserted) while the context is open."""
        if n is None:
            n = self._root._prev
        saved = self._insert
        self._insert = n._next.prepend
        try:
            yield
        finally:
            self._insert = saved

    def eliminate_dead_code(self, is_impure_node=None) -> bool:
        """Remove every node whose value nothing reads and that has no side effect; returns whether any went."""
        changed = False
        for n in reversed(self.nodes):
            impure = is_impure_node(n) if is_impure_node is not None else n.is_impure()
            if not impure and not n.users:
                self.erase_node(n)
                changed = True
        return changed

    def node_copy(self, node: Node, arg_transform=lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) at the insertion point, its node arguments mapped by
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy every node of ``g`` but its output into this graph (``val_map`` maps ``g``'s nodes to new ones,
        filled as it goes); returns what ``g``'s output reads, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        memo[id(self)] = g
        if out is not None:
            rv, old = out
            new_out = g.output(rv, type_expr=old.type)
            new_out.meta = copy.copy(old.meta)
        return g

    def lint(self) -> None:
        """Check the graph's invariants: links, ownership, names, definitions before use, and (with an owning
        module) that every ``get_attr``/``call_module`` target exists.  Raises RuntimeError naming the node."""
        seen, names = set(), set()
        for n in self.nodes:
            if n.graph is not self:
                raise RuntimeError(f"Node {n} does not belong to this Graph!")
            if n._prev._next is not n or n._next._prev is not n:
                raise RuntimeError(f"Node {n}: the node list is broken around it")
            if n.name in names:
                raise RuntimeError(f"Node redefined name {n.name}!")
            for a in n._input_nodes:
                if a.graph is not self:
                    raise RuntimeError(f"Argument '{a}' of Node '{n}' does not belong to this Graph")
                if a not in seen:
                    raise RuntimeError(f"Argument '{a}' of Node '{n}' was used before it has been defined! Please "
                                       "check that Nodes in the graph are topologically ordered")
                if n not in a.users:
                    raise RuntimeError(f"Node {n}: not among the users of its argument {a}")
            seen.add(n)
            names.add(n.name)
            mod = self.owning_module
            if mod is not None and n.op in ("get_attr", "call_module"):
                obj = mod
                for atom in n.target.split("."):
                    if not hasattr(obj, atom):
                        raise RuntimeError(f"Node {n} target {n.target} references nonexistent attribute {atom} of "
                                           f"{type(obj).__name__}")
                    obj = getattr(obj, atom)
        if self._len != len(seen):
            raise RuntimeError(f"Graph: the node count {self._len} does not match the {len(seen)} nodes listed")

    # ------------------------------------------------------------------ text
    def __str__(self) -> str:
        lines = ["graph():"]
        for n in self.nodes:
            lines.append("    " + n.format_node())
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Print the nodes as a table (opcode, name, target, args, kwargs)."""
        rows = [(n.op, n.name, n._pretty_print_target() if n.op != "output" else "output", _format_arg(n.args),
                 _format_arg(n.kwargs)) for n in self.nodes]
        heads = ("opcode", "name", "target", "args", "kwargs")
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(heads)]
        print("  ".join(h.ljust(w) for h, w in zip(heads, widths)))
        print("  ".join("-" * w for w in widths))
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)))

    def on_generate_code(self, make_transformer):
        """Register a transformer of the generated source lines (``make_transformer(previous)`` returns a
        function from a list of lines to a list of lines); a context manager that removes it again."""
        previous = self._codegen_hooks[-1] if self._codegen_hooks else None
        self._codegen_hooks.append(make_transformer(previous))
        hooks = self._codegen_hooks
        hook = hooks[-1]

        @contextlib.contextmanager
        def undo():
            try:
                yield
            finally:
                if hook in hooks:
                    hooks.remove(hook)

        return undo()

    def python_code(self, root_module: str = "self", *, verbose: bool = False) -> PythonCode:
        """The source of ``forward(root_module, ...)`` computing this graph, and the globals it needs."""
        return _CodeWriter(self, root_module).write()


class _CodeWriter:
    """Writes a graph as the body of ``forward``: one line per node, each followed by the names whose last
    use it was (``;  x = y = None``), so values are freed as early as the graph allows."""

    def __init__(self, graph: Graph, root: str):
        ember = importlib.import_module("ember")  # the package whose public paths the code is written in
        self.graph, self.root = graph, root
        self.globals = {"torch": ember, "ember": ember, "inf": math.inf, "nan": math.nan,
                        "device": device, "builtins": builtins}
        self.names = _Namespace()
        self.names._used.update(self.globals)
        self.names._used.update(n.name for n in graph.nodes)  # a global never shadows a node's value
        self.wrapped: dict = {}  # global names of functions marked by fx.wrap

    def add_global(self, hint: str, obj) -> str:
        """A global name under which the generated code reads ``obj``."""
        if getattr(builtins, hint, None) is obj:
            return hint
        for k, v in self.globals.items():
            if v is obj:
                return k
        name = self.names.create_name(hint, obj)
        self.globals[name] = obj
        return name

    def repr_arg(self, a) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            cls = self.add_global(type(a).__name__, type(a))
            return f"{cls}({', '.join(self.repr_arg(x) for x in a)})"
        if isinstance(a, tuple):
            body = ", ".join(self.repr_arg(x) for x in a)
            return f"({body},)" if len(a) == 1 else f"({body})"
        if isinstance(a, list):
            return "[" + ", ".join(self.repr_arg(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.repr_arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.repr_arg(a.start)}, {self.repr_arg(a.stop)}, {self.repr_arg(a.step)})"
        if isinstance(a, dtype):
            public = getattr(self.globals["torch"], a.name, None) is a
            return f"torch.{a.name}" if public else self.add_global(a.name, a)
        if isinstance(a, float) and (math.isinf(a) or math.isnan(a)):
            return repr(a) if not math.isinf(a) else ("inf" if a > 0 else "-inf")
        if isinstance(a, device):
            return f"device({str(a)!r})"
        if isinstance(a, (bool, int, float, complex, str, bytes, type(None), type(Ellipsis))):
            return repr(a)
        if isinstance(a, (type, type(len))) or callable(a) and not hasattr(a, "shape"):
            return self.call_name(a)
        return self.add_global(_snake(type(a).__name__), a)

    def call_name(self, fn) -> str:
        spell = getattr(fn, "fx_code_name", None)  # a target with its own spelling (export's op overloads)
        if spell is not None:
            return spell(self.add_global)
        name = public_name(fn)
        if name is not None:
            return name
        if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
            return fn.__name__
        hint = f"{getattr(fn, '__module__', None) or ''}_{getattr(fn, '__qualname__', getattr(fn, '__name__', 'fn'))}"
        name = self.add_global(hint, fn)
        if is_wrapped(fn):  # re-tracing the generated code keeps recording it as one node
            self.wrapped.setdefault(name, None)
        return name

    def args_text(self, args, kwargs) -> str:
        parts = [self.repr_arg(a) for a in args] + [f"{k} = {self.repr_arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def write(self) -> PythonCode:
        nodes = list(self.graph.nodes)
        last_use: dict = {}
        frees: dict = defaultdict(list)
        for n in reversed(nodes):
            for a in n._input_nodes:
                if a not in last_use:
                    last_use[a] = n
                    frees[n].append(a)
        for n in nodes:
            if n.op in ("placeholder", "output"):
                continue
            if not n.users:
                frees[n].append(n)
        for n in nodes:  # list each node's freed names in the order of its arguments
            order = {a: i for i, a in enumerate(n._input_nodes)}
            frees[n].sort(key=lambda a: order.get(a, len(order)))
        params, body = [], []
        for n in nodes:
            if n.op == "placeholder":
                params.append(self.placeholder(n, body))
                continue
            line = self.line(n)
            freed = [a.name for a in frees.get(n, []) if a.op != "output"]
            if n.op != "output" and freed:
                line += ";  " + " = ".join(freed) + " = None"
            body.append(line)
        lines = body or ["pass"]
        for hook in self.graph._codegen_hooks:
            lines = hook(lines)
        header = "\n".join(f'torch.fx._symbolic_trace.wrap("{w}")' for w in self.wrapped)
        src = (f"\n{header}\n\ndef forward({', '.join([self.root] + params)}):\n"
               + "".join(f"    {ln}\n" for ln in lines) + "    ")
        return PythonCode(src, self.globals)

    def placeholder(self, n: Node, body: list) -> str:
        target = n.target
        if target.startswith("*"):
            body.append(f"{n.name} = {target.lstrip('*')}")
            return target
        if n.args:
            return f"{target} = {self.repr_arg(n.args[0])}"
        if target != n.name:
            body.append(f"{n.name} = {target}")
        return target

    def line(self, n: Node) -> str:
        if n.op == "output":
            return f"return {self.repr_arg(n.args[0])}"
        if n.op == "get_attr":
            return f"{n.name} = {_format_target(self.root, n.target)}"
        if n.op == "call_module":
            return f"{n.name} = {_format_target(self.root, n.target)}({self.args_text(n.args, n.kwargs)})"
        if n.op == "call_method":
            obj, *rest = n.args
            return f"{n.name} = {self.repr_arg(obj)}.{n.target}({self.args_text(rest, n.kwargs)})"
        fn = n.target
        if fn in _MAGIC_FNS and not n.kwargs:
            return f"{n.name} = " + _MAGIC_FNS[fn].format(*(self.repr_arg(a) for a in n.args))
        if fn is getattr and len(n.args) == 2 and isinstance(n.args[1], str) and n.args[1].isidentifier():
            return f"{n.name} = {self.repr_arg(n.args[0])}.{n.args[1]}"
        return f"{n.name} = {self.call_name(fn)}({self.args_text(n.args, n.kwargs)})"
