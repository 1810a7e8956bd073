"""``F.pad``: an op, in :mod:`ember.ops.nn` (re-exported here)."""
from ...ops.nn import pad  # noqa: F401
