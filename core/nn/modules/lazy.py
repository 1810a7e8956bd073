"""Lazy modules: layers whose input size is read from their first input (``LazyLinear(10)`` learns its
``in_features`` on the first call), as PyTorch's ``Lazy*``.

Until then their parameters (and buffers) are :class:`~ember.nn.parameter.UninitializedParameter`
placeholders; the first forward (or a ``load_state_dict`` with real tensors) materialises them, runs
``reset_parameters`` and turns the module into its eager class (``cls_to_become``).

>>> import ember
>>> m = ember.nn.LazyLinear(3)
>>> m(ember.ones(2, 5)).shape, type(m).__name__, m.in_features
(ember.Size([2, 3]), 'Linear', 5)
"""
from __future__ import annotations

from ...ops.creation import tensor
from ... import dtypes
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from . import conv, linear
from .conv import _ConvNd, Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _NormBase,
)


class LazyModuleMixin:
    """Infers a module's parameter shapes from its first input; subclasses write ``initialize_parameters``."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lazy_setup()

    def _lazy_setup(self):
        self._lazy_load_handle = self.register_load_state_dict_pre_hook(_lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still a placeholder."""
        return any(is_lazy(v) for v in list(self._parameters.values()) + list(self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _replicate_for_data_parallel(self):
        if self.has_uninitialized_params():
            raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a "
                               "dummy forward pass to correctly initialize the modules")
        return self


def _infer_parameters(module, args, kwargs):
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    module._lazy_load_handle.remove()
    del module._initialize_hook
    del module._lazy_load_handle
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


def _lazy_load_hook(module, state_dict, prefix, *rest):
    """Materialise each placeholder that the state dict has a real tensor for (before shapes are compared)."""
    for store in (module._parameters, module._buffers):
        for name, value in store.items():
            key = prefix + name
            if key in state_dict and is_lazy(value) and not is_lazy(state_dict[key]):
                value.materialize(tuple(state_dict[key].shape))


# --------------------------------------------------------------------------- linear
class LazyLinear(LazyModuleMixin, Linear):
    """A :class:`Linear` whose ``in_features`` is read from its first input's last dimension."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:  # noqa: A002
        if not self.has_uninitialized_params():  # loaded from a state dict
            self.in_features = self.weight.shape[1]
        else:
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


# --------------------------------------------------------------------------- convolutions
class _LazyConvMixin(LazyModuleMixin):
    def _lazy_conv_init(self, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                        output_padding, device, dtype):
        _ConvNd.__init__(self, 0, 0, kernel_size, stride, padding, dilation, 1, False, padding_mode, output_padding)
        self._lazy_setup()
        self.groups, self.out_channels = groups, out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:  # noqa: A002
        if not self.has_uninitialized_params():  # loaded from a state dict
            w = self.weight.shape
            self.in_channels = w[0] if self.transposed else w[1] * self.groups
            return
        d = self._dims
        if input.ndim not in (d + 1, d + 2):
            raise RuntimeError(f"{type(self).__name__}: expected {d + 1}D (unbatched) or {d + 2}D (batched) input, "
                               f"but got input of size: {list(input.shape)}")
        c = input.shape[0] if input.ndim == d + 1 else input.shape[1]
        if c % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        self.in_channels = c
        g = self.groups
        shape = ((c, self.out_channels // g) if self.transposed else (self.out_channels, c // g)) + self.kernel_size
        self.weight.materialize(shape)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv(eager, doc):
    class Lazy(_LazyConvMixin, eager):
        cls_to_become = eager

        if eager.transposed:
            def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                         dilation=1, padding_mode="zeros", device=None, dtype=None):
                if padding_mode != "zeros":
                    raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
                self._lazy_conv_init(out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                                     output_padding, device, dtype)
        else:
            def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                         padding_mode="zeros", device=None, dtype=None):
                self._lazy_conv_init(out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                                     0, device, dtype)

    Lazy.__name__ = Lazy.__qualname__ = "Lazy" + eager.__name__
    Lazy.__doc__ = doc
    Lazy.__module__ = __name__
    return Lazy


LazyConv1d = _lazy_conv(Conv1d, "A :class:`Conv1d` whose ``in_channels`` is read from its first input.")
LazyConv2d = _lazy_conv(Conv2d, "A :class:`Conv2d` whose ``in_channels`` is read from its first input.")
LazyConv3d = _lazy_conv(Conv3d, "A :class:`Conv3d` whose ``in_channels`` is read from its first input.")
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, "A lazy :class:`ConvTranspose1d`.")
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, "A lazy :class:`ConvTranspose2d`.")
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, "A lazy :class:`ConvTranspose3d`.")


# --------------------------------------------------------------------------- normalisation
class _LazyNormMixin(LazyModuleMixin):
    def _lazy_norm_init(self, eps, momentum, affine, track_running_stats, device, dtype, bias):
        _NormBase.__init__(self, 0, eps, momentum, False, False)
        self._lazy_setup()
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=dtypes.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:  # noqa: A002
        if not self.has_uninitialized_params():  # loaded from a state dict (or nothing to infer)
            stats = self.weight if self.affine else self.running_mean
            if stats is not None:
                self.num_features = stats.shape[0]
            return
        d = self._expected[-1]
        self.num_features = input.shape[0] if input.ndim == d - 1 and self._unbatched_ok else input.shape[1]
        for name in ("weight", "bias"):
            if self.affine and getattr(self, name) is not None:
                getattr(self, name).materialize((self.num_features,))
        for name in ("running_mean", "running_var"):
            if self.track_running_stats:
                getattr(self, name).materialize((self.num_features,))
        self.reset_parameters()


def _lazy_norm(eager, unbatched_ok):
    class Lazy(_LazyNormMixin, eager):
        cls_to_become = eager
        _unbatched_ok = unbatched_ok

        # (the lazy instance norms too default to affine and tracked statistics, as PyTorch's do)
        def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                     bias=True):
            self._lazy_norm_init(eps, momentum, affine, track_running_stats, device, dtype, bias)

    Lazy.__name__ = Lazy.__qualname__ = "Lazy" + eager.__name__
    Lazy.__doc__ = f"A :class:`{eager.__name__}` whose ``num_features`` is read from its first input."
    Lazy.__module__ = __name__
    return Lazy


LazyBatchNorm1d = _lazy_norm(BatchNorm1d, False)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, False)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, False)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, True)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, True)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, True)


# PyTorch's modules of these paths show the lazy classes (imports and pickled models name them there)
for _module, _names in ((conv, ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
                                 "LazyConvTranspose3d")), (linear, ("LazyLinear",))):
    for _name in _names:
        setattr(_module, _name, globals()[_name])
