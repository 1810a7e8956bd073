"""The checks an op must pass: :func:`opcheck` (``torch.library.opcheck``: one call of a custom op) and
:func:`check_op` (the conformance kit's: samples on every backend, against a reference).  Both use the same
checks of inputs left untouched and of gradients."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.library import bind_args, opdef
from ember.plugins import REGISTRY

from .compare import SESSION_BACKENDS, assert_close, available_backends, to_numpy


class OpCheckError(AssertionError):
    """A plugin op failed one of :func:`check_op`'s checks."""


def _name(fn) -> str:
    """A plugin op by its public name (``ember.ops.ns.op``), anything else by its qualified name."""
    for ns, ops in REGISTRY.ops.items():
        for op, entry in ops.items():
            if entry["fn"] == fn:
                return f"ember.ops.{ns}.{op}"
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _custom_op(fn):
    """The :mod:`ember.library` operator ``fn`` is, when it has a schema (else None)."""
    qual = getattr(fn, "_name", None) or (fn.name() if callable(getattr(fn, "name", None)) else None)
    try:
        d = opdef(qual) if isinstance(qual, str) else None
    except (RuntimeError, ValueError):
        return None
    return d if d is not None and d.schema is not None else None


def _outs(r) -> tuple:
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _moved(sample, device, dtype=None):
    out = []
    for a in sample:
        if isinstance(a, ember.Tensor):
            t = a.detach().to(device)
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            out.append(t.requires_grad_(a.requires_grad and t.is_floating_point()))
        else:
            out.append(a)
    return out


def _snapshot(args) -> list:
    return [to_numpy(a).copy() if isinstance(a, ember.Tensor) else None for a in args]


def _changed(args, before) -> list:
    """The positions of the tensors of ``args`` whose values differ from :func:`_snapshot`'s ``before``."""
    return [k for k, (a, b) in enumerate(zip(args, before))
            if b is not None and not np.array_equal(to_numpy(a), b, equal_nan=True)]


def _check_forward(fn, sample, reference, device, name, i):
    args = _moved(sample, device)
    before = _snapshot(args)
    got = _outs(fn(*args))
    for k, o in enumerate(got):
        if isinstance(o, ember.Tensor) and o.device.type != device:
            raise OpCheckError(f"{name}: sample {i} on {device!r}: output {k} is on {o.device}, "
                               f"expected the inputs' device")
    if _changed(args, before):
        raise OpCheckError(f"{name}: sample {i} on {device!r}: an input was modified")
    if reference is None:
        return
    want = _outs(reference(*_moved(sample, "cpu")))
    for k, (g, w) in enumerate(zip(got, want)):
        try:
            assert_close(g, w)
        except AssertionError as exc:
            raise OpCheckError(f"{name}: sample {i} on {device!r}: output {k} differs from the reference "
                               f"(dtype or values): {exc}") from None


def _check_grads(fn, sample, device, name, i, gradgrad):
    args = _moved(sample, device, ember.float64)
    pos = [k for k, a in enumerate(args) if isinstance(a, ember.Tensor) and a.requires_grad]
    if not pos:
        return

    def f(*leaves):
        full = list(args)
        for k, t in zip(pos, leaves):
            full[k] = t
        return fn(*full)

    leaves = tuple(args[k] for k in pos)
    for check, run in (("gradcheck", gradcheck), ("gradgradcheck", gradgradcheck))[:2 if gradgrad else 1]:
        try:
            run(f, leaves)
        except Exception as exc:  # noqa: BLE001 - report any failure with the op and sample
            raise OpCheckError(f"{name}: sample {i} on {device!r}: {check} failed: {type(exc).__name__}: "
                               f"{exc}") from exc


def check_op(fn: Callable, sample_inputs: Sequence, reference: Callable | None = None, *,
             devices: Sequence[str] | None = None, gradgrad: bool = True) -> None:
    """Check an op on every backend: forward (device placement, inputs untouched, values and dtype
    against ``reference`` evaluated on ``cpu``), ``gradcheck`` and ``gradgradcheck`` in float64 for
    inputs that require grad.  Raises :class:`OpCheckError` naming the op, the sample and the check.

    ``sample_inputs``: a list of argument tuples (tensors are moved to each device).
    ``devices``: default the backends ``pytest --ember-backend`` selected, else every available one.

    >>> import ember
    >>> from ember.testing import check_op
    >>> x = ember.tensor([0.5, -1.0], requires_grad=True)
    >>> check_op(lambda t: t * t, [(x,)], reference=lambda t: t.pow(2))
    """
    name = _name(fn)
    custom = _custom_op(fn)
    samples = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in sample_inputs]
    if not samples:
        raise OpCheckError(f"{name}: check_op needs at least one sample input")
    for device in devices or SESSION_BACKENDS or available_backends():
        for i, sample in enumerate(samples):
            _check_forward(fn, sample, reference, device, name, i)
            if custom is not None:  # an op with a schema: opcheck's checks of what it writes and its fake kernel
                opcheck(fn, _moved(sample, device), test_utils=("test_schema", "test_faketensor"))
            _check_grads(fn, sample, device, name, i, gradgrad)


# --------------------------------------------------------------------------- opcheck
DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _clone_args(args, kwargs, device=None):
    def one(a):
        if isinstance(a, ember.Tensor):
            t = a.detach()
            t = ember.empty(tuple(t.shape), dtype=t.dtype, device="meta") if device == "meta" else t.clone()
            return t.requires_grad_(a.requires_grad and device != "meta")
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], ember.Tensor):
            return type(a)(one(x) for x in a)
        return a

    return [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}


