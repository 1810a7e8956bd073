"""A differential fuzzer: random calls, valid and invalid, of every op-table row, with PyTorch as the oracle.

Each call takes a row of the op tables (:data:`ember.testing.kit.TABLES`, plus the call forms of
:mod:`ember.testing.fuzz_forms`: ``dim`` arguments, ``out=``, in-place and method forms) and one of its
samples, and mutates the sample with the seeded generator: a random dtype for the floating inputs (bool,
integers, float16, bfloat16, float64, complex; sometimes a different one per input), 0-d and empty inputs,
non-contiguous views, Python scalars in place of tensors, inf/NaN entries, out-of-range integer (``dim``)
arguments and 0-d indices.  The same call runs on ember and on PyTorch and the two are compared:

* outcome: both return, or both raise (``accepts``: ember returns where PyTorch raises; ``refuses``: the
  reverse), and the exception class (``exception``: ember's is not an instance of the built-in class of
  PyTorch's, e.g. ``RuntimeError`` for ``torch.linalg.LinAlgError``);
* each output's kind, dtype, shape, ``requires_grad`` and values at the dtype's tolerance (``dtype``,
  ``shape``, ``flags``, ``values``);
* gradients of the floating outputs (fixed non-uniform weights) with respect to the floating inputs
  (``grad``);
* after a failure, ember's inputs hold the same values and no ``.grad`` (``mutated``).

:func:`run` returns the :class:`Disagreement` list; ``python -m ember.testing.fuzz --calls 5000 --seed N``
prints the disagreement classes, largest first.  Deliberate differences are the caller's list
(``tests/fuzz_known_differences.py``), passed as ``known``.

>>> from ember.testing import fuzz
>>> report = fuzz.run(calls=3, seed=0)
>>> report.calls
3
"""
from __future__ import annotations

import argparse
import collections
import importlib
import importlib.util
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

import ember

from .compare import has_dtype
from .kit import TABLES  # the kit's list of tables is the one list of them
from .row import B, F, I

FORMS_TABLE = "ember.testing.fuzz_forms"
DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool", "complex64")
FLOATING = {"float32", "float64", "float16", "bfloat16", "complex64", "complex128"}
# calls that crash the oracle itself (a segmentation fault in PyTorch 2.13): {row name prefix: (the input never
# generated for it, why)}
ORACLE_CRASHES = {"pdist": ("empty", "PyTorch's pdist backward reads out of bounds on empty input"),
                  "segment_reduce": ("empty", "PyTorch's segment_reduce reads out of bounds on empty data"),
                  "grid_sample": ("nonfinite", "PyTorch's grid sampler indexes out of bounds at a NaN grid point"),
                  "lstsq": ("nonfinite", "PyTorch's complex lstsq hands MKL's gelsy inf/NaN input, which MKL refuses "
                                         "with a parameter error on stderr"),
                  "lstm": ("0d", "PyTorch's LSTM kernel reads a 0-d weight as the full matrix, past its one element "
                                 "(heap corruption that aborts the process)")}
# values: (rtol, atol) by result dtype
TOLERANCE = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (1e-4, 1e-5),
             "complex64": (1e-4, 1e-5), "float64": (1e-7, 1e-7), "complex128": (1e-7, 1e-7)}


@dataclass(frozen=True)
class Disagreement:
    """One call where ember and PyTorch differ: the class (``accepts``, ``refuses``, ``exception``, ``dtype``,
    ``shape``, ``flags``, ``values``, ``grad``, ``mutated``), the row, and what was called and seen."""

    kind: str
    op: str
    call: str
    detail: str

    @property
    def key(self) -> tuple:
        return self.kind, self.op


@dataclass
class Report:
    """The outcome of a fuzzing run: the number of calls and the disagreements not listed as known."""

    calls: int = 0
    disagreements: list = field(default_factory=list)
    known: int = 0

    @property
    def rate(self) -> float:
        """The fraction of calls with at least one unlisted disagreement."""
        return len({d.call for d in self.disagreements}) / max(self.calls, 1)

    def classes(self) -> list:
        """``[((kind, op), count, an example)]``, largest first."""
        count = collections.Counter(d.key for d in self.disagreements)
        first = {}
        for d in self.disagreements:
            first.setdefault(d.key, d)
        return [(k, n, first[k]) for k, n in count.most_common()]


