"""Pickling tensors between processes: the storage moves to shared memory and only a handle crosses.

Registered with :class:`multiprocessing.reduction.ForkingPickler`, which queues,
pipes and ``Process`` arguments (spawn / forkserver) use.  ``.grad`` travels
the same way, so it is shared too.  Device tensors go through their backend's
IPC handles (``Backend.ipc_handle`` / ``Backend.ipc_open``): the sender keeps
the tensor alive while receivers use it, as in PyTorch.
"""
from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

from ..backend import resolve
from ..nn.parameter import Parameter
from ..tensor import Tensor, _wrap
from .. import shared_memory as shared


def _check(t):
    if t._fn is not None and t.requires_grad:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the data, "
                           "call detach() on the tensor before serializing (e.g., putting it on the queue).")


def reduce_tensor(t: Tensor):
    """``(rebuild, args)`` for ``t``: a shared-memory handle, the view geometry, requires_grad and grad."""
    _check(t)
    shared.check_shareable(t, "reduce_tensor")
    if not t._dev.backend.host:
        return (rebuild_device, (t._dev.backend.ipc_handle(t._data), str(t._dev), t._rg, t._grad, type(t)))
    shared.share_memory_(t)
    root, a = t._storage_root(), t._data
    off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return (rebuild_tensor, (root.base.handle(), off, a.shape, a.strides, a.dtype, str(t._dev),
                             t._rg, t._grad, type(t)))


def rebuild_tensor(handle, offset, shape, strides, dtype, device, requires_grad, grad, cls):
    """The receiving side of :func:`reduce_tensor`: a tensor over the same shared memory."""
    import numpy as np

    seg_cls, key, nbytes, extra = handle
    root = seg_cls.attach(key, nbytes, extra)
    return finish(_wrap(np.ndarray(shape, dtype, root, offset, strides), resolve(device)), requires_grad, grad, cls)


def rebuild_device(handle, device, requires_grad, grad, cls):
    """The receiving side of :func:`reduce_tensor` for a device tensor: its backend opens the IPC handle."""
    dev = resolve(device)
    return finish(_wrap(dev.backend.ipc_open(handle, dev.index), dev), requires_grad, grad, cls)


def finish(t: Tensor, requires_grad: bool, grad, cls) -> Tensor:
    """Restore the autograd flags, the gradient and the class (``Parameter``) of a received tensor."""
    if cls is not Tensor:
        t = cls(t, requires_grad) if getattr(cls, "_is_param", False) else t
    t._rg = requires_grad
    t._grad = grad
    return t


def init_reductions() -> None:
    """Register the tensor reducer for Tensor and Parameter with the multiprocessing pickler."""
    ForkingPickler.register(Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
