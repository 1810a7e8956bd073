"""The backend contract and devices.

A backend is one device type (``"cpu"``, ``"cuda"``, ...): an object that
owns an array module ``xp`` and a kernel table ``{op name: function on xp
arrays}``, and answers everything the core asks of a device.  This module is
the whole contract: :class:`Backend` declares every method, the required ones
raising :class:`NotImplementedError` and every optional one with a working,
documented default.  A backend plugin adds an instance with
``registry.add_backend(backend)`` (the ``ember_backends`` hook); the table of
registered backends is :data:`BACKENDS`.

Required (:class:`ArrayBackend` provides all of them from a NumPy-compatible
``xp`` and the shared kernel library :mod:`ember.kernels`):

* ``name`` (the device type) and ``kernels`` (the kernel table);
* host<->device copies: :meth:`~Backend.from_numpy`, :meth:`~Backend.to_numpy`;
* random generators: :meth:`~Backend.new_generator`, :meth:`~Backend.generator_state`,
  :meth:`~Backend.set_generator_state`.

Optional, each with its default: availability, numbered devices and the
current device, synchronisation, device properties, streams and events,
memory statistics, pinned host memory, IPC handles (``ember.multiprocessing``),
collectives (``ember.distributed``), and the two hooks through which the
shared kernels use a backend's strategy: an allocator
(:attr:`Backend.allocate`, default ``xp.empty``) and a block runner
(:attr:`Backend.run_blocks`, default one call).  So a new array library becomes a
backend in a few lines::

    class MyBackend(ember.backend.ArrayBackend):
        name = "mydev"
        def __init__(self):
            super().__init__(my_array_module)
"""
from __future__ import annotations

import contextvars
import pickle
import threading
import time

import numpy as np

from . import dtypes, kernels
from .state import DETERMINISM, alert_not_deterministic

API_VERSION = 1  # the version of this contract; a backend declares the one it was written for (``api_version``)
BACKENDS: dict = {}  # device type -> registered Backend (filled by ember.plugins.Registry.add_backend)


class SimpleStream:
    """The stream a backend without streams of its own hands out: a device index and an identity."""

    __slots__ = ("index", "priority")

    def __init__(self, index, priority=0):
        self.index, self.priority = index, priority

    def __repr__(self):
        return f"SimpleStream(index={self.index})"


class SimpleEvent:
    """The event a backend without events of its own hands out: the host time it was recorded at."""

    __slots__ = ("time",)

    def __init__(self):
        self.time = None


