"""Passes over fx graphs: :mod:`ember.fx.passes.shape_prop`."""
from . import shape_prop  # noqa: F401
