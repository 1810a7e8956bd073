"""``ember.special``: PyTorch's special functions, shown from the ops that define them.

>>> import ember
>>> ember.special.expit(ember.tensor([0.0]))
tensor([0.5000])
"""
import sys as _sys

from . import registry as _registry

_registry.bind("special", _sys.modules[__name__])
