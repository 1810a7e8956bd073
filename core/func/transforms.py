"""Gradient transforms: ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``,
``linearize``.

Each runs the function once under autograd on fresh copies of the differentiated inputs.  Inside
``vmap`` an input is first given every open batch level (an unbatched parameter is expanded), so the
gradient of a per-sample loss with respect to it is per sample: ``vmap(grad(loss), in_dims=(None, 0))``
gives per-sample gradients from one batched forward and backward.  Nested transforms keep the graph
(``create_graph``) so an outer transform differentiates the inner one's result.  Forward-mode products
(``jvp``, ``jacfwd``) are exact, computed by the double-vjp trick: the vjp ``u -> J^T u`` is linear in
``u``, and its vjp against ``v`` is ``J v``.  Jacobians take every basis vector in one pass, as ``torch.func``
does: ``jacrev`` vmaps the backward pass over the one-hot cotangents, ``jacfwd`` vmaps the vjp's own backward
over the one-hot tangents (the batching rules run the backward formulas on the whole stack).
"""
from __future__ import annotations

import functools
import math

from ..autograd.engine import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad, inference_mode
from ..dtypes import FLOAT
from ..interception import set_aside
from ..ops.creation import zeros, zeros_like
from ..ops.shape import cat, stack
from ..state import GRAD_OFF, INFERENCE_ON, is_inference, set_grad, set_inference
from ..tensor import Tensor, _wrap
from .batching import LEVELS, Batched, batched_at, bottom, lift, rewrap, wrap, wrap_shaped
from .pytree import LEAF, tree_flatten, tree_map, tree_unflatten

_DEPTH = [0]  # gradient transforms running: inside one, results keep their graph for the outer one
_FLOATING: dict = {}  # array dtype -> whether its tensors are floating (or complex): may require grad


