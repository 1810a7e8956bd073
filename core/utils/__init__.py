"""ember.utils: data loading (``ember.utils.data``) and interchange helpers."""
from . import data, pt_reader  # noqa: F401  (pt_reader enters PyTorch's format among the checkpoint readers)
