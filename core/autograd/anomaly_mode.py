"""Anomaly detection: remember each node's forward stack and fail on NaN gradients, naming the op."""
from __future__ import annotations

from .grad_mode import STATE


class detect_anomaly:
    """Context manager (and decorator) turning anomaly detection on.

    A backward that produces NaN raises ``RuntimeError`` naming the node
    (``Function 'LogBackward0' returned nan values in its 0th output.``) and
    warns with the traceback of the forward call that made it.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (STATE.anomaly, STATE.anomaly_nan)
        STATE.anomaly, STATE.anomaly_nan = True, self.check_nan

    def __exit__(self, *exc):
        STATE.anomaly, STATE.anomaly_nan = self.prev

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)

        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off (now, and undone at the end of a ``with``)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (STATE.anomaly, STATE.anomaly_nan)
        STATE.anomaly, STATE.anomaly_nan = bool(mode), check_nan

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        STATE.anomaly, STATE.anomaly_nan = self.prev


def is_anomaly_enabled() -> bool:
    return STATE.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also fails on NaN gradients."""
    return STATE.anomaly_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (and its NaN check), until changed again."""
    STATE.anomaly, STATE.anomaly_nan = bool(enabled), bool(check_nan)