def _flat_tensors(values):
    out = []
    for v in values:
        if isinstance(v, ember.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(x for x in v if isinstance(x, ember.Tensor))
    return out


def _arg_names(d, args, kwargs):
    """(name, value) of every argument as the schema names them (positions where there is no schema)."""
    if d.schema is None:
        return [(f"args[{k}]", a) for k, a in enumerate(args)]
    return [(p.name, v) for p, v in zip(d.schema.arguments, bind_args(d.schema, tuple(args), kwargs))]


def _test_schema(op, d, args, kwargs):
    a, kw = _clone_args(args, kwargs)
    named = _arg_names(d, a, kw)
    flat = [(n, t) for n, v in named for t in _flat_tensors([v])]
    before = _snapshot([t for _, t in flat])
    with ember.no_grad():
        op(*a, **kw)
    mutable = set(d.schema.mutated) if d.schema is not None else set()
    for k in _changed([t for _, t in flat], before):
        if flat[k][0] not in mutable:
            raise RuntimeError(f"Argument {flat[k][0]} is not defined as mutable but was mutated")


def _test_autograd_registration(op, d, args, kwargs):
    a, kw = _clone_args(args, kwargs)
    if not any(t.requires_grad for t in _flat_tensors(list(a) + list(kw.values()))):
        return
    outs = [o for o in _outs(op(*a, **kw)) if isinstance(o, ember.Tensor)]
    if outs and not any(o.requires_grad for o in outs if o.is_floating_point()):
        raise RuntimeError(f"{d.qualname}: an input requires grad but no output does: the op is not connected to "
                           f"autograd")


def _test_faketensor(op, d, args, kwargs):
    if d.schema is not None and d.schema.returns and d.fake is None and "meta" not in d.kernels:
        raise RuntimeError(f"There was no fake impl registered for {d.qualname}. This is necessary for the meta "
                           f"device and tracing to work. Please use `ember.library.register_fake` to add a fake impl.")
    a, kw = _clone_args(args, kwargs)
    with ember.no_grad():
        real = _outs(op(*a, **kw))
    ma, mkw = _clone_args(args, kwargs, "meta")
    fake = _outs(op(*ma, **mkw))
    if len(fake) != len(real):
        raise RuntimeError(f"When comparing the output of {d.namespace}.{d.name}.default on the meta device and "
                           f"concrete Tensors, found {len(fake)} and {len(real)} outputs")
    for f, r in zip(fake, real):
        if isinstance(r, ember.Tensor):
            for what, x, y in (("Shapes", tuple(f.shape), tuple(r.shape)), ("Dtypes", f.dtype, r.dtype)):
                if x != y:
                    raise RuntimeError(f"When comparing the output of {d.namespace}.{d.name}.default on the meta "
                                       f"device (its fake kernel) and concrete Tensors, found mismatched tensor "
                                       f"metadata: {what} {y} and {x} are not equal!")


def _test_gradients(op, d, args, kwargs):
    a, kw = _clone_args(args, kwargs)
    leaves = [t for t in _flat_tensors(list(a) + list(kw.values())) if t.requires_grad]
    if not leaves:
        return
    outs = [o for o in _outs(op(*a, **kw)) if isinstance(o, ember.Tensor) and o.requires_grad]
    if outs:
        ember.autograd.backward(outs, [ember.ones_like(o) for o in outs])
    if all(t.dtype == ember.float64 for t in leaves):
        try:
            gradcheck(lambda *_: op(*a, **kw), tuple(leaves))
        except Exception as exc:  # noqa: BLE001 - any failure is the op's gradient being wrong
            raise RuntimeError(f"gradcheck of {d.qualname} in float64 failed: {exc}") from None


_TESTS = {"test_schema": _test_schema, "test_autograd_registration": _test_autograd_registration,
          "test_faketensor": _test_faketensor, "test_aot_dispatch_dynamic": _test_gradients}


def opcheck(op, args: tuple, kwargs: dict | None = None, *, test_utils=DEFAULT_TEST_UTILS,
            raise_exception: bool = True, atol=None, rtol=None) -> dict:
    """Check a custom op on one call, as ``torch.library.opcheck``: ``test_schema`` (only the arguments the
    schema marks mutable are written), ``test_autograd_registration`` (outputs join the graph when an input
    requires grad), ``test_faketensor`` (its fake kernel on the meta device gives the real outputs' shapes and
    dtypes), ``test_aot_dispatch_dynamic`` (backward runs; gradcheck where the inputs are float64).  Returns
    ``{test: "SUCCESS"}``; a failure raises :class:`OpCheckError` (with ``raise_exception=False`` the dict holds
    the exception instead).  Inputs are copied, never changed.

    >>> import ember
    >>> @ember.library.custom_op("docchk::twice", mutates_args=())
    ... def twice(x: ember.Tensor) -> ember.Tensor:
    ...     return x * 2
    >>> _ = twice.register_fake(lambda x: ember.empty_like(x))
    >>> opcheck(twice, (ember.ones(2),))["test_faketensor"]
    'SUCCESS'
    """
    d = opdef(getattr(op, "_name", None) or getattr(op, "name", lambda: op)(), "opcheck")
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    unknown = set(test_utils) - set(_TESTS)
    if unknown:
        raise ValueError(f"opcheck(op, ...): unknown test_utils {sorted(unknown)}; expected some of "
                         f"{list(DEFAULT_TEST_UTILS)}")
    kwargs = dict(kwargs or {})
    report = {}
    for name in test_utils:
        try:
            _TESTS[name](op, d, tuple(args), kwargs)
            report[name] = "SUCCESS"
        except Exception as exc:  # noqa: BLE001 - every failure is reported against its test
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {exc}") from exc
            report[name] = exc
    return report
