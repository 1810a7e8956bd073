"""``__torch_function__``: Tensor subclasses, Tensor-like types and modes take over ember's public functions.

Each public function of ``ember``, ``nn.functional``, ``linalg``, ``fft`` and ``special`` is shown behind one
check: while every argument is an exact Tensor or a type without ``__torch_function__`` (numbers, ``None``,
``nn.Parameter``) and no mode is on, it calls the function at once.  Otherwise :func:`handle_torch_function`
hands the call to the innermost :class:`TorchFunctionMode`, then to each overriding argument's
``__torch_function__`` (subclasses before their bases, else left to right) until one returns something other
than ``NotImplemented``.  Tensor methods, operators and properties get the same check once the first type that
needs it appears (a Tensor subclass that dispatches, a mode, a Tensor-like argument); until then a Tensor method
is the op itself, with no check at all, and the check leaves ``ember.Tensor``'s attributes new objects.

>>> import ember
>>> class Logged(ember.Tensor):
...     calls = []
...     @classmethod
...     def __torch_function__(cls, func, types, args=(), kwargs=None):
...         cls.calls.append(func.__name__)
...         return super().__torch_function__(func, types, args, kwargs)
>>> y = ember.add(ember.ones(2).as_subclass(Logged), 1)
>>> type(y).__name__, Logged.calls
('Logged', ['add'])
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import types as _types
import warnings

from . import registry
from .ops.creation import empty, zeros
from .registry import NAMESPACE_NAMES, NAMESPACES
from .tensor import (
    SUBCLASS_HOOKS, TORCH_FUNCTION, DisableTorchFunction, DisableTorchFunctionSubclass, Tensor,
    _disabled_torch_function_impl,
)

__all__ = [
    "BaseTorchFunctionMode", "DisableTorchFunction", "DisableTorchFunctionSubclass", "TorchFunctionMode",
    "enable_reentrant_dispatch", "get_default_nowrap_functions", "get_ignored_functions",
    "get_overridable_functions", "get_testing_overrides", "handle_torch_function", "has_torch_function",
    "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
    "redispatch_function", "resolve_name", "wrap_torch_function",
]

# Tensor attributes that never dispatch: construction and the subclass machinery itself, Python's object
# protocol, and the methods PyTorch leaves out too (its get_ignored_functions)
TENSOR_IGNORED = frozenset({
    "__new__", "__init__", "__init_subclass__", "__torch_function__", "__subclasshook__", "__class__", "__dict__",
    "__weakref__", "__slots__", "__module__", "__doc__", "__getattribute__", "__getattr__", "__setattr__",
    "__delattr__", "__dir__", "__hash__", "__iter__", "__delitem__", "_make_subclass", "_make_wrapper_subclass",
    "as_subclass", "new", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros",
    "stride", "unflatten", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc",
})
# operators that reach __torch_function__ as the named method (``x + 1`` as ``Tensor.add``), as in PyTorch
OPERATOR_METHODS = {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul", "__truediv__": "div",
    "__matmul__": "matmul", "__neg__": "neg", "__abs__": "abs", "__pos__": "positive", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge", "__ne__": "ne", "__mod__": "remainder", "__rand__": "bitwise_and",
    "__ror__": "bitwise_or", "__rxor__": "bitwise_xor", "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
    "__itruediv__": "div_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__ipow__": "pow_",
}
# the module-level namespaces whose functions always carry the check (Tensor's get it when first needed)
MODULE_NAMESPACES = tuple(n for n in NAMESPACE_NAMES if n != "Tensor")

_PLAIN: set = {int, float, bool, complex, str, type(None), slice, type(Ellipsis), range}  # types known not to dispatch
_modes = 0            # modes pushed in any thread: nonzero sends every call to the thread's own look (_dispatch)
_tensor_armed = False  # whether Tensor's methods and properties carry the check yet
_SHOWN: dict = {}      # (namespace, name, function) -> what the namespace shows for it
_PROPERTY_NAMES: dict = {}  # checked Tensor property -> its name
_SKIP = threading.local()   # .once: the next check in this thread lets its call through (redispatch_function)


def _func_name(func) -> str:
    """The short name of what ``__torch_function__`` received: a function's or method's own name, a property's for a
    property read (``Tensor.shape.__get__`` -> ``"shape"``)."""
    owner = getattr(func, "__self__", None)
    if isinstance(owner, property):
        return _PROPERTY_NAMES.get(owner, "?")
    return func.__name__


def _lazy_shell(cls, torch_function, like, size):
    """A ``cls`` of ``size`` holding no data of its own (a zero-stride shell of ``like``'s dtype and device), for a
    wrapper subclass (sparse tensors, DTensor) whose ``__torch_function__``, ``torch_function``, is switched on when
    its first instance is made (so that importing it arms no check)."""
    if cls.__torch_function__ is _disabled_torch_function_impl:
        cls.__torch_function__ = classmethod(torch_function)
        for hook in SUBCLASS_HOOKS:
            hook(cls)
    return Tensor._make_subclass(cls, zeros((), dtype=like.dtype, device=like.device).expand(tuple(size)))


# --------------------------------------------------------------------------- the check
def _dispatches(t) -> bool:
    """Whether arguments of type ``t`` have a ``__torch_function__`` that takes part in dispatch."""
    if t is Tensor or t in _PLAIN:
        return False
    impl = getattr(t, "__torch_function__", _disabled_torch_function_impl)
    if impl is _disabled_torch_function_impl or _foreign(impl):
        if t is not list and t is not tuple:
            _PLAIN.add(t)
        return False
    return True


def _foreign(impl) -> bool:
    """Whether ``impl`` is another framework's own ``__torch_function__`` (real PyTorch's tensors, passed to
    ``ember.from_dlpack`` say): it knows nothing of ember's functions and would only hand the call back."""
    mod = getattr(getattr(impl, "__func__", impl), "__module__", None) or ""
    return mod == "torch" or mod.startswith("torch.")


