"""``jit.script`` on ember's trace machinery: scripted functions and modules run their Python eagerly (so control
flow is kept, as TorchScript keeps it), and record their graph on the first call, through the same recorder as
``jit.trace``.  ``.code`` is the Python source of the function (or the module's ``forward``).

>>> import ember
>>> @ember.jit.script
... def scale(x, k: float = 2.0):
...     return x * k if bool(x.sum() > 0) else x
>>> scale(ember.ones(2)), scale(-ember.ones(2))
(tensor([2., 2.]), tensor([-1., -1.]))
>>> print(scale.code)
def scale(x, k: float = 2.0):
    return x * k if bool(x.sum() > 0) else x
>>> scale.graph.ops()  # the ops of the first call that made its result
['Mul']
"""
from __future__ import annotations

import inspect
import textwrap

from ._graph import capture, is_tracing


def source(fn) -> str:
    """The dedented Python source of ``fn`` without its decorators (OSError when Python has none, as for
    PyTorch's scripting of a function typed at the prompt)."""
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    while lines and lines[0].lstrip().startswith("@"):
        lines.pop(0)
    return "\n".join(lines)


def _quiet(tensor, what) -> None:
    """A scripted function converting a tensor to a Python value (``if x.sum() > 0``) is control flow that
    scripting keeps: no trace warning while its first call is recorded."""


def record(owner, fn, args: tuple, kwargs: dict, module=None):
    """``fn(*args, **kwargs)``, its graph kept as ``owner._graph`` when this is ``owner``'s first call outside
    a trace.  A function the recorder cannot follow runs again eagerly (its graph then stays unknown, and
    ``.graph`` says why); an error of the function's own propagates and the next call records again."""
    if owner.__dict__.get("_graph") is not None or "_graph_error" in owner.__dict__ or is_tracing():
        return fn(*args, **kwargs)
    try:
        graph, out = capture(fn, args, kwargs, module=module, on_conversion=_quiet)
    except Exception as e:  # noqa: BLE001 - the function runs again below; its own error propagates there
        out = fn(*args, **kwargs)
        owner.__dict__["_graph_error"] = f"{type(e).__name__}: {e}"
        return out
    owner.__dict__["_graph"] = graph
    return out


def recorded_graph(owner):
    """``owner``'s recorded graph, or PyTorch's RuntimeError type saying why there is none yet."""
    graph = owner.__dict__.get("_graph")
    if graph is not None:
        return graph
    why = owner.__dict__.get("_graph_error")
    if why is not None:
        raise RuntimeError(f"jit.script: the graph of {owner.name if hasattr(owner, 'name') else 'this module'} "
                           f"could not be recorded ({why}); it runs eagerly")
    raise RuntimeError("jit.script: ember records a scripted function's graph on its first call (or from "
                       "example_inputs); call it once before reading .graph")


class ScriptMethod:
    """A method of a scripted or traced module (``module.forward``), bound to it: call it like the method;
    ``.graph`` and ``.code`` are the method's (PyTorch's ``torch.ScriptMethod``)."""

    def __init__(self, owner, fn, name: str):
        self.owner, self._fn, self.name = owner, fn, name
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        return self._fn(self.owner, *args, **kwargs)

    @property
    def graph(self):
        if self.name != "forward":
            raise RuntimeError(f"jit: ember records the graph of forward, not of {self.name}")
        return self.owner.graph

    @property
    def code(self) -> str:
        return self.owner._code_of(self.name)

    def __repr__(self):
        return f"<ScriptMethod {self.name} of {type(self.owner).__name__}>"


class script_method:  # noqa: N801 - PyTorch's name
    """``@jit.script_method``: a method of a ``ScriptModule`` subclass, read as a :class:`ScriptMethod` (with
    ``.graph`` and ``.code``); it runs eagerly.

    >>> import ember
    >>> class Double(ember.jit.ScriptModule):
    ...     @ember.jit.script_method
    ...     def forward(self, x):
    ...         return x * 2
    >>> m = Double()
    >>> m(ember.ones(1)), m.forward.graph.ops()
    (tensor([2.]), ['Mul'])
    """

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__name__ = getattr(fn, "__name__", "method")

    def __set_name__(self, owner, name):
        self.__name__ = name

    def __get__(self, obj, cls=None):
        return self if obj is None else ScriptMethod(obj, self.fn, self.__name__)
