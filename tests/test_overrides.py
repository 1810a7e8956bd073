"""The tensor-subclass protocol: ``__torch_function__`` on subclasses, Tensor-likes and modes, and ember.overrides.

PyTorch's own examples ("Extending torch": ScalarTensor, a logging subclass, a metadata-carrying wrapper) are
defined once and run against real ``torch`` and ``ember``: the calls they see and the results must agree.
"""
import functools
import inspect
import subprocess
import sys

import pytest

import ember
from ember import overrides, registry

torch = pytest.importorskip("torch")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _tensor(lib, device, data):
    return lib.tensor(data, device=device if lib is ember else "cpu")


# --------------------------------------------------------------------------- PyTorch's documented examples
def scalar_tensor_type(lib):
    """PyTorch's ScalarTensor: a Tensor-like (not a subclass) standing for ``value * eye(N)``."""
    handled = {}

    class ScalarTensor:
        def __init__(self, N, value):
            self._N, self._value = N, value

        def tensor(self):
            return self._value * lib.eye(self._N)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            if func not in handled or not all(issubclass(t, (lib.Tensor, ScalarTensor)) for t in types):
                return NotImplemented
            return handled[func](*args, **kwargs)

    def implements(torch_function):
        def decorator(func):
            functools.update_wrapper(func, torch_function)
            handled[torch_function] = func
            return func

        return decorator

    @implements(lib.mean)
    def mean(input):  # noqa: A002
        return float(input._value) / input._N

    def ensure_tensor(data):
        return data.tensor() if isinstance(data, ScalarTensor) else lib.as_tensor(data)

    @implements(lib.add)
    def add(input, other):  # noqa: A002
        if isinstance(input, ScalarTensor) and isinstance(other, ScalarTensor) and input._N == other._N:
            return ScalarTensor(input._N, input._value + other._value)
        return ensure_tensor(input) + ensure_tensor(other)

    return ScalarTensor


@LIBS
def test_scalar_tensor_example(lib):
    ScalarTensor = scalar_tensor_type(lib)
    d = ScalarTensor(5, 2)
    assert lib.mean(d) == 0.4
    s = lib.add(d, d)
    assert type(s) is ScalarTensor and s._value == 4
    mixed = lib.add(d, lib.ones(5, 5))
    assert type(mixed) is lib.Tensor and mixed.tolist() == (2 * torch.eye(5) + 1).tolist()
    with pytest.raises(TypeError, match=rf"Multiple dispatch failed for '{lib.__name__}.mul'; all "
                                        r"__torch_function__ handlers returned NotImplemented:\n\n  - tensor "
                                        r"subclass <class '.*ScalarTensor'>\n\nFor more information"):
        lib.mul(d, 2)
    with pytest.raises(TypeError, match=rf"no implementation found for '{lib.__name__}.nn.functional.relu' on "
                                        r"types that implement __torch_function__: \[<class '.*ScalarTensor'>\]"):
        lib.nn.functional.relu(d)


def logging_tensor_type(lib):
    """PyTorch's logging subclass: records each function's name, then defers to the default."""

    class LoggingTensor(lib.Tensor):
        log = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is not lib.Tensor.__repr__:
                cls.log.append(func.__name__)
            if kwargs is None:
                kwargs = {}
            return super().__torch_function__(func, types, args, kwargs)

    return LoggingTensor


LOGGED_PROGRAM = [
    ("add", lambda lib, x, p: lib.add(x, 1)),
    ("radd", lambda lib, x, p: 1 + x),
    ("mul operator", lambda lib, x, p: x * 2),
    ("plain left operand", lambda lib, x, p: p + x),
    ("rsub", lambda lib, x, p: 1 - x),
    ("matmul", lambda lib, x, p: x @ p),
    ("neg", lambda lib, x, p: -x),
    ("comparison", lambda lib, x, p: x > 0),
    ("method", lambda lib, x, p: x.exp().sum()),
    ("sum dim", lambda lib, x, p: x.sum(dim=1)),
    ("functional", lambda lib, x, p: lib.nn.functional.relu(x)),
    ("softmax", lambda lib, x, p: lib.nn.functional.softmax(x, dim=-1)),
    ("index", lambda lib, x, p: x[0]),
    ("item", lambda lib, x, p: x[0, 1].item()),
    ("shape", lambda lib, x, p: x.shape),
    ("transpose property", lambda lib, x, p: x.T),
    ("dtype", lambda lib, x, p: x.dtype is lib.float32),
    ("cat", lambda lib, x, p: lib.cat([p, x])),
    ("stack of plain", lambda lib, x, p: lib.stack([p, p])),
    ("in place", lambda lib, x, p: x.clone().add_(1)),
    ("unbind", lambda lib, x, p: x.unbind(0)),
    ("len", lambda lib, x, p: len(x)),
    ("property write", lambda lib, x, p: setattr(x, "requires_grad", True)),
    ("grad read", lambda lib, x, p: x.grad),
]


