"""``ember.distributed._functional_collectives`` (``torch.distributed._functional_collectives``): collectives that
return a new tensor instead of writing their input.

ember's collectives complete before they return, so :func:`wait_tensor` has nothing to wait for and gives its
argument back. ``group`` is the process group (``dist.group.WORLD``), the list of its ranks, or a device mesh (with
a mesh dimension: ``(mesh, dim)``) whose dimension spans the job; ember has no sub-groups yet, so a group of only
some ranks raises NotImplementedError. The ``*_autograd``
forms are differentiable (all-gather and reduce-scatter are each other's backward, all-to-all sends the gradient
back along the same parts); the others are not, as in PyTorch, and give a result that does not require grad.

>>> import ember, ember.distributed as dist
>>> import ember.distributed._functional_collectives as fc
>>> dist.init_process_group("mpi")                                   # doctest: +SKIP
>>> fc.all_gather_single(ember.ones(2), 0, dist.group.WORLD)        # on 2 ranks  # doctest: +SKIP
tensor([1., 1., 1., 1.])
"""
from __future__ import annotations

import warnings

from .. import autograd
from ..ops.creation import empty
from ..ops.shape import cat
from ..tensor import Tensor
from . import collectives as _c

__all__ = ["all_gather_single", "all_gather_single_autograd", "all_gather_tensor", "all_gather_tensor_autograd",
           "all_reduce", "all_to_all_single", "all_to_all_single_autograd", "broadcast", "reduce_scatter_single",
           "reduce_scatter_single_autograd", "reduce_scatter_tensor", "reduce_scatter_tensor_autograd",
           "wait_tensor"]


def _group_size(op: str, group) -> int:
    """The size of ``group`` after checking it is the whole job (the one group ember has)."""
    n = _c.get_world_size()
    if isinstance(group, _c.ProcessGroup):
        return n
    if isinstance(group, (list, tuple)) and all(isinstance(r, int) for r in group):
        if sorted(group) != list(range(n)):
            raise NotImplementedError(f"{op}(): ember has no process sub-groups yet; the ranks {list(group)} are "
                                      f"not the whole job of {n}")
        return n
    mesh, dim = group if isinstance(group, tuple) and len(group) == 2 else (group, None)
    if type(mesh).__name__ == "DeviceMesh":  # one mesh dimension's group: the whole job's where it spans the job
        if dim is None and mesh.ndim != 1:
            raise AssertionError("Only 1D mesh is supported, pass in (DeviceMesh, int) together if mesh > 1D")
        if mesh.size(dim or 0) != n:
            raise NotImplementedError(f"{op}(): ember has no process sub-groups yet; mesh dimension {dim or 0} of "
                                      f"{mesh} holds {mesh.size(dim or 0)} of the job's {n} ranks")
        return n
    if isinstance(group, (list, tuple, str)):
        raise NotImplementedError(f"{op}(): ember has no named sub-groups yet, got {group!r}")
    raise ValueError(f"Unsupported group type: {type(group)}, {group}")


def _reduce_op(op: str, reduce_op) -> _c.ReduceOp:
    if isinstance(reduce_op, _c.ReduceOp):
        return reduce_op
    try:
        return _c.ReduceOp(str(reduce_op).lower())
    except ValueError:
        names = ", ".join(m.value for m in _c.ReduceOp)
        raise ValueError(f"{op}(): unknown reduceOp {reduce_op!r}, expected one of {names}") from None


def _check(op: str, t) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): self must be a Tensor, got {type(t).__name__}")


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`torch.distributed._functional_collectives.{old}` is deprecated. Please use "
                  f"`torch.distributed._functional_collectives.{new}` instead.", FutureWarning, stacklevel=3)


def wait_tensor(tensor: Tensor) -> Tensor:
    """The finished result of a collective: ember's collectives finish before returning, so ``tensor`` itself."""
    _check("wait_tensor", tensor)
    return tensor


def all_reduce(self: Tensor, reduceOp: str, group, tag: str = "") -> Tensor:
    """A new tensor: ``self`` combined across the group's ranks with ``reduceOp`` (``"sum"``, ``"avg"``, ...)."""
    _check("all_reduce", self)
    _group_size("all_reduce", group)
    op = _reduce_op("all_reduce", reduceOp)
    out = self.detach().clone()
    _c.all_reduce(out, op)
    return out


def broadcast(self: Tensor, src: int, group, tag: str = "") -> Tensor:
    """A new tensor holding rank ``src``'s ``self`` on every rank."""
    _check("broadcast", self)
    _group_size("broadcast", group)
    out = self.detach().clone()
    _c.broadcast(out, src)
    return out


def _gather(self: Tensor, gather_dim: int, group, op: str) -> Tensor:
    _check(op, self)
    n = _group_size(op, group)
    src = self.detach().contiguous()
    out = empty((n * src.shape[0], *src.shape[1:]) if src.dim() else (n,), dtype=src.dtype, device=src.device)
    _c.all_gather_into_tensor(out, src)
    if gather_dim % max(src.dim(), 1) != 0:
        out = cat(out.chunk(n, 0), dim=gather_dim)
    return out


def _scatter(self: Tensor, reduceOp, scatter_dim: int, group, op: str) -> Tensor:
    _check(op, self)
    n = _group_size(op, group)
    rop = _reduce_op(op, reduceOp)
    if self.dim() == 0 or self.shape[scatter_dim] % n:
        raise ValueError(f"{op}(): input dimension {scatter_dim} ({list(self.shape)}) must be a multiple of the "
                         f"group size {n}")
    src = self.detach()
    if scatter_dim % src.dim() != 0:
        src = cat(src.chunk(n, scatter_dim), dim=0)
    shape = list(self.shape)
    shape[scatter_dim] //= n
    out = empty(shape, dtype=self.dtype, device=self.device)
    _c.reduce_scatter_tensor(out, src.contiguous(), rop)
    return out