class Backend:
    """The interface every backend provides.  Subclass :class:`ArrayBackend` in practice.

    Attributes: ``name`` (the device type, ``"mydev"``), ``host`` (True when arrays are NumPy
    arrays in host memory, so ``Tensor.numpy()`` shares them), ``api_version`` (the contract
    version the backend was written for, :data:`API_VERSION`), ``xp`` (the array module),
    ``array_type`` (the class of its arrays), ``kernels`` (``{op name: function}``),
    ``nondeterministic_kernels`` (optional: the kernel names whose results may vary from run to run on
    this backend, e.g. scatters with atomic adds; under ``ember.use_deterministic_algorithms(True)`` they
    raise, or warn with ``warn_only=True``) and ``plugin`` (set at registration: the plugin that registered
    it).  A subclass that defines ``__init__`` calls ``super().__init__()``.  ``copied_views`` (optional: the
    view kernels, ``"diagonal"``, ``"windows"``, ``"as_strided"``, that return copies on this backend because
    its arrays cannot express those views; an in-place write through such a view is then written back into
    its base by the core; :class:`ArrayBackend` fills it from the kernel library).

    Two optional hooks hand the backend's strategy to the shared kernels (:mod:`ember.kernels.strategy`),
    read once when :class:`ArrayBackend` builds its kernel table:

    * ``allocate(shape, dtype)``: an uninitialised C-contiguous array for a kernel's large results and
      scratch (convolution columns and outputs, recurrent buffers, batch norm's outputs).  Default None:
      ``xp.empty``.  The CPU backend hands out reused pages (``ember_cpu_numpy.workspace``).
    * ``run_blocks(body, n, size)``: run ``body(lo, hi)`` over blocks that cover ``range(n)``, in any
      order or at once (``size``: the elements of the whole work, to judge whether splitting pays; each
      block writes its own part of the output).  Default None: one call ``body(0, n)``, and the kernels
      work on whole arrays.  Given a runner (and ufuncs with ``out=``), the kernels take their blocked
      forms: work cut into cache-sized blocks handed to the runner.  The CPU backend runs the blocks on
      its thread pool (``ember_cpu_numpy.threads``).
    """

    name: str = ""
    nondeterministic_kernels: frozenset = frozenset()
    copied_views: frozenset = frozenset()
    writes_into: frozenset = frozenset()
    allocate = None
    run_blocks = None
    host: bool = False
    api_version: int = API_VERSION
    xp = None
    array_type = None
    plugin = "<unregistered>"

    def __init__(self):
        self.kernels: dict = {}
        self._local = threading.local()  # this thread's current device and streams
        self._default_streams: dict = {}

    def _unsupported(self, feature: str, instead: str = "") -> NotImplementedError:
        """The error for an optional part this backend does not provide."""
        return NotImplementedError(f"the {self.name!r} backend (plugin {self.plugin!r}) does not support {feature}"
                                   f"{'; ' + instead if instead else ''}")

    # ---------------------------------------------------------------- availability
    def is_available(self) -> bool:
        """Whether the device can be used here.  Default: True."""
        return True

    def unavailable_reason(self) -> str:
        """Why :meth:`is_available` is False (shown in errors and skipped tests).  Default: ``""``."""
        return ""

    def version(self) -> str:
        """The library version shown by ``python -m ember.info``.  Default: ``""``."""
        return ""

    # ---------------------------------------------------------------- devices
    def has_index(self) -> bool:
        """Whether devices are numbered (``cuda:0``) or not (``cpu``).  Default: False.

        A backend with numbered devices is an accelerator (``ember.accelerator``, ``ember.cuda``).
        """
        return False

    def device_count(self) -> int:
        """How many devices of this type are visible.  Default: 1."""
        return 1

    def current_device(self) -> int:
        """The index of this thread's current device, where tensors for ``"<name>"`` go.

        Default: the index last given to :meth:`set_device` in this thread, else 0.
        """
        return getattr(self._local, "index", 0)

    def set_device(self, index: int) -> None:
        """Make device ``index`` current in this thread.

        Default: remembers ``index`` per thread (what :meth:`current_device` returns); an index
        out of range raises :class:`RuntimeError`.  A library with its own notion of the current
        device (CUDA's) overrides both methods.
        """
        if not 0 <= index < self.device_count():
            raise RuntimeError(f"set_device(): invalid device index {index} for the {self.name!r} backend "
                               f"({self.device_count()} device(s) present)")
        self._local.index = index

    def device_context(self, index):
        """A context manager making device ``index`` current inside it (None: no change).

        Default: :meth:`set_device` on entry, the previous device restored on exit.
        """
        return _DeviceContext(self, index)

    def synchronize(self, index=None) -> None:
        """Wait until all queued work on device ``index`` (None: every device) has finished.

        Default: nothing to wait for (work completes before each call returns).
        """

    def device_properties(self, index: int) -> dict:
        """``{"name", "total_memory", "major", "minor", "multi_processor_count"}`` of device ``index``.

        ``total_memory`` is in bytes, ``(major, minor)`` the compute capability.
        Default: raises :class:`NotImplementedError`.
        """
        raise self._unsupported("device properties")

    # ---------------------------------------------------------------- kernels and dtypes
    def kernels_for(self, index) -> dict:
        """The kernel table used for tensors on device ``index``.  Default: ``self.kernels``.

        A multi-device library whose kernels run on the current device returns one table per
        index whose kernels switch to it; such tables are refilled in place in :meth:`kernels_changed`.
        """
        return self.kernels

    def kernels_changed(self) -> None:
        """Called after a plugin replaced or removed a kernel in ``self.kernels``.  Default: nothing."""

    def array_dtype(self, d: dtypes.dtype):
        """The array library's dtype for ember dtype ``d``.  Default: the NumPy dtype ``d.np``."""
        if d in dtypes.NAMED_ONLY:
            raise NotImplementedError(f"ember has no {d.name} tensors yet (the dtype is known by name only)")
        if d.np is None:
            raise TypeError(f"{d} tensors need the ml_dtypes package, which is not installed (pip install "
                            f"'ember[bfloat16]')")
        return d.np

    def dtype_of(self, array) -> dtypes.dtype:
        """The ember dtype of ``array``.  Default: looked up from ``array.dtype`` as a NumPy dtype."""
        return dtypes.FROM_NP[array.dtype]

    def as_array(self, value):
        """Turn a kernel result that is not an array (a NumPy scalar, say) into one.  Default: ``xp.asarray``."""
        return self.xp.asarray(value)

    # ---------------------------------------------------------------- host <-> device copies (required)
    def from_numpy(self, array: np.ndarray, index, copy: bool = False, non_blocking: bool = False):
        """A device array on device ``index`` (None: the current one) with the values of host ``array``.

        A host backend returns ``array`` itself unless ``copy``.  With ``non_blocking`` (only
        passed when :meth:`is_pinned` says ``array`` is pinned) the copy may be queued on the
        current stream and return at once; later work on that stream and :meth:`synchronize`
        see the data.  Required.
        """
        raise NotImplementedError(f"the {self.name!r} backend does not implement from_numpy()")

    def to_numpy(self, array) -> np.ndarray:
        """A host ``numpy.ndarray`` with the data of ``array`` (zero-copy where the memory is the host's).

        Waits for queued work that writes ``array``.  Required.
        """
        raise NotImplementedError(f"the {self.name!r} backend does not implement to_numpy()")

    # ---------------------------------------------------------------- random generators (required)
    def new_generator(self, index, seed: int):
        """A random generator for device ``index``, seeded with ``seed``: an object with NumPy
        ``Generator`` methods (``random``, ``normal``, ``integers``, ...) returning device arrays.  Required."""
        raise NotImplementedError(f"the {self.name!r} backend does not implement new_generator()")

    def generator_state(self, gen) -> np.ndarray:
        """The state of generator ``gen`` as a ``uint8`` host array.  Required."""
        raise NotImplementedError(f"the {self.name!r} backend does not implement generator_state()")

    def set_generator_state(self, gen, state: np.ndarray) -> None:
        """Restore a state returned by :meth:`generator_state`.  Required."""
        raise NotImplementedError(f"the {self.name!r} backend does not implement set_generator_state()")

    # ---------------------------------------------------------------- streams
    # Streams and events are opaque objects to the core.  The defaults suit a device whose work
    # completes in order: a stream is a :class:`SimpleStream`, synchronising one synchronises its
    # device, and recording an event synchronises the stream and notes the host time.
    def new_stream(self, index: int, priority: int = 0):
        """A new stream on device ``index``.  Default: a new :class:`SimpleStream`."""
        return SimpleStream(index, priority)

    def default_stream(self, index: int):
        """Device ``index``'s default stream (the same object every call).

        Default: one :class:`SimpleStream` per device.
        """
        stream = self._default_streams.get(index)
        if stream is None:
            stream = self._default_streams[index] = SimpleStream(index)
        return stream

    def current_stream(self, index: int):
        """The stream this thread queues work on for device ``index``.

        Default: the stream last given to :meth:`set_stream` for that device in this thread, else
        :meth:`default_stream`.
        """
        return getattr(self._local, "streams", {}).get(index) or self.default_stream(index)

    def set_stream(self, stream) -> None:
        """Make ``stream`` current for its device in this thread.  Default: remembers it per thread and device."""
        if not hasattr(self._local, "streams"):
            self._local.streams = {}
        self._local.streams[stream.index] = stream

    def stream_synchronize(self, stream) -> None:
        """Wait for everything queued on ``stream``.  Default: :meth:`synchronize` of its device."""
        self.synchronize(stream.index)

    def stream_query(self, stream) -> bool:
        """Whether everything queued on ``stream`` has finished.  Default: synchronises it, then True."""
        self.stream_synchronize(stream)
        return True

    def stream_wait_event(self, stream, event) -> None:
        """Make later work on ``stream`` wait for ``event``.  Default: nothing (a default event is
        complete once recorded)."""

    # ---------------------------------------------------------------- events
    def new_event(self, enable_timing: bool, blocking: bool):
        """A new event (``enable_timing``: it can be timed; ``blocking``: waiting on it sleeps
        rather than spins).  Default: a :class:`SimpleEvent`."""
        return SimpleEvent()

    def event_record(self, event, stream) -> None:
        """Record ``event`` on ``stream``: it completes when the work queued there before it has.

        Default: :meth:`stream_synchronize`, then the host time is noted.
        """
        self.stream_synchronize(stream)
        event.time = time.perf_counter()

    def event_query(self, event) -> bool:
        """Whether ``event`` has completed (True for an event never recorded).  Default: True."""
        return True

    def event_synchronize(self, event) -> None:
        """Wait until ``event`` has completed.  Default: nothing (it completed when recorded)."""

    def event_elapsed_ms(self, start, end) -> float:
        """Milliseconds between two recorded, timed events.  Default: the difference of their host
        times; an event not recorded raises :class:`RuntimeError`."""
        if start.time is None or end.time is None:
            raise RuntimeError(f"elapsed_time: both events must be recorded first (on the {self.name!r} backend)")
        return (end.time - start.time) * 1000.0

    # ---------------------------------------------------------------- memory statistics
    def memory_stats(self, index=None) -> dict:
        """PyTorch-style counters of device ``index`` (None: the current one), in bytes.

        The core reads ``"allocated_bytes.all.current"`` and ``".peak"`` (memory held by live
        arrays) and ``"reserved_bytes.all.current"`` and ``".peak"`` (held by the allocator,
        cached blocks included); a missing key reads as 0.  Default: ``{}``.
        """
        return {}

    def empty_cache(self) -> None:
        """Give cached, unused memory of every device back.  Default: nothing (no cache)."""

    def reset_peak_memory_stats(self, index=None) -> None:
        """Restart the ``".peak"`` counters of device ``index`` from the current values.  Default: nothing."""

    # ---------------------------------------------------------------- pinned host memory
    def pin_memory(self, array: np.ndarray) -> np.ndarray:
        """A copy of host ``array`` in page-locked memory, from which :meth:`from_numpy` may copy
        with ``non_blocking``.  Default: ``array`` itself (this device has no pinned memory;
        ``Tensor.pin_memory()`` then returns the tensor unchanged)."""
        return array

    def is_pinned(self, array: np.ndarray) -> bool:
        """Whether host ``array`` lies in memory this backend pinned.  Default: False."""
        return False

    # ---------------------------------------------------------------- IPC (ember.multiprocessing)
    def supports_ipc(self) -> bool:
        """Whether other processes can open this device's arrays (:meth:`ipc_handle`, :meth:`ipc_open`).

        Default: False; ``share_memory_()`` and sending such a tensor to another process then
        raise :class:`RuntimeError` (host backends share through shared memory instead).
        """
        return False

    def ipc_handle(self, array):
        """A picklable handle through which another process opens the memory of ``array``.

        The handle carries whatever :meth:`ipc_open` needs (shape, strides, dtype, offset); the
        sender keeps ``array`` alive while receivers use it.  Default: raises :class:`NotImplementedError`.
        """
        raise self._unsupported("sharing device memory between processes", "copy the tensor to the CPU first")

    def ipc_open(self, handle, index: int):
        """The array, on device ``index`` of this process, over the memory :meth:`ipc_handle` exported.

        Default: raises :class:`NotImplementedError`.
        """
        raise self._unsupported("opening device memory of another process")

    # ---------------------------------------------------------------- collectives (ember.distributed)
    def supports_collectives(self) -> bool:
        """Whether this backend runs collectives on device memory (NCCL-style).

        Default: False; ``ember.distributed`` then stages tensors through host memory and MPI.
        """
        return False

    def collective_all_reduce(self, comm, array, op: str, async_op: bool):
        """Combine ``array`` across every process of ``comm``, in place.

        ``comm`` is the process group's mpi4py communicator (for setting up a device communicator:
        ``Get_rank``, ``Get_size``, ``bcast``); ``op`` one of ``"sum"``, ``"avg"``, ``"product"``,
        ``"min"``, ``"max"``, ``"band"``, ``"bor"``, ``"bxor"`` (raise :class:`RuntimeError` for
        one that is not supported).  Returns None, or with ``async_op`` an object with ``wait()``
        and ``is_completed()``.  Default: raises :class:`NotImplementedError`.
        """
        raise self._unsupported("collectives on device memory", "ember.distributed uses host copies")

    def collective_broadcast(self, comm, array, src: int, async_op: bool):
        """Overwrite ``array`` in every process of ``comm`` with rank ``src``'s, in place.

        Arguments and result as :meth:`collective_all_reduce`.  Default: raises :class:`NotImplementedError`.
        """
        raise self._unsupported("collectives on device memory", "ember.distributed uses host copies")

    def release_collectives(self, comm) -> None:
        """Forget what was set up for ``comm`` (its process group is being destroyed).  Default: nothing."""


