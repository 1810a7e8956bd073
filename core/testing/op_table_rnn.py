"""Op table rows for the stacked LSTM op (layers in one direction, run as a wavefront; same row format as
:mod:`ember.testing.op_table_shape`)."""
from __future__ import annotations

from .op_table_nn2 import _recurrent, _recurrent_samples
from .op_table_shape import Row

ROWS = [
    Row("lstm_stack", _recurrent("lstm", 2, 1, True, False), _recurrent_samples("lstm", 2, 1, True, False),
        gradgrad=False, rtol=1e-4, atol=1e-5),
    Row("lstm_stack_no_bias", _recurrent("lstm", 3, 1, False, True), _recurrent_samples("lstm", 3, 1, False, True),
        gradgrad=False, rtol=1e-4, atol=1e-5),
]
