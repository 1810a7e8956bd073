"""Higher-level autograd on functions: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``.

Each takes a function of tensors and the point (a Tensor or a tuple of Tensors) and returns what
``torch.autograd.functional`` returns, in the same nesting.  Everything is built on
:func:`ember.autograd.grad`; products with the Jacobian from the right (``jvp``, ``hvp``) use the
double-backward trick (the vjp of the vjp), as PyTorch's own functions here do, so they are exact
wherever the ops differentiate twice.

>>> import ember
>>> from ember.autograd.functional import jacobian
>>> jacobian(lambda x: x ** 2, ember.tensor([1.0, 2.0]))
tensor([[2., 0.],
        [0., 4.]])
"""
from __future__ import annotations

from ..ops.creation import eye, zeros_like
from ..ops.shape import stack
from ..tensor import Tensor
from . import forward_ad as _fw
from ..autograd.engine import grad as _grad
from ..autograd.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# --------------------------------------------------------------------------- tuples in, tuples out
def _as_tuple(value, what, fn):
    """``(was a tuple, tuple of Tensors)``; anything else than Tensors is a TypeError naming ``what`` and ``fn``."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = (f"the value at index {i} has type {type(el)}" if is_tuple
                     else f"the given {what} has type {type(el)}")
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but {where}.")
    return is_tuple, items


def _untuple(res, was_tuple):
    """Undo :func:`_as_tuple`; ``was_tuple`` may be a pair (outer, inner) for nested results."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            res = tuple(r[0] for r in res)
        return res if outer else res[0]
    return res if was_tuple else res[0]


def _prepare(inputs, create_graph, need_graph):
    """Fresh tensor objects for the inputs: differentiable views when ``create_graph`` keeps their history,
    else detached copies requiring grad when ``need_graph``.  A fresh object tells the inputs given here
    apart from the same tensors captured by the function."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in inputs)


def _finish(values, create_graph):
    """Drop the history of results unless ``create_graph`` asked for it (nested tuples too)."""
    if create_graph:
        return values
    return tuple(v.detach() if isinstance(v, Tensor) else _finish(v, create_graph) for v in values)


def _check_v(v, ref, ref_is_tuple):
    if len(v) != len(ref):
        if ref_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(ref)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, ref)):
        if a.size() != b.size():
            where = f"Entry {i} in " if ref_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.size()} but got {a.size()}.")


_NOT_DIFF = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
               "in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect to "
                "input {i} is independent of the input. This is not allowed in strict mode. You should ensure that "
                "your function is twice differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
               "and that the hessian depends on the inputs.",
}


def _check_requires_grad(values, kind, strict):
    """In strict mode, refuse outputs (or gradients) that do not depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(values):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                               f"This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NOT_DIFF[kind].format(i=i))


def _grads(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad (None for an input nothing depends on)."""
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph)


_MISSING = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _zeros_for_none(grads, refs, strict, create_graph, stage):
    """Gradients with None replaced by zeros (the mathematical value), or strict mode's error."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_MISSING[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is "
                               f"not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def _v_or_default(v, ref, ref_is_tuple, create_graph, fn, default_msg):
    if v is not None:
        _, v = _as_tuple(v, "v", fn)
        v = _prepare(v, create_graph=create_graph, need_graph=False)
        _check_v(v, ref, ref_is_tuple)
        return v
    if len(ref) != 1 or ref[0].nelement() != 1:
        raise RuntimeError(default_msg)
    return None


def _single_scalar(out, fn, strict):
    is_tuple, t = _as_tuple(out, "outputs of the user-provided function", fn)
    _check_requires_grad(t, "outputs", strict)
    if is_tuple or not isinstance(out, Tensor):
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if out.nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
    return out


# --------------------------------------------------------------------------- products
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T J)``: the vector-Jacobian product at ``inputs``.

    >>> import ember
    >>> out, g = vjp(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]))
    >>> g
    tensor([ 3., 12.])
    """
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _v_or_default(v, outputs, is_out_tuple, create_graph, "vjp",
                          "The vector v can only be None if the user-provided function returns a single Tensor "
                          "with a single element.")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grads(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "back")
    return _untuple(_finish(outputs, create_graph), is_out_tuple), _untuple(_finish(result, create_graph),
                                                                            is_in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)``: the Jacobian-vector product, by the double-backward trick.

    >>> import ember
    >>> out, t = jvp(lambda x: x ** 2, ember.tensor([1.0, 2.0]), ember.tensor([1.0, 1.0]))
    >>> t
    tensor([2., 4.])
    """
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        v = _v_or_default(v, inputs, is_in_tuple, create_graph, "jvp",
                          "The vector v can only be None if the input to the user-provided function is a single "
                          "Tensor with a single element.")
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # u -> J^T u is linear in u: its gradient with respect to u, dotted with v, is J v (any u will do)
        dummies = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grads(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        res = _grads(grad_inputs, dummies, v, create_graph=create_graph)
        result = _zeros_for_none(res, outputs, strict, create_graph, "back_trick")
    return _untuple(_finish(outputs, create_graph), is_out_tuple), _untuple(_finish(result, create_graph),
                                                                            is_out_tuple)


# --------------------------------------------------------------------------- Jacobian and Hessian
def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j`` a tensor of shape
    ``out_i.shape + in_j.shape``, nested as PyTorch nests it (a Tensor, or tuples over outputs and inputs).

    ``strategy="reverse-mode"`` runs one backward pass per output element, or with ``vectorize=True`` one
    vmapped backward pass per output over all its elements (``is_grads_batched``); ``strategy="forward-mode"``
    (which needs ``vectorize=True``) one forward pass with dual tensors per input element (see
    :mod:`ember.autograd.forward_ad`): the better choice when outputs outnumber inputs.

    >>> import ember
    >>> jacobian(lambda x, y: x * y, (ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])))[1]
    tensor([[1., 0.],
            [0., 2.]])
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                               'are not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
        return _jacobian_forward(func, inputs)
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        jac = []
        for i, out in enumerate(outputs):
            if vectorize:
                jac.append(_jacobian_rows_batched(out, inputs, create_graph))
                continue
            rows = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for e in range(out.nelement()):
                grads = _grads((flat[e],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of "
                                               f"input {j}. This is not allowed in strict mode.")
                        g = zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input "
                                           f"{i}. This is not allowed in strict mode when create_graph=True.")
                    rows[j].append(g)
            jac.append(tuple(
                (stack(r, 0) if r else inp.new_zeros((0,) + tuple(inp.shape))).reshape(out.shape + inp.shape)
                for r, inp in zip(rows, inputs)))
        jac = _finish(tuple(jac), create_graph)
        if strategy == "forward-mode":  # PyTorch nests forward-mode Jacobians in lists
            jac = [list(row) for row in jac]
        return _untuple(jac, (is_out_tuple, is_in_tuple))