@pytest.mark.parametrize("step", LOGGED_PROGRAM, ids=[s[0] for s in LOGGED_PROGRAM])
def test_logging_subclass_sees_what_pytorch_sees(device, step):
    _, program = step
    seen = {}
    for lib in (torch, ember):
        LoggingTensor = logging_tensor_type(lib)
        x = _tensor(lib, device, [[1.0, -2.0], [3.0, 0.5]]).as_subclass(LoggingTensor)
        p = _tensor(lib, device, [[0.5, 1.0], [-1.0, 2.0]])
        r = program(lib, x, p)
        kinds = [type(v).__name__ for v in (r if isinstance(r, tuple) and not hasattr(r, "numel") else (r,))]
        values = [v.tolist() if hasattr(v, "tolist") else v if not hasattr(v, "__len__") else list(v)
                  for v in (r if isinstance(r, tuple) and not isinstance(r, (torch.Size, ember.Size)) else (r,))]
        seen[lib.__name__] = (LoggingTensor.log, kinds, values)
    assert seen["ember"] == seen["torch"]


def metadata_tensor_type(lib):
    """PyTorch's metadata-carrying wrapper: not a subclass; unwraps, calls, wraps again with the metadata."""

    class MetadataTensor:
        def __init__(self, data, metadata=None, **kwargs):
            self._t = lib.as_tensor(data, **kwargs)
            self._metadata = metadata

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if kwargs is None:
                kwargs = {}
            metadatas = tuple(a._metadata for a in args if hasattr(a, "_metadata"))
            args = [getattr(a, "_t", a) for a in args]
            assert len(metadatas) > 0
            return MetadataTensor(func(*args, **kwargs), metadata=metadatas[0])

    return MetadataTensor


@LIBS
def test_metadata_tensor_example(lib):
    MetadataTensor = metadata_tensor_type(lib)
    metadata = {"owner": "Ministry of Silly Walks"}
    m = MetadataTensor([[1, 2], [3, 4]], metadata=metadata)
    t = lib.tensor([[1, 2], [1, 2]])
    r = lib.add(t, m)
    assert type(r) is MetadataTensor and r._metadata is metadata and r._t.tolist() == [[2, 4], [4, 6]]
    r = lib.mul(t, m)
    assert r._metadata is metadata and r._t.tolist() == [[1, 4], [3, 8]]
    r = lib.nn.functional.relu(MetadataTensor([-1.0, 2.0], metadata=metadata))
    assert r._t.tolist() == [0.0, 2.0]


