"""Symbolic tracing: run a Module's ``forward`` on :class:`~ember.fx.Proxy` inputs and keep what it did.

:class:`Tracer` records calls of ember functions (through ``__torch_function__``), Tensor methods and
operators on proxies, and submodule calls (a call of a leaf module, one of ``ember.nn``'s own, is one
``call_module`` node; others are traced through).  Parameters and buffers read in ``forward`` become
``get_attr`` nodes, other tensors met on the way ``_tensor_constantN`` attributes.  Module calls are
seen through the one module-call hook of ``ember.nn.Module`` (``CALL_SCOPE``), attribute reads through
``Module.__getattr__``, which the trace replaces while it runs and restores after.

>>> import ember, ember.fx
>>> class M(ember.nn.Module):
...     def __init__(self):
...         super().__init__()
...         self.lin = ember.nn.Linear(3, 2)
...     def forward(self, x):
...         return self.lin(x).relu() + 1
>>> gm = ember.fx.symbolic_trace(M())
>>> [n.op for n in gm.graph.nodes]
['placeholder', 'call_module', 'call_method', 'call_function', 'output']
"""
from __future__ import annotations

import builtins
import enum
import inspect
import math

from ..backend import device
from ..dtypes import dtype
from ..nn import Module, Parameter, Sequential
from ..nn.modules import module as module_mod
from ..tensor import Tensor
from .graph import Graph
from .node import _WRAPPED, map_aggregate
from .proxy import Proxy, TracerBase


class _PH:
    """The placeholder marker in ``concrete_args``: this part of the argument stays an input."""

    def __repr__(self):
        return "PH"


PH = _PH()


def wrap(fn_or_name):
    """Record calls of this module-level function as one ``call_function`` node instead of tracing
    through it.  Call at module scope: ``ember.fx.wrap("len")`` or ``ember.fx.wrap(my_fn)``."""
    frame = inspect.currentframe().f_back
    if frame is None or frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"wrap: expected a function or its name, got {fn_or_name!r}")
    # as a decorator (``@wrap``, as timm uses it) the function is not bound to its name yet
    if callable(fn_or_name) and frame.f_globals.get(name, fn_or_name) is not fn_or_name:
        raise NotImplementedError(f"wrap: {name} must be a global function of the calling module")
    _WRAPPED.append((frame.f_globals, name))
    return fn_or_name


def _find_proxy(*objects):
    found = []

    def look(a):
        if isinstance(a, Proxy) and not found:
            found.append(a)

    map_aggregate(objects, look)
    return found[0] if found else None


def _recording(fn):
    """``fn`` recorded as one node when any argument is a proxy, computed as itself otherwise."""
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)

    wrapped.__wrapped__ = fn
    return wrapped


class _Patcher:
    """Sets dict entries and attributes for the length of a trace, and puts every one back."""

    _MISSING = object()

    def __init__(self):
        self._undo = []

    def set_item(self, d: dict, key, value):
        self._undo.append((d, key, d.get(key, self._MISSING)))
        d[key] = value

    def set_attr(self, obj, name, value):
        self._undo.append((obj, name, obj.__dict__.get(name, self._MISSING)))
        setattr(obj, name, value)

    def restore(self):
        while self._undo:
            target, key, old = self._undo.pop()
            if isinstance(target, dict):
                if old is self._MISSING:
                    target.pop(key, None)
                else:
                    target[key] = old
            elif old is self._MISSING:
                delattr(target, key)
            else:
                setattr(target, key, old)


def _positional_code(fn, n_varargs: bool, n_varkw: bool):
    """``fn`` with its ``*args``/``**kwargs`` (and keyword-only arguments) made plain positional
    parameters, so that a trace can pass one proxy for each."""
    co = fn.__code__
    flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    code = co.replace(co_flags=flags, co_argcount=co.co_argcount + co.co_kwonlyargcount + n_varargs + n_varkw,
                      co_kwonlyargcount=0)
    new = type(fn)(code, fn.__globals__, fn.__name__, None, fn.__closure__)
    return new


_is_fx_tracing_flag = False  # set while a Tracer traces


def is_fx_tracing() -> bool:
    """Whether a :class:`Tracer` is tracing now (in any thread, as PyTorch's flag)."""
    return _is_fx_tracing_flag