# --------------------------------------------------------------------------- the calls
def rows() -> list:
    """Every row the fuzzer draws from: the op tables and the call forms."""
    return [row for name in (*TABLES, FORMS_TABLE) for row in importlib.import_module(name).ROWS]


@dataclass(frozen=True)
class Arg:
    """One mutated argument: host data, its dtype, and how it is passed (``tensor``, ``scalar``, ``nc`` view)."""

    data: np.ndarray
    dtype: str
    how: str = "tensor"
    grad: bool = False


def _retype(data, dtype):
    a = np.asarray(data, dtype=np.float64)
    if dtype == "bool":
        return a > 0
    if dtype in ("int64", "int32", "uint8"):
        a = np.round(np.nan_to_num(a, posinf=99, neginf=-99) * 10).astype(np.int64)
        return a % 256 if dtype == "uint8" else a
    if dtype.startswith("complex"):
        return a * (1 + 0.5j)
    return a


def _mutate_float(rng, arg: F, dtype: str, empty: bool, nonfinite: bool = True, zero_d: bool = True) -> Arg:
    data = _retype(arg.data, dtype)
    u = rng.rand()
    u = u if zero_d or u >= 0.07 else 1
    u = u if empty or u < 0.07 or u >= 0.14 else 1
    u = u if nonfinite or u < 0.14 or u >= 0.18 else 1
    if u < 0.07 and data.ndim and data.size:
        data = data.reshape(-1)[:1].reshape(())                # 0-d
    elif u < 0.14 and data.ndim:
        data = data[:0]                                         # empty
    elif u < 0.18 and data.size and dtype in FLOATING:
        data = data.copy()
        data.reshape(-1)[rng.randint(data.size)] = rng.choice([np.inf, -np.inf, np.nan])
    if rng.rand() < 0.05 and data.size and zero_d:
        return Arg(data.reshape(-1)[:1].reshape(()), dtype, "scalar")
    how = "nc" if (arg.nc or rng.rand() < 0.2) and data.ndim >= 2 else "tensor"
    return Arg(data, dtype, how, arg.grad and dtype in FLOATING and not dtype.startswith("complex"))


def mutate(rng, sample, empty: bool = True, dtypes=DTYPES, nonfinite: bool = True, zero_d: bool = True) -> list:
    """A random variant of ``sample`` (its :class:`F` inputs retyped, reshaped, made scalars or views; integer
    arguments and index tensors sometimes out of range or 0-d); ``empty=False``: no empty inputs,
    ``nonfinite=False``: no inf/NaN, ``zero_d=False``: no 0-d or number inputs; the dtypes drawn from
    ``dtypes``."""
    u = rng.rand()
    common = "float32" if u < 0.35 else dtypes[rng.randint(len(dtypes))]
    mixed = rng.rand() < 0.1
    out = []
    first = True
    for arg in sample:
        if isinstance(arg, F):
            # only the first input is made empty: PyTorch 2.13 crashes on some empty weights (conv3d's backward)
            dtype = dtypes[rng.randint(len(dtypes))] if mixed else common
            out.append(_mutate_float(rng, arg, dtype, empty and first, nonfinite, zero_d))
            first = False
        elif isinstance(arg, I):
            data = np.asarray(arg.data, dtype=np.int64)
            if rng.rand() < 0.08 and data.ndim and data.size:
                data = data.reshape(-1)[:1].reshape(())
            out.append(Arg(data, "int64"))
        elif isinstance(arg, B):
            out.append(Arg(np.asarray(arg.data, dtype=bool), "bool"))
        elif type(arg) is int and rng.rand() < 0.1:
            out.append(int(rng.choice([-5, -4, 3, 4, 6])))
        else:
            out.append(arg)
    return out


