"""The switches read on every op: grad mode, inference mode, anomaly detection, determinism.

Grad mode and inference mode belong to a thread, as in PyTorch: ``no_grad`` in one thread leaves the
others recording (each thread starts with grad mode on).  They are context variables, read through
:func:`is_grad_enabled` and :func:`is_inference`; the hot paths first read :data:`GRAD_OFF` and
:data:`INFERENCE_ON` (whether any thread has left the default) and only then their thread's value.  ``STATE.enabled`` /
``STATE.inference`` read and set the same values.  Anomaly detection and
determinism are process-wide, as PyTorch's are.

They live below the tensor so that every floor can read them; ``ember.autograd.grad_mode`` holds the
context managers that set them.
"""
import contextvars
import warnings


class _Modes:
    """One thread's grad and inference modes (shared by the contexts copied within the thread, so that
    ``asyncio`` tasks and ``copy_context().run`` see their thread's modes, as with PyTorch's thread-locals)."""

    __slots__ = ("grad", "inference")

    def __init__(self):
        self.grad = True
        self.inference = False


_MODES = contextvars.ContextVar("ember_modes", default=None)
modes = _MODES.get  # this thread's _Modes, or None while it has never changed them (the defaults)

GRAD_OFF: list = []      # one entry per thread with grad mode off right now
INFERENCE_ON: list = []  # one entry per thread in inference mode right now
# (lists: append and pop are atomic, and an empty list reads as false in one step on every op's path)


class _Active:
    """Process-wide facts that let an op skip reading its thread's modes: whether inference mode was ever
    used (inference tensors may exist) and whether an in-place op ever rewrote a history (views must
    check their base's version).  With :data:`GRAD_OFF` and :data:`INFERENCE_ON` empty, no thread has
    left the default modes and an op costs what a process-wide switch would."""

    __slots__ = ("inference_ever", "inplace_recorded")

    def __init__(self):
        self.inference_ever = False
        self.inplace_recorded = False


ACTIVE = _Active()


def _own():
    m = _MODES.get()
    if m is None:
        m = _Modes()
        _MODES.set(m)
    return m


def set_grad(value) -> None:
    """Set this thread's grad mode."""
    value = value is True or bool(value)
    m = _MODES.get() or _own()
    if m.grad is not value:
        if value:
            GRAD_OFF.pop()
        else:
            GRAD_OFF.append(None)
        m.grad = value


def set_inference(value) -> None:
    """Set this thread's inference mode."""
    value = value is True or bool(value)
    m = _MODES.get() or _own()
    if m.inference is not value:
        if value:
            ACTIVE.inference_ever = True
            INFERENCE_ON.append(None)
        else:
            INFERENCE_ON.pop()
        m.inference = value


def is_grad_enabled() -> bool:
    """This thread's grad mode (one list test while no thread has it off).  Hot paths inline it as
    ``not GRAD_OFF or (m := modes()) is None or m.grad``."""
    if not GRAD_OFF:
        return True
    m = _MODES.get()
    return m is None or m.grad


def is_inference() -> bool:
    """This thread's inference mode (one list test while no thread has it on)."""
    if not INFERENCE_ON:
        return False
    m = _MODES.get()
    return m is not None and m.inference


class _State:
    """``enabled`` and ``inference``: this thread's grad and inference modes; ``anomaly``: process-wide."""

    __slots__ = ("anomaly", "anomaly_nan")

    def __init__(self):
        self.anomaly = False
        self.anomaly_nan = True

    @property
    def enabled(self) -> bool:
        return is_grad_enabled()

    @enabled.setter
    def enabled(self, value):
        set_grad(value)

    @property
    def inference(self) -> bool:
        return is_inference()

    @inference.setter
    def inference(self, value):
        set_inference(value)


STATE = _State()


# whether ember.onnx.export is tracing a model now (set by it; layers with an export-only form read it)
ONNX_EXPORTING: list = [False]


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
