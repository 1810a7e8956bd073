"""``ember.distributed.tensor._utils``: the shape helpers PyTorch keeps beside DTensor (importable; a
:class:`DeviceMesh` cannot be built yet, so they raise NotImplementedError when called)."""
from . import _missing


def compute_local_shape_and_global_offset(global_shape, mesh, placements, skip_offset: bool = False):
    """This rank's shard shape and its offset in the global tensor (needs a DeviceMesh: not built yet)."""
    raise _missing("compute_local_shape_and_global_offset")