def build(lib, args, device="cpu") -> list:
    """The mutated arguments as ``lib``'s (ember's or PyTorch's) tensors on ``device``, and Python values."""
    built = []
    for a in args:
        if not isinstance(a, Arg):
            built.append(a)
            continue
        if a.how == "scalar":
            v = a.data.item()
            built.append(bool(v) if a.dtype == "bool" else v)
            continue
        data = np.swapaxes(a.data, 0, 1) if a.how == "nc" else a.data
        t = lib.tensor(np.ascontiguousarray(data), device=device).to(getattr(lib, a.dtype))
        if a.how == "nc":
            t = t.transpose(0, 1)
        built.append(t.requires_grad_(True) if a.grad else t)
    return built


def describe(row, args) -> str:
    """A short text of one call (for the report)."""
    parts = []
    for a in args:
        if isinstance(a, Arg):
            shape = "x".join(map(str, a.data.shape)) or "0d"
            extra = "" if a.how == "tensor" else f"[{a.how}]"
            nonfinite = "!" if a.data.dtype.kind in "fc" and not np.all(np.isfinite(a.data)) else ""
            parts.append(f"{a.dtype}{shape}{extra}{nonfinite}" + ("*" if a.grad else ""))
        else:
            parts.append(repr(a))
    return f"{row.name}({', '.join(parts)})"


# --------------------------------------------------------------------------- one call on each side
@dataclass
class Outcome:
    """What one side did: its results (or the exception), the gradients (or the gradient's exception)."""

    results: tuple = ()
    error: BaseException | None = None
    grads: tuple | None = None
    grad_error: BaseException | None = None


def _weights(shape):
    n = math.prod(shape)
    return np.cos(np.arange(n) * 0.7 + 0.3).reshape(shape)


def _flat(res) -> tuple:
    """Results with nested tuples (named tuples of several forms) flattened."""
    if isinstance(res, (tuple, list)):
        return tuple(x for r in res for x in _flat(r))
    return (res,)


def _call(lib, row, args) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = _flat(row.op(lib, *args))
        except Exception as exc:  # noqa: BLE001 - every refusal is an outcome
            return Outcome(error=exc)
        out = Outcome(results=res)
        leaves = [a for a in args if isinstance(a, lib.Tensor) and a.requires_grad]
        diff = [r for r in res if isinstance(r, lib.Tensor) and r.requires_grad and r.is_floating_point()]
        if leaves and diff:
            try:
                loss = sum((r.to(lib.float64) * lib.tensor(_weights(tuple(r.shape)), device=r.device)).sum()
                           for r in diff)
                out.grads = lib.autograd.grad(loss, leaves, allow_unused=True)
            except Exception as exc:  # noqa: BLE001
                out.grad_error = exc
        return out


def _builtin(exc_type) -> type:
    """The first built-in exception class of ``exc_type``'s bases (PyTorch's ``_LinAlgError`` is a
    ``RuntimeError``)."""
    for k in exc_type.__mro__:
        if k.__module__ == "builtins":
            return k
    return Exception


def _host(t) -> np.ndarray:
    if isinstance(t, ember.Tensor):
        t = t.detach()
        if str(t.dtype).endswith("bfloat16"):
            t = t.float()
        return np.array(t.cpu().numpy(), copy=True)  # (a copy: numpy() shares the tensor's memory)
    t = t.detach().resolve_conj().resolve_neg()
    return (t.float() if str(t.dtype).endswith("bfloat16") else t).numpy()


def _dtype(t) -> str:
    return str(t.dtype).split(".")[-1]


def _values_differ(e, t, dtype) -> str | None:
    a, b = _host(e), _host(t)
    if a.shape != b.shape:
        return f"shape {a.shape} != {b.shape}"
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        rtol, atol = TOLERANCE.get(dtype, (1e-4, 1e-5))
        a, b = a.astype(np.complex128), b.astype(np.complex128)
        # real and imaginary parts apart (an inf in one part leaves the other to compare); an inf of the right
        # sign is equal; NaN only matches NaN
        ok = (np.isclose(a.real, b.real, rtol=rtol, atol=atol, equal_nan=True)
              & np.isclose(a.imag, b.imag, rtol=rtol, atol=atol, equal_nan=True))
        if not ok.all():
            k = np.argmax(~ok.reshape(-1))
            return f"{a.reshape(-1)[k]} != {b.reshape(-1)[k]} at flat index {k} ({(~ok).sum()} of {ok.size})"
        return None
    if not np.array_equal(a, b):
        return f"{a.reshape(-1)[:4]} != {b.reshape(-1)[:4]}"
    return None


