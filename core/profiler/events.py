"""The profiler's results: ``FunctionEvent`` (one op call or range), ``FunctionEventAvg`` (the calls of one op
added up), and ``EventList`` with ``key_averages``, ``table`` (PyTorch's printed form) and
``export_chrome_trace``."""
from __future__ import annotations

import json
import os
from collections import defaultdict


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    kb, mb, gb = 1024, 1024**2, 1024**3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return f"{nbytes} B"


class _Times:
    """The derived time fields both event kinds share (microseconds)."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    def __getattr__(self, name):
        # the *_str forms of the time fields, as PyTorch's events have them
        if name.endswith("_str"):
            return _format_time(getattr(self, name[:-4]))
        raise AttributeError(name)


class FunctionEvent(_Times):
    """One call of an op, or one ``record_function`` range, on one thread.

    Times are in microseconds from the profile's start; ``cpu_children`` are the events inside it.
    """

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, is_user_annotation=False,
                 device_type="cpu", use_device=None, sequence_nr=-1, cpu_memory_usage=0):
        self.id = id
        self.name = self.key = self.trace_name = name
        self.thread = thread
        self.start_us, self.end_us = start_us, end_us
        self.input_shapes = input_shapes
        self.cpu_children: list = []
        self.cpu_parent = None
        self.is_user_annotation = is_user_annotation
        self.device_type = device_type
        self.use_device = use_device
        self.device_time_total = 0.0
        self.sequence_nr = sequence_nr
        self.count = 1
        self.cpu_memory_usage = cpu_memory_usage
        self.device_memory_usage = 0
        self.is_async = False
        self.is_legacy = False
        self.node_id = -1
        self.stack = []
        self.overload_name = ""
        self.flops = 0

    @property
    def time_range(self):
        return _Interval(self.start_us, self.end_us)

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self):
        return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return 0

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time_total={self.cpu_time_total:.3f} self_cpu_time_total={self.self_cpu_time_total:.3f} "
                f"input_shapes={self.input_shapes} cpu_children={[c.id for c in self.cpu_children]}>")


class _Interval:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start


class FunctionEventAvg(_Times):
    """The calls of one op (and one input shape, when grouped so) added up."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = -1
        self.is_legacy = False
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.device_type = "cpu"
        self.is_user_annotation = False
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.cpu_parent = None
        self.overload_name = None
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.use_device = other.use_device
            self.device_type = other.device_type
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events with PyTorch's summaries: ``key_averages``, ``table``, ``total_average``."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """One :class:`FunctionEventAvg` per op name (and per input shapes when asked), in first-seen order."""
        stats: dict = defaultdict(FunctionEventAvg)
        for evt in self:
            key = (evt.key, str(evt.input_shapes)) if group_by_input_shapes else evt.key
            stats[key].add(evt)
            if group_by_input_shapes:
                stats[key].input_shapes = evt.input_shapes
        return EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                         with_flops=self._with_flops)

    def total_average(self):
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The events as PyTorch prints them (``sort_by``: an event attribute such as ``"cpu_time_total"``)."""
        return _build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, profile_memory=self._profile_memory,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto): JSON ``traceEvents``."""
        with open(path, "w") as f:
            json.dump(chrome_trace(self), f)


def chrome_trace(events) -> dict:
    """The Kineto-style JSON object of ``events``: complete (``"X"``) events in microseconds."""
    pid = os.getpid()
    out = []
    for e in events:
        args = {"External id": e.id}
        if getattr(e, "input_shapes", None):
            args["Input Dims"] = e.input_shapes
        out.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "name": e.name,
                    "pid": pid, "tid": e.thread, "ts": e.start_us, "dur": e.end_us - e.start_us, "args": args})
        if e.device_time_total and not e.is_user_annotation:
            out.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": f"{e.use_device}", "tid": "stream",
                        "ts": e.start_us, "dur": e.device_time_total, "args": {"External id": e.id}})
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": out, "displayTimeUnit": "ms"}


def _build_table(events, sort_by=None, header=None, row_limit=100, max_name_column_width=55,
                 max_shapes_column_width=80, profile_memory=False, top_level_events_only=False, time_unit=None):
    if len(events) == 0:
        return ""
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    use_device = events[0].use_device
    has_input_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        events = EventList(sorted(events, key=lambda e: getattr(e, attr), reverse=True), use_device=use_device,
                           profile_memory=profile_memory)
    name_w = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_w = min(shapes_w, max_shapes_column_width)
    width = 12
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    dev = use_device.upper() if use_device is not None else "None"
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_w] + [width] * (len(headers) - 1)
    if has_input_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_w)
    row_format = "".join("{: >" + str(w) + "}  " for w in widths)
    header_sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def tu(us, default):
        return {"s": f"{us / 1e6:.3f}s", "ms": f"{us / 1e3:.3f}ms", "us": f"{us:.3f}us"}.get(time_unit, default)

    total_self_cpu = sum(e.self_cpu_time_total for e in events)
    total_self_dev = sum(e.self_device_time_total for e in events if not e.is_user_annotation)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [header_sep, row_format.format(*headers), header_sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _format_time_share(e.self_cpu_time_total, total_self_cpu),
               tu(e.self_cpu_time_total, _format_time(e.self_cpu_time_total)),
               _format_time_share(e.cpu_time_total, total_self_cpu),
               tu(e.cpu_time_total, _format_time(e.cpu_time_total)), tu(e.cpu_time, _format_time(e.cpu_time))]
        if has_device_time:
            row += [tu(e.self_device_time_total, _format_time(e.self_device_time_total)),
                    _format_time_share(e.self_device_time_total, total_self_dev),
                    tu(e.device_time_total, _format_time(e.device_time_total)),
                    tu(e.device_time, _format_time(e.device_time))]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_input_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        lines.append(row_format.format(*row))
    lines += [header_sep, f"Self CPU time total: {tu(total_self_cpu, _format_time(total_self_cpu))}"]
    if has_device_time:
        lines.append(f"Self {dev} time total: {tu(total_self_dev, _format_time(total_self_dev))}")
    return "".join(line + "\n" for line in lines)
