"""``ember.fft``: PyTorch's discrete Fourier transforms, shown from the ops that define them (:mod:`ember.ops.fft`).

>>> import ember
>>> ember.fft.rfft(ember.tensor([1.0, 1.0, 1.0, 1.0]))
tensor([4.+0.j, 0.+0.j, 0.+0.j])
"""
import sys as _sys

from . import registry as _registry

_registry.bind("fft", _sys.modules[__name__])