def _jacobian_rows_batched(out, inputs, create_graph):
    """One output's Jacobian blocks (``out.shape + in.shape`` per input) from one backward pass over the basis of
    its cotangents at once (``is_grads_batched``)."""
    n = out.nelement()
    grads = (None,) * len(inputs)
    if n and out.requires_grad:
        basis = eye(n, dtype=out.dtype, device=out.device).reshape((n,) + tuple(out.shape))
        grads = _grad((out,), inputs, (basis,), retain_graph=True, create_graph=create_graph, allow_unused=True,
                      is_grads_batched=True)
    return tuple((out.new_zeros((n,) + tuple(inp.shape)) if g is None else g).reshape(out.shape + inp.shape)
                 for g, inp in zip(grads, inputs))


def _jacobian_forward(func, inputs):
    """The Jacobian by forward mode: one pass with dual inputs per input element, its tangents a column."""
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(t.detach() for t in inputs)
    cols = [[] for _ in inputs]  # per input: per element, the output tangents
    outputs = None
    with _fw.dual_level():
        for j, inp in enumerate(inputs):
            basis = eye(inp.nelement(), dtype=inp.dtype, device=inp.device)
            for e in range(inp.nelement()):
                duals = tuple(_fw.make_dual(x, basis[e].reshape(x.shape) if i == j else zeros_like(x))
                              for i, x in enumerate(inputs))
                out = func(*duals)
                is_out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "jacobian")
                unpacked = [_fw.unpack_dual(o) for o in outs]
                if outputs is None:
                    outputs = tuple(u.primal for u in unpacked)
                cols[j].append(tuple(zeros_like(u.primal) if u.tangent is None else u.tangent for u in unpacked))
        if outputs is None:  # no input has an element: evaluate once for the outputs' shapes
            is_out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
    jac = []
    for i, out in enumerate(outputs):
        row = []
        for j, inp in enumerate(inputs):
            if cols[j]:
                col = stack([c[i] for c in cols[j]], -1)  # out.shape + (in numel,)
            else:
                col = out.new_zeros(tuple(out.shape) + (0,))
            row.append(col.reshape(tuple(out.shape) + tuple(inp.shape)).detach())
        jac.append(row)
    return _untuple([list(r) for r in jac], (is_out_tuple, is_in_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar function: for inputs ``i``, ``j`` a tensor of shape ``in_i.shape + in_j.shape``.

    >>> import ember
    >>> hessian(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar(*inp):
        return _single_scalar(func(*inp), "hessian", strict)

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(scalar, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _untuple(res, (is_in_tuple, is_in_tuple))


def _scalar_gradient(func, inputs, v, create_graph, strict, fn):
    """The start of vhp and hvp (under ``enable_grad``): the inputs and ``v`` as checked tuples, the scalar
    ``func(*inputs)`` and its gradient, kept differentiable."""
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    inputs = _prepare(inputs, create_graph=create_graph, need_graph=True)
    v = _v_or_default(v, inputs, is_in_tuple, create_graph, fn,
                      "The vector v can only be None if the input to the user-provided function is a single "
                      "Tensor with a single element.")
    out = _single_scalar(func(*inputs), fn, strict)
    jac = _grads((out,), inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_in_tuple, inputs, v, out, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T H)`` for a scalar function.

    >>> import ember
    >>> vhp(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]), ember.tensor([1.0, 1.0]))[1]
    tensor([ 6., 12.])
    """
    with enable_grad():
        is_in_tuple, inputs, v, out, jac = _scalar_gradient(func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grads(jac, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "double_back")
    return _finish((out,), create_graph)[0], _untuple(_finish(result, create_graph), is_in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)`` for a scalar function, by the double-backward trick.

    >>> import ember
    >>> hvp(lambda x: (x ** 3).sum(), ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0]))[1]
    tensor([6., 0.])
    """
    with enable_grad():
        is_in_tuple, inputs, v, out, jac = _scalar_gradient(func, inputs, v, create_graph, strict, "hvp")
        dummies = tuple(zeros_like(t, requires_grad=True) for t in inputs)
        double = _grads(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _grads(double, dummies, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "double_back_trick")
    return _finish((out,), create_graph)[0], _untuple(_finish(result, create_graph), is_in_tuple)
