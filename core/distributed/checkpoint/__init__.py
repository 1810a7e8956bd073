"""``ember.distributed.checkpoint`` (``torch.distributed.checkpoint``): PyTorch's sharded checkpoints, importable.

Not built yet: :func:`save` and :func:`load` raise NotImplementedError (``ember.save``/``ember.load`` and
safetensors write and read whole checkpoints).
"""
from __future__ import annotations

__all__ = ["load", "save"]


def _missing(what: str):
    return NotImplementedError(f"ember has no {what} yet: ember.distributed.checkpoint is importable, not built; "
                               f"use ember.save/ember.load")


def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None, process_group=None, **kwargs):
    """Save ``state_dict`` as a sharded checkpoint (not built yet)."""
    raise _missing("distributed.checkpoint.save")


def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None, process_group=None, **kwargs):
    """Load a sharded checkpoint into ``state_dict`` in place (not built yet)."""
    raise _missing("distributed.checkpoint.load")