class Tracer(TracerBase):
    """Turns a Module or function into a :class:`~ember.fx.Graph` (see the module docstring).  Subclass and
    override :meth:`is_leaf_module`, :meth:`create_arg`, :meth:`call_module` or :meth:`getattr` to change
    what is recorded."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant: bool = False):
        self._autowrap_modules = tuple(autowrap_modules)
        self._autowrap_ids = {id(v) for m in autowrap_modules for v in vars(m).values() if callable(v)}
        self._autowrap_ids |= {id(f) for f in autowrap_functions}
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root = None
        self.tensor_attrs: dict = {}

    # ------------------------------------------------------------------ customisation points
    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """Whether a call of ``m`` is one node (ember.nn's own modules, except Sequential) or traced through."""
        mod = type(m).__module__ or ""
        return (mod.startswith("ember.nn") or mod.startswith("torch.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod) -> str:
        """The qualified name of submodule ``mod`` in the traced root."""
        path = self.submodule_paths.get(id(mod)) if self.submodule_paths is not None else None
        if path is None:
            for name, m in self.root.named_modules():
                if m is mod:
                    return name
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        """One ``call_module`` node for a leaf module; otherwise ``forward`` traced through."""
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        """What reading ``module.attr`` gives while tracing: a ``get_attr`` proxy for a parameter (and a
        buffer), the value itself otherwise."""
        def proxy_of(named):
            for name, p in named:
                if attr_val is p:
                    if name not in parameter_proxy_cache:
                        parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                    return parameter_proxy_cache[name]
            return None

        if isinstance(attr_val, Parameter):
            found = proxy_of(self.root.named_parameters())
            if found is not None:
                return found
        elif self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            found = proxy_of(self.root.named_buffers())
            if found is not None:
                return found
        return attr_val

    def create_other_arg(self, a):
        if isinstance(a, Parameter):
            for name, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                qualname = f"_tensor_constant{i}"
                setattr(self.root, qualname, a)
                self.tensor_attrs[id(a)] = qualname
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, (dtype, device, enum.Enum, type)) or callable(a) or a.__class__.__module__ in (
                "ember", "ember.layouts", "ember.dtypes"):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    # ------------------------------------------------------------------ the trace
    def create_args_for_root(self, root_fn, is_module: bool, concrete_args=None):
        """The function to run (``*args``/``**kwargs`` made positional) and its arguments: the root for
        ``self``, a placeholder proxy for each parameter, concrete values where ``concrete_args`` gives them."""
        sig = inspect.signature(root_fn)
        params = list(sig.parameters.values())
        args = []
        if is_module:
            args.append(self.root)
            params = params[1:]
        concrete_args = dict(concrete_args or {})
        varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
        varkw = any(p.kind is p.VAR_KEYWORD for p in params)
        order = ([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
                 + [p for p in params if p.kind is p.KEYWORD_ONLY]
                 + [p for p in params if p.kind is p.VAR_POSITIONAL]
                 + [p for p in params if p.kind is p.VAR_KEYWORD])
        for p in order:
            target = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
            if target in concrete_args and concrete_args[target] is not PH:  # (PyTorch ignores other names)
                value = concrete_args[target]
                self.create_node("placeholder", target, (value,), {})
                args.append(value)
                continue
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            args.append(self.create_proxy("placeholder", target, default, {},  # (a subclass sees each input)
                                          type_expr=None if p.annotation is inspect.Parameter.empty else p.annotation))
        fn = _positional_code(root_fn, varargs, varkw) if (varargs or varkw or any(
            p.kind is p.KEYWORD_ONLY for p in params)) else root_fn
        return fn, args

    def trace(self, root, concrete_args=None) -> Graph:
        """Trace ``root`` (a Module, whose ``forward`` is traced, or a function) into a new :class:`Graph`."""
        is_module = isinstance(root, Module)
        if is_module:
            self.root = root
            fn = type(root).forward
        else:
            self.root = Module()
            fn = root
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {id(m): name for name, m in self.root.named_modules()}
        self.tensor_attrs = {}
        for prefix, m in self.root.named_modules():
            for k, v in list(vars(m).items()) + list(m._buffers.items()):
                if isinstance(v, Tensor):
                    self.tensor_attrs[id(v)] = f"{prefix}.{k}" if prefix else k
        fn_globals = fn.__globals__
        fn, args = self.create_args_for_root(fn, is_module, concrete_args)
        cache: dict = {}
        patcher = _Patcher()
        orig_getattr = Module.__getattr__
        tracer = self

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)

        def module_call(mod, call_args, call_kwargs):
            return tracer.call_module(mod, lambda *a, **k: mod._call(a, k), call_args, call_kwargs)

        global _is_fx_tracing_flag
        saved_scope, saved_flag = module_mod.CALL_SCOPE[0], _is_fx_tracing_flag
        try:
            _is_fx_tracing_flag = True
            patcher.set_attr(Module, "__getattr__", module_getattr)
            module_mod.CALL_SCOPE[0] = module_call
            self._patch_wrapped(patcher, fn_globals)
            result = fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(fn, "__annotations__", {}).get("return"))
        finally:
            module_mod.CALL_SCOPE[0], _is_fx_tracing_flag = saved_scope, saved_flag
            patcher.restore()
            self.submodule_paths = None
        return self.graph

    def _patch_wrapped(self, patcher: _Patcher, fn_globals: dict):
        for globs, name in _WRAPPED:
            orig = globs.get(name, getattr(builtins, name, None))
            if orig is not None:
                patcher.set_item(globs, name, _recording(orig))
        for globs in [fn_globals] + [vars(m) for m in self._autowrap_modules]:
            for name, value in list(globs.items()):
                if callable(value) and id(value) in self._autowrap_ids and not name.startswith("__"):
                    patcher.set_item(globs, name, _recording(value))
        for f in self._autowrap_functions:
            name = getattr(f, "__name__", None)
            if name and fn_globals.get(name) is f:
                patcher.set_item(fn_globals, name, _recording(f))
