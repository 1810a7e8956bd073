"""Batched tensors and the batching rules that run ``vmap`` as real batched kernels.

Inside ``vmap`` a function sees *logical* tensors: a :class:`BatchedTensor` reports the shape of one
sample, while it holds the *physical* tensor with the batch dimension in front (``value``).  Each vmap
level opens a :class:`ember.dispatch.intercept` handler; an op that meets a tensor batched at that level
is rewritten into the same op over the physical tensors with the batch dimension included (dims shifted
by one, operands aligned for broadcasting, a matmul given a batch dimension, a convolution's batch folded
into N, ...), and its result wrapped again.  Ops without a rule run once per sample and the results are
stacked: slower, but correct.  Nested vmaps nest handlers: the physical tensor of an inner level is a
logical tensor of the outer one, so the outer handler batches the inner level's work again.
"""
from __future__ import annotations

import collections
import math
import sys
import threading

import numpy as np

from ..autograd.function import OPS
from ..dispatch import binary, cast, result_type, unary
from ..interception import intercept
from ..writes import inplace
from ..ops.creation import create as _create
from ..ops.nn import LinearStack
from ..ops.shape import Expand, Reshape, stack
from ..tensor import Tensor, _disabled_torch_function_impl, _wrap

_new = object.__new__
_get_ident = threading.get_ident
LEVELS: list = []  # the open vmap levels, outermost first
LOOPED: collections.Counter = collections.Counter()  # ops that ran once per sample (no batching rule), by name


class Batched:
    """The ``_data`` of a logical tensor inside vmap: the logical shape over the physical tensor ``value``."""

    __slots__ = ("value", "level", "shape", "dtype", "ndim")

    def __init__(self, value, level):
        self.value, self.level = value, level
        data = value._data  # an array, or a Batched of an outer level: both have shape and dtype
        shape = data.shape[1:]
        self.shape = shape = shape if type(shape) is tuple else tuple(shape)
        self.ndim = len(shape)
        self.dtype = data.dtype

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def strides(self):
        st = getattr(self.value._data, "strides", None)
        return None if st is None else tuple(st[1:])

    def __getattr__(self, name):
        # what reads the array outside an op (argument checks: index bounds over every sample) sees the
        # physical array of the whole batch
        if name in Batched.__slots__:
            raise AttributeError(name)
        return getattr(self.value._data, name)

    def __array__(self, *args, **kwargs):
        # the data of every sample (batch dimensions first): what checks over all values (index bounds) read
        return np.asarray(self.value._data, *args, **kwargs)


_DATA_MSG = ("vmap: It looks like you're trying to {what} inside vmap. The values of a batched tensor differ per "
             "sample and cannot be read as one value; rewrite it with tensor operations (or move it out of vmap).")


class BatchedTensor(Tensor):
    """A tensor inside ``vmap``: the shape of one sample; the physical tensor (batch first) carries the data."""

    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl  # vmap's own rules, not subclass dispatch

    def detach(self):
        return wrap(self._data.value.detach(), self._data.level)

    @property
    def data(self):
        return wrap(self._data.value.data, self._data.level)

    def requires_grad_(self, requires_grad=True):
        self._data.value.requires_grad_(requires_grad)
        self._rg = self._data.value._rg
        return self

    def item(self):
        raise RuntimeError(_DATA_MSG.format(what="call .item() on a Tensor"))

    def tolist(self):
        raise RuntimeError(_DATA_MSG.format(what="call .tolist() on a Tensor"))

    def numpy(self, *, force=False):
        # ember's own argument checks read every value (index bounds over all samples): they get the data
        # of the whole batch; user code inside vmap cannot read one sample's values
        if sys._getframe(1).f_globals.get("__name__", "").startswith("ember."):
            return self._data.value.numpy(force=force)
        raise RuntimeError(_DATA_MSG.format(what="call .numpy() on a Tensor"))

    def data_ptr(self):
        raise RuntimeError(_DATA_MSG.format(what="read the data pointer of a Tensor"))

    def __repr__(self):
        lvl = LEVELS.index(self._data.level) + 1 if self._data.level in LEVELS else "?"
        return f"BatchedTensor(lvl={lvl}, bdim=0, value=\n{self._data.value!r}\n)"


