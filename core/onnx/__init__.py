"""``ember.onnx.export``: write a model as an ONNX file (PyTorch's ``torch.onnx.export`` signature).

The model is traced once (``ember.jit``'s graph, see ``docs/internals.md``), each op is mapped through one
table (:mod:`ember.onnx._symbolic`, keyed by the op's name in ``ember.autograd.function.OPS``), and the
model is checked with ``onnx.checker.check_model`` before anything is written: an op without a mapping
raises :class:`UnsupportedOperatorError` naming the op and the module it ran in, and leaves no file.
``dynamic_axes`` makes input sizes symbolic, so one file serves every batch size.  Plugin ops map through
the ``ember_onnx_symbolic`` hook or :func:`register_custom_op_symbolic`.  Needs the ``onnx`` package (the
``onnx`` extra); opset 17 or later.
"""
from __future__ import annotations

import enum
import io
import os
import re
import tempfile

import numpy as np

from .. import nn, plugins
from ..autograd.function import OPS
from ..autograd.grad_mode import no_grad
from ..export import ExportedProgram, _state_module, dynamic_dims
from ..jit._graph import Ref, _flatten, _refs_in, capture_dynamic, check_devices
from ..ops.creation import create as _create
from ..state import ONNX_EXPORTING
from ..tensor import Tensor
from ..version import EMBER_RELEASE
from ._builder import GraphContext, OnnxExporterError, UnsupportedOperatorError, _onnx, elem_type
from ._symbolic import SYMBOLICS, map_create

__all__ = ["export", "register_custom_op_symbolic", "unregister_custom_op_symbolic", "is_in_onnx_export",
           "TrainingMode", "OperatorExportTypes", "OnnxExporterError", "UnsupportedOperatorError", "ONNXProgram",
           "errors", "DEFAULT_OPSET", "select_model_mode_for_export"]

DEFAULT_OPSET = 17
MIN_OPSET = 17
MAX_OPSET = 21
_CUSTOM: dict = {}   # "ns::name" -> (fn, opset) from register_custom_op_symbolic
_PLUGIN: dict = {}   # "ns::name" -> fn from plugins' ember_onnx_symbolic hook


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class errors:  # noqa: N801 - PyTorch's ``torch.onnx.errors`` namespace
    OnnxExporterError = OnnxExporterError
    UnsupportedOperatorError = UnsupportedOperatorError


def is_in_onnx_export() -> bool:
    """Whether :func:`export` is tracing a model now."""
    return ONNX_EXPORTING[0]


def _key(name):
    name = name.replace("ember.ops.", "").replace("::", ".")
    return name.replace(".", "::", 1)


def register_custom_op_symbolic(symbolic_name: str, symbolic_fn, opset_version: int = MIN_OPSET):
    """Map a plugin op (``"namespace::name"`` or ``"ember.ops.namespace.name"``) to ONNX.

    ``symbolic_fn(g, *inputs)`` receives the ONNX names of the op's tensor inputs and returns the name(s)
    of its outputs, emitting nodes with ``g.op("OpType", *inputs, attr_i=...)`` as in PyTorch.
    """
    if "::" not in symbolic_name and not symbolic_name.startswith("ember.ops."):
        raise ValueError(f"Failed to register operator {symbolic_name}. The symbolic name must match the format "
                         f"domain::name, and should start with a letter and contain only alphanumerical "
                         f"characters")
    _CUSTOM[_key(symbolic_name)] = (symbolic_fn, opset_version)


def unregister_custom_op_symbolic(symbolic_name: str, opset_version: int = MIN_OPSET):
    _CUSTOM.pop(_key(symbolic_name), None)


def _collect(result):
    if result:
        for name, fn in dict(result).items():
            _PLUGIN[_key(name)] = fn


plugins.pm.hook.ember_onnx_symbolic.call_historic(result_callback=_collect, kwargs={"registry": plugins.REGISTRY})


class ONNXProgram:
    """The exported model: ``.model_proto`` (an ``onnx.ModelProto``), ``.save(path)``."""

    def __init__(self, model_proto):
        self.model_proto = model_proto

    def save(self, destination):
        _write(self.model_proto.SerializeToString(), destination)

    def __repr__(self):
        return f"ONNXProgram(opset={self.model_proto.opset_import[0].version}, " \
               f"nodes={len(self.model_proto.graph.node)})"


