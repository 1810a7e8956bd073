"""The deprecated per-device spellings: ``ember.cuda.amp`` and ``ember.cpu.amp`` (``autocast``, ``GradScaler``,
``custom_fwd``/``custom_bwd``), each warning as PyTorch's does and then doing what ``ember.amp`` does."""
from __future__ import annotations

import functools
import types
import warnings

from .. import dtypes
from . import autocast_mode, grad_scaler


def _warn(old, new):
    warnings.warn(f"`{old}` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


def _namespace(device, default_dtype):
    class autocast(autocast_mode.autocast):
        __doc__ = (f"See :class:`ember.autocast`.  ``torch.{device}.amp.autocast(args...)`` is deprecated. "
                   f"Please use ``torch.amp.autocast(\"{device}\", args...)`` instead.")

        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True):
            _warn(f"torch.{device}.amp.autocast(args...)", f"torch.amp.autocast('{device}', args...)")
            super().__init__(device, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler(grad_scaler.GradScaler):
        __doc__ = (f"See :class:`ember.amp.GradScaler`.  ``torch.{device}.amp.GradScaler(args...)`` is deprecated. "
                   f"Please use ``torch.amp.GradScaler(\"{device}\", args...)`` instead.")

        def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            _warn(f"torch.{device}.amp.GradScaler(args...)", f"torch.amp.GradScaler('{device}', args...)")
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    for cls in (autocast, GradScaler):
        cls.__module__ = f"ember.{device}.amp"
    mod = types.ModuleType(f"ember.{device}.amp", f"``ember.{device}.amp``: deprecated; use ``ember.amp``.")
    mod.autocast, mod.GradScaler = autocast, GradScaler
    if device == "cuda":
        def custom_fwd(fwd=None, *, cast_inputs=None):
            _warn("torch.cuda.amp.custom_fwd(args...)", "torch.amp.custom_fwd(args..., device_type='cuda')")
            return functools.partial(autocast_mode.custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)

        def custom_bwd(bwd):
            _warn("torch.cuda.amp.custom_bwd(args...)", "torch.amp.custom_bwd(args..., device_type='cuda')")
            return functools.partial(autocast_mode.custom_bwd, device_type="cuda")(bwd)

        mod.custom_fwd, mod.custom_bwd = custom_fwd, custom_bwd
    return mod


cuda_amp = _namespace("cuda", dtypes.float16)
cpu_amp = _namespace("cpu", dtypes.bfloat16)
