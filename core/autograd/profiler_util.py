"""``torch.autograd.profiler_util``: the profiler's event containers, from :mod:`ember.profiler`."""
from __future__ import annotations

from ..profiler.events import EventList, FunctionEvent, FunctionEventAvg
from .extras import DeviceType

MEMORY_EVENT_NAME = "[memory]"
OUT_OF_MEMORY_EVENT_NAME = "[OutOfMemory]"

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "MEMORY_EVENT_NAME",
           "OUT_OF_MEMORY_EVENT_NAME"]
