"""The backend contract and devices.

A backend is one device type (``"cpu"``, ``"cuda"``, ...).  It owns an array
module ``xp``, a kernel table ``{op name: function on xp arrays}``, device
enumeration, host<->device copies, synchronisation, random generators and
memory statistics.  :class:`ArrayBackend` builds all of that from a
NumPy-compatible ``xp`` and the shared kernel library :mod:`ember.kernels`,
so a new array library becomes a backend in a few lines::

    class MyBackend(ember.backend.ArrayBackend):
        name = "mydev"
        def __init__(self):
            super().__init__(my_array_module)
"""
from __future__ import annotations

import contextlib

import numpy as np

from . import dtypes
from .plugins import API_VERSION, REGISTRY


class Backend:
    """The interface every backend provides.  Subclass :class:`ArrayBackend` in practice."""

    name: str = ""
    host: bool = False  # arrays live in host memory and are NumPy arrays (`Tensor.numpy()` shares them)
    api_version: int = API_VERSION
    xp = None
    plugin = "<unregistered>"

    def __init__(self):
        self.kernels: dict = {}

    # -- devices
    def is_available(self) -> bool:
        return True

    def unavailable_reason(self) -> str:
        return ""

    def device_count(self) -> int:
        return 1

    def has_index(self) -> bool:
        """Whether devices of this type are numbered (``cuda:0``) or not (``cpu``)."""
        return False

    def current_device(self) -> int:
        return 0

    def set_device(self, index: int) -> None:
        pass

    def device_context(self, index):
        """A context manager making ``index`` the current device."""
        return contextlib.nullcontext()

    def kernels_for(self, index) -> dict:
        """The kernel table used for tensors on device ``index``."""
        return self.kernels

    def kernels_changed(self) -> None:
        """Called after a plugin replaced a kernel."""

    def synchronize(self, index=None) -> None:
        pass

    def version(self) -> str:
        return ""

    # -- data
    def from_numpy(self, array: np.ndarray, index, copy: bool = False, non_blocking: bool = False):
        """A device array from a host array (no copy on the host device unless ``copy``)."""
        raise NotImplementedError

    def to_numpy(self, array) -> np.ndarray:
        """A host ``numpy.ndarray`` with the data of ``array`` (zero-copy where the memory is the host's)."""
        raise NotImplementedError

    def array_dtype(self, d: dtypes.dtype):
        """The array library's dtype for ember dtype ``d``."""
        if d.np is None:
            raise TypeError(f"{d} tensors need the ml_dtypes package, which is not installed")
        return d.np

    def dtype_of(self, array) -> dtypes.dtype:
        return dtypes.FROM_NP[array.dtype]

    def as_array(self, value):
        """Turn a kernel result that is not an array (a NumPy scalar, say) into one."""
        return self.xp.asarray(value)

    # -- random
    def new_generator(self, index, seed: int):
        """A random generator for device ``index``, seeded with ``seed``."""
        raise NotImplementedError

    def generator_state(self, gen) -> np.ndarray:
        raise NotImplementedError

    def set_generator_state(self, gen, state: np.ndarray) -> None:
        raise NotImplementedError

    # -- memory
    def memory_stats(self, index=None) -> dict:
        return {}

    def pin_memory(self, array: np.ndarray) -> np.ndarray:
        return array

    def is_pinned(self, array) -> bool:
        return False


class ArrayBackend(Backend):
    """A backend over a NumPy-compatible array module, with the shared kernels."""

    array_type = None

    def __init__(self, xp, overrides: dict | None = None):
        super().__init__()
        from . import kernels

        self.xp = xp
        self.array_type = self.array_type or type(xp.zeros(1))
        self.kernels = kernels.library(xp)
        self.kernels.update(self.overrides())
        if overrides:
            self.kernels.update(overrides)

    def overrides(self) -> dict:
        """Kernels this backend does better than the shared library."""
        return {}

    def version(self) -> str:
        return f"{self.xp.__name__} {getattr(self.xp, '__version__', '')}"

    def from_numpy(self, array, index, copy=False, non_blocking=False):
        return self.xp.array(array, copy=True) if copy else self.xp.asarray(array)

    def to_numpy(self, array):
        return np.asarray(array)

    def new_generator(self, index, seed):
        return np.random.Generator(np.random.PCG64(seed))

    def generator_state(self, gen):
        import pickle

        return np.frombuffer(pickle.dumps(gen.bit_generator.state), dtype=np.uint8).copy()

    def set_generator_state(self, gen, state):
        import pickle

        gen.bit_generator.state = pickle.loads(np.asarray(state, dtype=np.uint8).tobytes())  # noqa: S301 - our own bytes