def _compare_results(got, want) -> list:
    if len(got) != len(want):
        return [("shape", f"{len(got)} outputs, PyTorch {len(want)}")]
    found = []
    for k, (g, w) in enumerate(zip(got, want)):
        g_t, w_t = isinstance(g, ember.Tensor), hasattr(w, "detach") and hasattr(w, "dtype")
        if g_t != w_t:
            found.append(("dtype", f"output {k} is {type(g).__name__}, PyTorch's {type(w).__name__}"))
        elif not g_t:
            if g != w and not (isinstance(g, float) and isinstance(w, float) and math.isclose(g, w, rel_tol=1e-5)):
                if not (isinstance(g, float) and math.isnan(g) and math.isnan(w)):
                    found.append(("values", f"output {k} is {g!r}, PyTorch's {w!r}"))
        elif _dtype(g) != _dtype(w):
            found.append(("dtype", f"output {k} is {_dtype(g)}, PyTorch's {_dtype(w)}"))
        elif tuple(g.shape) != tuple(w.shape):
            found.append(("shape", f"output {k} is {tuple(g.shape)}, PyTorch's {tuple(w.shape)}"))
        elif bool(g.requires_grad) != bool(w.requires_grad):
            found.append(("flags", f"output {k} requires_grad {g.requires_grad}, PyTorch's {w.requires_grad}"))
        else:
            why = _values_differ(g, w, _dtype(w))
            if why:
                found.append(("values", f"output {k}: {why}"))
    return found


def _compare_grads(e: Outcome, t: Outcome, args) -> list:
    if (e.grad_error is None) != (t.grad_error is None):
        err = e.grad_error or t.grad_error
        side = "ember's" if e.grad_error else "PyTorch's"
        return [("grad", f"only {side} backward raised {type(err).__name__}: {err}")]
    if e.grads is None or t.grads is None:
        return [] if (e.grads is None) == (t.grads is None) else [("grad", "only one side recorded a graph")]
    found = []
    dtypes = [a.dtype for a in args if isinstance(a, Arg) and a.grad]
    for k, (g, w) in enumerate(zip(e.grads, t.grads)):
        if (g is None) != (w is None):
            found.append(("grad", f"gradient {k}: {'None' if g is None else 'a tensor'}, PyTorch's the other"))
        elif g is not None:
            why = _values_differ(g, w, dtypes[k] if k < len(dtypes) else "float32")
            if why:
                found.append(("grad", f"gradient {k}: {why}"))
    return found


def _mutated(args, before) -> str | None:
    for k, (a, b) in enumerate(zip(args, before)):
        if isinstance(a, ember.Tensor):
            if a.grad is not None:
                return f"argument {k} has a .grad after the failed call"
            if not np.array_equal(_host(a), b, equal_nan=True):
                return f"argument {k} was modified by the failed call"
    return None


def compare(row, args, device="cpu") -> list:
    """Run ``row`` on the mutated ``args`` in ember (on ``device``) and PyTorch; ``[(kind, detail)]`` for what
    differs."""
    import torch  # the oracle

    t = _call(torch, row, build(torch, args))
    eargs = build(ember, args, device)
    before = [_host(a) if isinstance(a, ember.Tensor) else None for a in eargs]
    e = _call(ember, row, eargs)
    if t.error is not None and e.error is None:
        return [("accepts", f"PyTorch raised {type(t.error).__name__}: {str(t.error)[:400]}")]
    if e.error is not None and t.error is None:
        return [("refuses", f"{type(e.error).__name__}: {str(e.error)[:200]}")]
    if e.error is not None:
        found = []
        base = _builtin(type(t.error))
        if not isinstance(e.error, base):
            found.append(("exception", f"{type(e.error).__name__} where PyTorch raised {base.__name__} "
                                       f"({type(e.error).__name__}: {str(e.error)[:120]} / {str(t.error)[:120]})"))
        why = _mutated(eargs, before)
        if why:
            found.append(("mutated", why))
        return found
    return _compare_results(e.results, t.results) or _compare_grads(e, t, args)