class _Traced:
    """The differentiated inputs of one transform call: fresh tensors at the bottom of every open level."""

    def __init__(self, trees):
        levels = self.levels = list(LEVELS)
        reals = self.reals = []
        # the logical shape of each input (its gradient's, under every level), for as_trees
        shapes = self.shapes = []
        self.trees, self.specs, self.keep_graph = [], [], _DEPTH[0] > 0
        sizes = tuple(lv.size for lv in levels)
        one = levels[0] if len(levels) == 1 else None
        dev = expand = None
        for tree in trees:
            if isinstance(tree, Tensor):  # (a tensor alone: no structure to flatten)
                flat, spec = [tree], LEAF
            else:
                flat, spec = tree_flatten(tree)
            new = []
            for t in flat:
                if not isinstance(t, Tensor):
                    raise TypeError(f"expected the differentiated inputs to be Tensors, got {type(t).__name__}")
                data = t._data
                if sizes and type(data) is not Batched and not t._rg:
                    # an unbatched input (a parameter): repeated over every level by zero strides, directly
                    if t._dev is not dev:
                        dev = t._dev
                        expand = dev.kernels["expand"]
                    shape = data.shape
                    shape = shape if type(shape) is tuple else tuple(shape)
                    fresh = _wrap(expand(data, sizes + shape), dev)
                    floating = _FLOATING.get(data.dtype)
                    if floating is None:
                        floating = _FLOATING[data.dtype] = t.dtype.category >= FLOAT
                    if floating:
                        fresh._rg = True  # (requires_grad_ on a new leaf, its one check made here)
                    else:
                        fresh.requires_grad_()  # (raises as PyTorch does)
                    reals.append(fresh)
                    shapes.append(shape)
                    new.append(wrap_shaped(fresh, one, shape, data.dtype) if one is not None
                               else rewrap(fresh, levels))
                    continue
                real = bottom(lift(t, levels))
                if real.requires_grad:
                    self.keep_graph = True
                    fresh = real.view_as(real)
                else:
                    fresh = real.detach().requires_grad_()
                reals.append(fresh)
                shapes.append(None)
                new.append(rewrap(fresh, levels))
            self.trees.append(new[0] if spec is LEAF else tree_unflatten(new, spec))
            self.specs.append(spec)

    def handlers(self):
        """The interception handlers of this call's vmap levels still open.  The graph being differentiated
        is built on the physical tensors under every level (the inputs were lifted to the bottom), so its
        backward pass meets no tensor batched at them: they are set aside while it runs."""
        return [lv.handler for lv in self.levels if lv.handler is not None]

    def real_out(self, out):
        t = out
        for lv in reversed(self.levels):  # the usual case, batched at every level in order: unwrapped directly
            d = t._data
            if type(d) is not Batched or d.level is not lv:
                return bottom(lift(out, self.levels))
            t = d.value
        return bottom(t)

    def grads(self, outputs, grad_outputs, create_graph=None, retain_graph=None):
        """Gradients (real tensors, zeros where unused) of real ``outputs`` with respect to every input."""
        cg = self.keep_graph if create_graph is None else create_graph
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
        if not pairs:
            return [zeros_like(r) for r in self.reals]
        with set_aside(self.handlers()):
            res = _autograd_grad([o for o, _ in pairs], self.reals, [g for _, g in pairs], allow_unused=True,
                                 create_graph=cg, retain_graph=True if retain_graph is None else retain_graph)
        return [zeros_like(r) if g is None else g for g, r in zip(res, self.reals)]

    def as_trees(self, real_grads):
        """Real gradients back into the structures of the differentiated inputs, at every open level."""
        if len(self.levels) == 1:
            lv = self.levels[0]
            wrapped = []
            for g, shape in zip(real_grads, self.shapes):
                d = g._data
                # (an input's gradient has its shape, the engine makes sure: wrapped without reading it)
                wrapped.append(wrap_shaped(g, lv, shape, d.dtype) if shape is not None and type(d) is not Batched
                               else wrap(g, lv))
        else:
            wrapped = [rewrap(g, self.levels) for g in real_grads]
        if len(self.specs) == 1:  # (one differentiated argument: its structure rebuilt from the whole list)
            spec = self.specs[0]
            return [wrapped[0] if spec is LEAF else tree_unflatten(wrapped, spec)]
        return self.unflatten(wrapped)

    def unflatten(self, flat):
        it = iter(flat)
        return [tree_unflatten([next(it) for _ in range(s.num_leaves)], s) for s in self.specs]

    def finish(self, value):
        """``value``'s tensors, cut from the graph unless an outer transform needs it."""
        if self.keep_graph:
            return value
        return _detached_tree(value)


def _detached(t):
    return t.detach() if isinstance(t, Tensor) and t._rg else t  # (a tensor without a graph is one already)


def _detached_tree(v):
    """``tree_map(_detached, v)``, with plain dicts, tuples and lists rebuilt directly."""
    if isinstance(v, Tensor):
        return v.detach() if v._rg else v
    t = type(v)
    if t is dict:
        return {k: (x.detach() if x._rg else x) if isinstance(x, Tensor) else _detached_tree(x)
                for k, x in v.items()}
    if t is tuple or t is list:
        return t([_detached_tree(x) for x in v])
    return tree_map(_detached, v)


def _run(func, args, kwargs):
    _DEPTH[0] += 1
    if not GRAD_OFF and not INFERENCE_ON:
        # grad mode on and inference mode off in every thread, this one's too: enable_grad would change
        # nothing on entry, and on exit put back what func left changed
        try:
            return func(*args, **kwargs)
        finally:
            _DEPTH[0] -= 1
            if GRAD_OFF:
                set_grad(True)
            if INFERENCE_ON:
                set_inference(False)
    try:
        with enable_grad():
            return func(*args, **kwargs)
    finally:
        _DEPTH[0] -= 1


