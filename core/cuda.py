"""``ember.cuda``: CUDA devices, streams, events, memory and legacy tensor types.

The backend itself is the ``ember_cuda_cupy`` plugin; everything here goes
through it, with the device-neutral logic of :class:`ember.accelerator.DeviceAPI`.

>>> import ember
>>> ember.cuda.device_count() == (ember.cuda.device_count() if ember.cuda.is_available() else 0)
True
"""
from __future__ import annotations

import warnings

from . import dtypes
from .accelerator import MEMORY_FUNCTIONS, DeviceAPI
from .accelerator import Event as _Event
from .accelerator import Stream as _Stream
from .accelerator import _StreamContext
from .ops.creation import legacy_type
from .random import default_generator

_api = DeviceAPI("cuda")

is_available = _api.is_available
device_count = _api.device_count
current_device = _api.current_device
set_device = _api.set_device
device = _api.device
synchronize = _api.synchronize
get_device_name = _api.get_device_name
get_device_properties = _api.get_device_properties
get_device_capability = _api.get_device_capability
current_stream = _api.current_stream
default_stream = _api.default_stream
stream = _api.stream
set_stream = _api.set_stream
globals().update(_api.functions(MEMORY_FUNCTIONS))
memory_summary = _api.memory_summary


def _renamed(old: str, new: str, message: str):
    """PyTorch's deprecated memory names: warn as PyTorch does, then call the current name."""
    def alias(device=None):
        warnings.warn(message, FutureWarning, stacklevel=2)
        return getattr(_api, new)(device)
    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated: warns, then calls :func:`ember.cuda.{new}`."
    return alias


for _old, _new in (("memory_cached", "memory_reserved"), ("max_memory_cached", "max_memory_reserved")):
    globals()[_old] = _renamed(_old, _new, f"`torch.cuda.{_old}` has been renamed to `torch.cuda.{_new}`")
for _old in ("reset_max_memory_allocated", "reset_max_memory_cached"):
    globals()[_old] = _renamed(_old, "reset_peak_memory_stats", f"torch.cuda.{_old} now calls "
                               "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.")


class Event(_Event):
    """A CUDA event (``ember.cuda.Event(enable_timing=True)``)."""

    api = _api


class Stream(_Stream):
    """A CUDA stream (``s = ember.cuda.Stream(); with ember.cuda.stream(s): ...``)."""

    api = _api

    @classmethod
    def _event_type(cls):
        return Event


class StreamContext(_StreamContext):
    """``with ember.cuda.StreamContext(s):`` makes ``s`` (and its device) current; None leaves them as they are."""

    def __init__(self, stream):
        super().__init__(_api, stream)


class CUDAGraph:
    """A captured CUDA graph (not built: ember replays no CUDA graphs; creating one raises NotImplementedError,
    while the name serves annotations and ``isinstance`` checks)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("ember has no CUDA graph capture yet (ember.cuda.CUDAGraph)")


class graph:
    """``with ember.cuda.graph(g):`` captures the block into ``g`` (not built: raises NotImplementedError)."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global", **kwargs):
        raise NotImplementedError("ember has no CUDA graph capture yet (ember.cuda.graph)")


def is_current_stream_capturing() -> bool:
    """Whether the current stream is capturing a CUDA graph: never, in ember."""
    return False


def device_of(obj):
    """``with ember.cuda.device_of(t):`` makes ``t``'s CUDA device current (no change for CPU tensors)."""
    return device(obj.get_device() if obj.device.type == "cuda" else None)


def is_initialized() -> bool:
    return is_available()


def init() -> None:
    """Initialise CUDA (raises with the reason where it is unavailable)."""
    _api._backend()


def _defaults():
    return [default_generator(f"cuda:{i}") for i in range(device_count())]


def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's default generator (silently ignored without CUDA, as PyTorch)."""
    if is_available():
        default_generator(f"cuda:{current_device()}").manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's default generator."""
    for g in _defaults():
        g.manual_seed(seed)


def seed() -> None:
    if is_available():
        default_generator(f"cuda:{current_device()}").seed()


def seed_all() -> None:
    gens = _defaults()
    if gens:
        s = gens[0].seed()
        for g in gens[1:]:
            g.manual_seed(s)


def initial_seed() -> int:
    return default_generator(f"cuda:{current_device()}").initial_seed()


def get_rng_state(device="cuda"):
    """The state of a CUDA device's default generator (a uint8 tensor)."""
    return default_generator(device).get_state()


def set_rng_state(new_state, device="cuda") -> None:
    default_generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    return [g.get_state() for g in _defaults()]


def set_rng_state_all(new_states) -> None:
    for g, s in zip(_defaults(), new_states):
        g.set_state(s)


def _legacy_types() -> dict:
    return {d.legacy: legacy_type(d, "cuda") for d in dtypes.ALL if d.np is not None}


globals().update(_legacy_types())


# ``ember.cuda.amp`` (deprecated spellings of ember.amp), importable as ``from ember.cuda.amp import GradScaler``
from .amp.legacy import cuda_amp as amp  # noqa: E402

import sys as _sys  # noqa: E402

_sys.modules[__name__ + ".amp"] = amp

from .accelerator import OutOfMemoryError  # noqa: E402,F401  (the same class as ember.OutOfMemoryError)
