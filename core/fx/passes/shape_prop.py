"""``ShapeProp``: run a GraphModule once and record each node's tensor shape, dtype and strides in its
``meta["tensor_meta"]`` (and the value's type in ``meta["type"]``).

>>> import ember, ember.fx
>>> from ember.fx.passes.shape_prop import ShapeProp
>>> gm = ember.fx.symbolic_trace(lambda x: x.sum(0))
>>> _ = ShapeProp(gm).propagate(ember.ones(3, 4))
>>> [tuple(n.meta["tensor_meta"].shape) for n in gm.graph.nodes if n.op != "output"]
[(3, 4), (4,)]
"""
from __future__ import annotations

from typing import NamedTuple

from ...layouts import contiguous_format
from ...tensor import Tensor
from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor."""

    shape: tuple
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(t) -> TensorMetadata:
    fmt = contiguous_format if t.is_contiguous() else None
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), fmt, False, {})


class ShapeProp(Interpreter):
    """An Interpreter that records tensor metadata on every node it runs."""

    def run_node(self, n):
        result = super().run_node(n)
        found = []

        def meta(x):
            if isinstance(x, Tensor):
                found.append(True)
                return _extract_tensor_metadata(x)
            return x

        tm = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tm
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the graph on ``args`` (recording metadata); returns its result."""
        return super().run(*args)
