"""``ember.utils.benchmark``: PyTorch's ``Timer``, ``Measurement`` and ``Compare``, timing with :mod:`timeit`.

>>> from ember.utils import benchmark
>>> m = benchmark.Timer("x + 1", globals={"x": 1}).timeit(100)
>>> m.number_per_run, len(m.times)
(100, 1)
"""
from __future__ import annotations

import enum
import math
import statistics
import timeit as _timeit

from ...backend import BACKENDS
from ...runtime import get_num_threads, set_num_threads


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


_UNITS = ((1e-9, "ns", "nanoseconds"), (1e-6, "us", "microseconds"), (1e-3, "ms", "milliseconds"),
          (1.0, "s", "seconds"))


def select_unit(t: float):
    """``(unit, scale)`` for a time in seconds: the largest unit that keeps the value at or above 1."""
    unit, scale = "ns", 1e-9
    for s, u, _ in _UNITS:
        if t >= s:
            unit, scale = u, s
    return unit, scale


def unit_to_english(u: str) -> str:
    return {u_: e for _, u_, e in _UNITS}[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures."""
    if x == 0 or not math.isfinite(x):
        return x
    magnitude = int(math.floor(math.log10(abs(x))))
    return round(x, n - 1 - magnitude)


def _synchronize():
    cuda = BACKENDS.get("cuda")
    if cuda is not None and cuda.is_available():
        cuda.synchronize()


class TaskSpec:
    """What was timed: the statement, setup and labels."""

    def __init__(self, stmt, setup, global_setup="", label=None, sub_label=None, description=None, env=None,
                 num_threads=1):
        self.stmt, self.setup, self.global_setup = stmt, setup, global_setup
        self.label, self.sub_label, self.description = label, sub_label, description
        self.env, self.num_threads = env, num_threads

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        return f"{self.stmt}" if "\n" not in self.stmt else self.stmt.splitlines()[0] + " ..."


class Measurement:
    """The times of ``number_per_run`` runs of a statement, repeated; printed as PyTorch prints it."""

    def __init__(self, number_per_run: int, raw_times, task_spec: TaskSpec, metadata=None):
        self.number_per_run, self.raw_times, self.task_spec = number_per_run, list(raw_times), task_spec
        self.metadata = metadata

    def __getattr__(self, name):
        if name in ("stmt", "setup", "global_setup", "label", "sub_label", "description", "env", "num_threads",
                    "title"):
            return getattr(self.task_spec, name)
        raise AttributeError(name)

    @property
    def times(self) -> list:
        """Seconds per run, one value per measurement."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        return statistics.mean(self.times)

    @property
    def iqr(self) -> float:
        if len(self.times) < 2:
            return 0.0
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread supports (1 to 4), as PyTorch estimates it."""
        n = len(self.times)
        if n < 2 or self.median == 0:
            return 4 if n < 2 else 1
        ci = 1.645 * statistics.stdev(self.times) / math.sqrt(n)  # half-width of a 90% interval of the mean
        relative = ci / abs(self.median)
        return 4 if relative == 0 else max(1, min(4, int(math.floor(-math.log10(relative)))))

    @property
    def has_warnings(self) -> bool:
        return len(self.times) >= 4 and self.median > 0 and self.iqr / self.median > 0.1

    def meets_confidence(self, threshold: float = 0.1) -> bool:
        return self.median > 0 and self.iqr / self.median < threshold

    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    @staticmethod
    def merge(measurements):
        """One Measurement per distinct task, with the times of all of its measurements."""
        out = {}
        for m in measurements:
            key = (m.stmt, m.setup, m.label, m.sub_label, m.description, m.num_threads)
            if key in out:
                prev = out[key]
                out[key] = Measurement(1, prev.times + m.times, prev.task_spec, prev.metadata)
            else:
                out[key] = Measurement(1, m.times, m.task_spec, m.metadata)
        return list(out.values())

    def __repr__(self) -> str:
        unit, scale = select_unit(self.median)
        lines = [super().__repr__(), self.title]
        if self.description:
            lines.append(self.description)
        if self.setup not in ("pass", ""):
            lines.append("setup:" + (f" {self.setup}" if "\n" not in self.setup else
                                     "\n" + "\n".join("  " + s for s in self.setup.splitlines())))
        n = len(self.times)
        if n == 1:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        else:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            if n >= 4:
                q = statistics.quantiles(self.times, n=4, method="inclusive")
                lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({q[0] / scale:.2f} to {q[2] / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement' if n > 1 else ''}, {self.num_threads} thread"
                     f"{'s' if self.num_threads > 1 else ''}")
        if self.has_warnings:
            lines.append(f"  WARNING: Interquartile range is {100 * self.iqr / self.median:.1f}% of the median "
                         "measurement.\n           This could indicate system fluctuation.")
        return "\n".join(lines)

    __str__ = __repr__


class Timer:
    """Time ``stmt`` after ``setup`` in a namespace with ``globals`` (PyTorch's ``Timer``, Python statements)."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer=_timeit.default_timer,
                 globals: dict | None = None, label=None, sub_label=None, description=None, env=None,
                 num_threads: int = 1, language=Language.PYTHON):
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError("ember.utils.benchmark.Timer times Python statements only (language=Language.PYTHON)")
        self._spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description, env, num_threads)
        self._globals = dict(globals or {})
        self._timer = _timeit.Timer(stmt=stmt, setup=setup if not global_setup else global_setup + "\n" + setup,
                                    timer=timer, globals=self._globals)

    def _run(self, number: int) -> float:
        before = get_num_threads()
        if before == self._spec.num_threads:
            return self._timed(number)
        set_num_threads(self._spec.num_threads)
        try:
            return self._timed(number)
        finally:
            set_num_threads(before)

    def _timed(self, number: int) -> float:
        t = self._timer.timeit(number)
        _synchronize()
        return t

    def timeit(self, number: int = 1000000) -> Measurement:
        """One measurement of ``number`` runs (after a warm-up)."""
        self._run(max(1, number // 100))
        return Measurement(number, [self._run(number)], self._spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("Timer.repeat is not supported (as in PyTorch); use timeit or blocked_autorange")

    def autorange(self, callback=None):
        raise NotImplementedError("Timer.autorange is not supported (as in PyTorch); use blocked_autorange")

    def _block_size(self, min_block: float = 0.025) -> int:
        number = 1
        while self._run(number) < min_block:
            number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a calibrated number of runs until ``min_run_time`` seconds have been measured."""
        number = self._block_size()
        times, total = [], 0.0
        while total < min_run_time or len(times) < 2:
            t = self._run(number)
            times.append(t)
            total += t
            if callback is not None:
                callback(number, t)
        return Measurement(number, times, self._spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback=None) -> Measurement:
        """Blocks until the IQR is within ``threshold`` of the median (and ``min_run_time`` is spent), or until
        ``max_run_time``."""
        number = self._block_size(min_block=0.01)
        times, total = [], 0.0
        while True:
            t = self._run(number)
            times.append(t)
            total += t
            if callback is not None:
                callback(number, t)
            m = Measurement(number, times, self._spec)
            if len(times) > 3 and total >= min_run_time and m.meets_confidence(threshold):
                return m
            if total >= max_run_time:
                return m

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("collect_callgrind needs valgrind instrumentation, which ember does not provide")


class Compare:
    """A table of Measurements: rows by sub_label (or stmt), columns by description, grouped by label."""

    def __init__(self, results):
        self._results = list(results)
        self._trim = False
        self._colorize = False
        self._highlight = False

    def trim_significant_figures(self):
        self._trim = True

    def colorize(self, rowwise: bool = False):
        self._colorize = True

    def extend_results(self, results):
        self._results.extend(results)

    def highlight_warnings(self):
        self._highlight = True

    def __str__(self) -> str:
        merged = Measurement.merge(self._results)
        groups: dict = {}
        for m in merged:
            groups.setdefault(m.label, []).append(m)
        blocks = [self._table(label, ms) for label, ms in groups.items()]
        return "\n".join(blocks)

    def _table(self, label, ms) -> str:
        unit, scale = select_unit(min(m.median for m in ms))
        cols = list(dict.fromkeys(m.description or "" for m in ms))
        threads = sorted({m.num_threads for m in ms})
        cells = {}
        for m in ms:
            v = m.median / scale
            v = trim_sigfig(v, m.significant_figures) if self._trim else v
            text = f"{v:.1f}" if v >= 10 or not self._trim else f"{v:g}"
            if self._highlight and m.has_warnings:
                text += f" (! {100 * m.iqr / m.median:.0f}%)"
            cells[(m.num_threads, m.as_row_name(), m.description or "")] = text
        rows = {t: list(dict.fromkeys(m.as_row_name() for m in ms if m.num_threads == t)) for t in threads}
        name_w = max(len(r) for rs in rows.values() for r in rs) + 6
        col_w = [max([len(c)] + [len(cells.get((t, r, c), "")) for t in threads for r in rows[t]]) + 2 for c in cols]
        header = " " * name_w + "|" + "|".join(c.center(w) for c, w in zip(cols, col_w))
        width = len(header)
        title = f" {label} " if label else ""
        lines = ["[" + title.center(width - 2, "-") + "]", header]
        for t in threads:
            lines.append(f"{t} threads: ".ljust(width, "-"))
            for r in rows[t]:
                lines.append(r.rjust(name_w - 2).ljust(name_w) + "|"
                             + "|".join(cells.get((t, r, c), "").center(w) for c, w in zip(cols, col_w)))
        lines += ["", f"Times are in {unit_to_english(unit)} ({unit}).", ""]
        return "\n".join(lines)

    def print(self):
        print(str(self))
