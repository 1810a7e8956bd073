"""``Interpreter`` runs a GraphModule node by node; ``Transformer`` builds a new graph while doing so.

Subclass either and override the method of a node kind (``call_function``, ``call_module``, ...) or
:meth:`Interpreter.run_node` to observe or change what each node does.

>>> import ember, ember.fx
>>> gm = ember.fx.symbolic_trace(lambda x: ember.neg(x) * 2)
>>> class Swap(ember.fx.Transformer):
...     def call_function(self, target, args, kwargs):
...         return super().call_function(ember.abs if target is ember.neg else target, args, kwargs)
>>> Swap(gm).transform()(ember.tensor([-3.0])).tolist()
[6.0]
"""
from __future__ import annotations

import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy, TracerBase


class Interpreter:
    """Runs ``module``'s graph (or ``graph``) on real values, one node at a time, freeing each value after
    its last use unless ``garbage_collect_values`` is False."""

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            seen = set()
            self.user_to_last_uses: dict = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True):
        """Run the graph on ``args``; returns what its output node returns."""
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as exc:
                if self.extra_traceback and not getattr(exc, "_fx_noted", False):
                    msg = f"While executing {node.format_node()}"
                    if exc.args and isinstance(exc.args[0], str):
                        exc.args = (f"{exc.args[0]}\n\n{msg}",) + exc.args[1:]
                    exc._fx_noted = True
                raise
            if self.garbage_collect_values:
                for n in self.user_to_last_uses.get(node, []):
                    self.env.pop(n, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list):
        """:meth:`run` on the values of ``args_list``, which is emptied."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n):
        """The value of node ``n``: its arguments fetched, then the method named by its op called."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ------------------------------------------------------------------ one method per node kind
    def placeholder(self, target, args, kwargs):
        if target.startswith("**"):
            return {}
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed "
                               "in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ------------------------------------------------------------------ helpers
    def fetch_attr(self, target: str):
        """The module's attribute at dotted ``target``."""
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        """``n``'s arguments with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(a):
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run Graph.lint() to diagnose such "
                                   "issues")
            return self.env[a]

        return map_arg(args, load)


class _TransformerTracer(TracerBase):
    def __init__(self, graph):
        self.graph = graph
        self.scope = None

    def is_leaf_module(self, m, qualname):
        return True

    def create_other_arg(self, a):
        return a


class Transformer(Interpreter):
    """Runs the graph on proxies, so that each node's method builds the node of a new graph;
    :meth:`transform` returns the new GraphModule."""

    def __init__(self, module):
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The new GraphModule: the graph rebuilt through this transformer's node methods."""
        result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda x: x.node if isinstance(x, Proxy) else x))
        return GraphModule(self.module, self.new_graph)
