"""The ONNX graph under construction: ``GraphContext`` (``g`` in a mapping function, as in PyTorch's symbolics).

A mapping function ``fn(g, node)`` reads the traced node (``node.args`` with :class:`~ember.jit._graph.Ref`
values, ``g.shape(ref)``/``g.dtype(ref)`` from the example run) and emits ONNX nodes with
``g.op("Relu", g.x(ref))``; it returns the ONNX value name of each of the node's outputs.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import dtypes
from ..jit._graph import ARef, Ref, Sym

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class OnnxExporterError(RuntimeError):
    """An export that cannot be completed."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op of the traced graph has no ONNX mapping (PyTorch's ``torch.onnx.errors.UnsupportedOperatorError``)."""


def _onnx():
    try:
        import onnx  # optional dependency: the ``onnx`` extra
    except ImportError:
        raise ImportError("ember.onnx.export needs the 'onnx' package: pip install 'ember[onnx]' (or pip install "
                          "onnx)") from None
    return onnx


def elem_type(d) -> int:
    """The ONNX ``TensorProto`` element type of ember dtype ``d``."""
    tp = _onnx().TensorProto
    table = {"float32": tp.FLOAT, "float64": tp.DOUBLE, "float16": tp.FLOAT16, "bfloat16": tp.BFLOAT16,
             "int64": tp.INT64, "int32": tp.INT32, "int16": tp.INT16, "int8": tp.INT8, "uint8": tp.UINT8,
             "bool": tp.BOOL, "complex64": tp.COMPLEX64, "complex128": tp.COMPLEX128, "uint16": tp.UINT16,
             "uint32": tp.UINT32, "uint64": tp.UINT64}
    t = table.get(d.name)
    if t is None:
        raise OnnxExporterError(f"onnx.export: dtype {d} has no ONNX element type")
    return t


