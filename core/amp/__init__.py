"""``ember.amp``: automatic mixed precision, as ``torch.amp``.

``autocast`` runs a region's ops in a lower-precision dtype where PyTorch's op lists say so (the table is
:mod:`ember.amp.lists`); ``GradScaler`` scales the loss so that low-precision gradients keep their small
values, and skips optimizer steps whose gradients overflowed.

>>> import ember
>>> with ember.amp.autocast("cpu"):
...     y = ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3))
>>> y.dtype
ember.bfloat16
"""
from . import autocast_mode, grad_scaler, lists
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler", "is_autocast_available"]