def _plain(seq) -> bool:
    """Whether no item of the tuple or list ``seq`` can dispatch (the check looks one level into sequences)."""
    for a in seq:
        if type(a) is not Tensor and type(a) not in _PLAIN:
            return False
    return True


def _checked(fn):
    """``fn`` behind the ``__torch_function__`` check: one type test per argument on the plain path."""
    def public(*args, **kwargs):
        if _modes:
            return _dispatch(public, fn, args, kwargs)
        for a in args:
            t = type(a)
            if t is not Tensor and t not in _PLAIN and not ((t is tuple or t is list) and _plain(a)):
                return _dispatch(public, fn, args, kwargs)
        try:
            if kwargs:
                for a in kwargs.values():
                    t = type(a)
                    if t is not Tensor and t not in _PLAIN and not ((t is tuple or t is list) and _plain(a)):
                        return _dispatch(public, fn, args, kwargs)
                return fn(*args, **kwargs)
            return fn(*args)
        except AttributeError as exc:  # (free on the plain path: Python's exceptions cost only when raised)
            raise _not_a_tensor(fn, args, kwargs, exc) from None

    functools.update_wrapper(public, fn)
    return public


def _not_a_tensor(fn, args, kwargs, exc: AttributeError) -> Exception:
    """PyTorch's TypeError where ``fn`` took a number for a Tensor argument (ember's code then found no tensor
    attribute on it: ``'float' object has no attribute 'dim'``); any other AttributeError unchanged."""
    text = str(exc)
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    given = [*((names[i] if i < len(names) else None, a) for i, a in enumerate(args)), *kwargs.items()]
    for i, (name, a) in enumerate(given):
        if type(a) in (bool, int, float, complex) and text.startswith(f"'{type(a).__name__}' object has no"):
            where = f"'{name}' (position {i + 1})" if i < len(args) else f"'{name}'"
            return TypeError(f"{fn.__name__}(): argument {where} must be Tensor, not {type(a).__name__}")
    return exc


