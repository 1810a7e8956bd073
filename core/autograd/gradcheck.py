"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck`` (float64, central differences)."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .engine import grad
from .grad_mode import enable_grad


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,) if isinstance(x, Tensor) else tuple(x)


def _flat_outputs(fn, inputs):
    out = fn(*inputs)
    return tuple(o for o in _as_tuple(out) if isinstance(o, Tensor))


def _real_view(a):
    """A host array as float64 real coordinates: complex elements as (real, imaginary) pairs."""
    a = np.asarray(a).reshape(-1)
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], -1).reshape(-1).astype(np.float64)
    return a.astype(np.float64)


def _coords(t):
    """The real coordinates of ``t``: (flat index, unit) pairs, two per element of a complex tensor."""
    units = (1, 1j) if t.is_complex() else (1,)
    return [(j, u) for j in range(t.numel()) for u in units]


def _numerical(fn, inputs, targets, eps):
    """d(outputs)/d(targets) by central differences: a list (per output) of lists (per target) of Jacobians.

    Complex tensors count as pairs of real coordinates (real and imaginary parts), so a complex
    gradient is checked in PyTorch's convention (``dL/dRe + i dL/dIm``).  ``fn`` runs in the
    caller's grad mode, so a function that keeps only the outputs that require grad sees the same
    outputs here as in the analytical pass.
    """
    outs = _flat_outputs(fn, inputs)
    jac = [[np.zeros((len(_coords(o)), len(_coords(t)))) for t in targets] for o in outs]
    for ti, t in enumerate(targets):
        host = t.detach()  # shares t's storage, so writes through it (by position: t may be a strided view)
        for c, (j, unit) in enumerate(_coords(t)):
            pos = tuple(int(i) for i in np.unravel_index(j, tuple(t.shape)))
            orig = host[pos].item()
            host[pos] = orig + eps * unit
            plus = [_real_view(o.detach().to("cpu").numpy()).copy() for o in _flat_outputs(fn, inputs)]
            host[pos] = orig - eps * unit
            minus = [_real_view(o.detach().to("cpu").numpy()).copy() for o in _flat_outputs(fn, inputs)]
            host[pos] = orig
            for oi in range(len(outs)):
                jac[oi][ti][:, c] = (plus[oi] - minus[oi]) / (2 * eps)
    return outs, jac


def _analytical(fn, inputs, targets, create_graph=False):
    outs = _flat_outputs(fn, inputs)
    jac = []
    for o in outs:
        rows = [np.zeros((len(_coords(o)), len(_coords(t)))) for t in targets]
        if not o._rg:
            jac.append(rows)
            continue
        for r, (i, unit) in enumerate(_coords(o)):
            g = _zeros_like(o)
            g.reshape(-1)[i] = unit  # the gradient of the real (unit 1) or imaginary (unit 1j) part
            gs = grad(o, targets, g, retain_graph=True, allow_unused=True)
            for ti, gt in enumerate(gs):
                if gt is not None:
                    gt = gt.detach().to("cpu").numpy()
                    rows[ti][r, :] = _real_view(gt if targets[ti].is_complex() else np.real(gt))
        jac.append(rows)
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              fast_mode=False, masked=None) -> bool:
    """Compare the gradients of ``func`` at ``inputs`` with central finite differences.

    Inputs that require grad should be float64.  Raises :class:`GradcheckError`
    naming the worst element when they disagree (or returns False when
    ``raise_exception=False``).

    >>> import ember
    >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    >>> ember.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    True
    """
    inputs = _as_tuple(inputs)
    targets = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not targets:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for t in targets:
        if t.dtype.name not in ("float64", "complex128"):
            import warnings

            warnings.warn(f"Input #{inputs.index(t)} requires gradient and is not a double precision floating "
                          f"point. This check will likely fail if all the inputs are not of double precision "
                          f"floating point.", UserWarning, stacklevel=2)
    _, num = _numerical(func, inputs, targets, eps)
    ana = _analytical(func, inputs, targets)
    if len(num) != len(ana):  # a check over no outputs would pass vacuously
        raise GradcheckError(f"gradcheck: the function returned {len(num)} tensor output(s) under no_grad but "
                             f"{len(ana)} with grad enabled; its outputs must not depend on the grad mode")
    for oi, (nrows, arows) in enumerate(zip(num, ana)):
        for ti, (n, a) in enumerate(zip(nrows, arows)):
            bad = np.abs(a - n) > atol + rtol * np.abs(n)
            if bad.any():
                err = np.abs(a - n) - (atol + rtol * np.abs(n))
                i, j = np.unravel_index(np.argmax(err), err.shape)
                msg = (f"Jacobian mismatch for output {oi} with respect to input {ti},\n"
                       f"numerical:{n}\nanalytical:{a}\n"
                       f"worst element: output[{i}] w.r.t. input[{j}]: numerical {n[i, j]:.8g}, "
                       f"analytical {a[i, j]:.8g} ({int(bad.sum())} of {bad.size} elements differ)")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False) -> bool:
    """Check second derivatives: gradcheck of the gradient of ``func`` (with random grad_outputs)."""
    inputs = _as_tuple(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(_random_like(o.detach()).requires_grad_() for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first(*args):
        ins, gos = args[:n_in], args[n_in:]
        with enable_grad():  # gradcheck's finite differences run under no_grad: the first gradients need a graph
            return _first_grads(ins, gos)

    def _first_grads(ins, gos):
        outs = _flat_outputs(func, ins)
        tg = [t for t in ins if isinstance(t, Tensor) and t.requires_grad]
        diff = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
        gs = grad([o for o, _ in diff], tg, [g for _, g in diff], create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


def _random_like(t):
    """Standard normal values shaped as ``t`` (real and imaginary parts for a complex ``t``)."""
    if t.is_complex():
        part = t.dtype.to_real()
        return t.new_empty(t.shape, dtype=part).normal_() + t.new_empty(t.shape, dtype=part).normal_() * 1j
    return t.new_empty(t.shape).normal_()


def _zeros_like(t):
    return t.new_zeros(t.shape)
