"""``ember.nn``: modules, layers, losses, ``functional``, ``init`` and ``utils``.

>>> import ember
>>> import ember.nn as nn
>>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
>>> net(ember.randn(3, 4)).shape
ember.Size([3, 2])
"""
from . import functional, grad, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from .parallel import DataParallel  # noqa: F401
from . import attention  # noqa: F401,E402