class select_model_mode_for_export:  # noqa: N801 - PyTorch's name
    """Context manager putting ``model`` in the mode of ``mode`` (a :class:`TrainingMode`), restored on exit."""

    def __init__(self, model, mode):
        self.model, self.mode = model, mode

    def __enter__(self):
        self.saved = [(m, m.training) for m in self.model.modules()] if isinstance(self.model, nn.Module) else []
        if self.saved and self.mode == TrainingMode.EVAL:
            self.model.eval()
        elif self.saved and self.mode == TrainingMode.TRAINING:
            self.model.train()
        return self

    def __exit__(self, *exc):
        for m, t in self.saved:
            m.training = t


# --------------------------------------------------------------------------- export
def _args_of(args, kwargs):
    if isinstance(args, Tensor):
        return (args,), dict(kwargs or {})
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict):  # PyTorch's legacy form: keyword arguments last
        kwargs.update(args[-1])
        args = args[:-1]
    return args, kwargs


def _dynamic_from_axes(dynamic_axes, input_names, n_inputs):
    """``[(flat input index, dim)]`` and ``{name: {dim: label}}`` from PyTorch's ``dynamic_axes``."""
    dyn, labels = [], {}
    for name, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            lab = {int(d): str(v) for d, v in axes.items()}
        elif isinstance(axes, (list, tuple)):
            lab = {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(axes)}
        else:
            raise ValueError(f"onnx.export: dynamic_axes[{name!r}] must be a dict {{axis: name}} or a list of axes")
        labels[name] = lab
        if name in input_names[:n_inputs]:
            i = input_names.index(name)
            dyn += [(i, d) for d in lab]
    return dyn, labels


def _tie(dyn, labels, in_names, flat):
    """The dynamic dims with their axis in range, and ``{first: [others]}`` for the input dims that share one
    ``dynamic_axes`` label (a batch axis of two inputs: they must grow together when traced)."""
    dyn = [(i, d % flat[i].ndim if -flat[i].ndim <= d < flat[i].ndim else d) for i, d in dyn]
    by_label, tied = {}, {}
    for i, d in dyn:
        name = in_names[i]
        label = next((lab for ax, lab in labels.get(name, {}).items() if ax % max(flat[i].ndim, 1) == d), None)
        if label is None:
            continue
        if label in by_label:
            tied.setdefault(by_label[label], []).append((i, d))
        else:
            by_label[label] = (i, d)
    return dyn, tied


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamo=True, external_data=True, dynamic_shapes=None,
           custom_translation_table=None, report=False, optimize=True, verify=False, profile=False,
           dump_exported_program=False, artifacts_dir=".", export_params=True, keep_initializers_as_inputs=False,
           dynamic_axes=None, training=TrainingMode.EVAL, operator_export_type=OperatorExportTypes.ONNX,
           do_constant_folding=True, custom_opsets=None, export_modules_as_functions=False,
           autograd_inlining=True):
    """Export ``model`` (an ``nn.Module`` or a function of tensors) run on ``args``, or an
    ``ExportedProgram`` (its graph as it stands), to ONNX.

    Writes ``f`` (a path or a binary file object) when given, only once the whole graph has mapped and
    passed ``onnx.checker.check_model``; returns an :class:`ONNXProgram`.  ``input_names``/``output_names``
    name the graph's inputs and outputs; ``dynamic_axes`` (``{name: {axis: label}}`` or ``{name: [axes]}``)
    or ``dynamic_shapes`` (as in ``ember.export.export``) make input dimensions symbolic; ``training``
    chooses the mode the model is traced in (eval by default, as in PyTorch).  Opset 17 to 21.
    """
    onnx = _onnx()
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"onnx.export: opset_version {opset} is not supported; ember exports opsets "
                         f"{MIN_OPSET} to {MAX_OPSET}")
    if isinstance(model, ExportedProgram):  # the program's graph, as any fx pass on its graph_module left it
        graph = model.op_graph()
        in_names = list(input_names or model.graph_signature.user_inputs)
        proto = _build(onnx, graph, _state_module(model.state_dict), opset, in_names, output_names, {},
                       export_params, keep_initializers_as_inputs, custom_opsets)
        return _finish(onnx, proto, f, verbose)
    args, kwargs = _args_of(args, kwargs)
    flat = []
    _flatten((args, kwargs), flat)
    check_devices(flat, "onnx.export")
    n_in = len(flat)
    in_names = list(input_names or [])
    if len(in_names) > n_in:
        raise ValueError(f"onnx.export: {len(in_names)} input_names for {n_in} tensor inputs")
    in_names += [f"input_{i}" if n_in > 1 else "input" for i in range(len(in_names), n_in)]
    dyn, labels = _dynamic_from_axes(dynamic_axes, in_names, n_in)
    fn = model.forward if isinstance(model, nn.Module) else model
    if dynamic_shapes is not None:
        dyn += dynamic_dims(fn, args, kwargs, dynamic_shapes)
    module = model if isinstance(model, nn.Module) else None
    dyn, tied = _tie(dyn, labels, in_names, flat)
    ONNX_EXPORTING[0] = True
    try:
        with select_model_mode_for_export(model, training), no_grad():
            graph, _ = capture_dynamic(model, args, kwargs, module, dyn, "onnx.export", tied)
    finally:
        ONNX_EXPORTING[0] = False
    proto = _build(onnx, graph, module, opset, in_names, output_names, labels, export_params,
                   keep_initializers_as_inputs, custom_opsets)
    return _finish(onnx, proto, f, verbose)