def _checked_property(prop: property) -> property:
    """``prop`` whose reads and writes dispatch as ``Tensor.<name>.__get__`` / ``__set__`` (PyTorch's ``func``)."""
    fget, fset = prop.fget, prop.fset

    def get(self):
        if type(self) is Tensor and not _modes:
            return fget(self)
        return _dispatch(checked.__get__, fget, (self,), {})

    def set_(self, value):
        if type(self) is Tensor and not _modes and (type(value) is Tensor or type(value) in _PLAIN):
            return fset(self, value)
        return _dispatch(checked.__set__, fset, (self, value), {})

    checked = property(get, set_ if fset is not None else None, prop.fdel, prop.__doc__)
    return checked


def _dispatch(public, fn, args, kwargs):
    """The slow path of the check: hand the call over if something overrides it, else call ``fn``."""
    if _skipped():
        return fn(*args, **kwargs)
    overloaded = _get_overloaded_args(_relevant(args, kwargs))
    if overloaded or (TORCH_FUNCTION.modes and TORCH_FUNCTION.level < 2):
        method = OPERATOR_METHODS.get(public.__name__) if public.__qualname__.startswith("Tensor.") else None
        return _handle(getattr(Tensor, method, public) if method else public, overloaded, args, kwargs)
    return fn(*args, **kwargs)


def _skipped() -> bool:
    """Whether this check is the one hop :func:`redispatch_function` skips (it is skipped once)."""
    if getattr(_SKIP, "once", False):
        _SKIP.once = False
        return True
    return False


def _relevant(args, kwargs):
    """The arguments that may override a call: each argument, and the items of tuples and lists among them."""
    for a in (*args, *kwargs.values()) if kwargs else args:
        if type(a) is tuple or type(a) is list:
            yield from a
        else:
            yield a


def _get_overloaded_args(relevant_args, get_type_fn=None) -> list:
    """The arguments whose ``__torch_function__`` a call goes to, in order: one per type, a subclass before its
    base, else left to right (NEP 18's rule); none while subclass dispatch is disabled."""
    if TORCH_FUNCTION.level:
        return []
    type_of = get_type_fn or type
    found, seen = [], []
    for arg in relevant_args:
        t = type_of(arg)
        if t in seen or not _dispatches(t):
            continue
        if not issubclass(t, Tensor):
            _arm_tensor()  # a Tensor-like met: from now on Tensor's methods must see it too
        seen.append(t)
        at = next((i for i, old in enumerate(found) if issubclass(t, type_of(old))), len(found))
        found.insert(at, arg)
    return found


def _handle(public, overloaded, args, kwargs, python_message=False):
    types = tuple(type(a) for a in overloaded)
    state = TORCH_FUNCTION
    mode = None
    if state.modes and state.level < 2:
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        result = arg.__torch_function__(public, types, args, kwargs)
        if result is not NotImplemented:
            return result
    raise TypeError(_refused(public, overloaded, mode, python_message))


def _refused(public, overloaded, mode, python_message) -> str:
    """PyTorch's message when every handler returned NotImplemented: its Python form (``handle_torch_function``,
    ``nn.functional``) or its C++ form (the other functions, methods and properties)."""
    owner = getattr(public, "__self__", None)
    if isinstance(owner, property):  # a property read or write: ember.Tensor.<name>.__get__
        name = f"ember.Tensor.{_PROPERTY_NAMES.get(owner, '?')}.{public.__name__}"
    else:
        name = f"{public.__module__}.{public.__qualname__}"
    if python_message or name.startswith("ember.nn.functional."):
        msg = (f"no implementation found for '{name}' on types that implement __torch_function__: "
               f"{[type(a) for a in overloaded]}")
        return msg + (f" nor in mode {mode}" if mode is not None else "")
    lines = [f"  - mode object {mode}"] if mode is not None else []
    lines += [f"  - tensor subclass {type(a)}" for a in overloaded]
    return (f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned NotImplemented:\n\n"
            + "\n".join(lines) + "\n\nFor more information, try re-running with TORCH_LOGS=not_implemented")


