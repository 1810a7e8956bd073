"""``ember.profiler``: where the time of a program goes, op by op, as ``torch.profiler``.

>>> import ember
>>> from ember.profiler import ProfilerActivity, profile, record_function
>>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
...     with record_function("model_inference"):
...         y = ember.nn.functional.relu(ember.ones(4, 4) @ ember.ones(4, 4))
>>> table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
>>> "model_inference" in table and "aten::matmul" in table
True
"""
from .. import autograd
from ..registry import show_module
from . import autograd_profiler, events, profiler
from . import autograd_profiler_legacy, autograd_profiler_util
from .events import EventList, FunctionEvent, FunctionEventAvg
from .profiler import (
    ProfilerAction, ProfilerActivity, profile, record_function, schedule, supported_activities,
    tensorboard_trace_handler,
)

show_module(f"{autograd.__name__}.profiler", autograd_profiler)  # torch.autograd.profiler's path
show_module(f"{autograd.__name__}.profiler_util", autograd_profiler_util)
show_module(f"{autograd.__name__}.profiler_legacy", autograd_profiler_legacy)
autograd.ProfilerActivity = ProfilerActivity  # torch.autograd re-exports it


def kineto_available() -> bool:
    """Whether :class:`profile` (PyTorch's Kineto profiler: activities, schedules, traces) is available: always,
    ember's profiler serves that API on every backend."""
    return True


__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction", "ProfilerActivity", "kineto_available",
           "profile", "record_function", "schedule", "supported_activities", "tensorboard_trace_handler"]
