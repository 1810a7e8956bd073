"""ember: a define-by-run deep-learning framework with the PyTorch programming model.

>>> import ember as torch
>>> x = torch.ones(2, 2, requires_grad=True)
>>> y = (x * 3).sum()
>>> y.backward()
>>> x.grad
tensor([[3., 3.],
        [3., 3.]])
"""
from . import plugins
from .plugins import autoload_enabled as _autoload_enabled

from .version import EMBER_RELEASE as __version__  # noqa: E402  (ember's own release; see ember.version)

# dtypes and promotion
from . import dtypes  # noqa: E402
from .dtypes import (  # noqa: E402,F401
    bfloat16, bool, cdouble, cfloat, complex64, complex128, double, dtype, finfo, float, float16, float32,
    float64, get_default_dtype, half, iinfo, int, int8, int16, int32, int64, long, promote_types,
    set_default_dtype, short, uint8,
)
from .dtypes import can_cast  # noqa: E402,F401

# devices, backends, tensors
from . import backend, kernels  # noqa: E402,F401
from .backend import device, get_default_device, set_default_device  # noqa: E402,F401
from .tensor import Size, Tensor, is_tensor, is_storage  # noqa: E402,F401
from .storage import TypedStorage, UntypedStorage  # noqa: E402,F401

# autograd
from . import autograd  # noqa: E402
from .autograd.grad_mode import (  # noqa: E402,F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from .autograd.anomaly_mode import (  # noqa: E402,F401
    is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled,
)

# operators
from . import ops  # noqa: E402
from .dispatch import result_type  # noqa: E402,F401
from .ops.creation import LEGACY_TYPES as _LEGACY  # noqa: E402
import sys as _sys  # noqa: E402

from . import registry as _registry  # noqa: E402
from . import overrides  # noqa: E402  (before the namespaces are shown: their functions carry its check)

_registry.bind("torch", _sys.modules[__name__])
from ._printing import get_printoptions, set_printoptions  # noqa: E402,F401
from .random import (  # noqa: E402,F401
    Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state,
)
from . import accelerator, cuda  # noqa: E402,F401
from . import linalg, special  # noqa: E402,F401
from . import backends, runtime  # noqa: E402,F401
from . import fft  # noqa: E402,F401
from .dtypes import chalf, complex32  # noqa: E402,F401
from .dtypes import (  # noqa: E402,F401
    float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32, uint64,
)

globals().update(_LEGACY)

# plugins: the built-in backends come through the same entry points as any other
if _autoload_enabled():
    plugins.load_entry_points()
if "cpu" not in plugins.REGISTRY.backends:
    # the CPU backend is the embedded default: present even without autoload or installed metadata
    import ember_cpu_numpy as _cpu  # noqa: E402

    if not plugins.pm.is_registered(_cpu):
        plugins.register_or_defer(_cpu, "cpu", "<manual>")
if "meta" not in plugins.REGISTRY.backends:
    from . import meta as _meta  # noqa: E402  (the meta device: shapes without data, always present)

    plugins.register(_meta, name="meta")


def is_floating_point(input):  # noqa: A002
    return input.is_floating_point()


def numel(input) -> int:  # noqa: A002
    return input.numel()


def detach(t):
    return t.detach()


def typename(obj) -> str:
    return obj.type() if isinstance(obj, Tensor) else type(obj).__name__


for _fn in (is_floating_point, numel, detach):
    _registry.export(_fn, to=("torch",))
from . import _C  # noqa: E402,F401



# PyTorch's constants: ``torch.inf``, ``torch.nan``, ``torch.pi``, ``torch.e``, and ``None`` as ``newaxis``
from math import e, inf, nan, pi  # noqa: E402,F401

newaxis = None


def _assert(condition, message):
    """``assert condition, message`` as a function call (what traced and scripted code writes); a condition
    with ``__torch_function__`` (fx's Proxy) gets the call, so symbolic tracing records the check."""
    if type(condition) is not Tensor and overrides.has_torch_function((condition,)):
        return overrides.handle_torch_function(_assert, (condition,), condition, message)
    assert condition, message


from . import nn  # noqa: E402
from . import data, optim, utils  # noqa: E402
from . import func  # noqa: E402
from .func import vmap  # noqa: E402,F401
from .serialization import load, save  # noqa: E402
from .archive_reader import PyTorchFileReader  # noqa: E402,F401
from . import hub  # noqa: E402,F401
from . import amp, cpu  # noqa: E402,F401
from .amp import autocast  # noqa: E402,F401
from .amp.autocast_mode import (  # noqa: E402,F401
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache, get_autocast_cpu_dtype,
    get_autocast_dtype, get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
    is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype, set_autocast_cpu_enabled,
    set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype,
)
from .amp.autocast_mode import LEGACY as _AMP_LEGACY  # noqa: E402

globals().update(_AMP_LEGACY)
from . import profiler  # noqa: E402,F401
from .utils.safetensors import load_file as load_safetensors  # noqa: E402
from .utils.safetensors import save_file as save_safetensors  # noqa: E402
from . import export, jit, onnx  # noqa: E402,F401
from . import testing  # noqa: E402,F401  (PyTorch imports torch.testing with torch: assert_close after import torch)
from .jit import ScriptModule  # noqa: E402,F401  (torch.ScriptModule: the scripted modules' base)
from .jit import ScriptMethod  # noqa: E402,F401  (torch.ScriptMethod: a scripted module's forward)
from . import _dynamo, compiler, version  # noqa: E402,F401  (ember.compile is _dynamo's)
from . import control_flow  # noqa: E402,F401  (ember.cond, ember.while_loop)
from . import sparse  # noqa: E402,F401  (sparse_coo_tensor, sparse_csr_tensor, spmm, Tensor.to_sparse)
from .accelerator import AcceleratorError, OutOfMemoryError, get_device_module  # noqa: E402,F401
from .accelerator import DeviceEvent as Event, DeviceStream as Stream  # noqa: E402,F401
from .amp import GradScaler  # noqa: E402,F401
from .layouts import (  # noqa: E402,F401
    channels_last, channels_last_3d, contiguous_format, jagged, layout, legacy_contiguous_format, memory_format,
    preserve_format, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided,
)
from .utils.data._worker import thread_safe_generator  # noqa: E402,F401


def __getattr__(name):
    """``ember.distributed`` and ``ember.multiprocessing`` load on first use (as attributes, like PyTorch's)."""
    if name in ("distributed", "multiprocessing"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name == "distributions":  # loads on first use, so that ``import ember`` stays fast
        import importlib

        return importlib.import_module(".distributions", __name__)
    raise AttributeError(f"module 'ember' has no attribute {name!r}")
