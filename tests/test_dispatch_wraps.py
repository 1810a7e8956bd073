"""The hot path's two shortcuts, held to the slow path's facts.

Inline wraps: ``unary``, ``binary``, ``record`` and the factories' ``create`` build their result Tensors inline
instead of calling ``tensor._wrap``; each must set exactly the fields ``_wrap`` sets (plus the graph position where
it records), so that a field added to one is not missed by the others.  Dispatch kinds: every function that hands
an op to the interception handlers is registered in ``interception.KINDS``, the table the tracer replays from.
"""
import importlib
import inspect
import pathlib
import re

import pytest

import ember
from ember import dispatch
from ember.autograd.function import OPS
from ember.interception import KIND_NAMES, KINDS
from ember.ops import creation
from ember.tensor import Tensor, _wrap

SLOTS = tuple(s for s in Tensor.__slots__ if not s.startswith("__"))


def fields(t):
    """Every field set on ``t`` itself, slots and instance dict (the array by identity)."""
    got = {s: getattr(t, s) for s in SLOTS if hasattr(t, s)}
    got["_data"] = id(got["_data"])
    got.update(vars(t))
    return got


def _ones(device, grad=False):
    return ember.ones(3, device=device, requires_grad=grad)


PATHS = {  # name -> (the result of one inline wrap, whether it records)
    "unary": (lambda d: dispatch.unary(OPS["neg"], _ones(d)), False),
    "binary": (lambda d: dispatch.binary(OPS["Mul"], _ones(d), _ones(d)), False),
    "binary_scalar": (lambda d: dispatch.binary(OPS["Mul"], _ones(d), 2.0), False),
    "scalar_binary": (lambda d: dispatch.binary(OPS["Mul"], 2, _ones(d)), False),
    "record_unary": (lambda d: dispatch.unary(OPS["neg"], _ones(d, True)), True),
    "record_binary": (lambda d: dispatch.binary(OPS["Mul"], _ones(d, True), _ones(d)), True),
    "create": (lambda d: ember.zeros(3, device=d), False),
}


@pytest.mark.parametrize("inference", [False, True], ids=["plain", "inference_mode"])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_inline_wrap_sets_the_fields_of_wrap(device, path, inference):
    make, records = PATHS[path]
    with ember.inference_mode(inference):
        r = make(device)
        want = fields(_wrap(r._data, r._dev))
    if records and not inference:
        assert r._fn is not None and type(r._fn).__name__.endswith("Backward0")
        want.update(_rg=True, _fn=r._fn)
    assert fields(r) == want


def test_every_inline_wrap_has_a_row():
    """A new inline wrap on the hot path (``_new(Tensor)``) needs its row in PATHS above."""
    sites = {name for mod in (dispatch, creation) for name, fn in vars(mod).items()
             if inspect.isfunction(fn) and fn.__module__ == mod.__name__ and "_new(Tensor)" in inspect.getsource(fn)}
    assert sites == {"unary", "binary", "record", "create"}


def test_every_intercepted_kind_is_registered():
    """Each ``intercepted(kind, ...)`` call in the core names a function of KINDS, and the tracer replays from it."""
    core = pathlib.Path(ember.__file__).parent
    calls = {}
    for path in core.rglob("*.py"):
        if path.name == "interception.py":  # (its docstring shows the call with a placeholder)
            continue
        for kind in re.findall(r"\bintercepted\((\w+),", path.read_text()):
            rel = path.relative_to(core).with_suffix("")
            calls[kind] = getattr(importlib.import_module(".".join(("ember", *rel.parts))), kind)
    assert set(calls) == set(KINDS) == {"unary", "binary", "apply", "view_op", "inplace", "create", "move"}
    assert all(KINDS[name] is fn and KIND_NAMES[fn] == name for name, fn in calls.items())
    from ember.jit import _graph

    assert _graph.KINDS is KINDS
