"""Op table rows for the last names of PyTorch's namespaces (same row format as
:mod:`ember.testing.op_table_shape`): ``F.linear_cross_entropy`` on its reference path and chunked over the
batch (``LinearCrossEntropyOptions``: class indices without label smoothing, as PyTorch's chunked path), each
reduction, with class weights and ignored targets; label smoothing and class probabilities on the reference
path.  The chunked path computes its gradients in forward, as PyTorch's does, so it has no
second derivative (``gradgrad=False``), like PyTorch's.
"""
from __future__ import annotations

import numpy as np

from .op_table_shape import F, I, Row, r

_RNG = np.random.RandomState(2468)


def _probs(n, c):
    p = _RNG.rand(n, c) + 0.1
    return F(p / p.sum(1, keepdims=True), grad=False)


def _lce(chunk=None, **kw):
    def op(m, x, w, t, *rest):
        opts = None if chunk is None else m.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk, chunking_method=None)
        extra = dict(kw)
        if rest:
            extra["linear_bias"] = rest[0]
        if len(rest) > 1:
            extra["weight"] = rest[1]
        return m.nn.functional.linear_cross_entropy(x, w, t, options=opts, **extra)
    return op


_IDX = I([0, 4, 2, -100, 1, 3, 4])
_CW = F(_RNG.rand(5) + 0.5, grad=False)

ROWS = [
    Row("linear_cross_entropy", _lce(), [[r(7, 3), r(5, 3), I([0, 4, 2, 1, 1, 3, 4])]]),
    Row("linear_cross_entropy_kdim", _lce(), [[r(2, 3), r(5, 2, 3), I([[0, 4], [2, 1]])]]),
    Row("linear_cross_entropy_chunked_mean", _lce(2), [[r(7, 3), r(5, 3), _IDX, r(5), _CW]], gradgrad=False),
    Row("linear_cross_entropy_smooth_probs", _lce(label_smoothing=0.1), [[r(7, 3), r(5, 3), _probs(7, 5), r(5), _CW]]),
    Row("linear_cross_entropy_smooth_none", _lce(reduction="none", label_smoothing=0.2),
        [[r(7, 3), r(5, 3), _IDX, r(5), _CW]]),
    Row("linear_cross_entropy_chunked_sum", _lce(3, reduction="sum"), [[r(7, 3), r(5, 3), _IDX, r(5)]],
        gradgrad=False),
    Row("linear_cross_entropy_chunked_none", _lce(2, reduction="none"), [[r(7, 3), r(5, 3), _IDX, r(5), _CW]],
        gradgrad=False),
    Row("linear_cross_entropy_chunked_nobias", _lce(4), [[r(7, 3), r(5, 3), _IDX]], gradgrad=False),
]