# --------------------------------------------------------------------------- what the namespaces show
def _shown(ns: str, name: str, fn):
    """What namespace ``ns`` shows as ``name`` (registry's hook): ``fn`` behind the check where it dispatches."""
    if ns == "Tensor":
        if not _tensor_armed or name in TENSOR_IGNORED:
            return fn
        if isinstance(fn, property):
            key = (ns, fn)
            if key not in _SHOWN:
                _SHOWN[key] = _checked_property(fn)
                _PROPERTY_NAMES[_SHOWN[key]] = name
            return _SHOWN[key]
    elif ns not in MODULE_NAMESPACES:
        return fn
    if not isinstance(fn, _types.FunctionType):
        return fn
    key = (ns, name, fn)
    if key not in _SHOWN:
        _SHOWN[key] = checked = _checked(fn)
        checked.__name__, checked.__qualname__ = name, f"Tensor.{name}" if ns == "Tensor" else name
        checked.__module__ = "ember" if ns in ("torch", "Tensor") else f"ember.{ns}"
    return _SHOWN[key]


def _tensor_members():
    """Tensor's own methods and properties (those of tensor.py, not exported as ops) that dispatch."""
    for name, v in list(vars(Tensor).items()):
        if name in NAMESPACES["Tensor"] or name in TENSOR_IGNORED:
            continue
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue  # ember's own helpers (_bump, _version, ...)
        if isinstance(v, (_types.FunctionType, property)):
            yield name, v


def _arm_tensor(cls=None) -> None:
    """Put Tensor's methods, operators and properties behind the check (once; called when first needed)."""
    global _tensor_armed
    if _tensor_armed:
        return
    _tensor_armed = True
    members = list(_tensor_members())
    for name, fn in NAMESPACES["Tensor"].items():
        registry._set("Tensor", name, fn)
    for name, v in members:
        setattr(Tensor, name, _shown("Tensor", name, v))


# --------------------------------------------------------------------------- the public API
def has_torch_function(relevant_args) -> bool:
    """Whether a call with ``relevant_args`` would go to a ``__torch_function__`` (of an argument or a mode).

    Exact Tensors and ``nn.Parameter`` s do not dispatch.  Use it to guard :func:`handle_torch_function`; use
    :func:`is_tensor_like` to test whether something is Tensor-like.

    >>> import ember
    >>> has_torch_function((ember.ones(1), 2))
    False
    """
    if _skipped():
        return False
    if TORCH_FUNCTION.modes and TORCH_FUNCTION.level < 2:
        return True
    return bool(_get_overloaded_args(relevant_args))


def has_torch_function_unary(a) -> bool:
    """:func:`has_torch_function` of the one argument ``a``."""
    return has_torch_function((a,))


def has_torch_function_variadic(*args) -> bool:
    """:func:`has_torch_function` of the arguments themselves (no tuple to build at the call)."""
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call ``public_api(*args, **kwargs)`` through the ``__torch_function__`` of the mode and of ``relevant_args``.

    Raises TypeError when every one returns ``NotImplemented``.

    >>> import ember
    >>> class Seven:
    ...     @classmethod
    ...     def __torch_function__(cls, func, types, args=(), kwargs=None):
    ...         return 7
    >>> def double(a):
    ...     if has_torch_function_unary(a):
    ...         return handle_torch_function(double, (a,), a)
    ...     return a * 2
    >>> double(Seven())
    7
    """
    return _handle(public_api, _get_overloaded_args(relevant_args), args, kwargs, python_message=True)


def redispatch_function(func, types, args, kwargs):
    """Call ``func`` from a ``__torch_function__`` with its own check skipped once: the functions it calls in
    turn still dispatch (a subclass sees the ops inside a composite; a mode does while it is entered again)."""
    _SKIP.once = True
    try:
        return func(*args, **(kwargs or {}))
    finally:
        _SKIP.once = False


def wrap_torch_function(dispatcher):
    """A decorator making a function dispatch on the arguments ``dispatcher(*args, **kwargs)`` returns.

    >>> def dispatcher(a):
    ...     return (a,)
    >>> @wrap_torch_function(dispatcher)
    ... def func(a):
    ...     return a + 0
    >>> func(1)
    1
    """
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a Tensor or has a ``__torch_function__`` (Tensor subclasses, Tensor-like types).

    >>> import ember
    >>> is_tensor_like(ember.ones(1)), is_tensor_like(6)
    (True, False)
    """
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def get_default_nowrap_functions() -> set:
    """The functions whose results the default ``Tensor.__torch_function__`` leaves as they are (field reads)."""
    return {Tensor.grad.__get__}