class _DeviceContext:
    """:meth:`Backend.device_context`'s default: ``index`` current inside, the previous device after."""

    def __init__(self, backend, index):
        self.backend, self.index, self.prev = backend, index, None

    def __enter__(self):
        if self.index is not None:
            self.prev = self.backend.current_device()
            self.backend.set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.index is not None:
            self.backend.set_device(self.prev)
        return False


def _alerting(fn, caller):
    """``fn`` that first raises (or warns) under ``ember.use_deterministic_algorithms(True)``."""
    def kernel(*args, **kwargs):
        if DETERMINISM.enabled:
            alert_not_deterministic(caller)
        return fn(*args, **kwargs)

    kernel.__wrapped__ = fn
    return kernel


def _writes_into(table) -> frozenset:
    """The kernels of ``table`` that write their one result into an ``out=`` array of the first input's shape and
    dtype: the array library's ufuncs, and functions marked ``writes_into = True``.  In-place ops whose Op is
    exactly one of these kernels (``kernel_name``) write straight into the tensor's memory."""
    return frozenset(n for n, fn in table.items() if getattr(fn, "writes_into", False) or
                     (type(fn).__name__ == "ufunc" and getattr(fn, "nout", 0) == 1))


class ArrayBackend(Backend):
    """A backend over a NumPy-compatible array module ``xp``, with the shared kernels.

    Provides the required parts: the kernel table (:func:`ember.kernels.library` of ``xp`` and the
    backend's ``allocate`` and ``run_blocks`` hooks, updated with :meth:`overrides`), copies through
    ``xp.asarray`` and NumPy random generators.
    """

    def __init__(self, xp, overrides: dict | None = None):
        super().__init__()
        self.xp = xp
        self.array_type = self.array_type or type(xp.zeros(1))
        self.kernels = kernels.library(xp, self.allocate, self.run_blocks)
        self.copied_views = kernels.copied_views(xp)
        self.kernels.update(kernels.quieted(self.overrides()))
        if overrides:
            self.kernels.update(kernels.quieted(overrides))
        for op in self.nondeterministic_kernels & self.kernels.keys():
            self.kernels[op] = _alerting(self.kernels[op], f"{op} on {self.name}")
        self.writes_into = _writes_into(self.kernels)

    def kernels_changed(self) -> None:
        self.writes_into = _writes_into(self.kernels)

    def overrides(self) -> dict:
        """Kernels this backend does better than the shared library (``{op name: function}``)."""
        return {}

    def version(self) -> str:
        """``xp``'s name and version."""
        return f"{self.xp.__name__} {getattr(self.xp, '__version__', '')}"

    def from_numpy(self, array, index, copy=False, non_blocking=False):
        """``xp.asarray(array)`` (``xp.array(array, copy=True)`` with ``copy``)."""
        return self.xp.array(array, copy=True) if copy else self.xp.asarray(array)

    def to_numpy(self, array):
        """``numpy.asarray(array)``."""
        return np.asarray(array)

    def new_generator(self, index, seed):
        """A NumPy ``Generator`` (PCG64) seeded with ``seed``."""
        return np.random.Generator(np.random.PCG64(seed))

    def generator_state(self, gen):
        """The bit generator's state, pickled into bytes."""
        return np.frombuffer(pickle.dumps(gen.bit_generator.state), dtype=np.uint8).copy()

    def set_generator_state(self, gen, state):
        """Restore a state from :meth:`generator_state`."""
        gen.bit_generator.state = pickle.loads(np.asarray(state, dtype=np.uint8).tobytes())  # noqa: S301 - our own bytes


