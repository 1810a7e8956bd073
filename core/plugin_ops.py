"""``ember.ops.<namespace>.<name>``: operators added by plugins through the ``ember_ops`` hook.

A thin layer over :mod:`ember.library`: a plugin op is a library operator without a schema (its function is
called as given), published in the same namespaces, with the same reserved names, and a kernel op is the same
kind of Op class, run through :func:`ember.dispatch.apply`.

A plugin op is one of:

* a function of tensors written with ember ops (no backward needed);
* an :class:`ember.autograd.Function` subclass (ctx style, hand-written backward);
* a forward kernel on arrays plus a ``backward(ctx, *grads)`` written with
  ember ops; ``kernels={device_type: fn}`` adds faster forward kernels for
  some backends, every other backend uses ``forward``.

>>> import ember
>>> def double(x):
...     return x * 2
>>> ember.plugins.REGISTRY.add_op("demo", "double", double)
>>> ember.ops.demo.double(ember.ones(2))
tensor([2., 2.])
"""
from __future__ import annotations

import sys

from .autograd.function import Function
from .dispatch import apply
from .hookspecs import PluginError
from .library import NAMESPACES, OWNERS, OpDef, OpNamespace, add_def, check_namespace, drop_def  # noqa: F401
from .library import make_op_class
from .registry import export, unexport
from .tensor import Tensor


def _refuse(registry, qualname, what):
    return PluginError(f"plugin {registry.describe(registry.current)}: op {qualname} {what}")


def kernel_op(qualname: str, forward, backward, origin: str):
    """An Op class running the device's kernel for ``qualname`` (``forward`` where the backend has none).

    ``backward(ctx, *grads)`` sees ``ctx.inputs`` (the Tensor inputs) and
    ``ctx.output``, and returns one gradient per input.
    """
    key = qualname

    def fwd(ctx, k, *arrays):
        return k.get(key, forward)(*arrays)

    return make_op_class(qualname, fwd, backward if backward is not None else _not_differentiable(qualname, origin),
                         origin, qualname.rsplit(".", 1)[-1])


def _not_differentiable(qualname, origin):
    def backward(ctx, *grads):
        raise RuntimeError(f"{qualname}{origin} is not differentiable: it was registered without a backward")

    return backward


def _op_caller(OpCls):
    def call(*tensors):
        return apply(OpCls, *tensors)

    return call


def add_op(registry, namespace: str, name: str, fn=None, *, forward=None, backward=None, kernels=None,
           method=None, module=None, differentiable: bool = True, **extra):
    """Register ``ember.ops.<namespace>.<name>``; see :func:`ember.plugins.Registry.add_op`.

    The op becomes an :mod:`ember.library` operator without a schema: its function is called as given."""
    qualname = f"ember.ops.{namespace}.{name}"
    if extra:
        raise _refuse(registry, qualname, f"got unknown options {sorted(extra)}")
    if not (namespace.isidentifier() and name.isidentifier()):
        raise _refuse(registry, qualname, "needs a namespace and name that are Python identifiers")
    try:
        check_namespace(namespace, f"op {qualname}")
    except ValueError as exc:
        raise _refuse(registry, qualname, f"cannot be registered: {exc}") from None
    owner = OWNERS.get((namespace, name))
    if owner is not None and owner != registry.current:
        theirs = "ember.library" if owner == "library" else f"plugin {registry.describe(owner)}"
        raise PluginError(f"op clash: {qualname} is provided by {theirs} and "
                          f"plugin {registry.describe(registry.current)}; uninstall or disable one of them")
    origin = f" (op {qualname} from plugin {registry.describe(registry.current)})"
    call, OpCls = _callable(registry, qualname, fn, forward, backward, differentiable, origin)
    if kernels:
        for dev_type, k in kernels.items():
            registry.add_kernel(dev_type, qualname, k)
    if module is not None and not isinstance(module, type):
        raise _refuse(registry, qualname, f"module= must be a Module class, got {type(module).__name__}")
    d = add_def(OpDef(namespace, name, None, getattr(fn, "__doc__", None), call=call, Op=OpCls), registry.current)
    registry.ops.setdefault(namespace, {})[name] = {
        "fn": d.packet, "def": d, "plugin": registry.current, "method": method, "module": module,
        "differentiable": differentiable, "kernels": sorted(kernels or ())}
    ns = NAMESPACES[namespace]
    if method:
        mname = method if isinstance(method, str) else name
        if hasattr(Tensor, mname) and registry.methods.get(mname) is None:
            raise _refuse(registry, qualname, f"cannot become Tensor.{mname}: ember already defines it")
        export(_as_method(d.packet), mname, to=("Tensor",))
        registry.methods[mname] = registry.current
    if module is not None:
        nn = _nn()
        if nn is not None and getattr(nn, module.__name__, module) is not module:
            raise _refuse(registry, qualname, f"cannot expose module ember.nn.{module.__name__}: ember.nn already "
                                              "has it")
        setattr(ns, module.__name__, module)
        if nn is not None:
            setattr(nn, module.__name__, module)


def _callable(registry, qualname, fn, forward, backward, differentiable, origin):
    if (fn is None) == (forward is None):
        raise _refuse(registry, qualname, "needs exactly one of fn= (tensors in, tensors out) or forward= (a kernel)")
    if forward is not None:
        if not callable(forward) or (backward is not None and not callable(backward)):
            raise _refuse(registry, qualname, "has a forward or backward that is not callable")
        if differentiable and backward is None:
            raise _refuse(registry, qualname, "claims to be differentiable but has no backward "
                                              "(give backward= or differentiable=False)")
        OpCls = kernel_op(qualname, forward, backward, origin)
        return _op_caller(OpCls), OpCls
    if isinstance(fn, type) and issubclass(fn, Function):
        if differentiable and fn.backward is Function.backward and fn.vjp is Function.vjp:
            raise _refuse(registry, qualname, f"claims to be differentiable but Function {fn.__name__} has no "
                                              "backward (define backward or pass differentiable=False)")
        fn._backward_cls._origin = origin
        return fn.apply, None
    if not callable(fn):
        raise _refuse(registry, qualname, f"is not callable (got {type(fn).__name__})")
    return fn, None


def _as_method(call):
    def method(self, *args, **kwargs):
        return call(self, *args, **kwargs)

    return method


def _nn():
    # ember.nn sits beside this module; plugins may load before it, so it is imported on first use
    import importlib

    try:
        return importlib.import_module("ember.nn")
    except ImportError:
        return None


def remove_ops(registry, plugin: str) -> None:
    """Take away every op, Tensor method and kernel that ``plugin`` registered."""
    removed = []
    for namespace, ops in list(registry.ops.items()):
        for name, entry in list(ops.items()):
            if entry["plugin"] != plugin:
                continue
            del ops[name]
            removed.append(entry)
            ns = NAMESPACES.get(namespace)
            if ns is not None and entry["module"] is not None:
                ns.__dict__.pop(entry["module"].__name__, None)
            drop_def(entry["def"])
        if not ops:
            del registry.ops[namespace]
    nn = sys.modules.get("ember.nn")
    for entry in removed:
        mod = entry["module"]
        if nn is not None and mod is not None and getattr(nn, mod.__name__, None) is mod:
            delattr(nn, mod.__name__)
    for mname, owner in list(registry.methods.items()):
        if owner == plugin:
            del registry.methods[mname]
            unexport("Tensor", mname)
