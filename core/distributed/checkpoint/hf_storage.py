"""``ember.distributed.checkpoint.hf_storage``: the safetensors storage of sharded checkpoints (not built yet:
creating a reader or writer raises NotImplementedError)."""
from . import _missing

__all__ = ["HuggingFaceStorageReader", "HuggingFaceStorageWriter"]


class HuggingFaceStorageReader:
    """Reads a sharded checkpoint from safetensors files (not built yet)."""

    def __init__(self, *args, **kwargs):
        raise _missing("HuggingFaceStorageReader")


class HuggingFaceStorageWriter:
    """Writes a sharded checkpoint as safetensors files (not built yet)."""

    def __init__(self, *args, **kwargs):
        raise _missing("HuggingFaceStorageWriter")