class device:
    """A device: a type and an optional index, e.g. ``ember.device("cuda:1")``.

    >>> import ember
    >>> ember.device("cpu")
    device(type='cpu')
    """

    __slots__ = ("type", "index", "_backend", "kernels", "atype", "__weakref__")
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
            dev.type, dev.index, dev._backend, dev.kernels, dev.atype = type, index, None, None, None
            cls._cache[key] = dev
        return dev

    @property
    def backend(self):
        """The backend of this device's type: the one it was resolved with, else the one registered for the
        type now (``ember.device("cuda").backend`` before any tensor went to ``cuda:0``); None if none is."""
        b = self._backend
        return b if b is not None else BACKENDS.get(self.type)

    @backend.setter
    def backend(self, value):
        self._backend = value

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


def accelerator_types() -> list:
    """The device types of the available accelerators (backends with numbered devices), in registration order."""
    return [name for name, b in BACKENDS.items() if name != "cpu" and b.has_index() and b.is_available()]


def accelerator_backend() -> Backend | None:
    """The backend of the accelerator in use (the default device's type if it is one), or None."""
    names = accelerator_types()
    if not names:
        return None
    default = get_default_device()
    return BACKENDS[default.type if default.type in names else names[0]]


def _accelerator_type():
    names = accelerator_types()
    return names[0] if names else "cuda"