def wrap(phys: Tensor, level) -> BatchedTensor:
    """The logical tensor at ``level`` over ``phys`` (batch dimension first)."""
    data = phys._data  # (Batched.__init__, inline: on the path of every op inside vmap)
    shape = data.shape[1:]
    b = _new(Batched)
    b.value, b.level, b.shape, b.dtype = phys, level, shape if type(shape) is tuple else tuple(shape), data.dtype
    b.ndim = len(b.shape)
    t = _new(BatchedTensor)
    t._data = b
    t._dev = phys._dev
    t._rg = phys._rg
    t._fn = None
    return t


def wrap_shaped(phys: Tensor, level, shape: tuple, dtype) -> BatchedTensor:
    """:func:`wrap` where the caller knows the logical shape (a tuple) and the array dtype already."""
    b = _new(Batched)
    b.value, b.level, b.shape, b.ndim, b.dtype = phys, level, shape, len(shape), dtype
    t = _new(BatchedTensor)
    t._data = b
    t._dev = phys._dev
    t._rg = phys._rg
    t._fn = None
    return t


def batched_at(t, level) -> bool:
    return isinstance(t, Tensor) and type(t._data) is Batched and t._data.level is level


def lift(t: Tensor, levels) -> Tensor:
    """``t`` batched at every level of ``levels`` (outermost first), expanding where it is not."""
    if not levels:
        return t
    top = levels[-1]
    if batched_at(t, top):
        phys = t._data.value
    else:
        phys = t.unsqueeze(0).expand(top.size, *t.shape)
    return wrap(lift(phys, levels[:-1]), top)


def bottom(t: Tensor) -> Tensor:
    """The ordinary tensor under every level of a lifted tensor."""
    while type(t._data) is Batched:
        t = t._data.value
    return t


def rewrap(real: Tensor, levels) -> Tensor:
    """The inverse of :func:`bottom` for a tensor lifted to ``levels``."""
    for lv in levels:
        real = wrap(real, lv)
    return real


# --------------------------------------------------------------------------- the handler of one level
RANDOM_FACTORIES = {"rand", "randn", "randint", "normal", "randperm", "rand_like", "randn_like", "randint_like",
                    "bernoulli", "multinomial", "poisson"}


def _random(Op) -> bool:
    """Whether ``Op`` draws random numbers (its declaration's "random" tag): vmap's randomness mode applies."""
    return "random" in getattr(Op, "tags", ())


class Level:
    """One ``vmap`` call: the batch size, the randomness mode, and the interception handler."""

    def __init__(self, size: int, randomness: str):
        self.size, self.randomness = size, randomness
        self.thread = threading.get_ident()  # interception is process-wide; a level batches its own thread
        self.handler = None  # the bound handler entered while the level is open

    def __enter__(self):
        LEVELS.append(self)
        self.handler = self.handle
        self._icpt = intercept(self.handler)
        self._icpt.__enter__()
        return self

    def __exit__(self, *exc):
        self._icpt.__exit__(*exc)
        self._icpt = self.handler = None  # (both hold the bound handler: a cycle through this level)
        LEVELS.remove(self)

    def handle(self, kind, Op, args, run):
        if _get_ident() != self.thread:
            return run(*args)
        rule = _FAST.get(Op, _UNSEEN)
        if rule is _UNSEEN:
            rule = _fast_rule(Op)
        if rule is not None and kind is not inplace:  # the common case: an op with a rule, first operand batched
            a = args[0]
            if isinstance(a, Tensor) and type(a._data) is Batched and a._data.level is self:
                out = rule(self, kind, Op, args)
                return out if out is not NotImplemented else self._loop(kind, Op, args)
        name = Op if isinstance(Op, str) else _op_key(Op)
        if kind is _create:
            if name in RANDOM_FACTORIES:
                return self._random_factory(args, run)
            return run(*args)
        for a in args:
            if _has_level(a, self):
                break
        else:
            if _random(Op):
                self._check_random()
            return run(*args)
        if _random(Op):
            self._check_random()
            if self.randomness == "same":
                return self._loop(kind, Op, args, same=True)
        rule = rule_of(Op, name)
        if kind is inplace:
            if not batched_at(args[0], self):
                raise RuntimeError(f"vmap: {_op_label(Op)}_(self, *extra_args) is not possible because there exists a "
                                   f"Tensor `other` in extra_args that has more elements than `self`. This happened "
                                   f"due to `other` being vmapped over but `self` not being vmapped over in a vmap. "
                                   f"Please try to use out-of-place operators instead of {_op_label(Op)}_.")
            if rule is not pointwise:
                return self._loop(kind, Op, args)
        if rule is not None:
            out = rule(self, kind, Op, args)
            if out is not NotImplemented:
                return out
        return self._loop(kind, Op, args)

    # ------------------------------------------------------------------ randomness
    def _check_random(self):
        if self.randomness == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use "
                               "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                               "operation out of vmap")

    def _random_factory(self, args, run):
        self._check_random()
        if self.randomness == "same":
            return run(*args)
        dev, rg, out, kernel, gen, size, *rest = args
        if out is not None:
            raise RuntimeError("vmap: random factories with out= are not supported in randomness='different' mode")
        return wrap(run(dev, rg, None, kernel, gen, (self.size, *size), *rest), self)

    # ------------------------------------------------------------------ per-sample fallback
    def _loop(self, kind, Op, args, same=False):
        """Run the op once per sample and stack the results (ops without a batching rule)."""
        LOOPED[Op if isinstance(Op, str) else _op_key(Op)] += 1
        results = []
        for b in range(self.size):
            sliced = [_select(a, self, 0 if same else b) for a in args]
            results.append(kind(Op, *sliced))
            if same:
                break
        if kind is inplace:
            phys = args[0]._data.value
            if same:
                phys.copy_(results[0].unsqueeze(0).expand(phys.shape))
            return args[0]
        if same:
            results = results * self.size
        first = results[0]
        if isinstance(first, tuple):
            return tuple(wrap(_stack_samples([r[i] for r in results], Op), self) for i in range(len(first)))
        return wrap(_stack_samples(results, Op), self)


