"""``ember.accelerator``: the current accelerator, whatever its device type.

User code asks ``ember.accelerator.current_accelerator()`` instead of hard-coding ``"cuda"``::

    >>> import ember
    >>> acc = ember.accelerator.current_accelerator()
    >>> dev = acc if acc is not None else ember.device("cpu")
    >>> ember.ones(2, device=dev).device.type == dev.type
    True

An accelerator is an available backend with numbered devices (``cuda:0``,
``cuda:1``, ...).  :class:`DeviceAPI` holds the device-neutral logic behind
both this module and ``ember.cuda`` (``DeviceAPI("cuda")``): device counts,
the current device and its context manager, streams, events, synchronisation
and memory statistics, each delegated to a method the backend contract
(:class:`ember.backend.Backend`) declares.
"""
from __future__ import annotations

from . import backend as _backend
from .backend import BACKENDS
from . import registry as _registry


def current_accelerator(check_available: bool = False):
    """The device type of the accelerator in use (``device(type='cuda')``), or None with none present."""
    b = _backend.accelerator_backend()
    return None if b is None else _backend.device(b.name)


MEMORY_FUNCTIONS = ("memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
                    "max_memory_reserved", "empty_cache", "reset_peak_memory_stats")
__all__ = ["DeviceAPI", "Event", "Stream", "current_accelerator", "current_device_index", "current_stream",
           "device_count", "device_index", "is_available", "set_device_index", "set_stream", "synchronize",
           *MEMORY_FUNCTIONS]


