"""``ember.testing.check_op``: the checks a plugin op must pass (like PyTorch's ``opcheck``)."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import ember
from ember.autograd import gradcheck, gradgradcheck
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


def _check_forward(fn, sample, reference, device, name, i):
    args = _moved(sample, device)
    before = [to_numpy(a).copy() if isinstance(a, ember.Tensor) else None for a in args]
    got = _outs(fn(*args))
    for k, o in enumerate(got):
        if isinstance(o, ember.Tensor) and o.device.type != device:
            raise OpCheckError(f"{name}: sample {i} on {device!r}: output {k} is on {o.device}, "
                               f"expected the inputs' device")
    for a, b in zip(args, before):
        if b is not None and not np.array_equal(to_numpy(a), b, equal_nan=True):
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
    samples = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in sample_inputs]
    if not samples:
        raise OpCheckError(f"{name}: check_op needs at least one sample input")
    for device in devices or SESSION_BACKENDS or available_backends():
        for i, sample in enumerate(samples):
            _check_forward(fn, sample, reference, device, name, i)
            _check_grads(fn, sample, device, name, i, gradgrad)
