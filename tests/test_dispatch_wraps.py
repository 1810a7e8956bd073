"""The hot path builds its result Tensors inline (``unary``, ``binary``, ``record``, the factories' ``create``)
instead of calling ``tensor._wrap``: each inline wrap must set exactly the fields ``_wrap`` sets (plus the graph
position where it records), so that a field added to one is not missed by the others."""
import inspect

import pytest

import ember
from ember import dispatch
from ember.autograd.function import OPS
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