def _outside_inference(call):
    """``call`` run with inference mode off: a transform inside ``inference_mode`` still records the graph it
    differentiates, as PyTorch's do (its results are cut from that graph all the same)."""
    @functools.wraps(call)
    def run(*args, **kwargs):
        if INFERENCE_ON and is_inference():
            with inference_mode(False):
                return call(*args, **kwargs)
        return call(*args, **kwargs)

    return run


def _check_argnums(argnums, n, name):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if isinstance(argnums, tuple) and not argnums:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"{name}: argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -n <= a < n:
            raise RuntimeError(f"Got argnums={argnums}, but only {n} positional inputs")
    return tuple(a % n for a in nums)


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{name}(f)(*args): output of function f should be a tuple: (output, aux) if has_aux "
                           f"is True")
    return out


def _traced_call(func, args, kwargs, argnums, name):
    if type(argnums) is int and 0 <= argnums < len(args):  # (the usual case: one argument, counted from 0)
        traced = _Traced([args[argnums]])
        new_args = list(args)
        new_args[argnums] = traced.trees[0]
        return traced, _run(func, new_args, kwargs)
    nums = _check_argnums(argnums, len(args), name)
    traced = _Traced([args[i] for i in nums])
    new_args = list(args)
    for i, tree in zip(nums, traced.trees):
        new_args[i] = tree
    return traced, _run(func, new_args, kwargs)


def _pick(trees, argnums):
    return tuple(trees) if isinstance(argnums, tuple) else trees[0]


# --------------------------------------------------------------------------- grad
def grad_and_value(func, argnums=0, has_aux=False):
    """``(gradient, value)`` of a scalar function; the gradient has the structure of ``args[argnums]``.

    >>> import ember
    >>> g, v = ember.func.grad_and_value(lambda x: (x ** 2).sum())(ember.tensor([1.0, 2.0]))
    >>> g, v
    (tensor([2., 4.]), tensor(5.))
    """
    return _grad_and_value(func, argnums, has_aux, True)


def _grad_and_value(func, argnums, has_aux, value):
    """grad_and_value's wrapper; without ``value`` (``grad``'s) the value is returned as computed, not cut
    from its graph (grad drops it)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return _grad_call(func, argnums, has_aux, value, args, kwargs)

    return wrapper


@_outside_inference
def _grad_call(func, argnums, has_aux, value, args, kwargs):
    """One call of grad_and_value (``value``) or grad: ``(gradient, value)``, ``(gradient, (value, aux))``."""
    traced, out = _traced_call(func, args, kwargs, argnums, "grad_and_value")
    out, aux = _split_aux(out, has_aux, "grad_and_value")
    if not isinstance(out, Tensor):
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out)}")
    if out.dim() != 0:
        raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                           f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
    real = traced.real_out(out)
    arr = real._data  # the seed, straight from the kernel (a factory would pass every open vmap level)
    seed = _wrap(real._dev.kernels["full"](tuple(arr.shape), 1, arr.dtype), real._dev)
    grads = traced.as_trees(traced.grads([real], [seed]))
    g = _pick(grads, argnums)
    if has_aux:
        return traced.finish(g), (traced.finish(out) if value else out, traced.finish(aux))
    return traced.finish(g), traced.finish(out) if value else out


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar function with respect to ``args[argnums]`` (a Tensor, or any nesting of them).

    >>> import ember
    >>> ember.func.grad(lambda x: x.sin().sum())(ember.tensor([0.0]))
    tensor([1.])
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = _grad_call(func, argnums, has_aux, False, args, kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


# --------------------------------------------------------------------------- vjp and jvp
@_outside_inference
def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` gives one vector-Jacobian product per primal.

    >>> import ember
    >>> out, fn = ember.func.vjp(lambda x: x ** 2, ember.tensor([1.0, 3.0]))
    >>> fn(ember.ones(2))
    (tensor([2., 6.]),)
    """
    traced, out = _traced_call(func, primals, {}, tuple(range(len(primals))) or 0, "vjp")
    out, aux = _split_aux(out, has_aux, "vjp")
    flat_out, out_spec = tree_flatten(out)
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has non-empty output and only "
                               f"returns Tensors, got {type(o)}")
    reals = [traced.real_out(o) for o in flat_out]

    @_outside_inference
    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec and not (len(flat_out) == 1 and len(flat_ct) == 1):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        for c, o in zip(flat_ct, flat_out):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and output[0] has "
                                   f"a shape of {o.shape}.")
        cg = (traced.keep_graph if create_graph is None else create_graph) or _DEPTH[0] > 0

        def compute(cts):
            return [rewrap(g, traced.levels) for g in traced.grads(reals, cts, create_graph=cg,
                                                                    retain_graph=retain_graph)]

        if traced.levels:
            extra = [lv for lv in LEVELS if lv not in traced.levels]
            grads = traced.unflatten(_per_sample(flat_ct, traced, extra, compute))
        else:  # the graph holds no batched tensor: cotangents batched by a vmap around vjp_fn run in one pass
            grads = traced.unflatten(compute(flat_ct))
        return tuple(grads) if cg else traced.finish(tuple(grads))

    result = (traced.finish(out), vjp_fn)
    return result + (traced.finish(aux),) if has_aux else result


