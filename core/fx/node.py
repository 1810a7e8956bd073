"""``Node``: one operation of an fx :class:`~ember.fx.Graph`, and the helpers that walk its arguments.

A node has an ``op`` (``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
``call_module``, ``output``), a ``target`` (what it calls or reads), ``args``/``kwargs`` in which other
nodes stand for their values, and ``users``: the nodes that read it.  Nodes are kept in the graph's
doubly linked list, in execution order.

>>> import ember, ember.fx
>>> g = ember.fx.Graph()
>>> x = g.placeholder("x")
>>> y = g.call_function(ember.relu, (x,))
>>> _ = g.output(y)
>>> list(x.users), y.args
([relu], (x,))
"""
from __future__ import annotations

import builtins
import importlib
import operator
import types
from typing import Any, Callable, Union

from ..registry import NAMESPACES

Target = Union[Callable[..., Any], str]  # what a node calls or reads
Argument = Any  # a node argument: a Node, a constant, or tuples, lists, dicts and slices of them

OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")

# call_function targets with side effects: dead-code elimination keeps them even without users
_SIDE_EFFECTS: set = set()
_WRAPPED: list = []  # (globals dict, name) of the functions fx.wrap marked, patched during every trace


def is_wrapped(fn) -> bool:
    """Whether ``fn`` is a function that :func:`ember.fx.wrap` marked."""
    return any(globs.get(name) is fn for globs, name in _WRAPPED)


def public_name(fn) -> str | None:
    """``fn``'s path among ember's public namespaces, spelled as PyTorch's (``torch.relu``,
    ``torch.nn.functional.gelu``, ``torch.linalg.norm``), or None if it is not one of them."""
    name = getattr(fn, "__name__", None)
    if name is None:
        return None
    for ns, prefix in (("torch", "torch"), ("nn.functional", "torch.nn.functional"), ("linalg", "torch.linalg"),
                       ("special", "torch.special"), ("fft", "torch.fft")):
        if NAMESPACES.get(ns, {}).get(name) is fn:
            return f"{prefix}.{name}"
    mod = getattr(fn, "__module__", None) or ""
    if mod == "ember" or mod.startswith("ember."):
        for path in (mod, "ember", "ember.nn.functional"):
            try:
                owner = importlib.import_module(path)
            except ImportError:
                continue
            if getattr(owner, name, None) is fn:
                return "torch" + path[len("ember"):] + "." + name
    return None


def has_side_effect(fn):
    """Mark ``fn`` as impure: a ``call_function`` node of it is never removed as dead code."""
    _SIDE_EFFECTS.add(fn)
    return fn


