"""``ember.library``: custom operators, as ``torch.library`` declares them.

An operator has a schema (``"mylib::scale(Tensor x, float k=1.) -> Tensor"``, given as a string or inferred
from a Python signature), kernels per device type, a fake kernel (shapes and dtypes only: the ``meta`` device
runs it), an autograd formula and a batching rule.  It is shown as ``ember.ops.<ns>.<name>`` with its
``.default`` overload and runs through :func:`ember.dispatch.apply` as one Op, so tracing, autocast, vmap,
the profiler and ONNX export see it as they see a built-in op.  Plugin ops (``registry.add_op``, see
:mod:`ember.plugin_ops`) are published through the same namespaces and built by the same Op factory.

>>> import ember
>>> from ember import Tensor
>>> @ember.library.custom_op("doc::scale", mutates_args=())
... def scale(x: Tensor, k: float = 2.0) -> Tensor:
...     return x * k
>>> @scale.register_fake
... def _(x, k=2.0):
...     return ember.empty_like(x)
>>> ember.ops.doc.scale(ember.ones(2)), ember.ops.doc.scale.default(ember.ones(1), 3.0)
(tensor([2., 2.]), tensor([3.]))
>>> ember.ops.doc.scale(ember.empty(5, device="meta")).shape
ember.Size([5])
"""
from __future__ import annotations

import collections.abc
import inspect
import numbers
import re
import types
import typing
from typing import Callable

from . import dtypes, overrides
from .autograd.function import Op
from .autograd.grad_mode import no_grad
from .backend import device as _device
from .backend import resolve
from .dispatch import AUTOCAST, apply
from .registry import bind, drop, export, unexport
from .state import is_grad_enabled
from .tensor import Tensor, _wrap

__all__ = ["Library", "custom_op", "define", "impl", "register_kernel", "register_fake", "register_autograd",
           "register_vmap", "register_autocast", "infer_schema", "get_ctx", "opcheck", "CustomOpDef", "OpOverload",
           "OpOverloadPacket", "FunctionSchema", "parse_schema"]


# --------------------------------------------------------------------------- schema
_TYPES = {"Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Device", "Layout",
          "MemoryFormat", "Generator", "Any"}
_ARG = re.compile(r"^(\w+)(\(\w+!?\))?(\[\d*\])?(\?)?$")


class Argument:
    """One argument or return of a schema: its type, name, default and whether the op writes into it."""

    __slots__ = ("name", "type", "is_list", "optional", "alias", "default", "has_default", "kwarg_only", "size")

    def __init__(self, name, type_, is_list=False, optional=False, alias="", default=None,
                 has_default=False, kwarg_only=False, size=None):
        self.name, self.type, self.is_list, self.optional = name, type_, is_list, optional
        self.alias, self.default, self.has_default, self.kwarg_only, self.size = (alias, default, has_default,
                                                                                  kwarg_only, size)

    @property
    def mutable(self) -> bool:
        """Whether the op writes into this argument (``Tensor(a!)``)."""
        return self.alias.endswith("!)")

    @property
    def is_tensor(self) -> bool:
        return self.type == "Tensor"

    def type_str(self) -> str:
        s = self.type + self.alias
        return s + (f"[{self.size or ''}]" if self.is_list else "") + ("?" if self.optional else "")

    def __str__(self):
        s = self.type_str() + (f" {self.name}" if self.name else "")
        return s + (f"={_default_str(self.default)}" if self.has_default else "")


def _default_str(v):
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_default_str(x) for x in v) + "]"
    return repr(v) if not isinstance(v, float) or v != int(v) else f"{int(v)}."


class FunctionSchema:
    """A parsed schema: ``name`` (``ns::op``), ``overload``, ``arguments`` and ``returns``.

    >>> str(parse_schema("my::f(Tensor(a!) x, *, float k=1.) -> ()"))
    'my::f(Tensor(a!) x, *, float k=1.) -> ()'
    """

    def __init__(self, name, overload, arguments, returns):
        self.name, self.overload, self.arguments, self.returns = name, overload, tuple(arguments), tuple(returns)

    def __str__(self):
        args, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                args.append("*")
                star = True
            args.append(str(a))
        rets = self.returns
        ret = str(rets[0]) if len(rets) == 1 else "(" + ", ".join(str(r) for r in rets) + ")"
        name = self.name + (f".{self.overload}" if self.overload else "")
        return f"{name}({', '.join(args)}) -> {ret}"

    __repr__ = __str__

    @property
    def mutated(self) -> tuple:
        """The names of the arguments the op writes into."""
        return tuple(a.name for a in self.arguments if a.mutable)


