"""DTensor: a tensor laid out over a :class:`DeviceMesh`, each rank holding its local part.

A DTensor holds its local tensor and its placements (one per mesh dimension); its own storage is a zero-stride view
of one zero of the global shape, so shape, dtype and device read as the whole tensor's. Moving between placements
(:meth:`DTensor.redistribute`, :meth:`DTensor.full_tensor`) runs the collectives on the local tensors and is
differentiable, as in PyTorch: a gradient goes back to the placements it came from (a partial value's gradient is
replicated). Any other function reaches :func:`_torch_function`: it runs on the local tensors where that is exact
(every operand replicated, or a pointwise op on operands of one shape and one sharding, none partial) and keeps the
placements; otherwise it runs on the full tensors and gives a replicated result (the values PyTorch gives; PyTorch
may choose another placement for them). A whole-tensor ``sum`` of a sharded DTensor is a partial sum, as in PyTorch.
"""
from __future__ import annotations

from ...autograd.function import OPS, Function
from ...ops.creation import empty, zeros
from ...ops.shape import cat
from ...overrides import _func_name, _lazy_shell
from ...tensor import DisableTorchFunctionSubclass, Tensor, _disabled_torch_function_impl
from .. import collectives as _c
from ._mesh import DeviceMesh, _world, init_device_mesh
from .placement_types import Partial, Replicate, Shard

# reads that a DTensor answers as its global shape would (its storage has that shape, dtype and device)
METADATA = frozenset({
    "shape", "dtype", "device", "size", "dim", "ndim", "numel", "nelement", "is_cuda", "is_cpu", "is_meta",
    "is_floating_point", "is_complex", "is_signed", "element_size", "itemsize", "get_device", "__len__", "layout",
})
# functions that act on each element alone: on operands of one shape and sharding they run on the local parts
POINTWISE = frozenset(op.op_name.lower() for op in OPS.values() if "pointwise" in getattr(op, "tags", ()))


