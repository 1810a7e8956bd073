"""``ember.fx``: programs as graphs, with PyTorch fx's API and semantics.

:func:`symbolic_trace` runs a Module on :class:`Proxy` inputs and records what it does as a
:class:`Graph` of :class:`Node`; a :class:`GraphModule` runs a graph as Python code generated from it
(``gm.code``).  Graphs can be edited (``inserting_before``, ``replace_all_uses_with``, ``erase_node``,
``eliminate_dead_code``), rewritten by pattern (:func:`replace_pattern`), interpreted node by node
(:class:`Interpreter`, :class:`Transformer`) and annotated (:mod:`ember.fx.passes.shape_prop`).

>>> import ember, ember.fx
>>> gm = ember.fx.symbolic_trace(lambda x: (x + 1).relu())
>>> [n.op for n in gm.graph.nodes]
['placeholder', 'call_function', 'call_method', 'output']
"""
from . import passes  # noqa: F401
from ._symbolic_trace import PH, Tracer, wrap
from .graph import Graph, PythonCode
from .graph_module import GraphModule, symbolic_trace
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_aggregate, map_arg
from .proxy import Attribute, Proxy, TraceError
from .subgraph_rewriter import Match, replace_pattern

__all__ = ["Attribute", "Graph", "GraphModule", "Interpreter", "Match", "Node", "PH", "Proxy", "PythonCode",
           "TraceError", "Tracer", "Transformer", "has_side_effect", "map_aggregate", "map_arg", "replace_pattern",
           "symbolic_trace", "wrap"]