class device:
    """A device: a type and an optional index, e.g. ``ember.device("cuda:1")``.

    >>> import ember
    >>> ember.device("cpu")
    device(type='cpu')
    """

    __slots__ = ("type", "index", "backend", "kernels", "atype", "__weakref__")
    _cache: dict = {}

    def __new__(cls, type, index=None):  # noqa: A002 - PyTorch's name
        if isinstance(type, device):
            if index is None:
                return type
            type = type.type
        elif isinstance(type, int) and not isinstance(type, bool) and index is None:
            type, index = _accelerator_type(), type
        elif not isinstance(type, str):
            raise TypeError(f"device(): expected a str, int or device, got {type.__class__.__name__}")
        elif ":" in type:
            if index is not None:
                raise RuntimeError(f"device(): type {type!r} already names an index; got index={index} too")
            type, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        key = (type, index)
        dev = cls._cache.get(key)
        if dev is None:
            if not type or not type.replace("_", "").isalnum():
                raise RuntimeError(f"Expected a device type at start of device string: {type!r}")
            dev = object.__new__(cls)
            dev.type, dev.index, dev.backend, dev.kernels, dev.atype = type, index, None, None, None
            cls._cache[key] = dev
        return dev

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        _device_stack.append(_default_device[0])
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        _default_device[0] = _device_stack.pop()


def _accelerator_type():
    for name, b in REGISTRY.backends.items():
        if name != "cpu" and b.has_index() and b.is_available():  # an accelerator: numbered devices
            return name
    return "cuda"


def get_backend(type_name: str) -> Backend:
    try:
        return REGISTRY.backends[type_name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY.backends)) or "none"
        raise RuntimeError(f"no ember backend provides device type {type_name!r} (registered: {known})") from None


def resolve(dev) -> device:
    """The concrete device (with backend and kernels) that tensors for ``dev`` live on."""
    if dev is None:
        return _default_device[0] if _default_device[0] is not None else _init_default()
    if type(dev) is device and dev.kernels is not None:
        return dev
    dev = device(dev)
    backend = get_backend(dev.type)
    if not backend.is_available():
        raise RuntimeError(f"device {dev} is not available: {backend.unavailable_reason() or 'backend unavailable'}")
    if backend.has_index():
        index = backend.current_device() if dev.index is None else dev.index
        if index >= backend.device_count():
            raise RuntimeError(f"device {dev.type}:{index} is out of range: {backend.device_count()} "
                               f"{dev.type} device(s) available")
        dev = device(dev.type, index)
    elif dev.index not in (None, 0):
        raise RuntimeError(f"device {dev} does not exist: {dev.type} devices are not numbered")
    else:
        dev = device(dev.type)
    if dev.kernels is None or dev.backend is not backend:
        dev.backend = backend
        dev.kernels = backend.kernels_for(dev.index)
        dev.atype = backend.array_type
    return dev


_default_device = [None]
_device_stack: list = []


def _init_default():
    import os

    env = os.environ.get("EMBER_DEVICE")
    if env:
        dev = resolve(env)
    else:
        dev = None
        for name in ("cuda",):
            b = REGISTRY.backends.get(name)
            if b is not None and b.is_available():
                dev = resolve(name)
        dev = dev or resolve("cpu")
    _default_device[0] = dev
    return dev


def set_default_device(dev) -> None:
    """Make ``dev`` the device new tensors are created on (``None``: back to automatic)."""
    _default_device[0] = None if dev is None else resolve(dev)


def get_default_device() -> device:
    """The device new tensors are created on."""
    return resolve(None)


def refresh_kernels() -> None:
    """Re-read every resolved device's kernel table (after a backend changed)."""
    for dev in device._cache.values():
        if dev.backend is not None:
            dev.kernels = dev.backend.kernels_for(dev.index)
