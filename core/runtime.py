"""Process-wide runtime settings with PyTorch's names: determinism, threads, float32 matmul precision, ``compile``.

* ``use_deterministic_algorithms(True)``: kernels a backend declares nondeterministic
  (:attr:`ember.backend.Backend.nondeterministic_kernels`, e.g. CUDA scatters built on atomic adds) raise
  PyTorch's RuntimeError naming the op, or warn with ``warn_only=True``. The CPU kernels are all deterministic.
* ``set_num_threads(n)``: the number of threads ember's CPU work may use; BLAS (matmul, conv through GEMM) is
  limited through ``threadpoolctl`` when it is installed (the ``threads`` extra). ``get_num_threads()`` defaults
  to ``OMP_NUM_THREADS`` or the CPUs this process may run on.
* ``set_float32_matmul_precision``: "highest" (default), "high" or "medium"; anything but "highest" allows TF32
  for CUDA float32 matmuls (``ember.backends.cuda.matmul.allow_tf32``), as in PyTorch. NumPy on the CPU always
  computes in full float32.
* ``compile(model)``: returns the model (or function) unchanged; it runs eagerly, so results equal eager mode,
  which is PyTorch's contract for ``torch.compile``.
"""
from __future__ import annotations

import functools
import os
import warnings

from .registry import export
from .state import DETERMINISM

ONLY_TORCH = ("torch",)


# -------------------------------------------------------------------------------------------------- determinism
@export(to=ONLY_TORCH)
def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Make ops without a deterministic implementation raise (or, with ``warn_only``, warn) when used."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    DETERMINISM.enabled, DETERMINISM.warn_only = mode, bool(warn_only)


@export(to=ONLY_TORCH)
def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` is on."""
    return DETERMINISM.enabled


@export(to=ONLY_TORCH)
def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether the last :func:`use_deterministic_algorithms` call passed ``warn_only=True``."""
    return DETERMINISM.warn_only


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


@export(to=ONLY_TORCH)
def set_deterministic_debug_mode(debug_mode) -> None:
    """0/"default": off; 1/"warn": warn on nondeterministic ops; 2/"error": raise."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but "
                               f"got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


@export(to=ONLY_TORCH)
def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn) or 2 (error), as set by :func:`set_deterministic_debug_mode`."""
    return 0 if not DETERMINISM.enabled else 1 if DETERMINISM.warn_only else 2


# ------------------------------------------------------------------------------------------------------ threads
_THREADS: dict = {"intra": None, "inter": None, "limiter": None}


@functools.cache
def _default_threads() -> int:
    """``OMP_NUM_THREADS`` or the CPUs this process may run on, read once (as PyTorch reads them at start-up):
    the kernels ask per call."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # platforms without sched_getaffinity
        return os.cpu_count() or 1


@export(to=ONLY_TORCH)
def get_num_threads() -> int:
    """The number of threads ember's CPU kernels (and BLAS) may use."""
    return _THREADS["intra"] or _default_threads()


@export(to=ONLY_TORCH)
def set_num_threads(n: int) -> None:
    """Use at most ``n`` threads for CPU work: BLAS through ``threadpoolctl`` (when installed) and ember's pools."""
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n!r}")
    _THREADS["intra"] = n
    try:
        from threadpoolctl import threadpool_limits  # optional: the 'threads' extra
    except ImportError:
        return
    _THREADS["limiter"] = threadpool_limits(limits=n, user_api="blas")


@export(to=ONLY_TORCH)
def get_num_interop_threads() -> int:
    """Threads for running independent ops at once (ember runs ops in order: reported, not used)."""
    return _THREADS["inter"] or _default_threads()


@export(to=ONLY_TORCH)
def set_num_interop_threads(n: int) -> None:
    """Set the inter-op thread count PyTorch programs ask for; ember records it."""
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise RuntimeError(f"set_num_interop_threads expects a positive integer, got {n!r}")
    _THREADS["inter"] = n


@export(to=ONLY_TORCH)
def init_num_threads() -> None:
    """Nothing to initialise per thread in ember (PyTorch's OpenMP hook)."""


# ----------------------------------------------------------------------------------------- matmul precision
_PRECISION = ["highest"]


@export(to=ONLY_TORCH)
def set_float32_matmul_precision(precision: str) -> None:
    """"highest", "high" or "medium": the latter two allow TF32 for CUDA float32 matmuls."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _PRECISION[0] = precision
    MATMUL_FLAGS["allow_tf32"] = precision != "highest"


@export(to=ONLY_TORCH)
def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision ("highest" unless set)."""
    return _PRECISION[0]


# ``ember.backends.cuda.matmul`` reads and writes these; backends consult them
MATMUL_FLAGS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                "allow_bf16_reduced_precision_reduction": True}

# ------------------------------------------------------------------------------------------------- warnings
_WARN_ALWAYS = [False]


@export(to=ONLY_TORCH)
def set_warn_always(b: bool) -> None:
    """Warn every time rather than once for warnings PyTorch issues once (recorded; ember warns every time)."""
    _WARN_ALWAYS[0] = bool(b)


@export(to=ONLY_TORCH)
def is_warn_always_enabled() -> bool:
    return _WARN_ALWAYS[0]


# -------------------------------------------------------------------------------------------------- denormals
@export(to=ONLY_TORCH)
def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormal floats to zero could be switched to ``mode``: PyTorch's answer where the CPU
    cannot.  NumPy gives no control over the FPU's flush-to-zero flags, so this is always False and denormals
    are kept (the IEEE behaviour).

    >>> import ember
    >>> ember.set_flush_denormal(True)
    False
    """
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' (position 1) must be bool, not {type(mode).__name__}")
    return False