def _per_sample(cts, traced, extra, compute):
    """``compute`` (real cotangents -> logical gradients) for cotangents that may also be batched at vmap
    levels opened after the graph was built (``extra``, innermost last): once per sample of those levels,
    stacked and batched again."""
    if not extra:
        return compute([bottom(lift(c, traced.levels)) for c in cts])
    top = extra[-1]
    if not any(batched_at(c, top) for c in cts):
        return _per_sample(cts, traced, extra[:-1], compute)
    results = []
    for b in range(top.size):
        sample = [c._data.value.select(0, b) if batched_at(c, top) else c for c in cts]
        results.append(_per_sample(sample, traced, extra[:-1], compute))
    return [wrap(stack([r[j] for r in results], 0), top) for j in range(len(results[0]))]


@_outside_inference
def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``: the Jacobian-vector product (forward mode), exact.

    >>> import ember
    >>> ember.func.jvp(lambda x: x ** 2, (ember.tensor([1.0, 3.0]),), (ember.ones(2),))
    (tensor([1., 9.]), tensor([2., 6.]))
    """
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    flat_p, spec_p = tree_flatten(primals)
    flat_t, spec_t = tree_flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
                           f"primals with structure {spec_p} and tangents with structure {spec_t}")
    for p, t in zip(flat_p, flat_t):
        if not isinstance(p, Tensor) or not isinstance(t, Tensor):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to only contain Tensors")
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape, "
                               f"got {tuple(p.shape)} and {tuple(t.shape)}")
    traced, out = _traced_call(func, primals, {}, tuple(range(len(primals))), "jvp")
    out, aux = _split_aux(out, has_aux, "jvp")
    flat_out, out_spec = tree_flatten(out)
    reals = [traced.real_out(o) for o in flat_out]
    dummies = [zeros_like(r).requires_grad_() for r in reals]
    with enable_grad():
        back = traced.grads(reals, dummies, create_graph=True)
    tans = [bottom(lift(t, traced.levels)) for t in flat_t]
    pairs = [(b, t) for b, t in zip(back, tans) if b.requires_grad]
    cg = traced.keep_graph
    if pairs:
        with set_aside(traced.handlers()):
            res = _autograd_grad([b for b, _ in pairs], dummies, [t for _, t in pairs], allow_unused=True,
                                 create_graph=cg, retain_graph=cg)
    else:
        res = [None] * len(dummies)
    outs = [rewrap(zeros_like(r) if g is None else g, traced.levels) for g, r in zip(res, reals)]
    result = (traced.finish(out), traced.finish(tree_unflatten(outs, out_spec)))
    return result + (traced.finish(aux),) if has_aux else result


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``: ``jvp_fn(*tangents)`` is the Jacobian-vector product at ``primals``.

    >>> import ember
    >>> out, fn = ember.func.linearize(lambda x: x.sin(), ember.zeros(2))
    >>> fn(ember.ones(2))
    tensor([1., 1.])
    """
    out = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return tree_map(lambda t: t.detach() if isinstance(t, Tensor) else t, out), jvp_fn


