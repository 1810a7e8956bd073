"""Automatic differentiation: the engine, grad modes, Functions and gradient checks."""
from . import grad_mode  # noqa: F401
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import backward, grad
from .function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, Node, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .legacy import Variable

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "NestedIOFunction", "Node", "Variable", "backward",
           "detect_anomaly", "enable_grad", "grad", "gradcheck", "gradgradcheck", "GradcheckError",
           "inference_mode", "is_anomaly_enabled", "no_grad", "once_differentiable", "set_detect_anomaly",
           "set_grad_enabled"]


class _FunctionModule:
    pass


function = _FunctionModule()
function.Function = Function
function.once_differentiable = once_differentiable
function.FunctionCtx = FunctionCtx

from . import graph  # noqa: E402
from .anomaly_mode import is_anomaly_check_nan_enabled, set_anomaly_enabled  # noqa: E402,F401
from .extras import (  # noqa: E402,F401
    DeviceType, ProfilerConfig, ProfilerEvent, ProfilerState, SavedTensor, enforce_grad_layout_policy,
    is_multithreading_enabled, is_tensor_like, is_view_replay_enabled, kineto_available, set_multithreading_enabled,
    variable,
)
