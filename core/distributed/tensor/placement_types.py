"""``ember.distributed.tensor.placement_types``: where PyTorch keeps the placement classes."""
from . import Partial, Placement, Replicate, Shard

__all__ = ["Partial", "Placement", "Replicate", "Shard"]
