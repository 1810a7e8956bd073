"""Printing tensors as PyTorch does, with ``set_printoptions``."""
from __future__ import annotations

import math

import numpy as np

from . import dtypes


class _Opts:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _Opts()

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Set how tensors print (same options and profiles as PyTorch)."""
    if profile is not None:
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    return {k: getattr(PRINT_OPTS, k) for k in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


class _Formatter:
    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            self.max_width = max((len(str(v)) for v in values.reshape(-1).tolist()), default=1)
            return
        v = values.reshape(-1).astype(np.float64)
        finite = v[np.isfinite(v) & (v != 0)]
        nonzero_abs = np.abs(finite)
        if nonzero_abs.size == 0:
            self.max_width = max((len(self._fmt_special(x)) for x in v), default=1)
            if v.size and np.isfinite(v).any():
                self.max_width = max(self.max_width, 2)
            return
        mn, mx = nonzero_abs.min(), nonzero_abs.max()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        p = PRINT_OPTS.precision
        if self.int_mode:
            if mx / mn > 1000.0 or mx > 1.0e8:
                self.sci_mode = True
                strs = [f"{x:.{p}e}" for x in finite]
            else:
                strs = [f"{x:.0f}." for x in finite]
        else:
            if mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4:
                self.sci_mode = True
                strs = [f"{x:.{p}e}" for x in finite]
            else:
                strs = [f"{x:.{p}f}" for x in finite]
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode
            if self.sci_mode:
                strs = [f"{x:.{p}e}" for x in finite]
        self.max_width = max(max(len(s) for s in strs), max((len(self._fmt_special(x)) for x in v
                                                              if not np.isfinite(x)), default=0))
        if (v == 0).any():
            self.max_width = max(self.max_width, len(self.format(0.0).strip()))

    @staticmethod
    def _fmt_special(x):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return "0."

    def width(self):
        return self.max_width

    def format(self, value):
        p = PRINT_OPTS.precision
        if self.floating:
            if not math.isfinite(value):
                s = self._fmt_special(value)
            elif self.sci_mode:
                s = f"{value:.{p}e}"
            elif self.int_mode:
                s = f"{value:.0f}."
            else:
                s = f"{value:.{p}f}"
        else:
            s = str(value)
        return " " * (self.max_width - len(s)) + s


def _scalar_str(v, fmt):
    return fmt.format(v)


def _vector_str(a, indent, summarize, fmt):
    elem_width = fmt.width() + 2
    per_line = max(math.floor((PRINT_OPTS.linewidth - indent) / elem_width), 1)
    if summarize and a.shape[0] > 2 * PRINT_OPTS.edgeitems:
        e = PRINT_OPTS.edgeitems
        data = [fmt.format(x) for x in a[:e].tolist()] + [" ..."] + [fmt.format(x) for x in a[-e:].tolist()]
    else:
        data = [fmt.format(x) for x in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt):
    if a.ndim == 0:
        return _scalar_str(a.item(), fmt)
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        parts = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] + \
                [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0] - e, a.shape[0])]
    else:
        parts = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    sep = "," + "\n" * (a.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def _summarized(a):
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * e:
        a = np.concatenate([a[:e], a[-e:]])
    return np.stack([_summarized(x) for x in a]) if a.ndim > 1 else a


def tensor_str(t) -> str:
    """The bracketed body of a tensor's repr."""
    a = np.asarray(t._dev.backend.to_numpy(t._data))
    d = t.dtype
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    if d.category == dtypes.COMPLEX:
        real = _Formatter(_summarized(a.real) if summarize else a.real, True)
        imag = _Formatter(_summarized(a.imag) if summarize else a.imag, True)

        class _C:
            def width(self):
                return real.width() + imag.width() + 3

            def format(self, v):  # as PyTorch: the real part padded, the imaginary part and its sign not
                im = (imag.format(v.imag) + "j").lstrip()
                return real.format(v.real) + (im if im[0] in "+-" else "+" + im)

        fmt = _C()
    else:
        vals = _summarized(a) if summarize else a
        if d.np is not None and a.dtype != d.np:
            vals = vals.astype(d.np)
        fmt = _Formatter(vals.astype(np.float64) if d.category == dtypes.FLOAT else vals,
                         d.category == dtypes.FLOAT)
        if d is dtypes.bool:
            fmt = _Formatter(np.array(["False"]), False)
            fmt.max_width = 5 if not a.all() else 4
            a = a.astype(object)
            a = np.vectorize(lambda x: "True" if x else "False", otypes=[object])(a) if a.size else a

            class _B:
                def width(self):
                    return fmt.max_width

                def format(self, v):
                    return " " * (fmt.max_width - len(v)) + v

            return _tensor_str(a, len("tensor("), summarize, _B())
    return _tensor_str(a, len("tensor("), summarize, fmt)


def tensor_repr(t) -> str:
    meta = t._dev.type == "meta"  # no data to show: the size instead
    body = "..." if meta else tensor_str(t)
    suffixes = []
    d = t.dtype
    default = dtypes.get_default_dtype()
    if t._dev.type != "cpu" or (t._dev.index not in (None,)):
        suffixes.append(f"device='{t._dev}'")
    if meta or (t._data.size == 0 and t._data.ndim != 1):
        suffixes.append(f"size={tuple(t.shape)}")
    if not (d is default or d is dtypes.int64 or d is dtypes.bool or
            (d is dtypes.complex64 and default is dtypes.float32) or
            (d is dtypes.complex128 and default is dtypes.float64)):
        suffixes.append(f"dtype={d}")
    elif (meta or t._data.size == 0) and d is not default:
        suffixes.append(f"dtype={d}")
    if t._fn is not None:
        suffixes.append(f"grad_fn=<{type(t._fn).__name__}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    prefix = "tensor("
    if t._is_param:
        return "Parameter containing:\n" + _join(prefix, body, suffixes)
    return _join(prefix, body, suffixes)


def _join(prefix, body, suffixes):
    out = prefix + body
    for s in suffixes:
        last_line = out.rsplit("\n", 1)[-1]
        if len(last_line) + len(s) + 2 > PRINT_OPTS.linewidth:
            out += ",\n" + " " * len(prefix) + s
        else:
            out += ", " + s
    return out + ")"
