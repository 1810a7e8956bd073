"""``ember.jit._recursive`` (``torch.jit._recursive``): the store of module types TorchScript compiled. ember's
``script`` records modules without TorchScript types, so the store stays empty; replacing it (as transformers'
tests do) is well defined."""
from __future__ import annotations


class ConcreteTypeStore:
    """Module types seen by TorchScript's recursive compilation, and those whose methods were compiled."""

    def __init__(self) -> None:
        self.type_store: dict = {}
        self.methods_compiled: set = set()


concrete_type_store = ConcreteTypeStore()