def _split(text):
    """Split ``text`` at the commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([" and 1 or (-1 if ch in ")]" else 0)
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_default(text, schema):
    text = text.strip()
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    if text[:1] in "\"'" and text[-1:] == text[:1]:
        return text[1:-1]
    if text.startswith("[") and text.endswith("]"):
        return [_parse_default(p, schema) for p in _split(text[1:-1])]
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            raise RuntimeError(f"schema {schema!r}: cannot read default value {text!r}") from None


def _parse_type(text, schema, kwarg_only=False, name=""):
    m = _ARG.match(text.replace(" ", ""))
    if m is None or m.group(1) not in _TYPES:
        raise RuntimeError(f"schema {schema!r}: unknown type specifier {text!r}. Valid schema types include "
                           f"{', '.join(sorted(_TYPES))}, each optionally with [] (a list) and ? (optional)")
    base, alias, lst, opt = m.groups()
    size = int(lst[1:-1]) if lst and lst[1:-1] else None
    return Argument(name, base, bool(lst), bool(opt), alias or "", kwarg_only=kwarg_only, size=size)


def parse_schema(schema: str, name: str | None = None) -> FunctionSchema:
    """Parse ``"[ns::]name[.overload](args) -> returns"`` (PyTorch's schema language).  ``name`` stands for the
    operator's name where ``schema`` gives none (``"(Tensor x) -> Tensor"``).  Bad input: RuntimeError."""
    m = re.match(r"^\s*([\w:.]*)\s*\((.*)\)\s*->\s*(.+?)\s*$", schema, re.S)
    if m is None:
        raise RuntimeError(f"schema {schema!r}: expected 'name(arguments) -> returns'")
    full, arg_text, ret_text = m.groups()
    full = full or name or ""
    if not full:
        raise RuntimeError(f"schema {schema!r}: the operator has no name")
    opname, _, overload = full.partition(".")
    args, kwarg_only, seen = [], False, set()
    for part in _split(arg_text):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, default = part.partition("=")
        pieces = decl.strip().rsplit(None, 1)
        if len(pieces) != 2 or not pieces[1].isidentifier():
            raise RuntimeError(f"schema {schema!r}: expected 'type name' for an argument, got {part!r}")
        a = _parse_type(pieces[0], schema, kwarg_only, pieces[1])
        if a.name in seen:
            raise RuntimeError(f"schema {schema!r}: argument {a.name!r} is declared twice")
        seen.add(a.name)
        if eq:
            a.default, a.has_default = _parse_default(default, schema), True
        elif args and args[-1].has_default and not kwarg_only:
            raise RuntimeError(f"schema {schema!r}: argument {a.name!r} without a default follows one with a default")
        args.append(a)
    ret_text = ret_text.strip()
    if ret_text.startswith("(") and ret_text.endswith(")"):
        ret_parts = _split(ret_text[1:-1])
    else:
        ret_parts = [ret_text]
    rets = [_parse_type(r.split()[0], schema) for r in ret_parts]
    return FunctionSchema(opname, overload, args, rets)


# --------------------------------------------------------------------------- schema inference
def _hint_type(ann, where):
    """The schema type of annotation ``ann``, or None when it has none."""
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        t = _hint_type(inner[0], where) if len(inner) == 1 else None
        return None if t is None else t + "?"
    if origin in (list, tuple, collections.abc.Sequence) and len(args) == 1:
        t = _hint_type(args[0], where)
        return None if t is None or t.endswith(("?", "]")) else t + "[]"
    simple = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
              numbers.Number: "Scalar", dtypes.dtype: "ScalarType", _device: "Device"}
    if origin in (typing.Union, types.UnionType) and set(args) == {int, float}:
        return "Scalar"
    return simple.get(ann)


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None) -> str:
    """The schema of a function from its type hints (``torch.library.infer_schema``).

    ``mutates_args``: the names of the arguments the function writes into, or ``"unknown"`` (every Tensor).

    >>> def f(x: Tensor, y: Tensor, alpha: float = 1.0) -> Tensor: ...
    >>> infer_schema(f, mutates_args=("y",))
    '(Tensor x, Tensor(a1!) y, float alpha=1.) -> Tensor'
    """
    sig = inspect.signature(prototype_function)
    try:
        hints = typing.get_type_hints(prototype_function)
    except Exception:  # noqa: BLE001 - a hint that does not resolve is reported per parameter below
        hints = getattr(prototype_function, "__annotations__", {})
    where = "infer_schema(func): "
    unknown = mutates_args == "unknown"
    if not unknown:
        if isinstance(mutates_args, str) or not isinstance(mutates_args, typing.Iterable):
            raise ValueError(f"{where}mutates_args must be a tuple of parameter names or 'unknown', got "
                             f"{mutates_args!r}")
        missing = set(mutates_args) - set(sig.parameters)
        if missing:
            raise ValueError(f"{where}mutates_args names {sorted(missing)}, which are not parameters of the function "
                             f"{tuple(sig.parameters)}")
    parts, star = [], False
    for i, (name, p) in enumerate(sig.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"{where}Parameter {name} is *args or **kwargs; a custom op takes named parameters only")
        if name not in hints:
            raise ValueError(f"{where}Parameter {name} must have a type annotation. Got func with signature {sig})")
        t = _hint_type(hints[name], where)
        if t is None:
            raise ValueError(f"{where}Parameter {name} has unsupported type {hints[name]}. The valid types are "
                             f"Tensor, int, float, bool, str, dtype, device, Sequence/list of those and Optional.")
        if p.kind == p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if t.startswith("Tensor") and (unknown or name in mutates_args):
            t = f"Tensor(a{i}!)" + t[len("Tensor"):]
        elif name in (() if unknown else mutates_args):
            raise ValueError(f"{where}mutates_args names {name}, which is not a Tensor parameter")
        default = "" if p.default is inspect.Parameter.empty else f"={_default_str(p.default)}"
        parts.append(f"{t} {name}{default}")
    if "return" not in hints:
        raise ValueError(f"{where}No return type annotation was provided. Please add one.")
    ret = hints["return"]
    if ret is None or ret is type(None):
        rets = "()"
    elif typing.get_origin(ret) is tuple:
        rets = "(" + ", ".join(_return_type(a, where) for a in typing.get_args(ret)) + ")"
    else:
        rets = _return_type(ret, where)
    return f"({', '.join(parts)}) -> {rets}"