# --------------------------------------------------------------------------- a run
def run(calls: int = 1000, seed: int = 0, known=None, ops=None, trace=None, device="cpu") -> Report:
    """``calls`` random calls (seeded) over every row (or the rows named in ``ops``), ember's inputs on
    ``device`` (the rows that run there, the dtypes it has); ``known(kind, op, call,
    detail)`` says whether a disagreement is a listed, deliberate one; ``trace(call)`` sees each call first."""
    rng = np.random.RandomState(seed)
    kind = str(device).split(":")[0]
    table = [r for r in rows() if (ops is None or r.name in ops) and kind not in r.skips]
    dtypes = tuple(d for d in DTYPES if has_dtype(device, getattr(ember, d)))
    report = Report()
    for _ in range(calls):
        row = table[rng.randint(len(table))]
        sample = row.samples[rng.randint(len(row.samples))]
        avoid = {what for k, (what, _) in ORACLE_CRASHES.items() if row.name.startswith(k)}
        args = mutate(rng, sample, "empty" not in avoid, dtypes, "nonfinite" not in avoid, "0d" not in avoid)
        call = describe(row, args)
        if trace is not None:
            trace(call)
        report.calls += 1
        for kind, detail in compare(row, args, device):
            if known is not None and known(kind, row.name, call, detail):
                report.known += 1
            else:
                report.disagreements.append(Disagreement(kind, row.name, call, detail))
    return report


def sweep_dtypes(ops=None, device="cpu", known=None, dtypes=DTYPES) -> Report:
    """Every row's first sample (or the rows named in ``ops``) once in each of ``dtypes``, all its floating
    inputs in that dtype and nothing else mutated: the per-op dtype support, compared with PyTorch's kernels
    (which dtypes compute, which raise and with which exception class)."""
    kind = str(device).split(":")[0]
    table = [r for r in rows() if (ops is None or r.name in ops) and kind not in r.skips]
    report = Report()
    for row in table:
        for dtype in dtypes:
            if not has_dtype(device, getattr(ember, dtype)):
                continue
            args = [Arg(_retype(a.data, dtype), dtype, "nc" if a.nc and np.ndim(a.data) >= 2 else "tensor",
                        a.grad and dtype in FLOATING and not dtype.startswith("complex")) if isinstance(a, F)
                    else Arg(np.asarray(a.data, dtype=np.int64), "int64") if isinstance(a, I)
                    else Arg(np.asarray(a.data, dtype=bool), "bool") if isinstance(a, B) else a
                    for a in row.samples[0]]
            call = describe(row, args)
            report.calls += 1
            try:
                found = compare(row, args, device)
            except Exception as exc:  # noqa: BLE001 - a result the comparison cannot read (a backend dtype ember lacks)
                found = [("dtype", f"the comparison failed: {type(exc).__name__}: {exc}")]
            for what, detail in found:
                if known is not None and known(what, row.name, call, detail):
                    report.known += 1
                else:
                    report.disagreements.append(Disagreement(what, row.name, call, detail))
    return report


def main(argv=None) -> int:
    """``python -m ember.testing.fuzz --calls N --seed S``: print the disagreement classes, largest first."""
    p = argparse.ArgumentParser(prog="python -m ember.testing.fuzz", description=main.__doc__)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ops", nargs="*", help="only these rows")
    p.add_argument("--known", help="a Python file defining known(kind, op, call, detail)")
    p.add_argument("--trace", action="store_true", help="print each call before it runs")
    a = p.parse_args(argv)
    known = None
    if a.known:
        spec = importlib.util.spec_from_file_location("fuzz_known", a.known)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        known = mod.known
    report = run(a.calls, a.seed, known, a.ops, (lambda c: print(c, flush=True)) if a.trace else None)
    by_kind = collections.Counter(d.kind for d in report.disagreements)
    print(f"{report.calls} calls, seed {a.seed}: {len({d.call for d in report.disagreements})} disagree "
          f"({100 * report.rate:.2f}%), {report.known} known differences")
    print("by kind: " + ", ".join(f"{k} {n}" for k, n in by_kind.most_common()))
    for (kind, op), n, d in report.classes():
        print(f"{n:4d}  {kind:9s} {op}: {d.call}: {d.detail}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
