"""``ember.autocast``: ops run in a lower-precision dtype where PyTorch's lists say so.

Autocast acts where every op passes dispatch (:class:`ember.dispatch.intercept`): one process-wide
handler, installed while any thread has autocast on, looks up the Op in the table of
:mod:`ember.amp.lists` and casts the Op's floating arguments before it runs.  The casts are ordinary
ops, so autograd records them and gradients reach the inputs in the inputs' own dtypes.  The state
(on/off and dtype per device type, the nesting depth, the weight-cast cache) is per thread, as in
PyTorch: the handler passes the ops of a thread without autocast through untouched.
"""
from __future__ import annotations

import collections.abc
import functools
import threading
import warnings
import weakref

from .. import dispatch, dtypes, writes
from ..autograd.function import OPS
from ..backend import BACKENDS
from ..tensor import Tensor
from .lists import FP32, LOWER, PROMOTE, policies

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

# PyTorch's device types (the order of its error message) and their default autocast dtypes
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_DEFAULT_DTYPE = {"cpu": dtypes.bfloat16, "xla": dtypes.bfloat16, "hpu": dtypes.bfloat16}
_AMP_TYPES = ("cpu", "cuda", "mps", "xpu", "xla", "ipu", "hpu", "mtia", "maia")  # PyTorch's is_autocast_available


class _State(threading.local):
    """This thread's autocast state (a fresh thread starts with autocast off, as in PyTorch)."""

    def __init__(self):
        self.enabled: dict = {}
        self.dtype: dict = {}
        self.nesting = 0
        self.cache_enabled = True
        self.cache: dict = {}


_STATE = _State()
_LOCK = threading.Lock()
_ACTIVE = [0]  # how many (thread, device type) pairs have autocast on: the handler is installed while > 0
_INTERCEPT: list = []


def _device_type(device_type) -> str:
    if device_type is None:
        return "cuda"
    name = str(device_type).split(":")[0]
    if name not in DEVICE_TYPES and name not in BACKENDS:
        raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return name


def _publish():
    # what ops and the handler read: {device type: dtype} of the device types with autocast on in this thread
    st = _STATE
    dispatch.AUTOCAST.on = {d: get_autocast_dtype(d) for d, on in st.enabled.items() if on}


# --------------------------------------------------------------------------- torch-level state functions
def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can run on ``device_type`` (``"cpu"``, ``"cuda"``, or another registered backend)."""
    name = _device_type(device_type)
    return name in _AMP_TYPES or (name in BACKENDS and name != "meta")


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread for ``device_type`` (CUDA when not given, as in PyTorch)."""
    return bool(_STATE.enabled.get(_device_type(device_type), False))


def set_autocast_enabled(device_type, enabled=None) -> None:
    """Turn autocast on or off for ``device_type`` in this thread (``set_autocast_enabled(True)``: CUDA)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    name = _device_type(device_type)
    st = _STATE
    was = bool(st.enabled.get(name, False))
    enabled = bool(enabled)
    st.enabled[name] = enabled
    _publish()
    if was != enabled:
        _count(1 if enabled else -1)


def _count(delta):
    with _LOCK:
        _ACTIVE[0] += delta
        if _ACTIVE[0] > 0 and not _INTERCEPT:
            box = dispatch.intercept(_handler)
            box.__enter__()
            _INTERCEPT.append(box)
        elif _ACTIVE[0] <= 0 and _INTERCEPT:
            _INTERCEPT.pop().__exit__(None, None, None)


def get_autocast_dtype(device_type: str) -> dtypes.dtype:
    """The dtype autocast casts to on ``device_type`` in this thread."""
    name = _device_type(device_type)
    return _STATE.dtype.get(name) or _DEFAULT_DTYPE.get(name, dtypes.float16)


def set_autocast_dtype(device_type: str, dtype) -> None:
    name = _device_type(device_type)
    _STATE.dtype[name] = dtypes.as_dtype(dtype)
    _publish()


def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> dtypes.dtype:
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> dtypes.dtype:
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def _legacy(kind):
    def is_enabled() -> bool:
        _deprecated(f"is_autocast_{kind}_enabled", f"is_autocast_enabled('{kind}')")
        return is_autocast_enabled(kind)

    def set_enabled(enabled: bool) -> None:
        _deprecated(f"set_autocast_{kind}_enabled", f"set_autocast_enabled('{kind}', enabled)")
        set_autocast_enabled(kind, enabled)

    def get_dtype() -> dtypes.dtype:
        _deprecated(f"get_autocast_{kind}_dtype", f"get_autocast_dtype('{kind}')")
        return get_autocast_dtype(kind)

    def set_dtype(dtype) -> None:
        _deprecated(f"set_autocast_{kind}_dtype", f"set_autocast_dtype('{kind}', dtype)")
        set_autocast_dtype(kind, dtype)

    return {f"is_autocast_{kind}_enabled": is_enabled, f"set_autocast_{kind}_enabled": set_enabled,
            f"get_autocast_{kind}_dtype": get_dtype, f"set_autocast_{kind}_dtype": set_dtype}


LEGACY = {**_legacy("ipu"), **_legacy("xla")}


def autocast_increment_nesting() -> int:
    _STATE.nesting += 1
    return _STATE.nesting


def autocast_decrement_nesting() -> int:
    _STATE.nesting -= 1
    return _STATE.nesting


def is_autocast_cache_enabled() -> bool:
    return _STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Forget the casts of float32 weights kept for the current autocast region of this thread."""
    _STATE.cache.clear()


