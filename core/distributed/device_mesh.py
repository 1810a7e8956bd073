"""``ember.distributed.device_mesh``: where PyTorch keeps :class:`DeviceMesh` and :func:`init_device_mesh` (built in
:mod:`ember.distributed.tensor`)."""
from .tensor import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
