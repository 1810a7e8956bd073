"""``ember.distributed.tensor.placement_types``: how a DTensor is laid out over each dimension of its device mesh
(:class:`Shard`, :class:`Replicate`, :class:`Partial`), as in PyTorch."""
from __future__ import annotations

__all__ = ["Partial", "Placement", "Replicate", "Shard"]


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