_FAST: dict = {}  # Op class -> its batching rule, or None: an op the short path of Level.handle does not take
_UNSEEN = object()


def _fast_rule(Op):
    rule = None
    if not isinstance(Op, str):
        name = _op_key(Op)
        if not _random(Op):
            rule = rule_of(Op, name)
    _FAST[Op] = rule
    return rule


def rule_of(Op, name):
    """The batching rule of ``Op`` (its key in OPS: ``name``): its own in :data:`RULES`, else :func:`pointwise`
    for an op whose declaration tags it "pointwise", else None (it runs once per sample)."""
    rule = RULES.get(name)
    if rule is None and "pointwise" in getattr(Op, "tags", ()):
        return pointwise
    return rule


def _stack_samples(results, Op):
    shapes = {tuple(r.shape) for r in results}
    if len(shapes) > 1:
        raise RuntimeError(f"vmap: {_op_label(Op)} gives outputs of different shapes for different samples "
                           f"({sorted(shapes)}); a result whose shape depends on the data cannot be batched")
    return stack(results, 0)


_KEYS: dict = {}  # Op class -> its key in OPS (the name the rules use)


def _op_key(Op):
    key = _KEYS.get(Op)
    if key is None:
        _KEYS.update({v: k for k, v in OPS.items()})
        key = _KEYS.setdefault(Op, type.__getattribute__(Op, "__name__"))
    return key


def _op_label(Op):
    n = Op if isinstance(Op, str) else type.__getattribute__(Op, "__name__")
    return n[:-9].lower() if n.endswith("Backward0") else n


def _has_level(a, level):
    if isinstance(a, Tensor):
        return type(a._data) is Batched and a._data.level is level
    if type(a) is Batched:
        return a.level is level
    if type(a) in (list, tuple):
        return any(_has_level(x, level) for x in a)
    return False


def _select(a, level, b):
    if isinstance(a, Tensor):
        return a._data.value.select(0, b) if batched_at(a, level) else a
    if type(a) is Batched and a.level is level:
        return a.value.select(0, b)._data
    if type(a) in (list, tuple):
        return type(a)(_select(x, level, b) for x in a)
    return a


# --------------------------------------------------------------------------- rules
def phys_of(t, level, ndim=None):
    """The physical tensor of ``t`` at ``level`` (an unbatched tensor gets a batch dimension of 1),
    with singleton dimensions inserted after the batch one up to ``ndim`` logical dimensions."""
    if batched_at(t, level):
        p = t._data.value
    else:
        p = t.unsqueeze(0)
    lnd = p.ndim - 1
    if ndim is not None and lnd < ndim:
        p = p.reshape((p.shape[0],) + (1,) * (ndim - lnd) + tuple(p.shape[1:]))
    return p