def _return_type(ann, where):
    t = _hint_type(ann, where)
    if t is None:
        raise ValueError(f"{where}Return has unsupported type {ann}.")
    return t


# --------------------------------------------------------------------------- binding arguments
def _type_ok(a: Argument, v) -> bool:
    if v is None:
        return a.optional or (a.has_default and a.default is None)
    if a.is_list:
        if a.size and isinstance(v, int) and a.type in ("int", "SymInt"):
            return True
        return isinstance(v, (list, tuple)) and all(_type_ok(Argument("", a.type), x) for x in v)
    return _CHECKS.get(a.type, lambda x: True)(v)


_CHECKS = {
    "Tensor": lambda v: isinstance(v, Tensor),
    "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, Tensor),
    "SymInt": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, Tensor),
    "float": lambda v: isinstance(v, numbers.Real) and not isinstance(v, Tensor),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "Scalar": lambda v: isinstance(v, numbers.Number) and not isinstance(v, Tensor),
    "ScalarType": lambda v: isinstance(v, dtypes.dtype),
    "Device": lambda v: isinstance(v, (str, _device)),
}


def bind_args(schema: FunctionSchema, args: tuple, kwargs: dict) -> list:
    """The values of every argument of ``schema`` in order, defaults filled in; RuntimeError as PyTorch's on
    too many, unknown, missing or mistyped arguments."""
    params = schema.arguments
    if kwargs:
        names = {a.name for a in params}
        for k in kwargs:
            if k not in names:
                raise RuntimeError(f"Unknown keyword argument '{k}' for operator '{schema.name}'. Schema: {schema}")
    values = []
    for i, a in enumerate(params):
        if i < len(args) and not a.kwarg_only:
            if kwargs and a.name in kwargs:
                raise RuntimeError(f"{schema.name}() got multiple values for argument '{a.name}'. "
                                   f"Declaration: {schema}")
            v = args[i]
        elif a.name in kwargs:
            v = kwargs[a.name]
        elif a.has_default:
            v = a.default
        else:
            raise _too_many(schema, args) or RuntimeError(f"{schema.name}() is missing value for argument "
                                                          f"'{a.name}'. Declaration: {schema}")
        if not (a.type == "Tensor" and not a.is_list and isinstance(v, Tensor)) and not _type_ok(a, v):
            raise _too_many(schema, args) or RuntimeError(
                f"{schema.name}() Expected a value of type '{a.type_str()}' for argument '{a.name}' but instead "
                f"found type '{type(v).__name__}'.\nPosition: {i}\nValue: {v!r}\nDeclaration: {schema}")
        values.append(v)
    return values if len(args) <= len(values) else _raise(_too_many(schema, args))


def _too_many(schema, args):
    n = sum(not a.kwarg_only for a in schema.arguments)
    if len(args) > n:
        return RuntimeError(f"{schema.name}() expected at most {n} argument(s) but received {len(args)} "
                            f"argument(s). Declaration: {schema}")
    return None


def _raise(exc):
    raise exc


# --------------------------------------------------------------------------- namespaces
class OpNamespace(types.SimpleNamespace):
    """The operators of one namespace: ``ember.ops.<ns>``."""

    def __init__(self, name):
        super().__init__()
        self._name = name

    def __getattr__(self, op):
        raise AttributeError(f"ember.ops.{self._name} has no operator {op!r}")


NAMESPACES: dict = {}  # namespace -> OpNamespace
OWNERS: dict = {}      # (namespace, name) -> who published it (a plugin's name, or "library")


def check_namespace(namespace: str, what: str) -> None:
    """Refuse a namespace that is not an identifier or that names one of ``ember.ops``'s own modules
    (``ember.ops.shape`` is the built-in shape family: a plugin namespace there would be unreachable)."""
    from . import ops  # cycle: ember.ops imports every op family, which import the dispatch this module builds on

    if not namespace.isidentifier():
        raise ValueError(f"{what}: namespace {namespace!r} is not a Python identifier")
    if namespace in ops.RESERVED:
        raise ValueError(f"{what}: namespace {namespace!r} is reserved: ember.ops.{namespace} is ember's built-in "
                         f"{namespace} module (reserved names: {', '.join(sorted(ops.RESERVED))}); choose "
                         f"another namespace")


