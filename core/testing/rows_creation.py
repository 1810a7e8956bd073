"""Op table: creation and filling (``tril_indices``/``triu_indices``, ``scalar_tensor``, ``fill``/``zero_``).
Row format and checks: :mod:`ember.testing.row`."""
from __future__ import annotations

from .row import Row, Sampler

r = Sampler(5678).r

ROWS = [
    Row("tri_indices", lambda m: (m.tril_indices(3, 4), m.tril_indices(4, 3, -1), m.triu_indices(3, 3, 1),
                                  m.triu_indices(2, 5, -3), m.tril_indices(0, 3)), [[]], grad=False),
    Row("scalar_tensor", lambda m: (m.scalar_tensor(3), m.scalar_tensor(True), m.scalar_tensor(2.5,
                                                                                             dtype=m.float64)),
        [[]], grad=False),
    Row("fill", lambda m, x: (m.fill(x, 2.5), m.fill_(x * 1, -1), m.zero_(x * 1)), [[r(2, 3)]]),
]