def expanded(t, level):
    """The physical tensor of ``t`` at ``level`` with the full batch size (an unbatched one expanded)."""
    if batched_at(t, level):
        return t._data.value
    return t.unsqueeze(0).expand(level.size, *t.shape)


def _wrap_out(out, level):
    if isinstance(out, tuple):
        return tuple(wrap(o, level) for o in out)
    return wrap(out, level)


def pointwise(level, kind, Op, args):
    """Elementwise ops: batched operands get singleton dims so that logical broadcasting lines up."""
    if kind is unary:
        d = args[0]._data
        if type(d) is Batched and d.level is level:  # one operand: the op over the physical tensor
            out = kind(Op, d.value, *args[1:])
            if type(out) is tuple:
                return tuple(wrap(o, level) for o in out)
            return wrap(out, level)
    tensors = [a for a in args if isinstance(a, Tensor)]
    n = max(t.ndim for t in tensors)
    rt = None
    if kind is binary and len(tensors) == 2 and tensors[0].dtype is not tensors[1].dtype:
        rt = result_type(*args[:2])  # logical promotion (a 0-dim batched operand is not 0-dim physically)
    new = []
    for a in args:
        if batched_at(a, level):
            a = phys_of(a, level, n)
        if rt is not None and isinstance(a, Tensor):
            a = cast(a, rt)
        new.append(a)
    if kind is inplace:
        kind(Op, *new)
        return args[0]
    return _wrap_out(kind(Op, *new), level)


def _norm_dim(d, nd):
    return d + nd if d < 0 else d


def _axes_rule(pos, all_when_none=True):
    """Reductions over the axes at ``args[pos]``: a tuple, an int, or None for every logical axis."""
    def rule(level, kind, Op, args):
        x = args[0]
        nd = x.ndim
        axes = args[pos]
        if axes is None and not all_when_none:
            return NotImplemented
        if nd == 0:
            new = () if not isinstance(axes, int) else NotImplemented
        elif axes is None:
            new = tuple(range(1, nd + 1))
        elif isinstance(axes, int):
            new = _norm_dim(axes, nd) + 1
        else:
            new = tuple(_norm_dim(a, nd) + 1 for a in axes)
        if new is NotImplemented or any(_has_level(a, level) for a in args[1:]):
            return NotImplemented
        return _wrap_out(kind(Op, x._data.value, *args[1:pos], new, *args[pos + 1:]), level)
    return rule


def _dim_rule(pos):
    """Ops along one dimension at ``args[pos]`` (an int), one batched tensor first."""
    def rule(level, kind, Op, args):
        d = args[pos]
        if d is None or not batched_at(args[0], level) or \
                any(_has_level(a, level) for a in args[1:]):
            return NotImplemented
        d = _norm_dim(d, max(args[0].ndim, 1)) + 1
        return _wrap_out(kind(Op, args[0]._data.value, *args[1:pos], d, *args[pos + 1:]), level)
    return rule


def _seq_rule(level, kind, Op, args):
    """``cat``/``stack``: every tensor expanded to the batch, the axis shifted."""
    seq, axis, *rest = args
    nd = seq[0].ndim + (1 if _op_key(Op) == "Stack" else 0)
    axis = _norm_dim(axis, max(nd, 1)) + 1
    return wrap(kind(Op, [expanded(t, level) for t in seq], axis, *rest), level)


def _split_rule(level, kind, Op, args):
    x, bounds, axis = args
    if not batched_at(x, level):
        return NotImplemented
    return _wrap_out(kind(Op, x._data.value, bounds, _norm_dim(axis, x.ndim) + 1), level)


def _permute_rule(level, kind, Op, args):
    x, dims = args
    nd = x.ndim
    return wrap(kind(Op, x._data.value, (0, *(_norm_dim(d, nd) + 1 for d in dims))), level)


def _shape_rule(level, kind, Op, args):
    x, shape = args
    p = x._data.value
    if Op is Expand:
        p = phys_of(x, level, len(shape))
        return wrap(kind(Op, p, (p._data.shape[0], *shape)), level)
    # a view where the physical layout allows it, else a copy
    return wrap(kind(Reshape, p, (p._data.shape[0], *shape)), level)


