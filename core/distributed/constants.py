"""``ember.distributed.constants``: the default timeouts of a process group, as PyTorch names them."""
from datetime import timedelta

from .collectives import is_nccl_available
from .rendezvous import DEFAULT_TIMEOUT

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

default_pg_timeout = DEFAULT_TIMEOUT
# PyTorch sets the NCCL default only where it has NCCL; here: where a backend runs collectives on device memory
default_pg_nccl_timeout = timedelta(minutes=10) if is_nccl_available() else None
