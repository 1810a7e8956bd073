"""``ember.autograd.profiler_legacy`` (``torch.autograd.profiler_legacy``): the legacy profiler's names,
on ember's one profiler."""
from __future__ import annotations

from ..autograd.extras import DeviceType, ProfilerConfig, ProfilerState
from .autograd_profiler import profile
from .autograd_profiler_util import MEMORY_EVENT_NAME
from .events import EventList, FunctionEvent

__all__ = ["DeviceType", "EventList", "FunctionEvent", "MEMORY_EVENT_NAME", "ProfilerConfig", "ProfilerState",
           "profile"]