def _sum_to_rule(level, kind, Op, args):
    x, shape = args
    p = x._data.value
    lead = x.ndim - len(shape)
    axes = tuple(range(1, lead + 1)) + tuple(lead + 1 + i for i, s in enumerate(shape)
                                                 if s == 1 and x.shape[lead + i] != 1)
    r = p.sum(axes, keepdim=True) if axes else p
    return wrap(r.reshape((p.shape[0], *shape)), level)


def _getitem_rule(level, kind, Op, args):
    x, index = args
    if _has_level(index, level) or not batched_at(x, level):
        return NotImplemented
    idx = index if type(index) is tuple else (index,)
    if any(hasattr(v, "shape") for v in idx):
        adv = [i for i, v in enumerate(idx) if hasattr(v, "shape") or isinstance(v, (int, np.integer))]
        if adv[-1] - adv[0] + 1 != len(adv):
            return NotImplemented  # separated advanced indices put their dimensions first
    return wrap(kind(Op, x._data.value, (slice(None),) + idx), level)


def _linear_rule(level, kind, Op, args):
    x, w, b = (args + (None,))[:3]
    wd = w._data
    w_batched = type(wd) is Batched and wd.level is level
    if not w_batched and not (b is not None and batched_at(b, level)):
        if x.ndim == 0:
            return NotImplemented
        return wrap(kind(Op, x._data.value, *args[1:]), level)
    # per-sample weights (a gradient transform's): one op over the stacks, its weight gradient laid out as
    # the weight is, a weight repeated over the batch by zero strides multiplied in one GEMM
    xd = x._data
    xp = xd.value if type(xd) is Batched and xd.level is level else expanded(x, level)
    wp = wd.value if w_batched else expanded(w, level)
    if b is not None:
        bd = b._data
        b = bd.value if type(bd) is Batched and bd.level is level else expanded(b, level)
    lead = xd.shape[:-1]
    if len(lead) != 1:
        xp = xp.reshape(xp.shape[0], -1, x.shape[-1])
    y = kind(LinearStack, xp, wp, b)
    if len(lead) != 1:
        y = y.reshape((y.shape[0],) + tuple(lead) + (w.shape[0],))
        return wrap(y, level)
    return wrap_shaped(y, level, (lead[0], wd.shape[0]), y._data.dtype)


def _matmul_rule(level, kind, Op, args):
    a, b = args
    la, lb = a.ndim, b.ndim
    if la == 0 or lb == 0:
        return NotImplemented
    n = max(la, lb, 2)
    out = kind(Op, _matmul_operand(a, level, la, n, -2), _matmul_operand(b, level, lb, n, -1))
    if la == 1:
        out = out.squeeze(-2)
    if lb == 1:
        out = out.squeeze(-1)
    if out.shape[0] != level.size:
        out = out.expand(level.size, *out.shape[1:])
    return wrap(out, level)


def _matmul_operand(t, level, nd, n, vector_axis):
    """A matmul operand for the batched product: a batched one's physical tensor with its logical dimensions
    padded to ``n`` (its batch dimension then leads the result's); an unbatched one as it is, which matmul's
    broadcasting aligns from the right.  A vector becomes a matrix along ``vector_axis``."""
    d = t._data
    if type(d) is Batched and d.level is level:
        p = d.value
        return phys_of_rank(p.unsqueeze(vector_axis) if nd == 1 else p, n)
    return t.unsqueeze(vector_axis) if nd == 1 else t


def phys_of_rank(p, n):
    lnd = p.ndim - 1
    if lnd < n:
        p = p.reshape((p.shape[0],) + (1,) * (n - lnd) + tuple(p.shape[1:]))
    return p


def _fold_rule(level, kind, Op, args):
    """Ops over ``(N, C, *spatial)`` inputs (pooling, convolution with a shared weight): the batch
    dimension folded into N, and unfolded from every output."""
    x = args[0]
    if not batched_at(x, level) or x.ndim == 0 or any(_has_level(a, level) for a in args[1:]):
        return NotImplemented
    p = x._data.value
    B, N = p.shape[0], p.shape[1]
    out = kind(Op, p.reshape((B * N,) + tuple(p.shape[2:])), *args[1:])
    if isinstance(out, tuple):
        return tuple(wrap(o.reshape((B, N) + tuple(o.shape[1:])), level) for o in out)
    return wrap(out.reshape((B, N) + tuple(out.shape[1:])), level)


