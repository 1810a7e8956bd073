"""``torchvision.datasets.semeion``: :class:`SEMEION` (defined in ``digits``)."""
from .digits import SEMEION

__all__ = ["SEMEION"]
