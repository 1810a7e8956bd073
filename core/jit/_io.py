"""A :class:`~ember.jit._graph.Graph` as plain data for ember's safe checkpoint format, and back.

Every non-scalar constant becomes a one-key dict naming its kind (``{"tuple": [...]}``, ``{"ref": 3}``,
``{"slice": [0, None, 1]}``, ``{"adtype": "float32"}`` for an array dtype, ``{"fn": "_steps"}`` for one of
``ember.ops.creation``'s composite factories, ...), so decoding is a table lookup: it creates no objects
but these, and op names are looked up in ``ember.autograd.function.OPS``.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..backend import BACKENDS, resolve
from ..backend import device as _device
from ..ops import creation
from ..tensor import Tensor, _wrap
from ._graph import ARef, Gen, Graph, Node, Ref, Sym

_DT = {d.name: d for d in dtypes.ALL}
_FNS = {"_steps": creation._steps, "_linear": creation._linear, "_powers": creation._powers}


def _array_dtype_name(x):
    if isinstance(x, np.dtype):
        d = dtypes.FROM_NP.get(x)
        if d is not None:
            return d.name
    for b in BACKENDS.values():
        for d in dtypes.ALL:
            try:
                if b.array_dtype(d) == x:
                    return d.name
            except Exception:  # noqa: BLE001 - a backend without that dtype
                continue
    return None


def _enc(a, dev, where):
    if a is None or type(a) in (bool, int, float, str):
        return a
    t = type(a)
    if t is Ref:
        return {"ref": a.i}
    if t is ARef:
        return {"aref": a.i}
    if t is Sym:
        return {"sym": [a.input, a.dim, a.a, a.b]}
    if t is Gen:
        return {"gen": 0}
    if t is tuple:
        return {"tuple": [_enc(x, dev, where) for x in a]}
    if t is list:
        return {"list": [_enc(x, dev, where) for x in a]}
    if t is dict:
        return {"dict": [[_enc(k, dev, where), _enc(v, dev, where)] for k, v in a.items()]}
    if t is slice:
        return {"slice": [_enc(a.start, dev, where), _enc(a.stop, dev, where), _enc(a.step, dev, where)]}
    if a is Ellipsis:
        return {"ellipsis": 0}
    if isinstance(a, (np.integer, np.floating, np.bool_)):
        return {"np": [np.dtype(type(a)).str, a.item()]}
    if isinstance(a, complex):
        return {"complex": [a.real, a.imag]}
    if isinstance(a, dtypes.dtype):
        return {"dtype": a.name}
    if isinstance(a, _device):
        return {"device": str(a)}
    if t is type(np) and dev is not None and a is dev.backend.xp:
        return {"xp": 0}
    if callable(a) and _FNS.get(getattr(a, "__name__", None)) is a:
        return {"fn": a.__name__}
    name = _array_dtype_name(a) if isinstance(a, np.dtype) or not hasattr(a, "shape") else None
    if name is not None:
        return {"adtype": name}
    if hasattr(a, "shape") and hasattr(a, "dtype") and dev is not None:
        return {"array": _wrap(a, dev).detach().clone()}
    raise RuntimeError(f"jit.save: {where} has an argument of type {t.__name__}, which cannot be saved as data")


def _dec(a, dev):
    if not isinstance(a, dict):
        return a
    (k, v), = a.items()
    if k == "ref":
        return Ref(v)
    if k == "aref":
        return ARef(v)
    if k == "tuple":
        return tuple(_dec(x, dev) for x in v)
    if k == "list":
        return [_dec(x, dev) for x in v]
    if k == "slice":
        return slice(*(_dec(x, dev) for x in v))
    if k == "sym":
        return Sym(*v)
    if k == "gen":
        return Gen()
    if k == "dict":
        return {_dec(x, dev): _dec(y, dev) for x, y in v}
    if k == "ellipsis":
        return Ellipsis
    if k == "np":
        return np.dtype(v[0]).type(v[1])
    if k == "complex":
        return complex(*v)
    if k == "dtype":
        return _DT[v]
    if k == "device":
        return resolve(v)
    if k == "adtype":
        return dev.backend.array_dtype(_DT[v])
    if k == "xp":
        return dev.backend.xp
    if k == "fn":
        return _FNS[v]
    if k == "array":
        return v.to(dev)._data
    raise RuntimeError(f"jit.load: unknown constant kind {k!r} in the graph")


def encode_graph(g: Graph, device=None) -> dict:
    nodes = []
    for n in g.nodes:
        dev = n.args[0] if n.kind == "create" else device
        where = f"op {n.op}" + (f" (in {n.path})" if n.path else "")
        nodes.append([n.kind, n.op, _enc(tuple(n.args), dev, where), list(n.outs), n.multi, n.path])
    return {"inputs": list(g.inputs), "in_spec": _enc(g.in_spec, None, "the inputs"),
            "params": [[i, p] for i, p in g.params.items()],
            "consts": [[i, t.detach()] for i, t in g.consts.items()],
            "nodes": nodes, "out_spec": _enc(g.out_spec, None, "the outputs"),
            "meta": [[i, list(s), d.name] for i, (s, d) in g.meta.items()], "n_values": g.n_values,
            "device": str(device) if device is not None else "cpu", "dynamic": [list(x) for x in g.dynamic]}


def decode_graph(d: dict, map_location=None) -> Graph:
    g = Graph()
    target = resolve(map_location) if isinstance(map_location, (str, _device)) else None
    g.inputs = list(d["inputs"])
    g.in_spec = _dec(d["in_spec"], None)
    g.params = {int(i): p for i, p in d["params"]}
    g.consts = {int(i): t for i, t in d["consts"]}
    for t in g.consts.values():
        if not isinstance(t, Tensor):
            raise RuntimeError("jit.load: a graph constant is not a tensor")
    home = target if target is not None else resolve(d.get("device", "cpu"))
    for kind, op, args, outs, multi, path in d["nodes"]:
        raw = args["tuple"]
        dev = _dec(raw[0], None) if kind == "create" else home
        if target is not None and dev is not None:
            dev = target
        args = tuple(_dec(x, dev) for x in raw)
        if kind == "create":
            args = (dev,) + args[1:]
        if target is not None and kind == "move":
            args = args[:1] + (target,) + args[2:]
        g.nodes.append(Node(kind, op, args, tuple(outs), multi, path))
    g.out_spec = _dec(d["out_spec"], None)
    g.meta = {int(i): (tuple(s), _DT[n]) for i, s, n in d["meta"]}
    g.n_values = d["n_values"]
    g.dynamic = [tuple(x) for x in d.get("dynamic", [])]
    return g