class GraphContext:
    """The ONNX graph being built (see the module docstring)."""

    def __init__(self, graph, opset, input_names):
        self.graph = graph
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self.names = {}          # value id -> ONNX name
        self.input_names = input_names
        self.node = None         # the traced node being mapped
        self._n = 0
        self._consts = {}
        self._sizes = {}
        self.data_dependent = False  # a size follows the data (NonZero): the outputs' sizes are left symbolic

    # -- naming
    def fresh(self, hint="t"):
        self._n += 1
        return f"{hint}_{self._n}"

    # -- reading the traced node
    def x(self, a):
        """The ONNX name of a graph value (a :class:`Ref`)."""
        if isinstance(a, Ref):
            return self.names[a.i]
        raise OnnxExporterError(f"onnx.export: op {self.node.op} expected a tensor argument, got {a!r}")

    def shape(self, a):
        return self.graph.meta[a.i][0]

    def dtype(self, a):
        return self.graph.meta[a.i][1]

    def out_dtype(self, k=0):
        return self.graph.meta[self.node.outs[k]][1]

    def out_shape(self, k=0):
        return self.graph.meta[self.node.outs[k]][0]

    def static(self, v, what="argument"):
        """``v`` with no symbolic size in it (raises naming the op otherwise)."""
        if _has_sym(v):
            raise OnnxExporterError(f"onnx.export: op {self.node.op}{self.where()} has a {what} that follows a "
                                    f"dynamic axis ({v!r}); this op supports only static values there")
        return v

    def where(self):
        n = self.node
        return f" (in module '{n.path}')" if n is not None and n.path else ""

    # -- emitting
    def op(self, op_type, *inputs, outputs=1, domain=None, **attrs):
        """Add a node; ``attrs`` may carry PyTorch's type suffixes (``axis_i``, ``alpha_f``, ``perm_is``)."""
        onnx = _onnx()
        clean = {}
        for k, v in attrs.items():
            if v is None:
                continue
            base, _, suffix = k.rpartition("_")
            if base and suffix in ("i", "f", "s", "t", "is", "fs", "ss", "g"):
                k = base
            if isinstance(v, tuple):
                v = list(v)
            clean[k] = v
        ins = ["" if i is None else i for i in inputs]
        outs = [self.fresh(op_type) for _ in range(outputs)]
        kw = {"domain": domain} if domain else {}
        self.nodes.append(onnx.helper.make_node(op_type, ins, outs, **kw, **clean))
        return outs[0] if outputs == 1 else outs

    @contextlib.contextmanager
    def subgraph(self):
        """Collect the nodes emitted inside the block into a list (a ``Scan``/``Loop`` body) instead of the graph;
        constants stay initializers of the main graph, which a body reads from the outer scope."""
        saved, self.nodes = self.nodes, []
        try:
            yield self.nodes
        finally:
            self.nodes = saved

    def const(self, value, dtype=None):
        """An initializer holding ``value`` (a number, list or array; ``dtype`` an ember dtype or NumPy dtype)."""
        onnx = _onnx()
        np_dtype = dtype.np if isinstance(dtype, dtypes.dtype) else dtype
        arr = np.asarray(value, dtype=np_dtype)
        if arr.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in self._consts:
            return self._consts[key]
        name = self.fresh("const")
        self.initializers.append(onnx.numpy_helper.from_array(np.array(arr, order="C", copy=True), name))
        if key is not None:
            self._consts[key] = name
        return name

    def scalar_like(self, value, d):
        """A 0-d constant of ember dtype ``d``."""
        return self.const(np.asarray(value).astype(d.np) if d.np is not None else value, d.np)

    def cast(self, name, frm, to):
        if frm is to:
            return name
        return self.op("Cast", name, to_i=elem_type(to))

    def arg(self, a, d):
        """A tensor argument (Ref) or a Python number, as an ONNX value of ember dtype ``d``."""
        if isinstance(a, Ref):
            return self.cast(self.x(a), self.dtype(a), d)
        return self.scalar_like(a, d)

    def size(self, sym: Sym):
        """``a * (size of the dynamic input dim) + b`` as a 1-element int64 value."""
        key = (sym.input, sym.dim)
        base = self._sizes.get(key)
        if base is None:
            base = self.op("Shape", self.input_names[sym.input], start_i=sym.dim, end_i=sym.dim + 1)
            self._sizes[key] = base
        v = base
        if sym.a != 1:
            v = self.op("Mul", v, self.const([sym.a], np.int64))
        if sym.b != 0:
            v = self.op("Add", v, self.const([sym.b], np.int64))
        return v

    def ints(self, values):
        """A 1-D int64 value from a list of ints that may hold :class:`Sym` sizes."""
        values = list(values)
        if not any(isinstance(v, Sym) for v in values):
            return self.const(np.asarray(values, dtype=np.int64).reshape(-1), np.int64)
        parts = []
        run = []
        for v in values:
            if isinstance(v, Sym):
                if run:
                    parts.append(self.const(np.asarray(run, dtype=np.int64), np.int64))
                    run = []
                parts.append(self.size(v))
            else:
                run.append(int(v))
        if run:
            parts.append(self.const(np.asarray(run, dtype=np.int64), np.int64))
        return parts[0] if len(parts) == 1 else self.op("Concat", *parts, axis_i=0)

    def axes(self, axes):
        return self.const(np.asarray(list(axes), dtype=np.int64), np.int64)

    def unsqueeze(self, name, axes):
        return self.op("Unsqueeze", name, self.axes(axes))

    def squeeze(self, name, axes):
        return self.op("Squeeze", name, self.axes(axes))

    def reduce(self, op_type, name, axes, keepdim):
        """``Reduce*`` over ``axes`` (all when None), with the axes as attribute or input as the opset wants."""
        keep = 1 if keepdim else 0
        if axes is None:
            return self.op(op_type, name, keepdims_i=keep)
        axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.op(op_type, name, self.axes(axes), keepdims_i=keep)
        return self.op(op_type, name, axes_is=axes, keepdims_i=keep)


def _has_sym(v):
    if isinstance(v, Sym):
        return True
    if isinstance(v, (tuple, list)):
        return any(_has_sym(x) for x in v)
    if isinstance(v, slice):
        return _has_sym((v.start, v.stop, v.step))
    return False


def is_array(a):
    return hasattr(a, "shape") and hasattr(a, "dtype") and hasattr(a, "ndim") and not isinstance(a, (Ref, ARef))