def array_namespace(x):
    """The array module kernels use for device array ``x``: the ``xp`` of the backend whose arrays ``x`` is one
    of (``numpy`` for the CPU's, ``cupy`` for CUDA's), else ``x.__array_namespace__()``.  For kernels in
    plugins: CuPy's arrays have no ``__array_namespace__``.

    >>> import numpy as np, ember
    >>> ember.backend.array_namespace(np.zeros(2)) is np
    True
    """
    for b in BACKENDS.values():
        if b.array_type is not None and b.xp is not None and isinstance(x, b.array_type):
            return b.xp
    if hasattr(x, "__array_namespace__"):
        return x.__array_namespace__()
    raise TypeError(f"array_namespace(): {type(x).__module__}.{type(x).__name__} is not an array of a registered "
                    f"ember backend and has no __array_namespace__")


LATE_PLUGINS = [lambda: False]
"""``ember.plugins`` puts its ``register_deferred`` here: a device type no backend provides may belong to a
plugin whose import was still running when ember loaded it."""


def get_backend(type_name: str) -> Backend:
    try:
        return BACKENDS[type_name]
    except KeyError:
        if LATE_PLUGINS[0]() and type_name in BACKENDS:
            return BACKENDS[type_name]
        known = ", ".join(sorted(BACKENDS)) or "none"
        raise RuntimeError(f"no ember backend provides device type {type_name!r} (registered: {known})") from None