# --------------------------------------------------------------------------- Jacobians
_PIECE = 1 << 22  # basis elements (of the physical stack) per vmapped pass when no chunk_size is given


def _basis(n, real, prefix, shape, start=0, count=None):
    """One-hot vectors ``start .. start + count`` of the ``n`` of a logical ``shape``, as one physical tensor
    ``(count,) + real.shape``: each sample of a new vmap level is one basis vector, repeated over the ``prefix``
    open levels by zero strides."""
    count = n if count is None else count
    shape = (count,) + (1,) * prefix + tuple(shape)
    if count == n:  # (a constant: made by the kernels, not three ops through every vmap handler)
        dev = real._dev
        k = dev.kernels
        rows = k["reshape"](k["eye"](n, n, real._data.dtype), shape)
        return _wrap(k["expand"](rows, (count,) + tuple(real._data.shape)), dev)
    rows = zeros((count, n), dtype=real.dtype, device=real.device)  # (rows of the identity, built alone: the
    rows.diagonal(start).fill_(1)  # whole of it need not exist)
    return rows.reshape(shape).expand((count,) + tuple(real.shape))


def _batched(compute, n, real, prefix, shape, chunk_size):
    """``compute`` (one logical cotangent or tangent -> a list of real tensors) over every one-hot vector of
    ``shape`` in vmapped runs of ``chunk_size`` vectors (by default all at once, or pieces of about
    :data:`_PIECE` elements for a basis too large to build whole, as a Jacobian of a Jacobian's is: each
    piece's temporaries then reuse the last one's memory): the results stacked in front."""
    from .vmap import vmap  # cycle: vmap imports the batching rules, which import this module's neighbours
    run = vmap(lambda v: tuple(compute(v)))
    if chunk_size is None:
        chunk_size = max(1, _PIECE // max(1, real.numel())) if n * real.numel() > _PIECE else n
    if chunk_size >= n:
        return run(_basis(n, real, prefix, shape))
    pieces = [run(_basis(n, real, prefix, shape, start, min(chunk_size, n - start)))
              for start in range(0, n, chunk_size)]
    return [cat([p[j] for p in pieces]) for j in range(len(pieces[0]))]


def _jacobian(func, argnums, has_aux, name, chunk_size=None):
    forward = name == "jacfwd"

    @functools.wraps(func)
    @_outside_inference
    def wrapper(*args, **kwargs):
        traced, out = _traced_call(func, args, kwargs, argnums, name)
        out, aux = _split_aux(out, has_aux, name)
        flat_out, out_spec = tree_flatten(out)
        for o in flat_out:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"{name}(f, ...)(*args): expected f(*args) to return only tensors, got "
                                   f"unsupported type {type(o)}")
        reals = [traced.real_out(o) for o in flat_out]
        shapes = [tuple(o.shape) for o in flat_out]
        blocks = (_forward_blocks if forward else _reverse_blocks)(traced, reals, shapes, chunk_size)
        per_output = []
        for row in blocks:
            it = iter([rewrap(j, traced.levels) for j in row])
            trees = [tree_unflatten([next(it) for _ in range(s.num_leaves)], s) for s in traced.specs]
            per_output.append(traced.finish(_pick(trees, argnums)))
        res = tree_unflatten(per_output, out_spec)
        return (res, traced.finish(aux)) if has_aux else res

    return wrapper


