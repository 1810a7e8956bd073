"""``ember.fx._compatibility`` (``torch.fx._compatibility``): the decorator PyTorch marks fx's API with."""
from __future__ import annotations

import textwrap

_NOTES = {True: "\n\n.. note::\n    Backwards-compatibility for this API is guaranteed.\n",
          False: "\n\n.. warning::\n    This API is experimental and is *NOT* backward-compatible.\n"}


def compatibility(is_backward_compatible: bool):
    """Mark a function or class as backward-compatible fx API or not: its docstring says which.

    >>> from ember.fx._compatibility import compatibility
    >>> @compatibility(is_backward_compatible=False)
    ... def f():
    ...     "Doc."
    >>> "NOT" in f.__doc__
    True
    """
    def mark(fn):
        fn.__doc__ = textwrap.dedent(getattr(fn, "__doc__", None) or "") + _NOTES[bool(is_backward_compatible)]
        return fn
    return mark