def resolve(dev) -> device:
    """The concrete device (with backend and kernels) that tensors for ``dev`` live on."""
    if dev is None:
        d = _default_get()
        return d if d is not None else _init_default()
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
    if dev.kernels is None or dev._backend is not backend:
        dev._backend = backend
        dev.kernels = backend.kernels_for(dev.index)
        dev.atype = backend.array_type
    return dev


class _PerThread:
    """A one-slot cell (``cell[0]``) holding a value per thread: the default device is a thread's, as in
    PyTorch (``set_default_device`` and ``with device:`` in one thread leave the others alone)."""

    def __init__(self, name, default):
        self.var = contextvars.ContextVar(name, default=default)
        self.get = self.var.get

    def __getitem__(self, i):
        return self.var.get()

    def __setitem__(self, i, value):
        self.var.set(value)


class _PerThreadStack(threading.local):
    def __init__(self):
        self.items = []

    def append(self, x):
        self.items.append(x)

    def pop(self):
        return self.items.pop()


_default_device = _PerThread("ember_default_device", None)
_default_get = _default_device.get
_device_stack = _PerThreadStack()


def _init_default():
    import os

    env = os.environ.get("EMBER_DEVICE")
    dev = resolve(env) if env else resolve("cpu")  # the CPU, as in PyTorch, unless EMBER_DEVICE says otherwise
    _default_device[0] = dev
    return dev


def set_default_device(device) -> None:
    """Make ``device`` the device new tensors are created on (``None``: back to automatic)."""
    _default_device[0] = None if device is None else resolve(device)


def get_default_device() -> device:
    """The device new tensors are created on."""
    return resolve(None)


def refresh_kernels() -> None:
    """Re-read every resolved device's kernel table (after a backend changed)."""
    for dev in device._cache.values():
        if dev._backend is not None:
            dev.kernels = dev.backend.kernels_for(dev.index)
