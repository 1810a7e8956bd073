"""Convolutions, transposed convolutions, unfold and fold: ops, in :mod:`ember.ops.nn_conv` (re-exported here)."""
from ...ops.nn_conv import (  # noqa: F401
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold, ntuple, unfold,
)
