"""The smaller names of ``torch.autograd``: engine switches, tensor-likeness and the profiler's enums."""
from __future__ import annotations

import enum
import functools
from typing import NamedTuple

from ..tensor import Tensor
from .function import _Packed, unpack_saved

__all__ = ["DeviceType", "ProfilerConfig", "ProfilerEvent", "ProfilerState", "SavedTensor",
           "enforce_grad_layout_policy", "is_tensor_like", "is_multithreading_enabled", "is_view_replay_enabled",
           "kineto_available", "set_multithreading_enabled", "variable"]

_MULTITHREADING = [True]


def variable(*args, **kwargs):
    """Deprecated: ``torch.autograd.variable(...)`` raises, as in PyTorch; use ``ember.tensor(...)``."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a Tensor or has a ``__torch_function__`` (a Tensor-like type)."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def is_multithreading_enabled() -> bool:
    """Whether backward may run device work on several threads (the setting; ember's engine runs in the caller)."""
    return _MULTITHREADING[0]


class set_multithreading_enabled:
    """Allow or forbid multithreaded backward: takes effect at once; a ``with`` block undoes it on exit."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self.prev = _MULTITHREADING[0]
        _MULTITHREADING[0] = self.mode

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _MULTITHREADING[0] = self.prev
        return False

    def clone(self):
        return set_multithreading_enabled(self.mode)

    def __call__(self, fn):
        _MULTITHREADING[0] = self.prev  # used as a decorator: only the call is affected

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_multithreading_enabled(self.mode):
                return fn(*args, **kwargs)

        return wrapper


class enforce_grad_layout_policy(set_multithreading_enabled):
    """Whether accumulated gradients must match their parameter's layout (a function or a ``with`` block).

    ember's gradients are always dense and laid out like their parameter, so either setting gives the same
    ``.grad``; the switch is kept for programs that set it.
    """

    def __init__(self, enable: bool = True):
        self.mode = bool(enable)
        self.prev = _LAYOUT[0]
        _LAYOUT[0] = self.mode

    def __exit__(self, *exc):
        _LAYOUT[0] = self.prev
        return False

    def clone(self):
        return enforce_grad_layout_policy(self.mode)

    def __call__(self, fn):
        _LAYOUT[0] = self.prev

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with enforce_grad_layout_policy(self.mode):
                return fn(*args, **kwargs)

        return wrapper


_LAYOUT = [True]


def is_view_replay_enabled() -> bool:
    """Whether views are replayed instead of as_strided in backward (ember always replays its view chain: off
    in PyTorch's sense, which refers to a debugging switch)."""
    return False


def kineto_available() -> bool:
    """Whether the Kineto profiler library is present: never in ember (its profiler is its own)."""
    return False


class ProfilerState(enum.Enum):
    """The legacy profiler's states (PyTorch's values)."""

    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9


class DeviceType(enum.Enum):
    """Device kinds, as PyTorch numbers them."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    MTIA = 19
    PrivateUse1 = 20


class ProfilerConfig(NamedTuple):
    """What the legacy profiler records."""

    state: ProfilerState
    report_input_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    with_flops: bool = False
    with_modules: bool = False
    experimental_config: object = None
    trace_id: str = ""


class ProfilerEvent:
    """One raw event of the legacy profiler: ``kind`` ("push", "pop", "mark", "memory_alloc"), name, times."""

    def __init__(self, kind: str, name: str, thread_id: int = 0, start_us: float = 0.0, handle: int = 0,
                 device: int = -1, shapes=(), cpu_memory_usage: int = 0, cuda_memory_usage: int = 0,
                 sequence_nr: int = -1, stack=(), scope: int = 0, flops: int = 0):
        self._kind, self._name = kind, name
        self.thread_id, self._start_us, self.handle, self._device = thread_id, start_us, handle, device
        self._shapes, self._cpu_mem, self._cuda_mem = list(shapes), cpu_memory_usage, cuda_memory_usage
        self.sequence_nr, self._stack, self.scope, self.flops = sequence_nr, list(stack), scope, flops
        self.fwd_thread_id, self.node_id, self.correlation_id = thread_id, -1, 0
        self.is_async = self.is_remote = False
        self.has_cuda = device >= 0

    def kind(self):
        return self._kind

    def name(self):
        return self._name

    def device(self):
        return self._device

    def shapes(self):
        return self._shapes

    def stack(self):
        return self._stack

    def start_us(self):
        return self._start_us

    def cpu_memory_usage(self):
        return self._cpu_mem

    def cuda_memory_usage(self):
        return self._cuda_mem

    def cpu_elapsed_us(self, other):
        return other._start_us - self._start_us

    def cuda_elapsed_us(self, other):
        return other._start_us - self._start_us


class SavedTensor:
    """One tensor a graph node saved for backward; ``register_hooks(pack, unpack)`` repacks it.

    ``SavedTensor(node, i)`` is the ``i``-th value ``node`` saved (its inputs, for a built-in op).
    """

    def __init__(self, node, index):
        self._node, self._index = node, index

    def register_hooks(self, pack_hook, unpack_hook):
        node = self._node
        node._check_released()
        saved = list(node._saved)
        cur = saved[self._index]
        if type(cur) is _Packed:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set.")
        if not node._packed:  # the other values keep their place; version checks no longer apply to them
            saved = list(unpack_saved(node.inputs if node._op else node.saved_tensors))
        saved[self._index] = _Packed(cur, pack_hook, unpack_hook)
        node._saved = tuple(saved)
        node._vers = (None,) * len(saved)
        node._packed = True
