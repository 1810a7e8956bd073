"""``ember.autograd.profiler_util`` (``torch.autograd.profiler_util``): the profiler's event containers."""
from __future__ import annotations

from ..autograd.extras import DeviceType
from .events import EventList, FunctionEvent, FunctionEventAvg

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "MEMORY_EVENT_NAME",
           "OUT_OF_MEMORY_EVENT_NAME"]