class DeviceAPI:
    """Device queries, contexts, streams and memory statistics of one device type.

    ``kind`` is a device type (``"cuda"``), or None for the current accelerator.

    >>> import ember
    >>> ember.accelerator.DeviceAPI("cuda").device_count() >= 0
    True
    """

    def __init__(self, kind: str | None = None):
        self.kind = kind

    def functions(self, names) -> dict:
        """``{name: bound method}`` for a module to export (``globals().update(api.functions(...))``)."""
        return {n: getattr(self, n) for n in names}

    # ---------------------------------------------------------------- backend and device lookup
    def _name(self) -> str | None:
        if self.kind is not None:
            return self.kind
        acc = current_accelerator()
        return acc.type if acc is not None else None

    def _backend(self):
        name = self._name()
        b = BACKENDS.get(name) if name is not None else None
        if b is None or not b.is_available():
            what = name or "accelerator"
            reason = b.unavailable_reason() if b is not None else f"no {what} backend is registered"
            raise RuntimeError(f"{what} is not available: {reason or 'backend unavailable'}")
        return b

    def index(self, device=None) -> int:
        """The device number ``device`` (an int, ``"cuda:1"``, a device, or None: the current one) stands for."""
        b = self._backend()
        if device is None:
            return b.current_device()
        if isinstance(device, int) and not isinstance(device, bool):
            idx = device
        else:
            dev = _backend.device(device)
            if dev.type != b.name:
                raise ValueError(f"Expected a {b.name} device, but got: {dev}")
            idx = b.current_device() if dev.index is None else dev.index
        if not 0 <= idx < b.device_count():
            raise RuntimeError(f"Invalid device id: {b.name}:{idx} ({b.device_count()} {b.name} device(s) present)")
        return idx

    # ---------------------------------------------------------------- devices
    def is_available(self) -> bool:
        """Whether the backend is registered and sees at least one device."""
        name = self._name()
        b = BACKENDS.get(name) if name is not None else None
        return b is not None and b.is_available() and b.device_count() > 0

    def device_count(self) -> int:
        """How many devices of this type are visible (0 when the backend is unavailable)."""
        return self._backend().device_count() if self.is_available() else 0

    def current_device(self) -> int:
        """The number of the current device, where new tensors for ``"<type>"`` go."""
        return self._backend().current_device()

    def set_device(self, device) -> None:
        """Make ``device`` current (``set_device(1)``, ``set_device("cuda:1")``)."""
        idx = self.index(device)
        b = self._backend()
        b.set_device(idx)
        _follow_default(b.name, idx)

    def device(self, device) -> "_DeviceContext":
        """A context manager that makes ``device`` current inside it (None or -1: no change)."""
        return _DeviceContext(self, device)

    def synchronize(self, device=None) -> None:
        """Wait until every queued kernel and copy on ``device`` (default: the current one) has finished."""
        self._backend().synchronize(self.index(device))

    def get_device_name(self, device=None) -> str:
        return self.get_device_properties(device).name

    def get_device_properties(self, device=None):
        """The device's properties: ``name``, ``total_memory``, ``major``, ``minor``, ``multi_processor_count``."""
        return _Properties(self._backend().device_properties(self.index(device)))

    def get_device_capability(self, device=None) -> tuple:
        p = self.get_device_properties(device)
        return (p.major, p.minor)

    # ---------------------------------------------------------------- streams
    def current_stream(self, device=None) -> "Stream":
        """The stream kernels are queued on for ``device``."""
        idx = self.index(device)
        return Stream._of(self, idx, self._backend().current_stream(idx))

    def default_stream(self, device=None) -> "Stream":
        idx = self.index(device)
        return Stream._of(self, idx, self._backend().default_stream(idx))

    def stream(self, stream: "Stream | None"):
        """A context manager queuing work on ``stream`` inside it (None: no change)."""
        return _StreamContext(self, stream)

    def set_stream(self, stream: "Stream") -> None:
        self._backend().set_stream(stream.native)

    # ---------------------------------------------------------------- memory
    def memory_stats(self, device=None) -> dict:
        """PyTorch-style counters, e.g. ``"allocated_bytes.all.current"`` and ``"allocated_bytes.all.peak"``."""
        return dict(self._backend().memory_stats(self.index(device)))

    def _stat(self, key, device):
        return int(self.memory_stats(device).get(key, 0))

    def memory_allocated(self, device=None) -> int:
        """Bytes held by live tensors on ``device``."""
        return self._stat("allocated_bytes.all.current", device)

    def max_memory_allocated(self, device=None) -> int:
        """The peak of :meth:`memory_allocated` since start or the last :meth:`reset_peak_memory_stats`."""
        return self._stat("allocated_bytes.all.peak", device)

    def memory_reserved(self, device=None) -> int:
        """Bytes the caching allocator holds (live tensors plus cached blocks)."""
        return self._stat("reserved_bytes.all.current", device)

    def max_memory_reserved(self, device=None) -> int:
        return self._stat("reserved_bytes.all.peak", device)

    def empty_cache(self) -> None:
        """Give cached, unused blocks back to the device."""
        if self.is_available():
            self._backend().empty_cache()

    def reset_peak_memory_stats(self, device=None) -> None:
        self._backend().reset_peak_memory_stats(self.index(device))

    def memory_summary(self, device=None, abbreviated: bool = False) -> str:
        """:meth:`memory_stats` of ``device`` as a printable table in PyTorch's layout: one row per metric
        the backend counts (current and peak use; totals allocated and freed where counted), with the
        large/small pool rows unless ``abbreviated``."""
        stats = self.memory_stats(device)
        idx = self.index(device)
        rule, thick = "-" * 75, "=" * 75
        lines = [thick, f" {'':16} ember {self._name().upper()} memory summary, device ID {idx or 0:<17d}".ljust(75),
                 thick, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
        for key, title, fmt in _SUMMARY_ROWS:
            if f"{key}.all.current" not in stats:
                continue
            lines.append(rule)
            pools = [("all", title)] + ([] if abbreviated else [("large_pool", "      from large pool"),
                                                                  ("small_pool", "      from small pool")])
            for pool, name in pools:
                cells = [stats.get(f"{key}.{pool}.{col}") for col in ("current", "peak", "allocated", "freed")]
                if pool != "all" and cells[0] is None:
                    continue
                lines.append(f" {name:<21} | " + " | ".join(fmt(v) for v in cells) + " ")
        lines.append(thick)
        return "|" + "|\n|".join(lines) + "|\n"


def _scaled(value, units, step, limit, width):
    """``value`` in the largest unit that keeps it under ``limit`` of the next (PyTorch's summary cells)."""
    if value is None:
        return " " * 10
    value, unit = int(value), units[0]
    for nxt in units[1:]:
        if value < limit:
            break
        value, unit = value // step, nxt
    return f"{value:{width}d} {unit}"


def _size(v):
    return _scaled(v, ("B  ", "KiB", "MiB", "GiB", "TiB"), 1024, 768 * 1024, 6)


def _count(v):
    return _scaled(v, (" ", "K", "M"), 1000, 750 * 1000, 8)


_SUMMARY_ROWS = [("allocated_bytes", "Allocated memory", _size), ("active_bytes", "Active memory", _size),
                 ("requested_bytes", "Requested memory", _size), ("reserved_bytes", "GPU reserved memory", _size),
                 ("inactive_split_bytes", "Non-releasable memory", _size), ("allocation", "Allocations", _count),
                 ("active", "Active allocs", _count), ("segment", "GPU reserved segments", _count),
                 ("inactive_split", "Non-releasable allocs", _count)]


class _Properties:
    """Device properties with PyTorch's attribute names."""

    def __init__(self, props: dict):
        self.__dict__.update(props)

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"_DeviceProperties({body})"


def _follow_default(kind, idx):
    """Keep an indexed default device of ``kind`` on the current device (as PyTorch's ``"cuda"`` default does)."""
    default = _backend._default_device[0]
    if default is not None and default.type == kind and default.index != idx:
        _backend._default_device[0] = _backend.resolve(_backend.device(kind, idx))


class _DeviceContext:
    """``with ember.cuda.device(1):`` new ``"cuda"`` tensors (and a ``cuda`` default device) go to cuda:1."""

    def __init__(self, api, device):
        self.api = api
        self.idx = None if device is None or device == -1 else api.index(device)
        self.prev = None

    def __enter__(self):
        if self.idx is not None:
            b = self.api._backend()
            self.prev = (b.current_device(), _backend._default_device[0])
            b.set_device(self.idx)
            _follow_default(b.name, self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx is not None:
            self.api._backend().set_device(self.prev[0])
            _backend._default_device[0] = self.prev[1]
        return False


class Stream:
    """A queue of kernels on one device; work on different streams may overlap.

    ``ember.cuda.Stream()`` makes a new stream on the current device; ``with ember.cuda.stream(s):``
    queues work on it.
    """

    api = DeviceAPI(None)

    def __init__(self, device=None, priority: int = 0):
        idx = self.api.index(device)
        self.device_index = idx
        self.native = self.api._backend().new_stream(idx, priority)

    @classmethod
    def _of(cls, api, idx, native):
        s = object.__new__(cls)
        s.api, s.device_index, s.native = api, idx, native
        return s

    @property
    def device(self):
        return _backend.device(self.api._backend().name, self.device_index)

    def synchronize(self) -> None:
        """Wait for everything queued on this stream."""
        self.api._backend().stream_synchronize(self.native)

    def query(self) -> bool:
        """Whether everything queued on this stream has finished."""
        return bool(self.api._backend().stream_query(self.native))

    def wait_event(self, event: "Event") -> None:
        """Make later work on this stream wait for ``event``."""
        self.api._backend().stream_wait_event(self.native, event.native)

    def wait_stream(self, stream: "Stream") -> None:
        """Make later work on this stream wait for what is queued on ``stream`` now."""
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event if event is not None else type(self)._event_type()()
        event.record(self)
        return event

    @classmethod
    def _event_type(cls):
        return Event

    def __enter__(self):
        self._ctx = self.api.stream(self)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def __eq__(self, other):
        return isinstance(other, Stream) and self.native == other.native

    def __hash__(self):
        return hash((self.device_index, id(self.native)))

    def __repr__(self):
        return f"<ember.{self.api._backend().name}.Stream device={self.device}>"


class Event:
    """A marker in a stream: record it, wait for it, time between two of them.

    >>> import ember
    >>> ember.accelerator.Event  # doctest: +ELLIPSIS
    <class 'ember.accelerator.Event'>
    """

    api = DeviceAPI(None)

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self.enable_timing = enable_timing
        self.native = self.api._backend().new_event(enable_timing, blocking)

    def record(self, stream: "Stream | None" = None) -> None:
        stream = stream if stream is not None else self.api.current_stream()
        self.api._backend().event_record(self.native, stream.native)

    def wait(self, stream: "Stream | None" = None) -> None:
        (stream if stream is not None else self.api.current_stream()).wait_event(self)

    def query(self) -> bool:
        return bool(self.api._backend().event_query(self.native))

    def synchronize(self) -> None:
        self.api._backend().event_synchronize(self.native)

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, with ``enable_timing=True``)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        return float(self.api._backend().event_elapsed_ms(self.native, end_event.native))


class _StreamContext:
    def __init__(self, api, stream):
        self.api, self.stream, self.prev = api, stream, None

    def __enter__(self):
        if self.stream is None:
            return None
        b = self.api._backend()
        self.prev = (b.current_device(), b.current_stream(self.stream.device_index))
        b.set_device(self.stream.device_index)
        b.set_stream(self.stream.native)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            b = self.api._backend()
            b.set_stream(self.prev[1])
            b.set_device(self.prev[0])
        return False


_api = DeviceAPI(None)
is_available = _api.is_available
device_count = _api.device_count
current_device_index = _api.current_device
set_device_index = _api.set_device
device_index = _api.device
synchronize = _api.synchronize
current_stream = _api.current_stream
set_stream = _api.set_stream
globals().update(_api.functions(MEMORY_FUNCTIONS))


# ---------------------------------------------------------------- errors
class AcceleratorError(RuntimeError):
    """An error a device backend reported (PyTorch's ``torch.AcceleratorError``, a RuntimeError)."""


class OutOfMemoryError(RuntimeError):
    """A device allocation failed for lack of memory (``ember.OutOfMemoryError`` is ``ember.cuda.OutOfMemoryError``)."""


# ---------------------------------------------------------------- device-generic streams and events
def _api_for(device, what: str) -> DeviceAPI:
    """The :class:`DeviceAPI` of ``device``'s type (None: the current accelerator, else the CPU)."""
    if device is None:
        acc = current_accelerator()
        return DeviceAPI(acc.type if acc is not None else "cpu")
    if isinstance(device, int) and not isinstance(device, bool):
        acc = current_accelerator()
        return DeviceAPI(acc.type if acc is not None else "cpu")
    if not isinstance(device, (str, _backend.device)):
        raise TypeError(f"{what}(): argument 'device' must be ember.device, str, int or None, not "
                        f"{type(device).__name__}")
    return DeviceAPI(_backend.device(device).type)


# c10::DeviceType numbers, which PyTorch's Stream.device_type gives
_DEVICE_TYPE_CODES = {"cpu": 0, "cuda": 1, "meta": 9, "xpu": 12, "mps": 13}


class DeviceStream(Stream):
    """``ember.Stream(device=None, *, priority=0)``: a stream of any device type (PyTorch's ``torch.Stream``).

    ``device`` None picks the current accelerator, or the CPU where there is none.

    >>> import ember
    >>> s = ember.Stream("cpu")
    >>> s.device.type, s.device_type, s.query()
    ('cpu', 0, True)
    """

    def __init__(self, device=None, *, priority: int = 0):
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"Stream(): argument 'priority' must be int, not {type(priority).__name__}")
        self.api = _api_for(device, "Stream")
        super().__init__(device, priority)

    @property
    def device_type(self) -> int:
        """The device type as PyTorch's ``c10::DeviceType`` number (0: CPU, 1: CUDA)."""
        return _DEVICE_TYPE_CODES.get(self.api._backend().name, -1)

    @classmethod
    def _event_type(cls):
        return DeviceEvent

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = event if event is not None else DeviceEvent(self.device)
        event.record(self)
        return event

    def __repr__(self):
        return f"ember.Stream device_type={self.device.type}, device_index={self.device_index}"