# --------------------------------------------------------------------------- shards
def _chunk(n: int, k: int, c: int) -> tuple:
    """Where rank ``c`` of ``k``'s shard of a length-``n`` dimension starts and how long it is (``torch.chunk``'s
    split: shards of ceil(n / k), the last ones shorter or empty)."""
    size = -(-n // k)
    start = min(c * size, n)
    return start, max(0, min(size, n - start))


def _local_shape_and_offset(shape, mesh: DeviceMesh, placements) -> tuple:
    shape, offset = list(shape), [0] * len(shape)
    for m, p in enumerate(placements):
        if p.is_shard():
            start, length = _chunk(shape[p.dim], mesh.size(m), mesh.get_local_rank(m))
            offset[p.dim] += start
            shape[p.dim] = length
    return tuple(shape), tuple(offset)


def _all_gather(local: Tensor, dim: int, n: int, k: int) -> Tensor:
    """The ``k`` ranks' shards of a length-``n`` dimension ``dim``, joined in rank order (shorter shards padded for
    the exchange)."""
    size = -(-n // k)
    if local.shape[dim] < size:
        pad = list(local.shape)
        pad[dim] = size - local.shape[dim]
        local = cat([local, zeros(pad, dtype=local.dtype, device=local.device)], dim)
    parts = [empty(local.shape, dtype=local.dtype, device=local.device) for _ in range(k)]
    _c.all_gather(parts, local.contiguous())
    return cat([p.narrow(dim, 0, _chunk(n, k, r)[1]) for r, p in enumerate(parts)], dim)


def _step(local: Tensor, mesh: DeviceMesh, m: int, src, dst, shape) -> Tensor:
    """``local`` moved from placement ``src`` to ``dst`` along mesh dimension ``m``, by way of a replicated value."""
    k = mesh.size(m)
    if k > 1 and src.is_partial():
        local = local.clone()
        _c.all_reduce(local, op=_c.ReduceOp(src.reduce_op))
    elif k > 1 and src.is_shard():
        local = _all_gather(local, src.dim, shape[src.dim], k)
    if dst.is_shard():
        start, length = _chunk(local.shape[dst.dim], k, mesh.get_local_rank(m))
        return local.narrow(dst.dim, start, length)
    if dst.is_partial() and dst.reduce_op == "sum":  # k parts that add up to the value
        return local / k
    return local


def _redistribute(local: Tensor, mesh: DeviceMesh, src, dst, shape) -> Tensor:
    for m, (p, q) in enumerate(zip(src, dst)):
        if p != q:
            local = _step(local, mesh, m, p, q, shape)
    return local


class _Redistribute(Function):
    """A local tensor moved between placements; its gradient moves back (replicated where the input was partial,
    and taken as replicated where the output is)."""

    @staticmethod
    def forward(ctx, local, mesh, src, dst, shape):
        ctx.spec = mesh, src, dst, shape
        out = _redistribute(local, mesh, src, dst, shape)
        return out.clone() if out is local or out._base is not None else out

    @staticmethod
    def backward(ctx, grad):
        mesh, src, dst, shape = ctx.spec
        given = tuple(Replicate() if q.is_partial() else q for q in dst)
        wanted = tuple(Replicate() if p.is_partial() else p for p in src)
        return _Redistribute.apply(grad, mesh, given, wanted, shape), None, None, None, None


# --------------------------------------------------------------------------- the tensor
def _normalized(placements, mesh: DeviceMesh, ndim: int) -> tuple:
    if placements is None:
        return (Replicate(),) * mesh.ndim
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! Found placements length: "
                         f"{len(placements)}, and device_mesh.ndim: {mesh.ndim}.")
    out = []
    for p in placements:
        if isinstance(p, Shard) and p.dim < 0:
            p = Shard(p.dim + ndim)
        if p.is_shard() and not 0 <= p.dim < ndim:
            raise IndexError(f"{p}: dimension out of range for a tensor of {ndim} dimensions")
        out.append(p)
    kinds = {p.reduce_op for p in out if p.is_partial()}
    if len(kinds) > 1:
        raise ValueError(f"placements {tuple(out)} mix Partial reduce types {sorted(kinds)}")
    return tuple(out)


def _make(local: Tensor, mesh: DeviceMesh, placements: tuple, shape) -> DTensor:
    t = _lazy_shell(DTensor, _torch_function, local, shape)
    t.__dict__.update(_local=local, _mesh=mesh, _placements=placements)
    return t


class DTensor(Tensor):
    """A tensor distributed over a :class:`DeviceMesh` (made by :func:`distribute_tensor` or
    :meth:`DTensor.from_local`).

    >>> import ember
    >>> from ember.distributed.tensor import Shard, distribute_tensor, init_device_mesh
    >>> d = distribute_tensor(ember.ones(4, 2), init_device_mesh("cpu", (1,)), [Shard(0)])  # doctest: +SKIP
    >>> d.placements, d.to_local().shape, d.full_tensor().sum()                               # doctest: +SKIP
    ((Shard(dim=0),), ember.Size([4, 2]), tensor(8.))
    """

    # dispatch is switched on by _make() when the first DTensor is built, as for sparse tensors
    __torch_function__ = _disabled_torch_function_impl

    @property
    def device_mesh(self) -> DeviceMesh:
        return self._mesh

    @property
    def placements(self) -> tuple:
        return self._placements

    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check: bool = False, shape=None,
                   stride=None) -> DTensor:
        """A DTensor whose part on this rank is ``local_tensor`` (differentiable: gradients reach it). Its global
        shape is ``shape``, or each sharded dimension's local length times the mesh dimension's size."""
        mesh = device_mesh if device_mesh is not None else init_device_mesh(local_tensor.device.type, (_world(),))
        placements = _normalized(placements, mesh, local_tensor.ndim)
        if shape is None:
            shape = list(local_tensor.shape)
            for m, p in enumerate(placements):
                if p.is_shard():
                    shape[p.dim] *= mesh.size(m)
        if local_tensor.requires_grad:
            local_tensor = local_tensor.view_as(local_tensor)  # a DTensor made from it is not a leaf, as in PyTorch
        return _make(local_tensor, mesh, placements, shape)

    def to_local(self, *, grad_placements=None) -> Tensor:
        """This rank's part (differentiable)."""
        local = self._local
        return local.view_as(local) if local.requires_grad else local

    def redistribute(self, device_mesh=None, placements=None, *, async_op: bool = False, forward_dtype=None,
                     backward_dtype=None) -> DTensor:
        """This tensor laid out by ``placements`` (differentiable), moving data between ranks as needed."""
        mesh = self._mesh if device_mesh is None else device_mesh
        if mesh != self._mesh:
            raise NotImplementedError("redistribute: moving a DTensor to another device mesh is not supported")
        placements = _normalized(placements if placements is not None else self._placements, mesh, self.ndim)
        if placements == self._placements:
            return self
        local = _Redistribute.apply(self._local, mesh, self._placements, placements, tuple(self.shape))
        return _make(local, mesh, placements, self.shape)

    def full_tensor(self, *, grad_placements=None) -> Tensor:
        """The whole tensor on every rank (differentiable)."""
        return self.redistribute(self._mesh, (Replicate(),) * self._mesh.ndim).to_local()

    # autograd: the local tensor records the gradients, as a sparse tensor's values do
    @property
    def requires_grad(self) -> bool:
        return self._local.requires_grad

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        if value and not self._local.requires_grad:
            self._local = self._local.detach()
        self._local.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> DTensor:
        """Make this DTensor a leaf that records gradients."""
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self._local.is_leaf

    @property
    def grad_fn(self):
        return self._local.grad_fn

    @property
    def grad(self):
        """The gradient: a DTensor of this one's placements holding the local tensor's gradient."""
        return self._grad_join(self._local.grad)

    @grad.setter
    def grad(self, value) -> None:
        self._local.grad = value._local if isinstance(value, DTensor) else value

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        """Backpropagate from this DTensor (a partial scalar sums the ranks' gradients, as in PyTorch)."""
        if isinstance(gradient, DTensor):
            gradient = gradient._local
        self._local.backward(gradient, retain_graph, create_graph)

    def _grad_parts(self) -> tuple:
        """What ``autograd.grad`` differentiates for this DTensor: its local tensor."""
        if not self.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        return (self._local,)

    def _grad_join(self, g):
        return None if g is None else _make(g, self._mesh, self._placements, self.shape)

    def __repr__(self) -> str:
        return f"DTensor(local_tensor={self._local!r}, device_mesh={self._mesh!r}, placements={self._placements})"

    __str__ = __repr__


