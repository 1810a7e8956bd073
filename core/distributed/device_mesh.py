"""``ember.distributed.device_mesh``: where PyTorch keeps :class:`DeviceMesh` and :func:`init_device_mesh` (not
built yet: both raise NotImplementedError, see :mod:`ember.distributed.tensor`)."""
from .tensor import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
