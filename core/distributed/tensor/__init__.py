"""``ember.distributed.tensor`` (``torch.distributed.tensor``): PyTorch's DTensor types, importable.

The placements (:class:`Shard`, :class:`Replicate`, :class:`Partial`) are complete descriptions as in PyTorch.
A sharded tensor itself is not built yet: creating a :class:`DTensor` or a :class:`DeviceMesh`, or calling
:func:`distribute_tensor`/:func:`distribute_module`, raises NotImplementedError; ``isinstance(x, DTensor)`` is
False for every tensor ember makes, which is the truth.

>>> from ember.distributed.tensor import Replicate, Shard
>>> Shard(0), Shard(0).is_shard(dim=0), Replicate().is_replicate()
(Shard(dim=0), True, True)
"""
from __future__ import annotations

from ...tensor import Tensor

__all__ = ["DTensor", "DeviceMesh", "Placement", "Shard", "Replicate", "Partial", "distribute_tensor",
           "distribute_module", "init_device_mesh"]


def _missing(what: str):
    return NotImplementedError(f"ember has no working {what} yet: ember.distributed.tensor provides PyTorch's "
                               f"types for imports and isinstance checks only")


class Placement:
    """How a tensor is laid out over one dimension of a device mesh."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicate(self) -> bool:
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return False


class Shard(Placement):
    """Split along tensor dimension ``dim`` over the mesh dimension."""

    def __init__(self, dim: int):
        self.dim = dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def __eq__(self, other):
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self):
        return hash(("Shard", self.dim))

    def __repr__(self):
        return f"Shard(dim={self.dim})"

    def __str__(self):
        return f"S({self.dim})"


class Replicate(Placement):
    """A full copy on every device of the mesh dimension."""

    def is_replicate(self) -> bool:
        return True

    def __eq__(self, other):
        return isinstance(other, Replicate)

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"

    def __str__(self):
        return "R"


class Partial(Placement):
    """Partial values on each device, to be combined by ``reduce_op`` (``"sum"``, ``"avg"``, ...)."""

    def __init__(self, reduce_op: str = "sum"):
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other):
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self):
        return hash(("Partial", self.reduce_op))

    def __repr__(self):
        return f"Partial({self.reduce_op})"

    def __str__(self):
        return f"P({self.reduce_op})"


class DeviceMesh:
    """A grid of devices over the processes (not built yet)."""

    def __init__(self, *args, **kwargs):
        raise _missing("DeviceMesh")


class DTensor(Tensor):
    """A tensor distributed over a device mesh (not built yet; ``isinstance`` checks work)."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise _missing("DTensor")

    @classmethod
    def from_local(cls, *args, **kwargs):
        raise _missing("DTensor.from_local")


def distribute_tensor(tensor, device_mesh=None, placements=None, **kwargs):
    """Shard ``tensor`` over ``device_mesh`` (not built yet)."""
    raise _missing("distribute_tensor")


def distribute_module(module, device_mesh=None, partition_fn=None, input_fn=None, output_fn=None):
    """Shard ``module``'s parameters over ``device_mesh`` (not built yet)."""
    raise _missing("distribute_module")


def init_device_mesh(device_type: str, mesh_shape, *, mesh_dim_names=None):
    """A :class:`DeviceMesh` over this job's processes (not built yet)."""
    raise _missing("init_device_mesh")
