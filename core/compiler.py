"""``ember.compiler`` (``torch.compiler``): the public face of ``ember.compile``'s machinery.

Compilation is eager today, so :func:`is_compiling` is False and :func:`disable` returns the function given
(see :mod:`ember._dynamo`).

>>> import ember
>>> ember.compiler.is_compiling()
False
"""
from ._dynamo import allow_in_graph, config, disable, is_compiling, is_dynamo_compiling, reset

__all__ = ["allow_in_graph", "assume_constant_result", "config", "disable", "is_compiling", "is_dynamo_compiling",
           "list_backends", "reset"]


def assume_constant_result(fn):
    """Treat ``fn``'s result as a constant while compiling: returns ``fn`` (compilation is eager)."""
    return fn


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The compiler backends ``ember.compile(backend=...)`` accepts by name."""
    return ["inductor"]