def _conv_rule(level, kind, Op, args):
    """Convolution: a shared weight folds the batch into N; per-sample weights become groups, one per sample."""
    x, w, b, params = args
    if not batched_at(w, level) and not (b is not None and batched_at(b, level)):
        return _fold_rule(level, kind, Op, args)
    stride, pads, dilation, groups = params
    B = level.size
    xp, wp = expanded(x, level), expanded(w, level)
    N, C = xp.shape[1], xp.shape[2]
    xg = xp.transpose(0, 1).reshape((N, B * C) + tuple(xp.shape[3:]))
    wg = wp.reshape((B * wp.shape[1],) + tuple(wp.shape[2:]))
    bg = None if b is None else expanded(b, level).reshape(-1)
    out = kind(Op, xg, wg, bg, (stride, pads, dilation, groups * B))
    out = out.reshape((N, B, wp.shape[1]) + tuple(out.shape[2:])).transpose(0, 1)
    return wrap(out, level)


def _cross_entropy_rule(level, kind, Op, args):
    """Each sample's cross-entropy (mean or sum over its own rows): the one op over the stacks ``(B, N, C)``
    at ``(B, N)``, one loss per sample, one backward node."""
    x, t, ignore_index, mean = args
    xd, td = x._data, t._data
    xp = xd.value if type(xd) is Batched and xd.level is level else expanded(x, level)
    tp = td.value if type(td) is Batched and td.level is level else expanded(t, level)
    return wrap(kind(Op, xp, tp, ignore_index, mean), level)


def _pick_rule(level, kind, Op, args):
    """``gather``: input and index (an array, batched or not) both given the batch dimension."""
    if len(args) != 3:
        return NotImplemented
    x, axis, idx = args
    ip = idx.value if type(idx) is Batched and idx.level is level else _wrap(idx, x._dev).unsqueeze(0)
    ip = ip.expand(level.size, *ip.shape[1:])
    return wrap(kind(Op, expanded(x, level), _norm_dim(axis, max(x.ndim, 1)) + 1, ip._data), level)


def _index_select_rule(level, kind, Op, args):
    x, axis, idx = args[:3]
    if _has_level(idx, level) or len(args) != 3:
        return NotImplemented
    return wrap(kind(Op, x._data.value, _norm_dim(axis, max(x.ndim, 1)) + 1, idx), level)


# rules for ops that are not pointwise (those follow from their declaration's tags: see rule_of), by OPS key
RULES = {
    "Sum": _axes_rule(1), "Mean": _axes_rule(1), "Var": _axes_rule(1), "Amax": _axes_rule(1),
    "Amin": _axes_rule(1), "LogSumExp": _axes_rule(1), "Prod": _axes_rule(1, all_when_none=False),
    "Softmax": _dim_rule(1), "LogSoftmax": _dim_rule(1), "Cumsum": _dim_rule(1), "Cumprod": _dim_rule(1),
    "MaxDim": _dim_rule(1), "MinDim": _dim_rule(1), "Argmax": _dim_rule(1), "Argmin": _dim_rule(1),
    "CumExtreme": _dim_rule(1), "Unbind": _dim_rule(1),
    "Glu": _dim_rule(1),
    "Cat": _seq_rule, "Stack": _seq_rule, "Split": _split_rule,
    "Permute": _permute_rule, "Transpose": _permute_rule, "T": _permute_rule,
    "Reshape": _shape_rule, "View": _shape_rule, "Expand": _shape_rule, "SumTo": _sum_to_rule,
    "Getitem": _getitem_rule, "SliceView": _getitem_rule, "SelectView": _getitem_rule,
    "UnsqueezeView": _getitem_rule, "AliasView": _getitem_rule, "Std": _axes_rule(1),
    "Linear": _linear_rule, "Matmul": _matmul_rule, "Conv": _conv_rule,
    "MaxPool": _fold_rule, "AdaptiveMaxPool": _fold_rule,
    "CrossEntropyIndex": _cross_entropy_rule,
    "Gather": _pick_rule, "IndexSelect": _index_select_rule,
    "ToDevice": lambda level, kind, Op, args: wrap(kind(Op, args[0]._data.value, *args[1:]), level),
}

__all__ = ["Batched", "BatchedTensor", "Level", "LEVELS", "LOOPED", "wrap", "lift", "bottom", "rewrap",
           "batched_at"]
