"""``torchvision.datasets.usps``: :class:`USPS` (defined in ``digits``)."""
from .digits import USPS

__all__ = ["USPS"]
