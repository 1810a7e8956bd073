"""ember.nn.parallel: data parallelism across processes (``DistributedDataParallel``)."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
