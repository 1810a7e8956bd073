"""``ember.distributed.tensor.placement_types``: where PyTorch keeps the placement classes."""
from . import Partial, Placement, Replicate, Shard

__all__ = ["Partial", "Placement", "Replicate", "Shard"]


class _StridedShard(Placement):
    """Sharding along ``dim`` after an earlier split of it into ``split_factor`` pieces (PyTorch's private
    placement of nested sharding; not a :class:`Shard`, as there)."""

    def __init__(self, dim: int, *, split_factor: int = 1, sf: int | None = None):
        self.dim = dim
        self.split_factor = split_factor if sf is None else sf

    def __eq__(self, other):
        return isinstance(other, _StridedShard) and (other.dim, other.split_factor) == (self.dim, self.split_factor)

    def __hash__(self):
        return hash(("_StridedShard", self.dim, self.split_factor))

    def __repr__(self):
        return f"_StridedShard(dim={self.dim}, sf={self.split_factor})"

    def __str__(self):
        return f"_S({self.dim}, {self.split_factor})"
