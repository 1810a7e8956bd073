"""BatchNorm1d/2d/3d, LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...ops.creation import empty, ones, tensor, zeros
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._params import register_weight_bias
from .module import Module


class _NormBase(Module):
    _expected = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        register_weight_bias(self, empty(num_features, device=device, dtype=dtype) if affine else None,
                             empty(num_features, device=device, dtype=dtype) if affine and bias else None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, x):
        if x.ndim not in self._expected:
            want = " or ".join(f"{d}D" for d in self._expected)
            raise ValueError(f"{type(self).__name__}: expected {want} input (got {x.ndim}D input)")
        c = x.shape[1] if x.ndim > 1 else x.shape[0]
        if x.ndim > 1 and c != self.num_features:  # PyTorch's error (from the running statistics' size)
            raise RuntimeError(f"{type(self).__name__}({self.num_features}): running_mean should contain {c} "
                               f"elements not {self.num_features} (expected input with {self.num_features} "
                               f"channels in dimension 1, got input of size {list(x.shape)})")

    _version = 2  # version 2 saves num_batches_tracked

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        key = prefix + "num_batches_tracked"
        version = local_metadata.get("version")
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                               else tensor(0, dtype=dtypes.int64))  # an older checkpoint has no counter
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):  # noqa: A002
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / int(self.num_batches_tracked.item())
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over ``(N, C)`` or ``(N, C, L)``."""

    _expected = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)`` with running statistics.

    >>> import ember
    >>> list(ember.nn.BatchNorm2d(3).state_dict())
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    _expected = (4,)


class BatchNorm3d(_BatchNorm):
    _expected = (5,)


class _InstanceNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):  # noqa: A002
        d = self._expected[-1]
        if input.ndim not in (d - 1, d):
            raise ValueError(f"{type(self).__name__}: expected {d - 1}D or {d}D input (got {input.ndim}D input)")
        x = input.unsqueeze(0) if input.ndim == d - 1 else input
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats, self.momentum or 0.0, self.eps)
        return out.squeeze(0) if input.ndim == d - 1 else out


class InstanceNorm1d(_InstanceNorm):
    _expected = (3,)


class InstanceNorm2d(_InstanceNorm):
    """Normalise each channel of each sample over H and W."""

    _expected = (4,)


class InstanceNorm3d(_InstanceNorm):
    _expected = (5,)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dimensions, with elementwise affine."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        register_weight_bias(self, ones(ns, device=device, dtype=dtype) if elementwise_affine else None,
                             zeros(ns, device=device, dtype=dtype) if elementwise_affine and bias else None)

    def forward(self, input):  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalise over groups of channels per sample."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        register_weight_bias(self, ones(num_channels, device=device, dtype=dtype) if affine else None,
                             zeros(num_channels, device=device, dtype=dtype) if affine and bias else None)

    def forward(self, input):  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions, with an elementwise
    scale (no shift); ``eps`` None is the input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = ns, eps, elementwise_affine
        self.register_parameter("weight", Parameter(ones(ns, device=device, dtype=dtype))
                                if elementwise_affine else None)

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose statistics span the processes of a group; in a single process (the only
    kind ember runs a module in) it is :class:`BatchNorm1d`/``2d``/``3d`` for any input of at least 2 dims."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, x):
        if x.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {x.ndim}D input)")
        if x.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm({self.num_features}): expected input with {self.num_features} "
                             f"channels in dimension 1, got input of size {list(x.shape)}")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch-norm layer replaced by a :class:`SyncBatchNorm` sharing its parameters and
        buffers (the module itself when it is one)."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group, bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class CrossMapLRN2d(Module):
    """Local response normalisation across channels of ``(N, C, H, W)`` (the Lua-Torch layer): each channel
    divided by ``(k + alpha / size * sum of squares over its channel window) ^ beta``.  As PyTorch's running
    sum does, every window from channel ``(size - 1) // 2 + 1`` on also counts channel 0."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        c = input.shape[1]
        pre = int((self.size - 1) / 2 + 1)
        sq = input * input
        cs = F.pad(sq.cumsum(1), (0, 0, 0, 0, 1, 0))
        ch = np.arange(c)
        lo = tensor(np.maximum(ch - pre + 1, 0), device=input.device)
        hi = tensor(np.minimum(ch + pre - 1, c - 1) + 1, device=input.device)
        window = cs.index_select(1, hi) - cs.index_select(1, lo)
        extra = tensor((ch >= pre).astype(np.float64), dtype=input.dtype, device=input.device).reshape(1, c, 1, 1)
        scale = (window + sq[:, :1] * extra) * (self.alpha / self.size) + self.k
        return input * scale ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