def _namespace_objects():
    """``{namespace name: the module or class showing it}`` for the namespaces that dispatch."""
    return {ns: registry.bound(ns)[0] for ns in NAMESPACE_NAMES if registry.bound(ns)}


def _behind_check(v, checked) -> bool:
    """Whether ``v`` is a checked object or wraps one (a conversion the jit tracer wrapped after arming)."""
    while v is not None:
        if id(v) in checked:
            return True
        v = getattr(v, "__wrapped__", None) if callable(v) else None
    return False


@functools.lru_cache(maxsize=1)
def _overridable(generation):
    """``(overridable functions by namespace, {function: dotted name})`` while ``generation`` (how many
    checked objects exist) stands."""
    checked = {id(v) for v in _SHOWN.values()}
    overridable, index = {}, {}
    for ns, obj in _namespace_objects().items():
        path = "ember.Tensor" if ns == "Tensor" else "ember" if ns == "torch" else f"ember.{ns}"
        for name, v in sorted(vars(obj).items()):
            if not _behind_check(v, checked):
                continue
            if isinstance(v, property):
                overridable.setdefault(v, []).append(v.__get__)
                index[v.__get__] = f"{path}.{name}.__get__"
                index[v.__set__] = f"{path}.{name}.__set__"
            else:
                overridable.setdefault(obj, []).append(v)
                index[v] = f"{path}.{name}"
    return overridable, index


def get_overridable_functions() -> dict:
    """``{namespace: [functions]}``: every public function, method and property read that dispatches.

    Namespaces are the modules ``ember``, ``ember.nn.functional``, ``ember.linalg``, ``ember.fft``,
    ``ember.special`` and the class ``ember.Tensor`` (properties are keys of their own, holding ``__get__``).
    Asking puts Tensor's methods behind the check, so the objects listed are those a ``__torch_function__`` gets.

    >>> import ember
    >>> ember.add in get_overridable_functions()[ember]
    True
    """
    _arm_tensor()
    return _overridable(len(_SHOWN))[0]


def resolve_name(f):
    """The dotted name of ``f`` as passed to ``__torch_function__`` (``'ember.add'``), or None."""
    _arm_tensor()
    return _overridable(len(_SHOWN))[1].get(f)


def get_ignored_functions() -> set:
    """The public callables of the dispatching namespaces that do not dispatch: settings, factories of other
    objects, the subclass machinery.

    >>> import ember
    >>> ember.Tensor.as_subclass in get_ignored_functions()
    True
    """
    _arm_tensor()
    checked = {id(v) for v in _SHOWN.values()}
    ignored = set()
    for ns, obj in _namespace_objects().items():
        for name in vars(obj):
            v = getattr(obj, name)
            public = not name.startswith("_") or ns == "Tensor" and name in TENSOR_IGNORED
            if public and callable(v) and not isinstance(v, type) and id(v) not in checked:
                ignored.add(v)
    return ignored


def get_testing_overrides() -> dict:
    """``{function: dummy}`` for every overridable function: the dummy takes the same arguments and returns -1."""
    out = {}
    for funcs in get_overridable_functions().values():
        for f in funcs:
            def dummy(*args, **kwargs):
                return -1

            try:
                dummy.__signature__ = inspect.signature(f)
            except (TypeError, ValueError):
                pass
            out[f] = dummy
    return out


