"""``vmap``: map a function over a batch dimension, computed with batched kernels (see :mod:`.batching`)."""
from __future__ import annotations

import functools

from ..autograd import engine
from ..ops.shape import cat
from ..tensor import Tensor
from .batching import Batched, BatchedTensor, Level, batched_at, wrap
from .pytree import LEAF, broadcast_prefix, tree_flatten, tree_unflatten

_RANDOMNESS = ("error", "different", "same")


def _name(func):
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs; results stacked along ``out_dims``.

    ``in_dims``/``out_dims``: an int, None (not mapped / not batched), or a nested tuple/list/dict
    matching the inputs/outputs.  ``randomness``: "error" (random ops raise), "different" (each sample
    draws its own values) or "same" (one draw shared by the batch).  ``chunk_size`` maps that many
    samples at a time.

    >>> import ember
    >>> ember.vmap(ember.dot)(ember.ones(3, 2), ember.ones(3, 2))
    tensor([2., 2., 2.])
    """
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if chunk_size is None and type(in_dims) is tuple and len(in_dims) == len(args):
            size = _mapped_size(args, in_dims)
            if size is not None:
                return _run_args(func, args, in_dims, size, out_dims, randomness, kwargs)
        flat, spec, dims, size = _flat_inputs(func, in_dims, args)
        if chunk_size is None or chunk_size >= size:
            return _run(func, flat, spec, dims, size, out_dims, randomness, kwargs)
        pieces = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            part = [a.narrow(d, start, n) if d is not None else a for a, d in zip(flat, dims)]
            pieces.append(_run(func, part, spec, dims, n, out_dims, randomness, kwargs))
        return _concat_chunks(func, pieces, out_dims)

    return wrapped


def _mapped_size(args, in_dims):
    """The batch size when every argument is mapped whole: a tensor at an int dim in range, or anything at
    None, at least one mapped and all of one size; else None (the general path checks and explains)."""
    size = None
    for a, d in zip(args, in_dims):
        if d is None:
            continue
        if type(d) is not int or not isinstance(a, Tensor):
            return None
        shape = a._data.shape
        if not -len(shape) <= d < len(shape):
            return None
        n = shape[d]
        if size is None:
            size = n
        elif n != size:
            return None
    return size


def _fresh(v):
    """``tree_unflatten(*tree_flatten(v))`` (what an unmapped argument is passed as: its containers rebuilt,
    its leaves as they are), without the walk for a leaf or a plain container of leaves."""
    t = type(v)
    if t is dict:
        for x in v.values():
            if type(x) in _CONTAINERS or isinstance(x, _CONTAINERS):
                break
        else:
            return dict(v)
    elif t is tuple or t is list:
        for x in v:
            if type(x) in _CONTAINERS or isinstance(x, _CONTAINERS):
                break
        else:
            return t(v)
    elif not isinstance(v, _CONTAINERS):
        return v
    flat, spec = tree_flatten(v)
    return tree_unflatten(flat, spec)


_CONTAINERS = (dict, tuple, list)


def _run_args(func, args, in_dims, size, out_dims, randomness, kwargs):
    """:func:`_run` for arguments mapped whole (see :func:`_mapped_size`): no flattening."""
    level = Level(size, randomness)
    with level:
        inputs = [_fresh(a) if d is None else wrap(a if d == 0 or d == -a.dim() else a.movedim(d, 0), level)
                  for a, d in zip(args, in_dims)]
        out = func(*inputs, **kwargs)
    return _unwrap_outputs(func, out, out_dims, level)


def _flat_inputs(func, in_dims, args):
    flat, spec = tree_flatten(args)
    if type(in_dims) is tuple and len(in_dims) == len(args):
        # the usual case, a tensor or None (for a whole argument) per argument: checked and sized directly
        sizes, dims, i = set(), [], 0
        for c, d in zip(spec.children_specs, in_dims):
            n = c.num_leaves
            if d is None:
                dims.extend([None] * n)
            elif type(d) is int and c is LEAF and isinstance(a := flat[i], Tensor) and -a.ndim <= d < a.ndim:
                dims.append(d)
                sizes.add(a._data.shape[d])
            else:
                break
            i += n
        else:
            if len(sizes) == 1:
                return flat, spec, dims, sizes.pop()
    name = _name(func)
    if not isinstance(in_dims, (int, tuple, list, dict)) and in_dims is not None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         f"trying to vmap over a function with no inputs. The latter is unsupported.")
    if isinstance(in_dims, list):
        in_dims = tuple(in_dims)
    dims = broadcast_prefix(in_dims, spec, lambda: ValueError(  # an int or None goes to every leaf
        f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
        f"`inputs`. in_dims has structure {tree_flatten(in_dims)[1]} but inputs has structure {spec}."))
    sizes, where = [], []
    for i, (a, d) in enumerate(zip(flat, dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             f"in_dim must be either an integer dimension or None.")
        if not isinstance(a, Tensor):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                             f"the input is of type {type(a)}. We cannot vmap over non-Tensor arguments, please "
                             f"use None as the respective in_dim")
        if not -a.dim() <= d < a.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                             f"but that input is a Tensor of dimensionality {a.dim()} so expected in_dim to "
                             f"satisfy -{a.dim()} <= in_dim < {a.dim()}.")
        sizes.append(a.shape[d])
        where.append(i)
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        detail = ", ".join(f"{_arg_path(spec, w)} has size {s}" for w, s in zip(where, sizes))
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension ({detail})")
    return flat, spec, dims, sizes[0]


def _arg_path(spec, index):
    """A readable name for flat input ``index``: ``argument 1``, ``argument 0['w']``, ..."""
    path = _find(spec, index, []) or ["?"]
    return f"argument {path[0]}" + "".join(f"[{p}]" for p in path[1:])


def _find(s, i, trail):
    if s.type is None:
        return trail if i == 0 else None
    for k, c in enumerate(s.children_specs):
        n = c.num_leaves
        if i < n:
            key = repr(s.context[k]) if s.type is dict else str(k)
            return _find(c, i, trail + [key])
        i -= n
    return None


def _run(func, flat, spec, dims, size, out_dims, randomness, kwargs):
    level = Level(size, randomness)
    with level:
        inputs = [a if d is None else wrap(a if d in (0, -a.dim()) else a.movedim(d, 0), level)
                  for a, d in zip(flat, dims)]
        out = func(*tree_unflatten(inputs, spec), **kwargs)
    return _unwrap_outputs(func, out, out_dims, level)


def _unwrap_outputs(func, out, out_dims, level):
    if out_dims == 0 and type(out_dims) is int:  # the usual case: every output batched at the level, in front
        if type(out) is dict:  # (a dict of tensors, as grad of a dict of parameters gives: rebuilt directly)
            res = {}
            for k, o in out.items():
                d = getattr(o, "_data", None)
                if type(d) is not Batched or d.level is not level:
                    break
                res[k] = d.value
            else:
                return res
        elif type(out) is Tensor or type(out) is BatchedTensor:
            d = out._data
            if type(d) is Batched and d.level is level:
                return d.value
    flat, spec = tree_flatten(out)
    if out_dims == 0 and type(out_dims) is int:
        res = []
        for o in flat:
            if not batched_at(o, level):
                break
            res.append(o._data.value)
        else:
            return tree_unflatten(res, spec)
    name = _name(func)
    if isinstance(out_dims, list):
        out_dims = tuple(out_dims)
    dims = broadcast_prefix(out_dims, spec, lambda: ValueError(
        f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure of "
        f"`outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs has structure {spec}."))
    res = []
    for o, d in zip(flat, dims):
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(o)}. Did you "
                             f"mean to set out_dims= to None for output?")
        if d is None:
            if batched_at(o, level):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            res.append(o)
            continue
        if not isinstance(d, int):
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                             f"collection of ints representing where in the outputs the vmapped dimension should "
                             f"appear.")
        phys = o._data.value if batched_at(o, level) else o.unsqueeze(0).expand(level.size, *o.shape)
        res.append(phys.movedim(0, d) if d not in (0, -phys.dim()) else phys)
    return tree_unflatten(res, spec)


def _concat_chunks(func, pieces, out_dims):
    flats = [tree_flatten(p) for p in pieces]
    spec = flats[0][1]
    dims = broadcast_prefix(out_dims, spec,
                            lambda: ValueError("vmap: out_dims is not compatible with the structure of outputs"))
    res = []
    for i, d in enumerate(dims):
        parts = [f[0][i] for f in flats]
        res.append(parts[0] if d is None else cat(parts, d))
    return tree_unflatten(res, spec)


engine.VMAP[0] = vmap  # grad(is_grads_batched=True) runs its one batched backward through it