# --------------------------------------------------------------------------- the rules
def test_subclass_before_base_and_not_implemented_passes_on(device):
    calls = []

    class A(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(("A", [t.__name__ for t in types]))
            return "A"

    class B(A):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(("B", [t.__name__ for t in types]))
            return NotImplemented

    a = ember.ones(2, device=device).as_subclass(A)
    b = ember.ones(2, device=device).as_subclass(B)
    assert ember.add(a, b) == "A"
    assert calls == [("B", ["B", "A"]), ("A", ["B", "A"])]

    class Refuses(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    r = ember.ones(2, device=device).as_subclass(Refuses)
    with pytest.raises(TypeError, match=r"(?s)Multiple dispatch failed for 'ember.sub'.*  - tensor subclass .*Refuses"):
        ember.sub(r, 1)
    with pytest.raises(TypeError, match=r"Multiple dispatch failed for 'ember.Tensor.shape.__get__'"):
        r.shape  # noqa: B018


def test_default_subclass_keeps_its_class_through_ops_and_grad(device):
    class Marked(ember.Tensor):
        pass

    y = ember.ones(2, device=device, requires_grad=True)
    m = (y * 2).as_subclass(Marked)
    out = (m * 3).sum()
    assert type(m * 3) is Marked and type(out) is Marked and type(m.unbind(0)[0]) is Marked
    out.backward()
    assert y.grad.tolist() == [6.0, 6.0] and type(y.grad) is ember.Tensor
    values, indices = ember.ones(2, 3, device=device).as_subclass(Marked).max(dim=1)
    assert type(values) is Marked and type(indices) is Marked


def test_parameter_ops_give_plain_tensors(device):
    p = ember.nn.Parameter(ember.ones(2, device=device))
    assert type(p * 2) is ember.Tensor and type(ember.add(p, 1)) is ember.Tensor
    assert type(p.detach()) is ember.Tensor and not overrides.has_torch_function((p,))


def test_plain_path_has_no_check_until_a_dispatching_type_appears():
    code = (
        "import ember\n"
        "from ember import overrides, registry\n"
        "p = ember.nn.Parameter(ember.ones(2)); q = p * 2 + ember.add(p, 1)\n"
        "raw = registry.NAMESPACES['Tensor']\n"
        "assert not overrides._tensor_armed\n"
        "assert ember.Tensor.add is raw['add'] and ember.Tensor.__add__ is raw['__add__']\n"
        "assert ember.Tensor.shape.fget.__qualname__ == 'Tensor.shape'\n"
        "class Sub(ember.Tensor): pass\n"
        "assert overrides._tensor_armed and ember.Tensor.add.__wrapped__ is raw['add']\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr


def test_conversions_wrapped_by_a_later_trace_stay_overridable():
    # the checks switch on first, then the first jit trace wraps the tensor->Python conversions around them
    code = (
        "import ember\n"
        "from ember import overrides\n"
        "class Sub(ember.Tensor): pass\n"
        "ember.jit.trace(lambda x: x * 2, (ember.ones(2),))\n"
        "listed = overrides.get_overridable_functions()[ember.Tensor]\n"
        "assert all(getattr(ember.Tensor, n) in listed for n in ('item', 'tolist', '__bool__', 'numpy')), n\n"
        "assert overrides.resolve_name(ember.Tensor.item) == 'ember.Tensor.item'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "ok", out.stderr


def test_disable_torch_function_subclass_and_all(device):
    class Marked(ember.Tensor):
        pass

    m = ember.ones(2, device=device).as_subclass(Marked)
    with ember._C.DisableTorchFunctionSubclass():
        assert type(m + 1) is ember.Tensor and not ember._C._is_torch_function_enabled()
    assert type(m + 1) is Marked and ember._C._is_torch_function_enabled()
    seen = []
    with Recording(seen):
        with ember._C.DisableTorchFunctionSubclass():
            ember.add(m, 1)
        with ember._C.DisableTorchFunction():
            ember.add(m, 1)
    assert seen == ["add"]  # a mode still runs with subclasses disabled, not with everything disabled
    assert ember._C._TensorMeta is type(ember.Tensor) and ember._C._disabled_torch_function_impl is \
        ember.nn.Parameter.__torch_function__


def test_make_subclass_and_wrapper_subclass(device):
    class Sub(ember.Tensor):
        pass

    data = ember.ones(2, 3, device=device)
    s = ember.Tensor._make_subclass(Sub, data, True)
    assert type(s) is Sub and s.requires_grad and s.is_leaf and s.data_ptr() == data.data_ptr()
    data.add_(1)
    assert s._version == data._version and s.tolist() == data.tolist()
    w = ember.Tensor._make_wrapper_subclass(Sub, (4, 5), dtype=ember.float64)
    assert type(w) is Sub and tuple(w.shape) == (4, 5) and w.dtype is ember.float64
    with pytest.raises(TypeError, match="_make_subclass.*subclass of Tensor"):
        ember.Tensor._make_subclass(int, data)
    with pytest.raises(TypeError, match="_make_subclass.*'data' must be Tensor"):
        ember.Tensor._make_subclass(Sub, [1.0])


# --------------------------------------------------------------------------- modes
class Recording(overrides.TorchFunctionMode):
    def __init__(self, seen):
        super().__init__()
        self.seen = seen

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.__name__)
        return func(*args, **(kwargs or {}))


@LIBS
def test_mode_sees_functions_factories_and_methods_once(lib):
    seen = []

    class Mode(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((func.__name__, types))
            return func(*args, **(kwargs or {}))

    with Mode():
        x = lib.zeros(2, 2)
        y = lib.nn.functional.relu(x + 1).sum()
    assert [name for name, _ in seen] == ["zeros", "add", "relu", "sum"] and y.item() == 4.0
    assert seen[0] == ("zeros", ()) and seen[1] == ("add", ())  # plain tensors are no overloaded arguments


def test_modes_nest_innermost_first_and_step_aside_while_running(device):
    order = []

    class Named(overrides.TorchFunctionMode):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def __torch_function__(self, func, types, args=(), kwargs=None):
            order.append((self.name, overrides._len_torch_function_stack()))
            return func(*args, **(kwargs or {}))

    x = ember.ones(2, device=device)
    with Named("outer"), Named("inner"):
        assert ember._C._is_torch_function_mode_enabled()
        ember.neg(x)
    assert order == [("inner", 1), ("outer", 0)] and overrides._len_torch_function_stack() == 0
    with pytest.raises(RuntimeError, match="empty mode stack"):
        overrides._pop_mode()


@LIBS
def test_mode_not_implemented_falls_to_the_subclass(lib):
    class Declines(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return NotImplemented

    class Answers(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "answered"

    class Default(lib.Tensor):
        pass

    a, d, plain = lib.ones(2).as_subclass(Answers), lib.ones(2).as_subclass(Default), lib.ones(1)
    with Declines():
        assert lib.add(a, 1) == "answered"
        # the default handler calls add again, the mode still on: it declines once more, as in PyTorch
        with pytest.raises(TypeError, match=rf"(?s)'{lib.__name__}.add'.*\n\n  - mode object .*Declines"):
            lib.add(d, 1)
        with pytest.raises(TypeError, match=rf"(?s)'{lib.__name__}.add'.*\n\n  - mode object .*Declines"):
            lib.add(plain, 1)


@LIBS
def test_redispatch_function_skips_one_hop(lib):
    """PyTorch's redispatch_function examples: a subclass sees the ops inside a composite, a mode re-entered
    sees them all."""
    ov = lib.overrides
    log = []

    def scaled_mul(a, b):
        if ov.has_torch_function((a, b)):
            return ov.handle_torch_function(scaled_mul, (a, b), a, b)
        return a * b + 1

    class LoggingTensor(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args, kwargs=None):
            log.append(func.__name__)
            return ov.redispatch_function(func, types, args, kwargs)

    r = scaled_mul(lib.tensor([3.0]).as_subclass(LoggingTensor), lib.tensor([4.0]).as_subclass(LoggingTensor))
    assert log == ["scaled_mul", "mul"] and r.tolist() == [13.0]

    class LoggingMode(ov.TorchFunctionMode):
        def __torch_function__(self, func, types, args, kwargs=None):
            log.append(func.__name__)
            with self:
                return ov.redispatch_function(func, types, args, kwargs)

    log.clear()
    a, b = lib.tensor([3.0]), lib.tensor([4.0])
    with LoggingMode():
        r = scaled_mul(a, b)
    # a mode entered again inside its handler also sees the property reads of ember's own Python kernels' entry
    # (binary reads .dtype of a scalar operand's partner), where PyTorch's C++ reads none
    assert [n for n in log if n != "__get__"] == ["scaled_mul", "mul", "add"] and r.tolist() == [13.0]


# --------------------------------------------------------------------------- ember.overrides
class Catch:
    """A Tensor-like that answers every call with the function it got."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return ("caught", func, types)


def _shown_functions():
    """(namespace, name, the object shown) for every function of the dispatching namespaces."""
    for ns in registry.NAMESPACE_NAMES:
        for target in registry.bound(ns):
            for name, fn in registry.NAMESPACES[ns].items():
                if isinstance(inspect.unwrap(fn), type(_shown_functions)) and name not in overrides.TENSOR_IGNORED:
                    yield ns, name, getattr(target, name) if ns != "Tensor" else target.__dict__[name]


def test_every_exported_function_dispatches():
    overrides.get_overridable_functions()  # Tensor's methods armed
    skipped = []
    for ns, name, shown in _shown_functions():
        if isinstance(shown, (staticmethod, classmethod)):
            continue
        if isinstance(shown, property):
            r = shown.__get__(Catch())
        else:
            r = shown(Catch())
        if not (isinstance(r, tuple) and r[0] == "caught" and r[2] == (Catch,)):
            skipped.append(f"{ns}.{name}")
    assert not skipped, f"public functions that skip the __torch_function__ check: {skipped}"


TORCH_NAMESPACES = {"torch": (torch, ember), "nn.functional": (torch.nn.functional, ember.nn.functional),
                    "linalg": (torch.linalg, ember.linalg), "fft": (torch.fft, ember.fft),
                    "special": (torch.special, ember.special), "Tensor": (torch.Tensor, ember.Tensor)}
# PyTorch-overridable names that ember shows without the check, each with why
NOT_DISPATCHED = {
    "torch": {"autocast": "a class (a context manager), not a function"},
}


@pytest.mark.parametrize("ns", list(TORCH_NAMESPACES))
def test_what_pytorch_lets_override_ember_does_too(ns):
    tmod, emod = TORCH_NAMESPACES[ns]
    names = {n for n in dir(tmod) if not n.startswith("_") or n.startswith("__")}
    overridable_t = {id(f) for f in torch.overrides.get_overridable_functions().get(tmod, [])}
    # by the function behind each check: a method re-exported after the checks switched on is a new wrapper
    ours = {id(inspect.unwrap(f)) for f in overrides.get_overridable_functions().get(emod, [])}
    missing = []
    for n in sorted(names):
        tf = getattr(tmod, n, None)
        if id(tf) not in overridable_t or not hasattr(emod, n) or n in NOT_DISPATCHED.get(ns, {}):
            continue
        if id(inspect.unwrap(getattr(emod, n))) not in ours:
            missing.append(n)
    assert not missing, f"ember.{ns} functions PyTorch dispatches but ember does not: {missing}"


def test_overrides_helpers(device):
    t = ember.ones(2, device=device)
    assert overrides.is_tensor_like(t) and overrides.is_tensor_like(Catch()) and not overrides.is_tensor_like(6)
    assert not overrides.has_torch_function((t, 1, None)) and overrides.has_torch_function((t, Catch()))
    assert overrides.has_torch_function_unary(Catch()) and overrides.has_torch_function_variadic(t, Catch())
    assert overrides.is_tensor_method_or_property(ember.Tensor.add)
    assert overrides.is_tensor_method_or_property(ember.Tensor.shape.__get__)
    assert not overrides.is_tensor_method_or_property(ember.add)
    assert overrides.resolve_name(ember.add) == "ember.add"
    assert overrides.resolve_name(ember.nn.functional.relu) == "ember.nn.functional.relu"
    assert overrides.resolve_name(ember.Tensor.add) == "ember.Tensor.add"
    ignored = overrides.get_ignored_functions()
    assert ember.Tensor.as_subclass in ignored and ember.add not in ignored
    testing = overrides.get_testing_overrides()
    assert testing[ember.add](t, t) == -1
    assert inspect.signature(testing[ember.add]) == inspect.signature(ember.add)
    assert overrides.get_default_nowrap_functions() == {ember.Tensor.grad.__get__}

    def dispatcher(a, b):
        return (a, b)

    @overrides.wrap_torch_function(dispatcher)
    def plus(a, b):
        return a + b

    assert plus(1, 2) == 3
    caught, func, types = plus(1, Catch())
    assert func is plus and types == (Catch,)
    r = overrides.handle_torch_function(plus, (Catch(),), 1, 2)
    assert r[1] is plus


def test_handled_functions_keyed_by_the_public_objects(device):
    handled = {}

    class Keyed(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func in handled:
                return handled[func]
            return super().__torch_function__(func, types, args, kwargs)

    handled.update({ember.Tensor.add: "method", ember.add: "function", ember.Tensor.shape.__get__: "shape",
                    ember.nn.functional.relu: "relu", ember.Tensor.__repr__: "repr"})
    k = ember.ones(2, device=device).as_subclass(Keyed)
    assert (k.add(1), ember.add(k, 1), k + 1, k.shape, ember.nn.functional.relu(k), repr(k)) == \
        ("method", "function", "method", "shape", "relu", "repr")
