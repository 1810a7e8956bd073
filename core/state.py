"""The process-wide switches read on every op: grad mode, inference mode, anomaly detection.

They live below the tensor so that every floor can read them; ``ember.autograd.grad_mode`` holds the
context managers that set them.
"""


class _State:
    __slots__ = ("enabled", "inference", "anomaly", "anomaly_nan")

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.anomaly = False
        self.anomaly_nan = True


STATE = _State()
