"""Op table: the ops that ``ember.func``'s batching rules add (row format and checks:
:mod:`ember.testing.row`): each reached through ``vmap`` on both libraries, so the reference is
PyTorch's own vmap of the same call."""
from __future__ import annotations

from .row import Row, Sampler

r = Sampler(9012).r


def _linear(m, x, w, *b):
    return m.vmap(m.nn.functional.linear)(x, w, *b)


ROWS = [
    # Linear with per-sample weights: LinearStack (one sample row, several rows, no bias, a vector input)
    Row("vmap_linear_per_sample_weight", _linear, [[r(4, 1, 3), r(4, 5, 3), r(4, 5)], [r(3, 2, 4), r(3, 2, 4)]]),
    Row("vmap_linear_per_sample_weight_rows", _linear, [[r(2, 3, 2, 4), r(2, 5, 4), r(2, 5)]]),
    Row("vmap_linear_per_sample_weight_vector", _linear, [[r(3, 4), r(3, 2, 4), r(3, 2)]]),
]