class DeviceEvent(Event):
    """``ember.Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``: an event of any
    device type (PyTorch's ``torch.Event``).

    >>> import ember
    >>> e = ember.Event("cpu"); e.record(); e.query()
    True
    """

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.api = _api_for(device, "Event")
        self.device_index = self.api.index(device)
        super().__init__(enable_timing, blocking, interprocess)

    @property
    def device(self):
        return _backend.device(self.api._backend().name, self.device_index)

    def record(self, stream: "Stream | None" = None) -> None:
        stream = stream if stream is not None else self.api.current_stream(self.device_index)
        self.api._backend().event_record(self.native, stream.native)

    def wait(self, stream: "Stream | None" = None) -> None:
        (stream if stream is not None else self.api.current_stream(self.device_index)).wait_event(self)

    def __repr__(self):
        return f"ember.Event device_type={self.device.type}, device_index={self.device_index}"


def get_device_module(device=None):
    """The module of ``device``'s type (``ember.cuda`` for ``"cuda:0"``, ``ember.cpu`` for ``"cpu"``); None: the
    current accelerator's, else ``ember.cpu``.

    >>> import ember
    >>> ember.get_device_module("cpu") is ember.cpu
    True
    """
    import importlib  # the device modules import this one: look them up by name when asked

    if device is None:
        acc = current_accelerator()
        kind = acc.type if acc is not None else "cpu"
    elif isinstance(device, (str, _backend.device)):
        kind = _backend.device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect ember.device, str, or None")
    try:
        return importlib.import_module(f"ember.{kind}")
    except ImportError:
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'ember.{kind}'.") \
            from None


def record_stream(self, stream) -> None:
    """Mark ``self``'s memory as in use by ``stream``: it is not reused for other work until what is queued on
    ``stream`` now has finished.  The CuPy memory pool keeps memory per stream, so nothing more is needed there;
    the CPU has no streams, as in PyTorch.

    >>> import ember
    >>> try:
    ...     ember.zeros(2).record_stream(ember.Stream("cpu"))
    ... except NotImplementedError as e:
    ...     print("not on cpu")
    not on cpu
    """
    if not isinstance(stream, Stream):
        raise RuntimeError(f"record_stream(): argument 'stream' must be a Stream, not {type(stream).__name__}")
    if self.device.type in ("cpu", "meta"):
        raise NotImplementedError(f"record_stream: not available for {self.device.type} tensors (they have no "
                                  "streams)")
    if stream.device != self.device:
        raise RuntimeError(f"record_stream: the stream is on {stream.device}, the tensor on {self.device}")


_registry.export(record_stream, to=("Tensor",))
