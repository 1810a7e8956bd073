"""``ember._dynamo`` (``torch._dynamo``): the names code written for PyTorch's compiler uses.

``ember.compile`` is eager today (results equal eager mode by construction); the names here keep their PyTorch
meanings on that basis: :func:`is_compiling` is False, :func:`disable` and :func:`allow_in_graph` return the
function, :func:`reset` has no cache to clear, ``config`` records settings. A compiled Module is an
:class:`OptimizedModule`.

>>> import ember
>>> ember._dynamo.is_compiling(), isinstance(ember.compile(ember.nn.ReLU()), ember._dynamo.OptimizedModule)
(False, True)
"""
from . import config
from .eval_frame import (
    OptimizedModule, allow_in_graph, disable, disallow_in_graph, forbid_in_graph, graph_break, is_compiling,
    list_backends, mark_dynamic, mark_static, mark_static_address, maybe_mark_dynamic, optimize, reset, set_stance,
)

__all__ = ["config", "OptimizedModule", "allow_in_graph", "disable", "disallow_in_graph", "forbid_in_graph",
           "graph_break", "is_compiling", "is_dynamo_compiling", "list_backends", "mark_dynamic", "mark_static",
           "mark_static_address", "maybe_mark_dynamic", "optimize", "reset", "set_stance"]
is_dynamo_compiling = is_compiling
