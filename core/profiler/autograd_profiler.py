"""``ember.autograd.profiler``: the older profiler API (``profile(use_cuda=...)``, ``record_function``), as
``torch.autograd.profiler``, on the same per-op recording as :mod:`ember.profiler`.

>>> import ember
>>> with ember.autograd.profiler.profile() as prof:
...     _ = ember.ones(3).exp()
>>> [e.name for e in prof.function_events]
['aten::ones', 'aten::exp']
"""
from __future__ import annotations

from .events import EventList, FunctionEvent, FunctionEventAvg
from .profiler import _attach, _detach, _Recorder, record_function

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "emit_nvtx"]


class profile:
    """Record the ops of this thread while open; ``use_cuda`` (or ``use_device="cuda"``) adds device times."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        self.use_device = "cuda" if use_cuda else use_device
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.function_events = None
        self.entered = False
        self._recorder = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._recorder = _Recorder(self.record_shapes, self.profile_memory, self.with_stack,
                                   device_time=self.use_device is not None, use_device=self.use_device)
        _attach(self._recorder)
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        _detach(self._recorder)
        self.function_events = self._recorder.finish()
        self._recorder = None
        self.entered = False
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._check_finish()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit, header=header,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width,
                                          top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    def export_chrome_trace(self, path):
        self._check_finish()
        return self.function_events.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def __str__(self):
        return self.table() if self.function_events is not None else "<unfinished profiler>"


class emit_nvtx:
    """Accepted for PyTorch's API: ember emits no NVTX ranges, so this context does nothing."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
