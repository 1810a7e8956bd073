"""``torchvision.datasets.country211``: :class:`Country211` (defined in ``folder_sets``)."""
from .folder_sets import Country211

__all__ = ["Country211"]
