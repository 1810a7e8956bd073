"""``Proxy``: the stand-in value that records what a traced program does with it.

Operators on a proxy (``x + 1``, ``x[0]``), its methods and attributes (``x.sum()``, ``x.shape``) and
calls of ember functions with it (``ember.relu(x)``, through ``__torch_function__``) add nodes to the
tracer's graph instead of computing.  What a proxy cannot stand for is refused as PyTorch refuses it:
branching on it (``if x.sum() > 0``), ``len(x)``, and iterating it where the count is unknown.
"""
from __future__ import annotations

import dis
import inspect
import operator

from ..overrides import is_tensor_method_or_property
from .graph import _MAGIC
from .node import Node, map_aggregate


class TraceError(ValueError):
    """A traced program did something a proxy cannot stand for (control flow on a traced value)."""


class TracerBase:
    """What a :class:`Proxy` asks of its tracer: nodes, arguments, and the answers to ``bool``/``iter``."""

    graph = None
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = True
    traced_func_name = "forward"
    scope = None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        """A node for this call, its arguments turned into graph values by :meth:`create_arg`, as a proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """``a`` as a node argument: proxies become their nodes; containers are walked; plain values stay."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.create_arg(x) for x in a))
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(x) for x in a)
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)
                    if isinstance(k, Node):
                        raise RuntimeError("Keys for dictionaries used as an argument cannot contain a Node. "
                                           f"Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if a is None or a is ... or isinstance(a, (str, int, float, bool, complex, Node)):
            return a
        return self.create_other_arg(a)

    def create_other_arg(self, a):
        """An argument of a kind :meth:`create_arg` does not know (the tracer adds tensors, dtypes, ...)."""
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy):
        return Attribute(obj, "keys")()


def _unpack_count(frame):
    """How many values the instruction running in ``frame`` unpacks (``a, b = proxy``), or None."""
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset >= frame.f_lasti:
            return inst.argval if inst.opname == "UNPACK_SEQUENCE" else None
    return None


class Proxy:
    """A traced value: every use adds a node to ``tracer``'s graph (see the module docstring)."""

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __deepcopy__(self, memo):
        raise RuntimeError("Proxy: a traced value cannot be deep-copied while tracing")

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        n = _unpack_count(frame) if frame is not None else None
        if n is not None:
            return (self[i] for i in range(n))
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracers = {}

        def find(a):
            if isinstance(a, cls):
                tracers[a.tracer] = None

        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while trying to trace "
                               f"operations {orig_method}")
        tracer = next(iter(tracers))
        if is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs)


class ParameterProxy(Proxy):
    """A parameter read while tracing (a ``get_attr`` node) whose shape is answered from the parameter itself, not
    recorded: ``shape``, ``size``, ``dim``, ``ndim``, ``numel``, ``nelement``."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self):
        return self.param.size()

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


class Attribute(Proxy):
    """``proxy.name``: becomes a ``getattr`` node when used as a value, a ``call_method`` when called."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class GraphAppendingTracer(TracerBase):
    """The tracer of a proxy made for a node of an existing graph: appends to that graph."""

    def __init__(self, graph):
        self.graph = graph
        self.scope = None


def _magic(name: str):
    fn = getattr(operator, name)

    def method(self, *rest):
        return self.tracer.create_proxy("call_function", fn, (self, *rest), {})

    def reflected(self, other):
        return self.tracer.create_proxy("call_function", fn, (other, self), {})

    return method, reflected


_REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_",
                "xor", "matmul")
for _name in _MAGIC:
    if not hasattr(operator, _name) or _name == "div":
        continue
    _m, _r = _magic(_name)
    _dunder = _name.rstrip("_")
    setattr(Proxy, f"__{_dunder}__", _m)
    if _name in _REFLECTABLE:
        setattr(Proxy, f"__r{_dunder}__", _r)
Proxy.__abs__ = lambda self: self.tracer.create_proxy("call_function", operator.abs, (self,), {})
del _name, _m, _r, _dunder
