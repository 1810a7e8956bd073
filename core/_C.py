"""``ember._C``: the names PyTorch's extension module gives the tensor-subclass protocol.

>>> import ember
>>> with ember._C.DisableTorchFunctionSubclass():
...     ember._C._is_torch_function_enabled()
False
"""
from .overrides import (  # noqa: F401
    _get_function_stack_at, _is_torch_function_enabled, _is_torch_function_mode_enabled, _len_torch_function_stack,
    has_torch_function as _has_torch_function, has_torch_function_unary as _has_torch_function_unary,
    has_torch_function_variadic as _has_torch_function_variadic,
)
from .overrides import _pop_mode as _pop_torch_function_stack, _push_mode as _push_on_torch_function_stack  # noqa: F401
from .tensor import DisableTorchFunction, DisableTorchFunctionSubclass, Tensor, _disabled_torch_function_impl  # noqa: F401

from ._c_functions import _get_tracing_state, _jit_clear_class_registry, _log_api_usage_once, _nn  # noqa: F401,E402

_TensorMeta = type(Tensor)  # Tensor's metaclass (plain ``type``: ember's Tensor is a Python class)
TensorBase = Tensor


class _ScriptIR:
    """TorchScript's IR types, named for the annotations of ONNX symbolic functions (transformers' DeBERTa has
    them); ember has no TorchScript graph, so making one raises."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"ember has no torch._C.{type(self).__name__} (TorchScript IR) yet")


class Graph(_ScriptIR):
    """A TorchScript graph (a name only)."""


class Value(_ScriptIR):
    """A value of a TorchScript graph (a name only)."""


class Node(_ScriptIR):
    """A node of a TorchScript graph (a name only)."""
