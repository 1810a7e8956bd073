"""``torch.autograd.profiler_legacy``: the legacy profiler's names, on ember's one profiler."""
from __future__ import annotations

from ..profiler.events import EventList, FunctionEvent
from .extras import DeviceType, ProfilerConfig, ProfilerState
from .profiler import profile
from .profiler_util import MEMORY_EVENT_NAME

__all__ = ["DeviceType", "EventList", "FunctionEvent", "MEMORY_EVENT_NAME", "ProfilerConfig", "ProfilerState",
           "profile"]