def map_aggregate(a, fn):
    """``a`` rebuilt with ``fn`` applied to every leaf, through tuples, lists, dicts and slices."""
    t = type(a)
    if t is tuple or (isinstance(a, tuple) and hasattr(a, "_fields")):
        vals = [map_aggregate(x, fn) for x in a]
        return t(*vals) if hasattr(a, "_fields") else tuple(vals)
    if isinstance(a, tuple):
        return t(map_aggregate(x, fn) for x in a)
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        d = {k: map_aggregate(v, fn) for k, v in a.items()}
        return d if t is dict else t(d)
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """``a`` rebuilt with ``fn`` applied to every :class:`Node` in it (other leaves kept)."""
    if not callable(fn):
        raise TypeError("ember.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(fn) -> str:
    """A readable dotted name of a call target (``operator.add``, ``torch.relu``)."""
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return fn.__name__
    name = public_name(fn)
    if name is not None:
        return name
    mod = getattr(fn, "__module__", None) or "?"
    return f"{mod}.{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"


def _format_arg(a, max_list_len=float("inf")) -> str:
    if isinstance(a, Node):
        return "%" + a.name
    if isinstance(a, (list, tuple)):
        items = ", ".join(_format_arg(x) for i, x in enumerate(a) if i < max_list_len)
        more = "" if len(a) <= max_list_len else ", ...[total_len=" + str(len(a)) + "]"
        return f"[{items}{more}]" if isinstance(a, list) else f"({items}{',' if len(a) == 1 else ''}{more})"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return str(a)


class _Named:
    """Shows as a node's bare name inside ``repr`` of a structure (the output line of ``print(graph)``)."""

    def __init__(self, node):
        self.name = node.name

    def __repr__(self):
        return self.name


class Node:
    """One operation in a :class:`~ember.fx.Graph` (see the module docstring)."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict, return_type=None):
        if op not in OPS:
            raise ValueError(f"Node: unknown op {op!r}; expected one of {OPS[:-1]}")
        if op in ("call_method", "call_module", "get_attr") and not isinstance(target, str):
            raise ValueError(f"Node {name!r}: target of {op} must be a str, got {type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node {name!r}: target of call_function must be callable, got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict = {}
        self.users: dict = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # ------------------------------------------------------------------ list
    @property
    def next(self) -> Node:
        """The node after this one in the graph."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one in the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move (or insert) node ``x`` right before this one."""
        if self is x:
            raise RuntimeError("Node.prepend: a node cannot be prepended to itself")
        if x.graph is not self.graph:
            raise RuntimeError("Node.prepend: the two nodes belong to different graphs")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move (or insert) node ``x`` right after this one."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ------------------------------------------------------------------ arguments
    @property
    def args(self) -> tuple:
        """The positional arguments; nodes stand for the values they compute.  Assigning updates ``users``."""
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments; nodes stand for the values they compute.  Assigning updates ``users``."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list:
        """The distinct nodes among ``args`` and ``kwargs``, in order of first appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg) -> None:
        """Set positional argument ``idx`` to ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg) -> None:
        """Insert positional argument ``arg`` at ``idx``."""
        args = list(self._args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg) -> None:
        """Set keyword argument ``key`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def _update_args_kwargs(self, args, kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = tuple(map_arg(tuple(args), self._collect))
        self._kwargs = dict(map_arg(dict(kwargs), self._collect))
        for n in self._input_nodes:
            n.users.setdefault(self, None)

    def _collect(self, n):
        if n.graph is not self.graph and self.graph is not None and n.graph is not None:
            raise RuntimeError(f"Node {self.name!r}: argument {n.name!r} belongs to another graph")
        self._input_nodes.setdefault(n, None)
        return n

    def replace_input_with(self, old: Node, new: Node) -> None:
        """Read ``new`` wherever this node reads ``old``."""
        swap = lambda n: new if n is old else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb=lambda user: True, *,
                              propagate_meta: bool = False) -> list:
        """Make every user of this node read ``replace_with`` instead (those ``delete_user_cb`` accepts);
        returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError("replace_all_uses_with(propagate_meta=True): the replacement already has meta")
            replace_with.meta.update(self.meta)
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for u in changed:
            u.replace_input_with(self, replace_with)
        return changed

    # ------------------------------------------------------------------ facts
    def is_impure(self) -> bool:
        """Whether removing this node could change the program (inputs, outputs, side effects, in-place
        methods and impure modules are impure)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _SIDE_EFFECTS
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__")
        if self.op == "call_module" and self.graph is not None and self.graph.owning_module is not None:
            mod = self.graph.owning_module.get_submodule(self.target)
            return bool(getattr(mod, "_is_impure", False))
        return False

    @property
    def stack_trace(self):
        """Where the traced program made this node (``meta["stack_trace"]``), when recorded."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def _pretty_print_target(self) -> str:
        t = self.target
        if isinstance(t, str):
            return t
        if isinstance(t, types.BuiltinFunctionType) and getattr(operator, t.__name__, None) is t:
            return f"operator.{t.__name__}"
        if getattr(builtins, getattr(t, "__name__", ""), None) is t:
            return f"builtins.{t.__name__}"
        return _qualified_name(t)

    def format_node(self) -> str:
        """The node as one line of ``print(graph)``."""
        head = f"%{self.name} : [num_users={len(self.users)}] = "
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}get_attr[target={self._pretty_print_target()}]"
        if self.op == "output":
            return f"return {map_arg(self.args[0], _Named)!r}" if self.args else "return None"
        return (f"{head}{self.op}[target={self._pretty_print_target()}](args = {_format_arg(self.args)}, "
                f"kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name
