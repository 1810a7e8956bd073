"""``ember.distributed.algorithms`` (``torch.distributed.algorithms``): training algorithms over the collectives."""
from .join import Join, Joinable, JoinHook

__all__ = ["Join", "JoinHook", "Joinable"]