def is_tensor_method_or_property(func) -> bool:
    """Whether ``func``, as passed to ``__torch_function__``, is a Tensor method or a property read.

    >>> import ember
    >>> is_tensor_method_or_property(ember.Tensor.add), is_tensor_method_or_property(ember.add)
    (True, False)
    """
    methods = get_overridable_functions()[Tensor]
    return any(func is m for m in methods) or getattr(func, "__name__", None) == "__get__"


# --------------------------------------------------------------------------- modes
class TorchFunctionMode:
    """Override every dispatching function within a ``with`` block, without subclassing Tensor.

    Subclasses define ``__torch_function__(self, func, types, args=(), kwargs=None)``; while it runs the mode
    is off, so calling ``func`` inside reaches the next mode (or the function itself).

    >>> import ember
    >>> class Names(TorchFunctionMode):
    ...     def __init__(self):
    ...         self.seen = []
    ...     def __torch_function__(self, func, types, args=(), kwargs=None):
    ...         self.seen.append(func.__name__)
    ...         return func(*args, **(kwargs or {}))
    >>> with Names() as m:
    ...     _ = ember.mul(ember.ones(2), 3)
    >>> m.seen
    ['mul']
    """

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        """Deprecated: ``with Mode():`` does it."""
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that calls each function as is (a base for modes that only watch)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _push_mode(mode) -> None:
    global _modes
    _arm_tensor()
    TORCH_FUNCTION.modes = (*TORCH_FUNCTION.modes, mode)
    _modes += 1


def _pop_mode():
    global _modes
    stack = TORCH_FUNCTION.modes
    if not stack:
        raise RuntimeError("Trying to pop from an empty mode stack")
    TORCH_FUNCTION.modes = stack[:-1]
    _modes -= 1
    return stack[-1]


@contextlib.contextmanager
def _pop_mode_temporarily():
    old = _pop_mode()
    try:
        yield old
    finally:
        _push_mode(old)


def _get_current_function_mode():
    return TORCH_FUNCTION.modes[-1] if TORCH_FUNCTION.modes else None


def _get_current_function_mode_stack() -> list:
    return list(TORCH_FUNCTION.modes)


def _len_torch_function_stack() -> int:
    return len(TORCH_FUNCTION.modes)


def _get_function_stack_at(i: int):
    return TORCH_FUNCTION.modes[i]


def _is_torch_function_enabled() -> bool:
    return TORCH_FUNCTION.level == 0


def _is_torch_function_mode_enabled() -> bool:
    return bool(TORCH_FUNCTION.modes) and TORCH_FUNCTION.level < 2


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """A block that may call back into dispatch from a handler.  ember keeps no dispatch state that a
    handler's call would have to restore, so this block changes nothing."""
    yield


# --------------------------------------------------------------------------- Tensor's wrapper subclasses
def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None, memory_format=None, dtype=None,
                           layout=None, device=None, pin_memory=False, requires_grad=False, **kwargs):
    """A ``cls`` of ``size`` and ``dtype`` with no storage of its own (on ``meta``): a wrapper subclass keeps
    its data in tensors it holds and answers every op through its ``__torch_function__``."""
    return Tensor._make_subclass(cls, empty(size, dtype=dtype, device="meta"), requires_grad)


def _dispatching_subclass(cls) -> None:
    """A Tensor subclass whose ``__torch_function__`` dispatches was defined (or switched on): arm Tensor."""
    _PLAIN.discard(cls)
    _arm_tensor()


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


Tensor._make_wrapper_subclass = staticmethod(_make_wrapper_subclass)
registry.public = _shown
SUBCLASS_HOOKS.append(_dispatching_subclass)
if any(sub.__torch_function__ is not _disabled_torch_function_impl for sub in _subclasses(Tensor)):
    _arm_tensor()  # one was defined before this module loaded
for _ns in MODULE_NAMESPACES:  # the namespaces bound before this module loaded
    for _name, _fn in NAMESPACES.get(_ns, {}).items():
        registry._set(_ns, _name, _fn)