def _reverse_blocks(traced, reals, shapes, chunk_size):
    """Jacobian blocks (real tensors, ``lead + out shape + in shape``) by reverse mode: per output, one
    backward pass vmapped over the basis of its cotangents."""
    prefix = len(traced.levels)
    blocks = []
    for real, shape in zip(reals, shapes):
        n = math.prod(shape)
        if n:
            rows = _batched(lambda ct, real=real: traced.grads([real], [ct]), n, real, prefix, shape, chunk_size)
        else:
            rows = [r.new_zeros((0,) + tuple(r.shape)) for r in traced.reals]
        blocks.append([_block(r, inp, prefix, shape, False) for r, inp in zip(rows, traced.reals)])
    return blocks


def _forward_blocks(traced, reals, shapes, chunk_size):
    """Jacobian blocks by forward products: the vjp ``u -> J^T u`` is built once as a graph, and its own
    backward against each input's tangent basis (one vmapped pass per input) gives the columns ``J v``."""
    prefix = len(traced.levels)
    dummies = [zeros_like(r).requires_grad_() for r in reals]
    with enable_grad():
        back = traced.grads(reals, dummies, create_graph=True)
    handlers = traced.handlers()
    cols = []  # per input: per output, (in numel,) + the output's real shape

    def products(b, v):
        if not b.requires_grad:
            return [zeros_like(r) for r in reals]
        with set_aside(handlers):
            res = _autograd_grad([b], dummies, [v], allow_unused=True, retain_graph=True,
                                 create_graph=traced.keep_graph)
        return [zeros_like(r) if g is None else g for g, r in zip(res, reals)]

    for b, inp in zip(back, traced.reals):
        shape = tuple(inp.shape[prefix:])
        n = math.prod(shape)
        if n:
            cols.append(_batched(lambda v, b=b: products(b, v), n, inp, prefix, shape, chunk_size))
        else:
            cols.append([r.new_zeros((0,) + tuple(r.shape)) for r in reals])
    return [[_block(c[k], inp, prefix, shape, True)
             for c, inp in zip(cols, traced.reals)] for k, (real, shape) in enumerate(zip(reals, shapes))]


def _block(stacked, inp, prefix, out_shape, by_columns):
    """One Jacobian block ``lead + out_shape + in_shape`` from a stack of products: of rows (``stacked`` is
    ``(out numel,) + lead + in_shape``) or ``by_columns`` (``(in numel,) + lead + out_shape``)."""
    lead, in_shape = tuple(inp.shape[:prefix]), tuple(inp.shape[prefix:])
    shape = lead + tuple(out_shape) + in_shape
    nd = stacked.dim()
    to = nd - 1 if by_columns else prefix
    if not stacked._rg and type(stacked) is Tensor:  # no graph to keep: a view of the arrays (the moved axis is
        k, arr = stacked._dev.kernels, stacked._data  # only split), not two ops through every vmap handler
        if to:
            arr = k["permute"](arr, tuple(range(1, to + 1)) + (0,) + tuple(range(to + 1, nd)))
        return _wrap(k["reshape"](arr, shape), stacked._dev)
    return stacked.movedim(0, to).reshape(shape)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` by reverse mode: for each output a tensor of
    shape ``output.shape + input.shape`` (nested like the outputs, then like the inputs).  ``chunk_size``: basis
    vectors per vmapped backward pass (default: all in one, or pieces of about 2^22 elements for a larger basis).

    >>> import ember
    >>> ember.func.jacrev(lambda x: x ** 2)(ember.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev", chunk_size)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to ``args[argnums]`` (same values and nesting as :func:`jacrev`).

    >>> import ember
    >>> ember.func.jacfwd(lambda x: x.sum(0))(ember.ones(2, 2))
    tensor([[[1., 0.],
             [1., 0.]],
    <BLANKLINE>
            [[0., 1.],
             [0., 1.]]])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    return _jacobian(func, argnums, has_aux, "jacfwd")


def hessian(func, argnums=0):
    """The Hessian of a scalar function: ``jacfwd(jacrev(func, argnums), argnums)``.

    >>> import ember
    >>> ember.func.hessian(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
