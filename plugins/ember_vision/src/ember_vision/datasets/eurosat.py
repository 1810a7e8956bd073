"""``torchvision.datasets.eurosat``: :class:`EuroSAT` (defined in ``folder_sets``)."""
from .folder_sets import EuroSAT

__all__ = ["EuroSAT"]
