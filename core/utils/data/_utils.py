"""``ember.utils.data._utils`` (``torch.utils.data._utils``): the loader's internals under PyTorch's names, for
code that reaches in (``_utils.collate.default_collate``, ``_utils.worker.get_worker_info``).

>>> from ember.utils.data import _utils
>>> _utils.collate.default_collate([1, 2]).tolist()
[1, 2]
"""
import sys

from . import _worker as worker
from . import collate

# ``import torch.utils.data._utils.collate`` finds these modules under PyTorch's names
sys.modules[f"{__name__}.collate"] = collate
sys.modules[f"{__name__}.worker"] = worker

IS_WINDOWS = sys.platform == "win32"
HAS_NUMPY = True
MP_STATUS_CHECK_INTERVAL = worker.STATUS_INTERVAL  # seconds between checks that the other side is alive
__all__ = ["collate", "worker", "IS_WINDOWS", "HAS_NUMPY", "MP_STATUS_CHECK_INTERVAL"]
