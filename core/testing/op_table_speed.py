"""Op table rows for the CPU fast paths of mid-size models (see ``bench/bench_midsize.py``).

Rows follow :mod:`ember.testing.op_table_shape` (``Row(name, op(m, *args), samples)``): batch
normalisation computed through a per-channel scale and shift, in training (batch statistics) and in
inference (running statistics, as PyTorch's CPU kernel: ``x * alpha + beta``), with and without the affine
parameters.  Running statistics are constant inputs (PyTorch gives them no gradient); their update in training
mutates them, so it is tested on the module (``tests/test_speed_paths.py``) rather than here.
"""
from __future__ import annotations

from .op_table_shape import Row, r


def _bn(m, x, rm, rv, w=None, b=None, training=False):
    return m.nn.functional.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5)


SPEED_ROWS = [
    Row("batch_norm_eval_affine", lambda m, x, rm, rv, w, b: _bn(m, x, rm, rv, w, b),
        [[r(3, 4, 5, 2), r(4, grad=False), r(4, positive=True, grad=False), r(4), r(4)]]),
    Row("batch_norm_eval_plain", lambda m, x, rm, rv: _bn(m, x, rm, rv),
        [[r(3, 4, 5), r(4, grad=False), r(4, positive=True, grad=False)]]),
    Row("batch_norm_eval_nc", lambda m, x, rm, rv, w: _bn(m, x, rm, rv, w),
        [[r(2, 3, 4, 4, nc=True), r(3, grad=False), r(3, positive=True, grad=False), r(3)]]),
    Row("batch_norm_train_affine", lambda m, x, w, b: _bn(m, x, None, None, w, b, True),
        [[r(4, 3, 3, 2), r(3), r(3)]]),
    Row("batch_norm_train_plain", lambda m, x: _bn(m, x, None, None, training=True), [[r(5, 3, 4)]]),
]
