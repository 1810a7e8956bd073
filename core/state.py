"""The process-wide switches read on every op: grad mode, inference mode, anomaly detection, determinism.

They live below the tensor so that every floor can read them; ``ember.autograd.grad_mode`` holds the
context managers that set them.
"""
import warnings


class _State:
    __slots__ = ("enabled", "inference", "anomaly", "anomaly_nan")

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.anomaly = False
        self.anomaly_nan = True


STATE = _State()


class _Determinism:
    """``ember.use_deterministic_algorithms``: whether ops without a deterministic kernel raise (or warn)."""

    __slots__ = ("enabled", "warn_only")

    def __init__(self):
        self.enabled = False
        self.warn_only = False


DETERMINISM = _Determinism()


def alert_not_deterministic(caller: str) -> None:
    """PyTorch's error (a warning with ``warn_only=True``) for an op with no deterministic implementation."""
    msg = (f"{caller} does not have a deterministic implementation, but you set "
           "'ember.use_deterministic_algorithms(True)'. You can turn off determinism just for this operation, or "
           "you can use the 'warn_only=True' option, if that's acceptable for your application.")
    if DETERMINISM.warn_only:
        warnings.warn(msg, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(msg)
