"""ember.utils: data loading (``ember.utils.data``) and interchange helpers."""
from . import data, pt_reader  # noqa: F401  (pt_reader enters PyTorch's format among the checkpoint readers)
from . import checkpoint, hooks  # noqa: F401  (attributes after import, as PyTorch's torch.utils.checkpoint/hooks)
from .. import _pytree
from ..registry import show_module

# PyTorch's torch.utils._pytree; the code sits low in the core (ember.func builds on it).  The path is this
# package's own, so a second import of the source tree under another name (pytest importing the conformance kit
# from an editable checkout) cannot replace ember's.
show_module(f"{__name__}._pytree", _pytree)