# --------------------------------------------------------------------------- other functions on DTensors
def _map(fn, x):
    if isinstance(x, Tensor):
        return fn(x)
    if type(x) in (list, tuple):
        return type(x)(_map(fn, item) for item in x)
    if type(x) is dict:
        return {k: _map(fn, v) for k, v in x.items()}
    return x


def _tensors(x, found: list) -> list:
    _map(found.append, x)
    return found


def _torch_function(cls, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    name = _func_name(func)
    if name in METADATA:
        with DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    tensors = _tensors((args, kwargs), [])
    dts = [t for t in tensors if isinstance(t, DTensor)]
    mesh, first = dts[0]._mesh, dts[0]
    for t in tensors:
        if not isinstance(t, DTensor) and t.ndim:
            raise RuntimeError(f"{name}: got mixed torch.Tensor and DTensor, need to convert all torch.Tensor to "
                               f"DTensor before calling distributed operators!")
        if isinstance(t, DTensor) and t._mesh != mesh:
            raise NotImplementedError(f"{name}: DTensor does not support cross-mesh operation yet! Got meshes: "
                                      f"{mesh} {t._mesh}")
    replicated = all(p.is_replicate() for d in dts for p in d._placements)
    elementwise = (name.rstrip("_") in POINTWISE and not any(p.is_partial() for p in first._placements)
                   and all((d._placements, d.shape) == (first._placements, first.shape) for d in dts))
    summed = (name == "sum" and len(dts) == len(args) == 1 and set(kwargs) <= {"dtype"}
              and not any(p.is_partial() for p in first._placements))
    if summed:  # a whole-tensor sum: each rank's part sums to a partial value, as PyTorch has it
        placements = tuple(Partial() if p.is_shard() else p for p in first._placements)
        out = func(first._local, **kwargs)
    elif replicated or elementwise:
        placements = first._placements
        out = func(*_map(lambda t: t._local if isinstance(t, DTensor) else t, args),
                   **_map(lambda t: t._local if isinstance(t, DTensor) else t, kwargs))
    else:
        placements = (Replicate(),) * mesh.ndim
        out = func(*_map(lambda t: t.full_tensor() if isinstance(t, DTensor) else t, args),
                   **_map(lambda t: t.full_tensor() if isinstance(t, DTensor) else t, kwargs))
        target = args[0] if args else None
        if isinstance(target, DTensor) and name.endswith("_") and not name.endswith("__") and out is not None:
            # an in-place op computed on the whole tensor: its result goes back into this rank's part
            target._local.copy_(_redistribute(out, mesh, placements, target._placements, tuple(target.shape)))
            return target
    locals_of = {id(d._local): d for d in dts}

    def wrap(t):
        if isinstance(t, DTensor) or id(t) in locals_of:
            return locals_of.get(id(t), t)
        return _make(t, mesh, placements, first.shape if elementwise and not replicated else t.shape)

    return _map(wrap, out)


# --------------------------------------------------------------------------- making DTensors
def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank: int | None = 0) -> DTensor:
    """``tensor`` laid out over ``device_mesh`` by ``placements`` (all :class:`Replicate` by default; the default
    mesh is the whole job in one dimension): a new leaf that requires grad as ``tensor`` does. With several ranks the
    data of rank ``src_data_rank`` is what is distributed (``None``: each rank's own).

    >>> import ember
    >>> from ember.distributed.tensor import Shard, distribute_tensor
    >>> distribute_tensor(ember.arange(4.0), placements=[Shard(0)]).to_local()   # on one process  # doctest: +SKIP
    tensor([0., 1., 2., 3.])
    """
    mesh = device_mesh if device_mesh is not None else init_device_mesh(tensor.device.type, (_world(),))
    if not tensor.is_leaf:
        raise RuntimeError("`distribute_tensor` should be used to distribute leaf tensors! but found non-leaf tensor!")
    placements = _normalized(placements, mesh, tensor.ndim)
    if isinstance(tensor, DTensor):
        if tensor._mesh != mesh or tensor._placements != placements:
            raise ValueError(f"Cannot distribute a DTensor with placements {tensor._placements} to {placements}: "
                             f"call `redistribute` instead")
        return tensor
    local = tensor.detach().clone()
    if src_data_rank is not None and mesh.size() > 1:
        _c.broadcast(local, src=src_data_rank)
    replicated = (Replicate(),) * mesh.ndim
    local = _redistribute(local, mesh, replicated, placements, tuple(tensor.shape)).contiguous()
    return _make(local.requires_grad_(tensor.requires_grad), mesh, placements, tensor.shape)