def publish(namespace: str, name: str, packet, owner: str) -> None:
    """Show ``packet`` as ``ember.ops.<namespace>.<name>``."""
    ns = NAMESPACES.get(namespace)
    if ns is None:
        ns = NAMESPACES[namespace] = OpNamespace(namespace)
        bind(f"ops.{namespace}", ns)
    OWNERS[(namespace, name)] = owner
    export(packet, name, to=(f"ops.{namespace}",))


def withdraw(namespace: str, name: str) -> None:
    """Take ``ember.ops.<namespace>.<name>`` away (and the namespace with its last op)."""
    OWNERS.pop((namespace, name), None)
    unexport(f"ops.{namespace}", name)
    if not any(ns == namespace for ns, _ in OWNERS):
        NAMESPACES.pop(namespace, None)
        drop(f"ops.{namespace}")


# --------------------------------------------------------------------------- the Op every custom op runs as
class CustomOp(Op):
    """The base of the Op classes of ``ember.ops.<ns>.<name>``: a node that is also the ``ctx`` of
    ``register_autograd``'s ``setup_context`` and ``backward``."""

    save_inputs = True
    save_output = True
    _lib_saved = ()

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` for backward; an input or the output is kept as the graph's own tensor."""
        ids = getattr(self, "_lib_ids", {})
        self._lib_saved = tuple(ids.get(id(t), t) for t in tensors)

    @property
    def saved_tensors(self) -> tuple:
        inputs = self.inputs
        return tuple(inputs[s[1]] if type(s) is tuple and s[0] == "in" else
                     self.output if type(s) is tuple else s for s in self._lib_saved)

    @property
    def needs_input_grad(self) -> tuple:
        edges, out = iter(self.next_functions), []
        for n in self._lib_layout:
            flags = [next(edges, (None, 0))[0] is not None for _ in range(n)]  # (no edges yet in setup_context)
            out.append(any(flags) if n else False)
        return tuple(out)

    def mark_non_differentiable(self, *tensors):
        """Accepted for ``setup_context`` compatibility (outputs of a custom op carry gradients as declared)."""

    def set_materialize_grads(self, value: bool):
        """Accepted for ``setup_context`` compatibility (missing gradients arrive as None)."""


def make_op_class(qualname: str, forward, backward, origin: str, name: str, **attrs) -> type:
    """The Op class ``ember.ops.<qualname>`` runs as: ``forward(ctx, k, *arrays)``, ``backward(ctx, *grads)``.

    Its key in ``OPS`` is ``ns::name``, its grad_fn is ``<Name>Backward0`` and ``origin`` names it in errors.
    """
    attrs.update(forward=staticmethod(forward), backward=staticmethod(backward), _origin=origin,
                 op_name=qualname.replace("ember.ops.", "").replace(".", "::", 1),
                 backward_name=name.title().replace("_", "") + "Backward0")
    return type(attrs["backward_name"], (CustomOp,), attrs)


_TABLES: dict = {}  # id(kernel table) -> the device using it


def _device_of(k):
    dev = _TABLES.get(id(k))
    if dev is None or dev.kernels is not k:
        dev = next(d for d in list(_device._cache.values()) if d.kernels is k)
        _TABLES[id(k)] = dev
    return dev


# --------------------------------------------------------------------------- operators
class OpOverload:
    """One overload of an operator (``ember.ops.ns.op.default``): call it like the op."""

    def __init__(self, opdef, overload="default"):
        self._def, self._overloadname = opdef, overload
        self.__name__ = f"{opdef.name}.{overload}"
        self.__qualname__ = self.__name__
        self.__module__ = "ember.ops"

    @property
    def _schema(self):
        return self._def.schema

    def name(self) -> str:
        return f"{self._def.namespace}::{self._def.name}"

    def __call__(self, *args, **kwargs):
        relevant = (*args, *kwargs.values())
        if overrides.has_torch_function(relevant):  # a subclass, an fx Proxy or a mode sees the call first
            return overrides.handle_torch_function(self, relevant, *args, **kwargs)
        return self._def.call(args, kwargs)

    def __repr__(self):
        return f"{self._def.namespace}.{self._def.name}.{self._overloadname}"


class OpOverloadPacket(OpOverload):
    """``ember.ops.ns.op``: calls its ``default`` overload; ``overloads()`` lists them."""

    def __init__(self, opdef):
        super().__init__(opdef)
        self.__name__ = self.__qualname__ = opdef.name
        self.__doc__ = opdef.doc
        self.default = OpOverload(opdef)

    def overloads(self) -> list:
        return ["default"]

    def __repr__(self):
        return f"{self._def.namespace}.{self._def.name}"


class OpDef:
    """Everything registered for one operator: schema, kernels, fake kernel, autograd formula, batching rule.

    ``call`` is the one path of every call: bind the arguments to the schema, then :func:`ember.dispatch.apply`
    the op's Op class (a composite op, ``impl(..., "CompositeImplicitAutograd")``, runs its function instead).
    """

    def __init__(self, namespace, name, schema: FunctionSchema | None, doc=None, *, call=None, Op=None):
        self.namespace, self.name, self.schema, self.doc = namespace, name, schema, doc
        self.qualname = f"{namespace}::{name}"
        self.kernels: dict = {}    # device type (None: any device) -> Tensor-level kernel
        self.fake = None
        self.backward_fn = self.setup_context = self.vmap = None
        self.autocast: dict = {}   # device type -> the dtype floating inputs are cast to under autocast
        self.composite = call      # a plugin op's function, or a CompositeImplicitAutograd kernel: called as is
        if Op is None and schema is not None:
            origin = f" (op ember.ops.{namespace}.{name} from plugin 'library')"
            Op = make_op_class(f"ember.ops.{namespace}.{name}", self._forward, self._backward, origin, name, _def=self)
        self.Op = Op
        self.packet = OpOverloadPacket(self)

    # -- the call
    def call(self, args, kwargs):
        if self.composite is not None:
            return self.composite(*args, **kwargs)
        values = bind_args(self.schema, args, kwargs)
        tensors = [v for v in values if isinstance(v, Tensor)]
        if not tensors:  # nothing to take a device from: the default device's kernel, as a plain call
            return self._run(resolve(None), values, None)
        if self.autocast and getattr(AUTOCAST, "on", None) and tensors[0]._dev.type in AUTOCAST.on:
            values = self._autocast(values, tensors[0]._dev.type)
        for a, v in zip(self.schema.arguments, values):
            if a.mutable and v is not None:
                for t in (v if a.is_list else (v,)):
                    if t._rg and is_grad_enabled():
                        raise RuntimeError(f"{self.qualname}: argument {a.name!r} is written in place and requires "
                                           f"grad; autograd does not track a custom op's writes into its inputs")
        try:
            out = apply(self.Op, *values)
        except _Raised as r:
            raise r.exc from None
        for a, v in zip(self.schema.arguments, values):
            if a.mutable and v is not None:
                for t in (v if a.is_list else (v,)):
                    t._bump()
        rets = self.schema.returns
        if not rets:
            return None
        return list(out) if rets[0].is_list else out

    def _autocast(self, values, dev_type):
        to = self.autocast.get(dev_type)
        if to is None:
            return values

        def cast(v):
            return v.to(to) if isinstance(v, Tensor) and v.is_floating_point() and v._dev.type == dev_type else v

        return [cast(v) if a.is_tensor and not a.mutable else v for a, v in zip(self.schema.arguments, values)]

    def kernel_for(self, dev_type):
        k = self.kernels.get(dev_type)
        if k is None and dev_type == "meta":
            k = self.fake if self.fake is not None or self.schema.returns else _writes_nothing
            if k is None:
                raise NotImplementedError(
                    f"{self.qualname}: attempted to run this operator with Meta tensors, but there was no fake impl "
                    f"or Meta kernel registered (use ember.library.register_fake)")
        if k is None:
            k = self.kernels.get(None)
        if k is None:
            have = sorted(d for d in self.kernels if d) or ["none"]
            raise NotImplementedError(f"Could not run '{self.qualname}' with arguments from the {dev_type!r} "
                                      f"backend: it has kernels for {', '.join(have)} (use "
                                      f"ember.library.register_kernel)")
        return k

    # -- the Op's forward and backward
    def _forward(self, ctx, k, *arrays):
        dev = _device_of(k)
        return self._run(dev, arrays, ctx)

    def _run(self, dev, values, ctx):
        schema = self.schema
        args, kwargs, layout, ids = [], {}, [], {}
        for a, v in zip(schema.arguments, values):
            if a.is_tensor and v is not None:
                if a.is_list:
                    v = [_as_tensor(x, dev, ids) for x in v]
                else:
                    v = _as_tensor(v, dev, ids)
                layout.append(len(v) if a.is_list else 1)
            else:
                layout.append(0)
            if a.kwarg_only:
                kwargs[a.name] = v
            else:
                args.append(v)
        try:
            with no_grad():
                out = self.kernel_for(dev.type)(*args, **kwargs)
        except (ValueError, TypeError) as exc:  # the kernel's own error, past apply's reading of kernel errors
            raise _Raised(exc) from None
        outs = self._check_outputs(out, dev, ids)
        if ctx is None:
            return out
        ctx._lib_layout = layout
        if self.setup_context is not None and is_grad_enabled():
            ctx._lib_ids = ids
            if len(outs) == 1 and isinstance(out, Tensor):
                ids[id(out)] = ("out",)
            self.setup_context(ctx, tuple(args) + tuple(kwargs.values()), out)
            del ctx._lib_ids
        if isinstance(out, Tensor):
            return out._data
        return tuple(o._data for o in outs)

    def _check_outputs(self, out, dev, ids):
        rets = self.schema.returns
        if not rets:
            if out is not None:
                raise RuntimeError(f"{self.qualname}: the schema declares no returns ('-> ()'), but the kernel "
                                   f"returned {type(out).__name__}")
            return ()
        many = len(rets) > 1 or rets[0].is_list
        outs = tuple(out) if many and isinstance(out, (tuple, list)) else (out,)
        if (many and not rets[0].is_list and len(outs) != len(rets)) or not all(isinstance(o, Tensor) for o in outs):
            raise RuntimeError(f"{self.qualname}: expected the kernel to return {self._returns_text()}, got "
                               f"{_describe(out)}")
        for o in outs:
            if o._dev is not dev:
                raise RuntimeError(f"{self.qualname}: the kernel returned a tensor on {o._dev}, expected {dev}")
            if id(o) in ids:
                raise RuntimeError(f"{self.qualname}: the output of this custom operator must not also be an input "
                                   f"to it (return a copy, e.g. x.clone())")
        return outs

    def _returns_text(self):
        rets = self.schema.returns
        return str(rets[0]) if len(rets) == 1 else f"{len(rets)} Tensors"

    def _backward(self, ctx, *grads):
        if self.backward_fn is None:
            raise RuntimeError(f"Trying to backward through {self.namespace}.{self.name}.default but no autograd "
                               f"formula was registered. Please use register_autograd to add one.")
        r = self.backward_fn(ctx, *grads)
        r = r if isinstance(r, (tuple, list)) and len(ctx._lib_layout) != 1 else (r,)
        if len(r) != len(ctx._lib_layout):
            raise RuntimeError(f"{self.qualname}: the backward registered with register_autograd returned {len(r)} "
                               f"gradient(s), expected {len(ctx._lib_layout)} (one per argument, None for "
                               f"non-Tensor arguments)")
        flat = []
        for g, n in zip(r, ctx._lib_layout):
            if n:
                flat.extend(g if isinstance(g, (list, tuple)) else [g] * n if g is None else [g])
        return tuple(flat)


class _Raised(Exception):
    """Carries a kernel's ValueError or TypeError through :func:`ember.dispatch.apply` unchanged."""

    def __init__(self, exc):
        super().__init__(str(exc))
        self.exc = exc


def _writes_nothing(*args, **kwargs):
    """The fake kernel of an op that returns nothing (as PyTorch, it needs none of its own)."""


def _as_tensor(arr, dev, ids):
    t = _wrap(arr, dev)
    ids[id(t)] = ("in", len(ids))
    return t


def _describe(out):
    if isinstance(out, (tuple, list)):
        return f"{type(out).__name__} of {len(out)} ({', '.join(type(o).__name__ for o in out)})"
    return type(out).__name__


_DEFS: dict = {}  # "ns::name" -> OpDef


def _qualname(op) -> str:
    if isinstance(op, (OpOverload, CustomOpDef)):
        return op._def.qualname
    if not isinstance(op, str) or "::" not in op:
        raise ValueError(f"expected an operator as 'namespace::name' (or ember.ops.namespace.name), got {op!r}")
    return op.split(".")[0]


def opdef(op, what: str = "lookup") -> OpDef:
    """The registered operator ``op`` (``"ns::name"``, an overload or a custom op); RuntimeError if none."""
    d = _DEFS.get(_qualname(op))
    if d is None:
        raise RuntimeError(f"{what}: operator {_qualname(op)} does not exist; define it first (custom_op, or "
                           f"Library(ns, 'DEF').define(schema))")
    return d


def _declared(op, what: str) -> OpDef:
    """:func:`opdef`, for a registration that needs the op's schema (a plugin's ``add_op`` op has none)."""
    d = opdef(op, what)
    if d.schema is None:
        raise RuntimeError(f"{what}: {d.qualname} is a plugin op registered with add_op, which has no schema; "
                           f"declare it with ember.library.custom_op or Library.define to give it kernels, a fake "
                           f"kernel, an autograd formula or a batching rule")
    return d


def _new_op(qualname: str, schema: str | FunctionSchema, what: str, doc=None) -> OpDef:
    namespace, sep, name = qualname.partition("::")
    if not sep or not name.isidentifier():
        raise ValueError(f"{what}: expected name to be of the form 'namespace::opname', got {qualname!r}")
    check_namespace(namespace, what)
    if qualname in _DEFS:
        raise RuntimeError(f"Tried to register an operator ({qualname}) with the same name and overload name "
                           f"multiple times. Each overload's schema should only be registered once.")
    if (namespace, name) in OWNERS:
        raise RuntimeError(f"{what}: ember.ops.{namespace}.{name} already exists (registered by "
                           f"{OWNERS[(namespace, name)]})")
    if isinstance(schema, str):
        schema = parse_schema(schema, qualname)
    schema.name = qualname
    return add_def(OpDef(namespace, name, schema, doc), "library")


def add_def(d: OpDef, owner: str) -> OpDef:
    """Enter operator ``d`` and show it as ``ember.ops.<ns>.<name>`` (``owner``: who registered it)."""
    _DEFS[d.qualname] = d
    publish(d.namespace, d.name, d.packet, owner)
    return d


def drop_def(d: OpDef) -> None:
    """Take operator ``d`` away."""
    _DEFS.pop(d.qualname, None)
    withdraw(d.namespace, d.name)


# --------------------------------------------------------------------------- torch.library's API
_KEYS = {"": None, "CompositeExplicitAutograd": None, "CPU": "cpu", "CUDA": "cuda", "Meta": "meta",
         "default": None}


class Library:
    """A set of registrations in namespace ``ns``: ``"DEF"`` defines its operators (one per namespace),
    ``"FRAGMENT"`` defines more, ``"IMPL"`` only adds kernels.  ``_destroy()`` takes its operators away.

    >>> import ember
    >>> lib = Library("doclib", "DEF")
    >>> lib.define("twice(Tensor x) -> Tensor")
    'twice'
    >>> lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
    >>> ember.ops.doclib.twice(ember.ones(1))
    tensor([2.])
    >>> lib._destroy()
    """

    _DEF_NAMESPACES: set = set()

    def __init__(self, ns: str, kind: str, dispatch_key: str = ""):
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        check_namespace(ns, f"Library({ns!r}, {kind!r})")
        if kind == "DEF":
            if ns in Library._DEF_NAMESPACES:
                raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                                   f"put all of your definitions in a single TORCH_LIBRARY block (use 'FRAGMENT' "
                                   f"to add more, 'IMPL' to add kernels)")
            Library._DEF_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        self._ops: list = []

    def define(self, schema: str, alias_analysis: str = "", *, tags=()) -> str:
        """Define operator ``schema`` (``"name(Tensor x) -> Tensor"``) in this namespace; returns its name."""
        if self.kind == "IMPL":
            raise RuntimeError(f"Library({self.ns!r}, 'IMPL') cannot define operators; use 'DEF' or 'FRAGMENT'")
        parsed = parse_schema(schema, "?")
        name = parsed.name.split("::")[-1]
        if "::" in parsed.name and parsed.name.split("::")[0] != self.ns:
            raise ValueError(f"Library({self.ns!r}).define: schema {schema!r} names another namespace")
        self._ops.append(_new_op(f"{self.ns}::{name}", parsed, f"Library({self.ns!r}).define"))
        return name

    def impl(self, op_name, fn, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Register ``fn`` as ``op_name``'s kernel for ``dispatch_key`` ("CPU", "CUDA", "Meta",
        "CompositeExplicitAutograd" (any device), "CompositeImplicitAutograd" (a composite of ember ops))."""
        qual = op_name if not isinstance(op_name, str) or "::" in op_name else f"{self.ns}::{op_name}"
        d = _declared(qual, f"Library({self.ns!r}).impl")
        key = dispatch_key or self.dispatch_key
        if key in ("CompositeImplicitAutograd", "Autograd"):
            d.composite = fn
        elif key not in _KEYS:
            raise ValueError(f"Library({self.ns!r}).impl({d.qualname}): unsupported dispatch key {key!r}; expected "
                             f"one of {sorted(k for k in _KEYS if k)} or CompositeImplicitAutograd")
        elif _KEYS[key] == "meta":
            d.fake = fn
        else:
            d.kernels[_KEYS[key]] = fn

    def fallback(self, fn, dispatch_key: str = "", *, with_keyset: bool = False):
        raise NotImplementedError("Library.fallback: ember has no dispatch keys to fall back through")

    def _destroy(self) -> None:
        for d in self._ops:
            drop_def(d)
        self._ops = []
        if self.kind == "DEF":
            Library._DEF_NAMESPACES.discard(self.ns)


def define(qualname: str, schema: str, *, lib: Library | None = None, tags=()) -> None:
    """Define operator ``qualname`` (``"ns::name"``) with ``schema`` (``"(Tensor x) -> Tensor"``)."""
    _new_op(qualname, parse_schema(schema, qualname), "define")


def impl(qualname, types, func=None, *, lib: Library | None = None):
    """Register ``func`` as the kernel of ``qualname`` for device type(s) ``types``; a decorator without func."""
    return register_kernel(qualname, types, func)


def register_kernel(op, device_types, func=None, /, *, lib: Library | None = None):
    """``func`` becomes ``op``'s kernel on ``device_types`` ("cpu", "cuda", ...; None: every device type).

    The kernel takes and returns Tensors; it runs without autograd (see :func:`register_autograd`)."""
    d = _declared(op, "register_kernel")

    def register(fn):
        for t in ([device_types] if device_types is None or isinstance(device_types, str) else device_types):
            t = _KEYS.get(t, t.split(":")[0].lower()) if t is not None else None  # "CPU", "default", "cuda:0"
            if t == "meta":
                d.fake = fn
            else:
                d.kernels[t] = fn
        return fn

    return register if func is None else register(func)


def register_fake(op, func=None, /, *, lib: Library | None = None, _stacklevel: int = 1):
    """``func`` computes ``op``'s output shapes and dtypes from its inputs' (the meta device runs it;
    :func:`opcheck` compares it with the real kernel).  A decorator without ``func``."""
    d = _declared(op, "register_fake")

    def register(fn):
        d.fake = fn
        return fn

    return register if func is None else register(func)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Library | None = None) -> None:
    """``op``'s gradient: ``setup_context(ctx, inputs, output)`` runs after forward (``ctx.save_for_backward``,
    attributes); ``backward(ctx, *grads)`` returns one gradient per argument (None for non-Tensors), written
    with ember ops (so it is itself differentiable)."""
    d = _declared(op, "register_autograd")
    if d.schema.mutated:
        raise RuntimeError(f"register_autograd({d.qualname}): an operator that mutates its arguments "
                           f"{d.schema.mutated} cannot have an autograd formula")
    d.backward_fn, d.setup_context = backward, setup_context


def register_autocast(op, device_type: str, cast_inputs, /, *, lib: Library | None = None) -> None:
    """Under ``ember.autocast`` on ``device_type``, ``op``'s floating Tensor inputs are cast to ``cast_inputs``
    (``torch.library.register_autocast``); without it the op runs on its inputs as given."""
    _declared(op, "register_autocast").autocast[device_type] = cast_inputs


class _VmapInfo:
    def __init__(self, level):
        self.batch_size, self.randomness = level.size, level.randomness


def register_vmap(op, func=None, /, *, lib: Library | None = None):
    """``func(info, in_dims, *args, **kwargs) -> (output, out_dims)`` batches ``op`` under ``ember.vmap``
    (``info.batch_size``; ``in_dims`` gives each argument's batch dimension or None).  Without one, vmap runs the
    op once per sample."""
    from .func import batching  # cycle: ember.func is built on ember's public namespaces, which import this module

    d = _declared(op, "register_vmap")

    def register(fn):
        d.vmap = fn
        batching.RULES[d.Op.op_name] = _vmap_rule(d)
        batching._FAST.pop(d.Op, None)  # a per-sample answer cached before the rule existed
        return fn

    return register if func is None else register(func)


def _vmap_rule(d: OpDef):
    from .func import batching  # cycle: as in register_vmap

    def rule(level, kind, Op, values):
        args, kwargs, in_dims = [], {}, []
        for a, v in zip(d.schema.arguments, values):
            batched = batching.batched_at(v, level)
            v = v._data.value if batched else v
            if a.kwarg_only:
                kwargs[a.name] = v
            else:
                args.append(v)
                in_dims.append(0 if batched else None)
        out, out_dims = d.vmap(_VmapInfo(level), tuple(in_dims), *args, **kwargs)
        many = isinstance(out, tuple)
        outs, dims = (out, out_dims) if many else ((out,), (out_dims,))
        res = tuple(batching.wrap(o if dim == 0 else o.movedim(dim, 0), level) if dim is not None else o
                    for o, dim in zip(outs, dims if isinstance(dims, (tuple, list)) else (dims,) * len(outs)))
        return res if many else res[0]

    return rule


class _FakeCtx:
    def new_dynamic_size(self, *, min: int = 0, max: int | None = None):  # noqa: A002 - PyTorch's names
        raise NotImplementedError("get_ctx().new_dynamic_size: ember's meta device cannot stand for a size that "
                                  "depends on the data")


def get_ctx():
    """The context of a fake kernel (``new_dynamic_size``, which ember's meta device refuses)."""
    return _FakeCtx()


class CustomOpDef:
    """What :func:`custom_op` returns: call it like the op; ``register_fake``, ``register_autograd``,
    ``register_kernel``, ``register_vmap`` attach the rest."""

    def __init__(self, d: OpDef, fn):
        self._def, self._init_fn = d, fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._opoverload = d.packet.default
        self._name = d.qualname

    def __call__(self, *args, **kwargs):
        return self._def.call(args, kwargs)

    def register_fake(self, fn):
        return register_fake(self._name, fn)

    def register_kernel(self, device_types, fn=None):
        return register_kernel(self._name, device_types, fn)

    def register_autograd(self, backward, *, setup_context=None):
        register_autograd(self._name, backward, setup_context=setup_context)

    def register_vmap(self, func=None):
        return register_vmap(self._name, func)

    def __repr__(self):
        return f"<CustomOpDef({self._name})>"


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None,
              schema: str | None = None):
    """Make ``fn`` the operator ``ember.ops.<ns>.<name>`` (``name`` is ``"ns::name"``); a decorator without fn.

    The schema is ``schema`` or inferred from ``fn``'s type hints, ``mutates_args`` naming the arguments ``fn``
    writes into (``()`` for none, ``"unknown"``).  ``fn`` is the kernel for ``device_types`` (default: every
    device).  See the module's example.
    """

    def make(f):
        text = schema if schema is not None else infer_schema(f, mutates_args=mutates_args, op_name=name)
        d = _new_op(name, parse_schema(text, name), f"custom_op(..., name={name!r})", doc=f.__doc__)
        register_kernel(name, device_types, f)
        return CustomOpDef(d, f)

    return make if fn is None else make(fn)


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils=None, raise_exception: bool = True,
            atol=None, rtol=None) -> dict:
    """Check custom op ``op`` on one call (``torch.library.opcheck``): see :func:`ember.testing.opcheck.opcheck`."""
    from .testing import opcheck as checks  # cycle: ember.testing imports ember, which imports this module

    return checks.opcheck(op, args, kwargs, test_utils=test_utils or checks.DEFAULT_TEST_UTILS,
                          raise_exception=raise_exception, atol=atol, rtol=rtol)
