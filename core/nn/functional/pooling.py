"""Pooling (max, average, adaptive) and unpooling: ops, in :mod:`ember.ops.nn_conv` (re-exported here)."""
from ...ops.nn_conv import (  # noqa: F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
    avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d, max_unpool1d, max_unpool2d,
)
