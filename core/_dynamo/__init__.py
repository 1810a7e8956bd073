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
from .eval_frame import OptimizedModule, allow_in_graph, disable, is_compiling, mark_static_address, reset

__all__ = ["config", "OptimizedModule", "allow_in_graph", "disable", "is_compiling", "mark_static_address",
           "reset", "is_dynamo_compiling"]
is_dynamo_compiling = is_compiling
