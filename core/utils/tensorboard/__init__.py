"""``ember.utils.tensorboard``: PyTorch's ``SummaryWriter``, writing TensorBoard event files with the ``tensorboard``
package's protobufs and summary builders (``pip install "ember[tensorboard]"``; images also need Pillow).

Every event is written and flushed to disk as it is added, so a run that crashes leaves every event written so far
readable. A log directory that cannot be written raises at construction.

>>> from ember.utils.tensorboard import SummaryWriter        # doctest: +SKIP
>>> with SummaryWriter("runs/exp1") as w:                     # doctest: +SKIP
...     w.add_scalar("loss", 0.5, global_step=1)
"""
from .writer import SummaryWriter  # noqa: F401
