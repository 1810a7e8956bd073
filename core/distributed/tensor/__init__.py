"""``ember.distributed.tensor`` (``torch.distributed.tensor``): DTensor on ember's MPI process group.

A :class:`DeviceMesh` lays the job's ranks out in a grid; a :class:`DTensor` is a tensor laid out over it by one
placement per mesh dimension (:class:`Shard`, :class:`Replicate`, :class:`Partial`), each rank holding its local part.
ember has no process sub-groups, so a mesh has at most one dimension of more than one rank (any mesh of ones on a
world of one). :func:`distribute_module` is not built yet and raises NotImplementedError.

>>> import ember
>>> from ember.distributed.tensor import Replicate, Shard, distribute_tensor, init_device_mesh
>>> mesh = init_device_mesh("cpu", (1,))                              # doctest: +SKIP
>>> d = distribute_tensor(ember.arange(6.0).reshape(2, 3), mesh, [Shard(1)])  # doctest: +SKIP
>>> d.redistribute(mesh, [Replicate()]).to_local().sum()               # doctest: +SKIP
tensor(15.)
"""
from __future__ import annotations

from ._dtensor import DTensor, distribute_tensor
from ._mesh import DeviceMesh, init_device_mesh
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "DeviceMesh", "Placement", "Shard", "Replicate", "Partial", "distribute_tensor",
           "distribute_module", "init_device_mesh"]


def _missing(what: str):
    return NotImplementedError(f"ember has no working {what} yet")


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None, output_fn=None):
    """Shard ``module``'s parameters over ``device_mesh`` (not built yet: a parameter that is a DTensor needs
    ``nn.Parameter`` to keep its subclass)."""
    raise _missing("distribute_module")
