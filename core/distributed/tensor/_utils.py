"""``ember.distributed.tensor._utils``: the shape helpers PyTorch keeps beside DTensor."""
from ._dtensor import _local_shape_and_offset


def compute_local_shape_and_global_offset(global_shape, mesh, placements, skip_offset: bool = False) -> tuple:
    """This rank's shard shape of a tensor of ``global_shape`` laid out over ``mesh`` by ``placements``, and where
    the shard starts in the global tensor (an empty offset with ``skip_offset``)."""
    shape, offset = _local_shape_and_offset(global_shape, mesh, placements)
    return shape, (() if skip_offset else offset)
