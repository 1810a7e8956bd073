"""``ember.nn.functional``: the functional form of every layer, activation and loss.

Every name here is exported to the ``nn.functional`` namespace of
:mod:`ember.registry`: the ops from :mod:`ember.ops.nn` (and ``nn_conv``,
``nn_loss``), and the composites of the modules in this package.

>>> import ember
>>> import ember.nn.functional as F
>>> F.relu(ember.tensor([-1., 2.])).tolist()
[0.0, 2.0]
"""
import sys as _sys

from ... import registry as _registry
from . import activation, attention, conv, distance, linear, loss, normalization, padding, pooling, resize  # noqa: F401

_registry.bind("nn.functional", _sys.modules[__name__])

from .. import grad  # noqa: E402,F401  (``F.grad`` is ``nn.grad``, as in PyTorch)
