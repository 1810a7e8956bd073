"""Dropout layers: active only in training mode."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):  # noqa: A002
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` in training, scaling the rest by ``1/(1-p)``.

    >>> import ember
    >>> ember.nn.Dropout(0.5).eval()(ember.ones(2)).tolist()
    [1.0, 1.0]
    """

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels with probability ``p``."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    def forward(self, input):  # noqa: A002
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)
