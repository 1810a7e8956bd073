"""``torchvision.datasets.rendered_sst2``: :class:`RenderedSST2` (defined in ``folder_sets``)."""
from .folder_sets import RenderedSST2

__all__ = ["RenderedSST2"]