def _finish(onnx, proto, f, verbose):
    """Check ``proto``, print it when ``verbose``, write it to ``f`` when given; the :class:`ONNXProgram`."""
    onnx.checker.check_model(proto)
    if verbose:
        printer = getattr(onnx, "printer", None)
        print(printer.to_text(proto.graph) if printer is not None else onnx.helper.printable_graph(proto.graph))
    if f is not None:
        _write(proto.SerializeToString(), f)
    return ONNXProgram(proto)


def _write(data: bytes, f):
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)) or ".", suffix=".onnx.tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    elif isinstance(f, io.IOBase) or hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"onnx.export: f must be a path or a binary file object, got {type(f).__name__}")


def _value_info(onnx, name, d, shape, labels):
    dims = [labels.get(i, s) for i, s in enumerate(shape)] if shape is not None else None
    return onnx.helper.make_tensor_value_info(name, elem_type(d), dims)


def _plugin_origin(n):
    if n.op.startswith("ember.ops."):
        return n.op
    cls = OPS.get(n.op)
    origin = getattr(cls, "_origin", "") if cls is not None else ""
    m = re.search(r"op (ember\.ops\.[\w.]+)", origin or "")
    return m.group(1) if m else None


def _evaluate(n):
    a = list(n.args)
    if a[3] is None and len(a) > 4 and hasattr(a[4], "shape"):
        a[4] = a[0].kernels["copy"](a[4])
    t = _create(n.op, *a)
    return t._dev.backend.to_numpy(t._data)


