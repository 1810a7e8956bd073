"""``ember.profiler.profile``: per-op timings from the dispatch interception point.

A handler installed on :class:`ember.dispatch.intercept` while any profiler records times each op of the
thread that started that profiler (recording is per thread, as PyTorch's is), with the op's input shapes
when asked and, for ops on a device other than the host, the device time between two backend events
(``Backend.new_event`` / ``event_record`` / ``event_elapsed_ms``: CUDA events on CUDA).
:func:`record_function` opens a named range that the ops inside nest under.
"""
from __future__ import annotations

import enum
import functools
import gzip
import json
import os
import re
import socket
import threading
import time
import warnings
from collections.abc import Iterable

from .. import dispatch, dtypes, library
from ..backend import BACKENDS
from ..autograd.function import OPS
from ..ops import creation
from ..tensor import Tensor
from .events import EventList, FunctionEvent, chrome_trace

__all__ = ["ProfilerActivity", "ProfilerAction", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """What a profiler records: ``CPU`` (host time of each op) and ``CUDA`` (device time of each op)."""

    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    HPU = 4
    PrivateUse1 = 5


def supported_activities():
    """The activities this build can record: CPU, and CUDA where a CUDA backend is available."""
    cuda = BACKENDS.get("cuda")
    acts = {ProfilerActivity.CPU}
    if cuda is not None and cuda.is_available():
        acts.add(ProfilerActivity.CUDA)
    return acts


# --------------------------------------------------------------------------- recording
_LOCAL = threading.local()  # .recorders: the recorders of this thread's open profilers
_LOCK = threading.Lock()
_ACTIVE = [0]
_INTERCEPT: list = []
_OP_NAMES: dict = {}
_RENAMED = {"AddScaled": "add", "Cast": "to", "ToDevice": "to", "Getitem": "index", "SliceView": "slice",
            "CrossEntropyIndex": "cross_entropy_loss", "Conv": "convolution", "ConvInputGrad": "conv_transpose",
            "ConvWeightGrad": "convolution_backward", "T": "t", "QR": "linalg_qr", "SVD": "linalg_svd"}


def op_name(Op) -> str:
    """PyTorch's spelling of an ember Op in the profiler: ``aten::`` and the op's name in snake case."""
    if isinstance(Op, str):
        return f"aten::{Op}"
    name = _OP_NAMES.get(Op)
    if name is None:
        key = next((k for k, v in OPS.items() if v is Op), None) or dispatch.op_name(Op)
        base = _RENAMED.get(key) or re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()
        name = _OP_NAMES[Op] = f"aten::{base}"
    return name


def _shapes(args):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(list(a.shape))
        elif type(a) in (list, tuple) and a and all(isinstance(t, Tensor) for t in a):
            out.append([list(t.shape) for t in a])
        else:
            out.append([])
    return out


def _nbytes(out):
    if isinstance(out, Tensor):
        return out.element_size() * out.numel()
    if type(out) in (tuple, list):
        return sum(_nbytes(o) for o in out)
    return 0


class _Recorder:
    """The events of one profiling window, on the thread that opened it."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, device_time=False,
                 use_device=None):
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.device_time, self.use_device = device_time, use_device
        self.events: list = []
        self.open_events: list = []
        self.pending: list = []
        self.thread = threading.get_native_id()
        self.t0 = time.perf_counter_ns()
        self.ids = 0

    def now_us(self):
        return (time.perf_counter_ns() - self.t0) / 1000.0

    def begin(self, name, shapes=None, user=False):
        self.ids += 1
        e = FunctionEvent(self.ids, name, self.thread, self.now_us(), 0.0,
                          input_shapes=shapes if self.record_shapes else None, is_user_annotation=user,
                          use_device=self.use_device)
        if self.open_events:
            e.cpu_parent = self.open_events[-1]
            self.open_events[-1].cpu_children.append(e)
        self.open_events.append(e)
        self.events.append(e)
        return e

    def end(self, e):
        e.end_us = self.now_us()
        if self.open_events and self.open_events[-1] is e:
            self.open_events.pop()
        elif e in self.open_events:
            self.open_events.remove(e)

    def finish(self):
        """Close what is still open and read the device timings (one synchronisation, at the end)."""
        for e in reversed(self.open_events):
            e.end_us = self.now_us()
        self.open_events = []
        for e, backend, start, stop in self.pending:
            backend.event_synchronize(stop)
            e.device_time_total = backend.event_elapsed_ms(start, stop) * 1000.0
        self.pending = []
        return EventList(self.events, use_device=self.use_device, profile_memory=self.profile_memory)


def _recorders():
    return _LOCAL.__dict__.setdefault("recorders", [])


def _handler(kind, Op, args, run):
    recs = _LOCAL.__dict__.get("recorders")
    if not recs:
        return run(*args)
    name = op_name(Op)
    shapes = _shapes(args) if any(r.record_shapes for r in recs) else None
    opened = [r.begin(name, shapes) for r in recs]
    timed = None
    if any(r.device_time for r in recs):
        first = next((a for a in args if isinstance(a, Tensor)), None)
        dev = first._dev if first is not None else (args[0] if args and hasattr(args[0], "backend") else None)
        if dev is not None and not dev.backend.host:
            b = dev.backend
            stream = b.current_stream(dev.index or 0)
            timed = (b, b.new_event(True, False), b.new_event(True, False), stream)
            b.event_record(timed[1], stream)
    try:
        out = run(*args)
    finally:
        if timed is not None:
            b, start, stop, stream = timed
            b.event_record(stop, stream)
        for r, e in zip(recs, opened):
            r.end(e)
            if timed is not None and r.device_time:
                r.pending.append((e, b, start, stop))
    if any(r.profile_memory for r in recs):
        n = _nbytes(out)
        for e in opened:
            e.cpu_memory_usage = n
    return out


def _attach(rec):
    _recorders().append(rec)
    with _LOCK:
        _ACTIVE[0] += 1
        if not _INTERCEPT:
            box = dispatch.intercept(_handler)
            box.__enter__()
            _INTERCEPT.append(box)


def _detach(rec):
    recs = _recorders()
    if rec in recs:
        recs.remove(rec)
        with _LOCK:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] <= 0 and _INTERCEPT:
                _INTERCEPT.pop().__exit__(None, None, None)


class record_function:
    """A named range in the profile (context manager or decorator); ops inside it nest under it.

    >>> import ember
    >>> with ember.profiler.profile() as prof:
    ...     with ember.profiler.record_function("block"):
    ...         _ = ember.ones(2) * 2
    >>> [e.name for e in prof.events()]
    ['block', 'aten::ones', 'aten::mul']
    """

    def __init__(self, name: str, args: str | None = None):
        self.name, self.args = name, args
        self._opened = []

    def __enter__(self):
        self._opened = [(r, r.begin(self.name, [] if r.record_shapes else None, user=True)) for r in _recorders()]
        return self

    def __exit__(self, *exc):
        for r, e in self._opened:
            r.end(e)
        self._opened = []
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)

        return wrapped


def _record_function_enter(name: str, args: str | None = None) -> Tensor:
    """``ops.profiler._record_function_enter``: opens a :class:`record_function` range and returns its handle (an
    empty uint8 tensor, as PyTorch's), which ``_record_function_exit`` closes. fx graphs record ranges this way."""
    handle = creation.empty(0, dtype=dtypes.uint8, device="cpu")
    handle._record_function = record_function(name, args).__enter__()
    return handle


def _record_function_exit(handle: Tensor) -> None:
    """``ops.profiler._record_function_exit``: closes the range :func:`_record_function_enter` opened."""
    rec = getattr(handle, "_record_function", None)
    if rec is None:
        raise RuntimeError("profiler::_record_function_exit: expected the handle _record_function_enter returned")
    rec.__exit__(None, None, None)


# --------------------------------------------------------------------------- schedule
class ProfilerAction(enum.Enum):
    """What the profiler does at a step: nothing, warm up, record, or record and then hand the trace on."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """PyTorch's profiler schedule: after ``skip_first`` steps, cycles of ``wait`` idle, ``warmup`` and
    ``active`` recorded steps (the last of each cycle saves), ``repeat`` times (0: for ever)."""
    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", UserWarning, stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """An ``on_trace_ready`` that writes each trace to ``dir_name`` as ``<worker>.<ms>.pt.trace.json``."""
    def handler_fn(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        ms = time.time_ns() // 1_000_000
        while True:  # two traces within one millisecond keep both files
            file_name = f"{name}.{ms}.pt.trace.json" + (".gz" if use_gzip else "")
            if not os.path.exists(os.path.join(dir_name, file_name)):
                break
            ms += 1
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler_fn


# --------------------------------------------------------------------------- profile
class profile:
    """Record the ops (and ``record_function`` ranges) of this thread, as ``torch.profiler.profile``.

    >>> import ember
    >>> with ember.profiler.profile(record_shapes=True) as prof:
    ...     _ = ember.ones(2, 3) @ ember.ones(3, 4)
    >>> [(e.key, e.count) for e in prof.key_averages()]
    [('aten::ones', 2), ('aten::matmul', 1)]
    """

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None, schedule=None,
                 on_trace_ready=None, record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False, with_modules: bool = False,
                 experimental_config=None, execution_trace_observer=None, acc_events: bool = False,
                 use_cuda: bool | None = None, custom_trace_id_callback=None):
        acts = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning,
                          stacklevel=2)
            if use_cuda:
                acts.add(ProfilerActivity.CUDA)
            else:
                acts.discard(ProfilerActivity.CUDA)
        if not acts:
            raise AssertionError("No valid profiler activities found")
        self.activities = acts
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.with_flops, self.with_modules = with_flops, with_modules
        self.schedule = schedule or _default_schedule_fn
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._recorder = None
        self._events = None
        self._step_range = None
        self._metadata: dict = {}

    # -------------------------------------------------- the schedule's actions
    def _prepare(self):
        device_time = ProfilerActivity.CUDA in self.activities
        self._recorder = _Recorder(self.record_shapes, self.profile_memory, self.with_stack, device_time,
                                   "cuda" if device_time else None)

    def _start_trace(self):
        if self._recorder is None:
            self._prepare()
        _attach(self._recorder)

    def _stop_trace(self):
        rec = self._recorder
        if rec is None:
            return
        self._close_step_range()
        _detach(rec)
        self._events = rec.finish()
        self._recorder = None

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit(self, prev, cur):
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev in (None, A.NONE):
            if cur is A.WARMUP:
                self._prepare()
            elif cur in recording:
                self._prepare()
                self._start_trace()
        elif prev is A.WARMUP:
            if cur in recording:
                self._start_trace()
            elif cur is None:
                self._start_trace()
                self._stop_trace()
            elif cur is A.NONE:
                warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
                self._start_trace()
                self._stop_trace()
        elif prev is A.RECORD:
            if cur in (None, A.NONE):
                if cur is A.NONE:
                    warnings.warn("Incorrect schedule: RECORD followed by NONE", stacklevel=3)
                self._stop_trace()
                self._trace_ready()
            elif cur is A.WARMUP:
                warnings.warn("Incorrect schedule: RECORD followed by WARMUP", stacklevel=3)
                self._stop_trace()
                self._trace_ready()
                self._prepare()
        elif prev is A.RECORD_AND_SAVE:
            self._stop_trace()
            self._trace_ready()
            if cur is A.WARMUP:
                self._prepare()
            elif cur in recording:
                self._prepare()
                self._start_trace()

    def _open_step_range(self):
        self._close_step_range()
        if self.record_steps and self._recorder is not None and self.current_action in (
                ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step_range(self):
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    # -------------------------------------------------- public API
    def start(self):
        self._transit(None, self.current_action)
        self._open_step_range()

    def stop(self):
        self._close_step_range()
        self._transit(self.current_action, None)

    def step(self):
        """Signal the end of a step to the schedule."""
        self._close_step_range()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._open_step_range()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def events(self) -> EventList:
        """The events of the last finished trace (every op call and range, in start order)."""
        if self._events is None:
            raise AssertionError("Profiler must be initialized before getting events")
        return self._events

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """The events added up per op name (and per input shapes with ``group_by_input_shape``)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Write the last trace as Chrome-trace JSON (``.gz``: compressed)."""
        trace = chrome_trace(self.events())
        if self._metadata:
            trace.update(self._metadata)
        if path.endswith(".gz"):
            with gzip.open(path, "wt") as f:
                json.dump(trace, f)
        else:
            with open(path, "w") as f:
                json.dump(trace, f)

    def add_metadata(self, key: str, value: str) -> None:
        self._metadata[key] = f'"{value}"'

    def add_metadata_json(self, key: str, value: str) -> None:
        self._metadata[key] = json.loads(value)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """Write ``name value`` lines (one per op) for flame-graph tools."""
        with open(path, "w") as f:
            for e in self.events():
                f.write(f"{e.name} {int(getattr(e, metric))}\n")


def _define_ops():
    """``ops.profiler``: the range operators PyTorch's fx examples put in graphs, as ember operators."""
    lib = library.Library("profiler", "DEF")
    lib.define("_record_function_enter(str name, str? args=None) -> Tensor")
    lib.define("_record_function_exit(Tensor handle) -> ()")
    lib.impl("_record_function_enter", _record_function_enter, "CompositeImplicitAutograd")
    lib.impl("_record_function_exit", _record_function_exit, "CompositeImplicitAutograd")
    return lib


_OPS = _define_ops()
