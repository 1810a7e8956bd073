"""``ember.compiler`` (``torch.compiler``): the public face of ``ember.compile``'s machinery.

:func:`is_compiling` is True while ``ember.compile`` captures a call, :func:`disable` keeps a function out of
compiled graphs (see :mod:`ember._dynamo`).

>>> import ember
>>> ember.compiler.is_compiling()
False
"""
from ._dynamo import (  # noqa: F401
    allow_in_graph, config, disable, is_compiling, is_dynamo_compiling, list_backends, reset, set_stance,
)
from ._dynamo.eval_frame import compile  # noqa: F401
from .export import EXPORTING

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "config", "cudagraph_mark_step_begin", "disable",
           "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends", "nested_compile_region", "reset",
           "set_stance"]


def assume_constant_result(fn):
    """Treat ``fn``'s result as a constant while compiling: returns ``fn``, whose ops are captured like any
    other (a conversion to a Python value inside it is a graph break)."""
    return fn


def is_exporting() -> bool:
    """Whether the calling code runs inside ``ember.export``'s capture of a forward pass."""
    return EXPORTING[0] > 0


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a training or inference step for CUDA graphs: none are captured, nothing to mark."""


def nested_compile_region(fn=None, options=None):
    """Compile ``fn`` once and reuse it at each call site (a decorator): returns ``fn``, captured into the graph
    of the compiled function that calls it."""
    if fn is None:
        return lambda f: f
    return fn