def _build(onnx, graph, module, opset, in_names, output_names, labels, export_params, keep_inits, custom_opsets):
    g = GraphContext(graph, opset, in_names)
    helper = onnx.helper
    inputs = []
    for i, vid in enumerate(graph.inputs):
        shape, d = graph.meta[vid]
        g.names[vid] = in_names[i]
        lab = dict(labels.get(in_names[i], {}))
        for inp, dim in graph.dynamic:
            if inp == i and dim not in lab:
                lab[dim] = f"{in_names[i]}_dim_{dim}"
        inputs.append(_value_info(onnx, in_names[i], d, shape, lab))
    initializers = []
    for vid, path in graph.params.items():
        t = _resolve(module, path) if module is not None else None
        if t is None:
            raise OnnxExporterError(f"onnx.export: parameter {path} not found on the model")
        g.names[vid] = path
        arr = t._dev.backend.to_numpy(t.detach()._data)
        if export_params:
            initializers.append(onnx.numpy_helper.from_array(np.array(arr, order="C", copy=True), path))
            if keep_inits:
                inputs.append(_value_info(onnx, path, t.dtype, arr.shape, {}))
        else:
            inputs.append(_value_info(onnx, path, t.dtype, arr.shape, {}))
    for vid, t in graph.consts.items():
        g.names[vid] = g.const(t._dev.backend.to_numpy(t.detach()._data))
    views = _Views(_last_reads(graph))
    for k, n in enumerate(graph.nodes):
        g.node = n
        outs = _map(g, n, opset)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        if len(outs) != len(n.outs):
            raise OnnxExporterError(f"onnx.export: the mapping of op {n.op}{g.where()} gave {len(outs)} outputs "
                                    f"for {len(n.outs)}")
        for vid, name in zip(n.outs, outs):
            if name is not None:
                g.names[vid] = name
        if n.kind == "view_op" and isinstance(n.args[0], Ref) and len(n.outs) == 1:
            views.add(n)
        elif n.kind == "inplace":
            views.write(g, n, k, opset)
    flat_out = []
    _flat_refs(graph.out_spec, flat_out)
    out_names = list(output_names or [])
    out_names += [f"output_{i}" if len(flat_out) > 1 else "output" for i in range(len(out_names), len(flat_out))]
    outputs = []
    dynamic = bool(graph.dynamic) or g.data_dependent
    for name, r in zip(out_names, flat_out):
        src = g.names.get(r.i)
        if src is None:
            raise OnnxExporterError(f"onnx.export: output {name} is produced by an op output that has no ONNX "
                                    f"mapping")
        g.nodes.append(helper.make_node("Identity", [src], [name]))
        shape, d = graph.meta[r.i]
        lab = labels.get(name, {})
        if dynamic and not lab:
            lab = {i: f"{name}_dim_{i}" for i in range(len(shape))}
        outputs.append(_value_info(onnx, name, d, shape, lab))
    gp = helper.make_graph(g.nodes, "ember_graph", inputs, outputs, initializer=initializers + g.initializers)
    imports = [helper.make_opsetid("", opset)]
    for dom, ver in (custom_opsets or {}).items():
        imports.append(helper.make_opsetid(dom, ver))
    proto = helper.make_model(gp, opset_imports=imports, producer_name="ember", producer_version=_version())
    proto.ir_version = 8 if opset <= 18 else 9
    return proto


def _last_reads(graph):
    """``{value id: index of the last node reading it}``, the outputs reading at ``len(nodes)``."""
    last = {}
    for k, n in enumerate(graph.nodes):
        for i in (n.ins if n.ins is not None else _refs_in(n.args)):
            last[i] = k
    for i in _refs_in(graph.out_spec):
        last[i] = len(graph.nodes)
    return last