def all_gather_single(self: Tensor, gather_dim: int, group, tag: str = "") -> Tensor:
    """Every rank's ``self`` concatenated along ``gather_dim``, in rank order."""
    return _gather(self, gather_dim, group, "all_gather_single")


def reduce_scatter_single(self: Tensor, reduceOp: str, scatter_dim: int, group, tag: str = "") -> Tensor:
    """``self`` combined across ranks with ``reduceOp``, split into as many chunks along ``scatter_dim`` as there
    are ranks: rank ``i`` gets chunk ``i``."""
    return _scatter(self, reduceOp, scatter_dim, group, "reduce_scatter_single")


class _AllGather(autograd.Function):
    @staticmethod
    def forward(ctx, x, gather_dim, group):
        ctx.gather_dim, ctx.group = gather_dim, group
        return _gather(x, gather_dim, group, "all_gather_single_autograd")

    @staticmethod
    def backward(ctx, grad):
        return _ReduceScatter.apply(grad, "sum", ctx.gather_dim, ctx.group), None, None


class _ReduceScatter(autograd.Function):
    @staticmethod
    def forward(ctx, x, reduce_op, scatter_dim, group):
        op = _reduce_op("reduce_scatter_single_autograd", reduce_op)
        if op not in (_c.ReduceOp.SUM, _c.ReduceOp.AVG):
            raise NotImplementedError(f"reduce_scatter_single_autograd(): the gradient of reduceOp "
                                      f"{op.value!r} is not defined; use 'sum' or 'avg'")
        ctx.scatter_dim, ctx.group, ctx.avg = scatter_dim, group, op is _c.ReduceOp.AVG
        return _scatter(x, op, scatter_dim, group, "reduce_scatter_single_autograd")

    @staticmethod
    def backward(ctx, grad):
        full = _AllGather.apply(grad, ctx.scatter_dim, ctx.group)
        return (full / _c.get_world_size() if ctx.avg else full), None, None, None


def all_gather_single_autograd(self: Tensor, gather_dim: int, group, tag: str = "") -> Tensor:
    """:func:`all_gather_single`, differentiable: the gradient is the reduce-scatter (sum) of the output's."""
    return _AllGather.apply(self, gather_dim, group)


def reduce_scatter_single_autograd(self: Tensor, reduceOp: str, scatter_dim: int, group, tag: str = "") -> Tensor:
    """:func:`reduce_scatter_single` (``"sum"`` or ``"avg"``), differentiable: the gradient is the all-gather of
    the output's."""
    return _ReduceScatter.apply(self, reduceOp, scatter_dim, group)


def all_gather_tensor(self: Tensor, gather_dim: int, group, tag: str = "") -> Tensor:
    """Deprecated name of :func:`all_gather_single`."""
    _deprecated("all_gather_tensor", "all_gather_single")
    return all_gather_single(self, gather_dim, group, tag)


def reduce_scatter_tensor(self: Tensor, reduceOp: str, scatter_dim: int, group, tag: str = "") -> Tensor:
    """Deprecated name of :func:`reduce_scatter_single`."""
    _deprecated("reduce_scatter_tensor", "reduce_scatter_single")
    return reduce_scatter_single(self, reduceOp, scatter_dim, group, tag)


def all_gather_tensor_autograd(self: Tensor, gather_dim: int, group, tag: str = "") -> Tensor:
    """Deprecated name of :func:`all_gather_single_autograd`."""
    _deprecated("all_gather_tensor_autograd", "all_gather_single_autograd")
    return all_gather_single_autograd(self, gather_dim, group, tag)


def reduce_scatter_tensor_autograd(self: Tensor, reduceOp: str, scatter_dim: int, group, tag: str = "") -> Tensor:
    """Deprecated name of :func:`reduce_scatter_single_autograd`."""
    _deprecated("reduce_scatter_tensor_autograd", "reduce_scatter_single_autograd")
    return reduce_scatter_single_autograd(self, reduceOp, scatter_dim, group, tag)


def all_to_all_single(self: Tensor, output_split_sizes, input_split_sizes, group, tag: str = "") -> Tensor:
    """A new tensor of the parts every rank sent this one, in rank order: rank ``i`` receives part ``i`` of each
    rank's ``self`` split along dim 0 (by ``input_split_sizes``, equal parts when None)."""
    _check("all_to_all_single", self)
    _group_size("all_to_all_single", group)
    src = self.detach().contiguous()
    rows = sum(output_split_sizes) if output_split_sizes else src.shape[0]
    out = empty((rows, *src.shape[1:]), dtype=src.dtype, device=src.device)
    _c.all_to_all_single(out, src, output_split_sizes, input_split_sizes)
    return out


class _AllToAll(autograd.Function):
    @staticmethod
    def forward(ctx, x, output_split_sizes, input_split_sizes, group):
        ctx.splits, ctx.group = (input_split_sizes, output_split_sizes), group
        return all_to_all_single(x, output_split_sizes, input_split_sizes, group)

    @staticmethod
    def backward(ctx, grad):  # the parts go back where they came from
        return _AllToAll.apply(grad, *ctx.splits, ctx.group), None, None, None


def all_to_all_single_autograd(self: Tensor, output_split_sizes, input_split_sizes, group, tag: str = "") -> Tensor:
    """:func:`all_to_all_single`, differentiable: the gradient is sent back along the same parts."""
    return _AllToAll.apply(self, output_split_sizes, input_split_sizes, group)