# --------------------------------------------------------------------------- the context manager
class autocast:
    """Run the ops of a region in mixed precision (context manager or decorator), as ``torch.autocast``.

    Ops on PyTorch's lower-precision list (matmul, linear, convolutions) run in ``dtype`` (default:
    ``ember.bfloat16`` on the CPU, ``ember.float16`` on CUDA); ops on its float32 list (losses, softmax
    and reductions on CUDA, linear algebra on the CPU) run in float32; the others run in their inputs'
    dtypes.  The state is per thread; ``enabled=False`` turns autocast off inside an enclosing region.

    >>> import ember
    >>> a, b = ember.ones(2, 3), ember.ones(3, 2)
    >>> with ember.autocast("cpu"):
    ...     c = a @ b
    >>> c.dtype
    ember.bfloat16
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtypes.as_dtype(dtype)
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        supported = (dtypes.bfloat16, dtypes.float16)
        if enabled and self.fast_dtype is dtypes.bfloat16 and dtypes.bfloat16.np is None:
            raise RuntimeError(f"{device_type} autocast to bfloat16 needs the ml_dtypes package, which is not "
                               f"installed (pip install 'ember[bfloat16]'), or autocast to float16: "
                               f"ember.autocast({device_type!r}, dtype=ember.float16)")
        if enabled:
            if device_type == "cuda":
                backend = BACKENDS.get("cuda")
                if backend is None or not backend.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                                  stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in supported:
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of "
                              f"{', '.join(str(d).replace('ember.', 'torch.') for d in supported)} currently.",
                              stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_dtype(self.device, self.fast_dtype)
        set_autocast_enabled(self.device, self._enabled)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, *exc):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to "
                            f"use autocast as a context manager? For example:\n"
                            f"    with torch.autocast(device_type=...):\n        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


# --------------------------------------------------------------------------- the dispatch handler
_POLICIES: dict = {}  # device type -> {Op class: policy}


def _policy_table(device_type):
    table = _POLICIES.get(device_type)
    if table is None:
        table = {OPS[name]: p for name, p in policies(device_type).items() if name in OPS}
        _POLICIES[device_type] = table
    return table


def _first_tensor(args):
    for a in args:
        if isinstance(a, Tensor):
            return a
        if type(a) in (list, tuple) and a and isinstance(a[0], Tensor):
            return a[0]
    return None


def _eligible(t, device_type):
    d = t.dtype
    return d.category == dtypes.FLOAT and d is not dtypes.float64 and t._dev.type == device_type


def _cached_cast(t, to, device_type, fast):
    if not _eligible(t, device_type) or t.dtype is to:
        return t
    st = _STATE
    # PyTorch's (Apex's) heuristic: keep the low-precision casts of float32 leaf weights for the region
    if (to is fast and st.cache_enabled and t.dtype is dtypes.float32 and t._rg and t._fn is None
            and t._base is None):
        hit = st.cache.get(id(t))
        if hit is not None and hit[0]() is t:
            return hit[1]
        out = dispatch.cast(t, to)
        st.cache[id(t)] = (weakref.ref(t), out)
        return out
    return dispatch.cast(t, to)


def _cast_args(args, to, device_type, fast):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = _cached_cast(a, to, device_type, fast)
        elif type(a) in (list, tuple) and a and isinstance(a[0], Tensor):
            a = type(a)(_cached_cast(t, to, device_type, fast) if isinstance(t, Tensor) else t for t in a)
        out.append(a)
    return tuple(out)


def _widest(args, device_type, fast):
    to = fast
    for a in args:
        items = a if type(a) in (list, tuple) else (a,)
        for t in items:
            if isinstance(t, Tensor) and _eligible(t, device_type):
                if t.dtype is dtypes.float32:
                    return dtypes.float32
                if t.dtype is not fast:
                    raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return to


def _handler(kind, Op, args, run):
    on = getattr(dispatch.AUTOCAST, "on", None)
    if not on or kind is dispatch.view_op or kind is writes.inplace or isinstance(Op, str):
        return run(*args)
    first = _first_tensor(args)
    if first is None:
        return run(*args)
    device_type = first._dev.type
    fast = on.get(device_type)
    if fast is None:
        return run(*args)
    policy = _policy_table(device_type).get(Op)
    if policy is None:
        return run(*args)
    if policy is LOWER:
        to = fast
    elif policy is FP32:
        to = dtypes.float32
    elif policy is PROMOTE:
        to = _widest(args, device_type, fast)
    else:  # pragma: no cover - the table holds these three only
        return run(*args)
    return run(*_cast_args(args, to, device_type, fast))


# --------------------------------------------------------------------------- custom autograd Functions
def _cast(value, device_type: str, dtype):
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and value.dtype is not dtypes.float64
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable) and not hasattr(value, "__array__"):
        it = (_cast(v, device_type, dtype) for v in value)
        return type(value)(it) if isinstance(value, (list, tuple)) else it
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of a custom :class:`ember.autograd.Function` under autocast.

    With ``cast_inputs``, floating tensor arguments are cast to it and ``forward`` runs with autocast off
    (when called inside an autocast region); without, ``forward`` runs in the current autocast state.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of a custom Function: it runs in the autocast state of ``forward``."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