class _Views:
    """The views met so far and the values that are one tensor, so that an in-place write reaches every
    tensor sharing its target's memory.

    An in-place op's result is its target tensor with a new value id: ids of one tensor form a class, named
    by its first id.  When the target is a view, the tensor owning the memory gets the new value at the view's
    positions (found by viewing an iota of it the same way, then ``ScatterElements``), and every view of it
    read later is taken again from its new value.  Only what is read later is rebuilt.
    """

    def __init__(self, last_read):
        self.last_read = last_read
        self.base = {}      # class of a view -> (class of the tensor it views, its node)
        self.canon = {}     # value id -> its class
        self.members = {}   # class -> its value ids

    def _cls(self, i):
        return self.canon.get(i, i)

    def add(self, n):
        self.base[n.outs[0]] = (self._cls(n.args[0].i), n)

    def _name(self, g, c, name):
        for i in self.members.get(c, (c,)):
            g.names[i] = name

    def _read_after(self, c, k):
        return any(self.last_read.get(i, -1) > k for i in self.members.get(c, (c,)))

    def write(self, g, n, k, opset):
        target = self._cls(n.args[0].i)
        self.canon[n.outs[0]] = target
        self.members.setdefault(target, [target]).append(n.outs[0])
        if not self.base:
            return
        new = g.names[n.outs[0]]
        chain, root = [], target
        while root in self.base:
            root, node = self.base[root]
            chain.append(node)
        chain.reverse()
        family = [c for c in self._descendants(root) if c != target]
        later = {c for c in family if self._read_after(c, k)}
        if not chain and not later or chain and not later and not self._read_after(root, k):
            return
        for c in list(later):  # the views between the owner and a view read later are taken again too
            while c in self.base and c != root:
                later.add(c)
                c = self.base[c][0]
        if chain:
            old = g.names[root]
            shape = g.op("Shape", old)
            count = g.squeeze(g.op("ReduceProd", shape, keepdims_i=1), [0])
            iota = g.op("Reshape", g.op("Range", g.const(np.asarray(0, np.int64)), count,
                                        g.const(np.asarray(1, np.int64))), shape)
            positions = self._chain(g, chain, root, iota, opset)
            flat = g.op("ScatterElements", g.op("Reshape", old, g.ints([-1])),
                        g.op("Reshape", positions, g.ints([-1])),
                        g.op("Reshape", g.op("Expand", new, g.op("Shape", positions)), g.ints([-1])), axis_i=0)
            self._name(g, root, g.op("Reshape", flat, shape))
        self._name(g, target, new)
        for c in family:
            if c in later:
                node = self.base[c][1]
                g.node = node
                out = _map(g, node, opset)
                self._name(g, c, out[0] if isinstance(out, (list, tuple)) else out)
        g.node = n

    def _descendants(self, root):
        found = [root]
        for c, (b, _) in self.base.items():  # in node order: a view's base comes before it
            if b in found:
                found.append(c)
        return found[1:]

    def _chain(self, g, chain, root, start, opset):
        """The ONNX name of the last of ``chain``'s views taken from ``start`` in place of ``root``."""
        classes = [root] + [n.outs[0] for n in chain]
        saved = {i: g.names[i] for c in classes for i in self.members.get(c, (c,))}
        out = start
        try:
            self._name(g, root, start)
            for n in chain:
                g.node = n
                out = _map(g, n, opset)
                out = out[0] if isinstance(out, (list, tuple)) else out
                self._name(g, n.outs[0], out)
        finally:
            g.names.update(saved)
        return out


def _version():
    return EMBER_RELEASE


def _resolve(module, path):
    m = module
    *mods, leaf = path.split(".")
    for name in mods:
        m = m._modules[name]
    t = m._parameters.get(leaf)
    return t if t is not None else m._buffers.get(leaf)


def _flat_refs(spec, acc):
    if isinstance(spec, Ref):
        acc.append(spec)
    elif isinstance(spec, (tuple, list)):
        for x in spec:
            _flat_refs(x, acc)
    elif isinstance(spec, dict):
        for x in spec.values():
            _flat_refs(x, acc)


def _map(g, n, opset):
    if n.kind == "create":
        return map_create(g, n, _evaluate)
    if n.kind == "move":
        return g.op("Identity", g.x(n.args[0]))
    qual = _plugin_origin(n)
    if qual is not None:
        key = _key(qual)
        fn = _CUSTOM.get(key, (None,))[0] or _PLUGIN.get(key)
        if fn is None:
            ns = key.split("::")[0]
            raise UnsupportedOperatorError(
                f"onnx.export: op {qual} (plugin namespace '{ns}'){g.where()} has no ONNX mapping at opset {opset}. "
                f"A plugin registers one by implementing the ember_onnx_symbolic(registry) hook (ember.hookspecs, "
                f"see docs/plugins.md) returning {{'{key}': fn}}, or call "
                f"ember.onnx.register_custom_op_symbolic('{key}', fn, {opset})")
        ins = [g.x(a) if isinstance(a, Ref) else a for a in n.args]
        return fn(g, *ins)
    fn = SYMBOLICS.get(n.op)
    if fn is None:
        where = f" in module '{n.path}'" if n.path else " at the top level of the model"
        raise UnsupportedOperatorError(f"onnx.export: op '{n.op}' ({n.kind}){where} has no ONNX mapping at opset "
                                       f"{opset} in ember. Exporting the operator '{n.op}' to ONNX opset version "
                                       f"{opset} is not supported.")
    return fn(g, n)

