"""``ember.utils.hooks``: the handle a hook registration returns, where PyTorch keeps it."""
from ..nn.modules.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
