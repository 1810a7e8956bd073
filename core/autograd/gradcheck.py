"""Finite-difference checks of gradients: ``gradcheck`` and ``gradgradcheck`` (float64, central differences)."""
from __future__ import annotations

import warnings

import numpy as np

from ..tensor import Tensor
from .engine import VMAP, grad
from .function import Function
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
            with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where the function is infinite
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


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Compare the gradients of ``func`` at ``inputs`` with central finite differences.

    Inputs that require grad should be float64.  Raises :class:`GradcheckError` naming the worst element when
    they disagree (or returns False when ``raise_exception=False``).  As PyTorch's: ``check_backward_ad``
    compares reverse mode (with backward run twice, equal within ``nondet_tol``; zero grad_outputs giving zero
    gradients; with ``check_undefined_grad`` outputs whose gradient is undefined; with ``check_grad_dtypes``
    each gradient's dtype and device; with ``check_batched_grad`` a vmapped backward); ``check_forward_ad``
    compares forward mode (with ``check_batched_forward_grad`` a vmapped one); ``fast_mode`` compares one
    random projection ``v^T J u`` per input and output instead of whole Jacobians (real tensors; complex ones
    are checked in full).  ``masked`` concerns sparse inputs, whose gradients ember checks as dense.

    >>> import ember
    >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    >>> ember.autograd.gradcheck(lambda t: (t * t).sum(), (x,), check_forward_ad=True, check_batched_grad=True)
    True
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    inputs = _as_tuple(inputs)
    targets = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not targets:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for t in targets:
        if t.dtype.name not in ("float64", "complex128"):
            warnings.warn(f"Input #{inputs.index(t)} requires gradient and is not a double precision floating "
                          f"point. This check will likely fail if all the inputs are not of double precision "
                          f"floating point.", UserWarning, stacklevel=2)
    check = _Check(func, inputs, targets, eps, atol, rtol)
    try:
        if fast_mode and not any(t.is_complex() for t in targets + list(check.outs)):
            check.projections(check_backward_ad, check_forward_ad)
        else:
            check.jacobians(check_backward_ad, check_forward_ad)
        if check_backward_ad:
            check.backward_properties(nondet_tol, check_grad_dtypes)
            if check_undefined_grad:
                check.undefined_grads()
        if check_batched_grad:
            check.batched_backward()
        if check_batched_forward_grad:
            check.batched_forward()
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


class _UndefinedGrad(Function):
    """Identity whose backward gives no gradient: an output whose gradient is undefined (PyTorch's
    ``torch._C._functions.UndefinedGrad``)."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return None


class _Check:
    """The checks of one gradcheck call: ``func`` at ``inputs``, whose tensors ``targets`` require grad."""

    def __init__(self, func, inputs, targets, eps, atol, rtol):
        self.func, self.inputs, self.targets = func, inputs, targets
        self.eps, self.atol, self.rtol = eps, atol, rtol

    @property
    def outs(self):
        """The outputs with their graph, computed anew: the finite differences write into the inputs, so an
        earlier graph's saved inputs are out of date."""
        with enable_grad():
            return _flat_outputs(self.func, self.inputs)

    def compare(self, n, a, oi, ti, mode=""):
        with np.errstate(invalid="ignore"):  # inf - inf: a mismatch unless both agree (checked below)
            bad = np.abs(a - n) > self.atol + self.rtol * np.abs(n)
        if bad.any():
            err = np.abs(a - n) - (self.atol + self.rtol * np.abs(n))
            i, j = np.unravel_index(np.argmax(err), err.shape)
            raise GradcheckError(
                f"Jacobian {mode}mismatch for output {oi} with respect to input {ti},\nnumerical:{n}\nanalytical:{a}\n"
                f"worst element: output[{i}] w.r.t. input[{j}]: numerical {n[i, j]:.8g}, analytical {a[i, j]:.8g} "
                f"({int(bad.sum())} of {bad.size} elements differ)")

    # ------------------------------------------------------------------ whole Jacobians
    def jacobians(self, backward: bool, forward: bool) -> None:
        _, num = _numerical(self.func, self.inputs, self.targets, self.eps)
        for on, mode, compute in ((backward, "", _analytical), (forward, "forward AD ", _forward_jacobian)):
            if not on:
                continue
            ana = compute(self.func, self.inputs, self.targets)
            if len(num) != len(ana):  # a check over no outputs would pass vacuously
                raise GradcheckError(f"gradcheck: the function returned {len(num)} tensor output(s) under no_grad "
                                     f"but {len(ana)} with grad enabled; its outputs must not depend on the grad mode")
            for oi, (nrows, arows) in enumerate(zip(num, ana)):
                for ti, (n, a) in enumerate(zip(nrows, arows)):
                    self.compare(n, a, oi, ti, mode)

    # ------------------------------------------------------------------ fast mode: v^T J u
    def projections(self, backward: bool, forward: bool) -> None:
        us = [_random_like(t.detach()) for t in self.targets]
        vs = [_random_like(o.detach()) for o in self.outs]
        for ti, (t, u) in enumerate(zip(self.targets, us)):
            directional = _directional(self.func, self.inputs, t, u, self.eps)
            num = [float((d * _host(v)).sum()) for d, v in zip(directional, vs)]
            modes = []
            if backward:
                modes.append(("", [self._vjp_dot(oi, v, ti, u) for oi, v in enumerate(vs)]))
            if forward:
                tangents = [u if k == ti else None for k in range(len(self.targets))]
                jvp = _jvp(self.func, self.inputs, self.targets, tangents)
                modes.append(("forward AD ", [float((j * v).sum()) for j, v in zip(jvp, vs)]))
            for mode, ana in modes:
                for oi, (n, a) in enumerate(zip(num, ana)):
                    self.compare(np.array([[n]]), np.array([[a]]), oi, ti, mode)

    def _vjp_dot(self, oi, v, ti, u) -> float:
        o = self.outs[oi]
        if not o.requires_grad:
            return 0.0
        g = grad(o, self.targets, v, retain_graph=True, allow_unused=True)[ti]
        return 0.0 if g is None else float((g.detach() * u).sum())

    # ------------------------------------------------------------------ backward's other properties
    def backward_properties(self, nondet_tol: float, check_grad_dtypes: bool) -> None:
        """Backward run twice with the same grad_outputs gives the same gradients (within ``nondet_tol``) of the
        inputs' shapes (and with ``check_grad_dtypes`` dtypes and devices); zero grad_outputs give zero (or no)
        gradients.  Each backward runs on a graph of its own (an op may free what its backward used)."""
        outs = self.outs
        if not any(o.requires_grad for o in outs):
            return

        def vjp(grads):
            pairs = [(o, g) for o, g in zip(self.outs, grads) if o.requires_grad]
            return grad([o for o, _ in pairs], self.targets, [g for _, g in pairs], allow_unused=True)
        vs = [_random_like(o.detach()) for o in outs]
        for t, a, b in zip(self.targets, vjp(vs), vjp(vs)):
            if a is None:
                continue
            ha, hb = _host(a), _host(b)
            same = (ha == hb) | (np.isnan(ha) & np.isnan(hb))  # equal infinities and NaNs are reentrant
            with np.errstate(invalid="ignore"):
                diff = np.where(same, 0, np.abs(ha - hb))
            if diff.size and not (diff <= nondet_tol).all():
                raise GradcheckError(
                    "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                    "times gives different values, although analytical gradient matches numerical gradient."
                    f"The tolerance for nondeterminism was {nondet_tol}.")
            if check_grad_dtypes and a.dtype != t.dtype:
                raise GradcheckError("Gradient has dtype mismatch")
            if check_grad_dtypes and a.device != t.device:
                raise GradcheckError("Gradient has device mismatch")
            if tuple(a.shape) != tuple(t.shape):
                raise GradcheckError("Analytical gradient has incorrect size")
        if any(_nonzero(g) for g in vjp([_zeros_like(o) for o in outs])):
            raise GradcheckError("backward not multiplied by grad_output")

    def undefined_grads(self) -> None:
        """Backward copes when the gradient of every output, then of each one, is undefined."""
        n = len(self.outs)
        for undefined in [set(range(n))] + ([{i} for i in range(n)] if n > 1 else []):
            with enable_grad():
                outs = _flat_outputs(self.func, self.inputs)
                outs = [_UndefinedGrad.apply(o) if i in undefined and o.requires_grad else o
                        for i, o in enumerate(outs)]
            pairs = [(o, _zeros_like(o)) for o in outs if o.requires_grad]
            if not pairs:
                return
            try:
                gs = grad([o for o, _ in pairs], self.targets, [g for _, g in pairs], allow_unused=True)
            except RuntimeError as e:
                raise GradcheckError('Expected backward function to handle undefined output grads. Please look at '
                                     '"Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"'
                                     ) from e
            if any(_nonzero(g) for g in gs):
                raise GradcheckError("Expected all input grads to be undefined or zero when all output grads are "
                                     'undefined or zero. Please look at "Notes about undefined output gradients" '
                                     'in "tools/autograd/derivatives.yaml"')

    # ------------------------------------------------------------------ batched (vmapped) gradients
    def batched_backward(self) -> None:
        outs = self.outs
        for oi, o in enumerate(outs):
            if not o.requires_grad:
                continue
            batch = [_random_like(o.detach()) for _ in range(2)]
            expected = [grad(o, self.targets, g, retain_graph=True, allow_unused=True) for g in batch]
            try:
                got = grad(o, self.targets, _stack(batch), retain_graph=True, allow_unused=True,
                           is_grads_batched=True)
            except RuntimeError as ex:
                raise GradcheckError(f"While computing batched gradients, got: {ex}") from ex
            self._same_batch(got, expected, oi, "")

    def batched_forward(self) -> None:
        vmap = VMAP[0]
        for ti, t in enumerate(self.targets):
            batch = [_random_like(t.detach()) for _ in range(2)]
            expected = [_jvp(self.func, self.inputs, self.targets,
                             [u if k == ti else None for k in range(len(self.targets))]) for u in batch]

            def jvp_of(u, ti=ti):
                return tuple(_jvp(self.func, self.inputs, self.targets,
                                  [u if k == ti else None for k in range(len(self.targets))]))
            try:
                got = vmap(jvp_of)(_stack(batch))
            except RuntimeError as ex:
                raise GradcheckError(f"While computing batched gradients, got: {ex}") from ex
            for oi in range(len(self.outs)):
                self._same_batch([got[oi]], [[e[oi]] for e in expected], oi, "forward AD ", ti)

    def _same_batch(self, got, expected, oi, mode, ti=None):
        for k, res in enumerate(got):
            rows = [e[k] for e in expected]
            if res is None and all(r is None for r in rows):
                continue
            exp = np.stack([np.zeros(tuple(self.targets[k].shape)) if r is None else _host(r) for r in rows])
            res = np.zeros_like(exp) if res is None else _host(res)
            if not np.allclose(res, exp):
                raise GradcheckError(f"For output {oi} and input {k if ti is None else ti} ({mode}batched):\n"
                                     f"Got:\n{res}\nExpected:\n{exp}")


def _nonzero(g) -> bool:
    """Whether gradient ``g`` has an element that is neither zero nor NaN (``0 * nan``, where the derivative
    itself is NaN, which the Jacobian comparison accepts when both sides agree)."""
    return g is not None and bool((g.ne(0) & ~g.isnan()).any())


def _host(t):
    return t.detach().to("cpu").numpy()


def _stack(tensors):
    """The tensors (of one shape) stacked along a new dimension 0."""
    out = tensors[0].new_empty((len(tensors), *tensors[0].shape))
    for k, t in enumerate(tensors):
        out[k] = t.detach()
    return out


def _directional(func, inputs, t, u, eps):
    """Central difference of ``func``'s outputs along direction ``u`` of input ``t``, as host arrays."""
    host = t.detach()  # shares t's storage
    orig = host.clone()
    results = []
    for sign in (1, -1):
        host.copy_(orig + sign * eps * u)
        results.append([_host(o).astype(np.float64) for o in _flat_outputs(func, inputs)])
    host.copy_(orig)
    with np.errstate(invalid="ignore", over="ignore"):
        return [(p - m) / (2 * eps) for p, m in zip(*results)]


def _jvp(func, inputs, targets, tangents):
    """The forward-mode derivatives of ``func``'s outputs for ``tangents`` (None: zero) of ``targets``."""
    # cycle: forward mode (ember.func.forward_ad) is built on autograd, whose package loads this module
    from ..func.forward_ad import dual_level, make_dual, unpack_dual
    with dual_level():
        duals = {id(t): make_dual(t.detach(), _zeros_like(t) if u is None else u) for t, u in zip(targets, tangents)}
        outs = _flat_outputs(func, tuple(duals.get(id(x), x) if isinstance(x, Tensor) else x for x in inputs))
        result = []
        for o in outs:
            tangent = unpack_dual(o).tangent
            result.append(_zeros_like(o) if tangent is None else tangent)
        return result


def _forward_jacobian(func, inputs, targets):
    """d(outputs)/d(targets) by forward mode, one tangent per real coordinate of each target (as
    :func:`_numerical` lays them out)."""
    outs = _flat_outputs(func, inputs)
    jac = [[np.zeros((len(_coords(o)), len(_coords(t)))) for t in targets] for o in outs]
    for ti, t in enumerate(targets):
        for c, (j, unit) in enumerate(_coords(t)):
            u = _zeros_like(t)
            u.reshape(-1)[j] = unit
            tangents = [u if k == ti else None for k in range(len(targets))]
            for oi, d in enumerate(_jvp(func, inputs, targets, tangents)):
                jac[oi][ti][:, c] = _real_view(_host(d))
    return jac


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True, nondet_tol: float = 0.0,
                  check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False, masked: bool = False) -> bool:
    """Check second derivatives: :func:`gradcheck` of the gradient of ``func`` (with random grad_outputs, made
    non-contiguous with ``gen_non_contig_grad_outputs``), reverse over reverse (``check_rev_over_rev``) and/or
    forward over reverse (``check_fwd_over_rev``), the other keywords passed on.

    >>> import ember
    >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    >>> ember.autograd.gradgradcheck(lambda t: (t ** 3).sum(), (x,), check_fwd_over_rev=True)
    True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    outs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(_random_like(o.detach(), gen_non_contig_grad_outputs).requires_grad_() for o in outs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    # which arguments require grad, restored on each call: forward mode hands ``first`` detached dual tensors
    needs = [isinstance(x, Tensor) and x.requires_grad for x in inputs + tuple(grad_outputs)]

    def first(*args):
        args = tuple(x.requires_grad_() if need and not x.requires_grad else x for x, need in zip(args, needs))
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
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                     fast_mode=fast_mode, masked=masked)


def _random_like(t, non_contiguous: bool = False):
    """Standard normal values shaped as ``t`` (real and imaginary parts for a complex ``t``); with
    ``non_contiguous``, every other element of a buffer twice as long in the last dimension."""
    shape = tuple(t.shape)
    if non_contiguous and shape:
        return _random_like(t.new_empty((*shape[:-1], 2 * shape[-1])))[..., ::2]
    if t.is_complex():
        part = t.dtype.to_real()
        return t.new_empty(shape, dtype=part).normal_() + t.new_empty(shape, dtype=part).normal_() * 1j
    return t.new_empty(shape).normal_()


def _zeros_like(t):
    return t.new_zeros(t.shape)
