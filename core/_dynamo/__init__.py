"""``ember._dynamo`` (``torch._dynamo``): the names code written for PyTorch's compiler uses.

``ember.compile`` captures calls at the op level and replays them (:mod:`.compiled`); :func:`is_compiling` is
True while a call is captured, :func:`disable` keeps a function out of graphs, :func:`explain` reports graph
breaks, :func:`reset` forgets every compiled variant, ``config.recompile_limit`` bounds the variants of one
function. A compiled Module is an :class:`OptimizedModule`.

>>> import ember
>>> ember._dynamo.is_compiling(), isinstance(ember.compile(ember.nn.ReLU()), ember._dynamo.OptimizedModule)
(False, True)
"""
from . import config, exc
from .compiled import explain
from .eval_frame import (
    OptimizedModule, allow_in_graph, disable, disallow_in_graph, forbid_in_graph, graph_break, is_compiling,
    list_backends, mark_dynamic, mark_static, mark_static_address, maybe_mark_dynamic, optimize, reset, set_stance,
)

__all__ = ["config", "exc", "explain", "OptimizedModule", "allow_in_graph", "disable", "disallow_in_graph",
           "forbid_in_graph", "graph_break", "is_compiling", "is_dynamo_compiling", "list_backends", "mark_dynamic",
           "mark_static", "mark_static_address", "maybe_mark_dynamic", "optimize", "reset", "set_stance",
           "assume_constant_result"]
is_dynamo_compiling = is_compiling


def assume_constant_result(fn):
    """Mark ``fn`` as giving the same result on every call, so a compiled graph may keep its value (a decorator;
    ``fn`` itself is unchanged)."""
    fn._dynamo_marked_constant = True
    return fn
