"""Resampling: ``interpolate`` (nearest, linear/bilinear/trilinear, area), composed of ember ops; pixel
shuffle is in :mod:`ember.ops.nn`."""
from __future__ import annotations

import math
import warnings

from ... import dtypes
from ...ops.creation import create as _create
from ...ops.nn import pixel_shuffle, pixel_unshuffle  # noqa: F401  (re-exported)
from ...ops.nn_conv import adaptive_avg
from ...registry import export
from ...tensor import Tensor


def _table(input, kernel, *args):  # noqa: A002
    """An index or weight table built by ``kernel`` on ``input``'s device (a factory, like ``arange``)."""
    return _create("interpolate", input._dev, False, None, kernel, *args)


_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}
# PyTorch's kernel of each mode and the dtypes it computes (uint8 images: nearest, bilinear, bicubic)
_IMAGE = dtypes.FLOATING_AND_HALF | {dtypes.uint8}
_KERNELS = {"nearest": ("compute_indices_weights_nearest", _IMAGE),
            "nearest-exact": ("compute_indices_weights_nearest", _IMAGE),
            "linear": ("compute_indices_weights_linear", dtypes.FLOATING_AND_HALF),
            "trilinear": ("compute_indices_weights_linear", dtypes.FLOATING_AND_HALF),
            "bilinear": ("upsample_bilinear2d_channels_last", _IMAGE),
            "bicubic": ("compute_indices_weights_cubic", _IMAGE)}


@export(to=("nn.functional",))
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resize the spatial dimensions of ``(N, C, *spatial)``.

    >>> import ember
    >>> ember.nn.functional.interpolate(ember.ones(1, 1, 2, 2), scale_factor=2).shape
    ember.Size([1, 1, 4, 4])
    """
    d = input.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if d < 1:  # (PyTorch's NotImplementedError, after its size check)
        raise NotImplementedError(f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.ndim}D) for the modes: nearest | linear | bilinear | bicubic | trilinear "
                                  f"| lanczos | area | nearest-exact (got {mode})")
    sp = input.shape[2:]
    if size is not None:
        osz = tuple(size) if isinstance(size, (tuple, list)) else (size,) * d
        scales = (None,) * d
    else:
        sf = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * d
        osz = tuple(int(math.floor(s * f)) for s, f in zip(sp, sf))
        scales = (None,) * d if recompute_scale_factor else sf
    if len(osz) != d:
        raise ValueError(f"interpolate: size {list(osz)} does not match the {d} spatial dimensions of input "
                         f"{list(input.shape)}")
    if mode in _KERNELS:
        dtypes.check_kernel(_KERNELS[mode][0], input, _KERNELS[mode][1])
    out = input
    if mode in ("nearest", "nearest-exact"):
        for i in range(d):
            out = out.index_select(2 + i, _table(input, "resize_nearest_index", osz[i], sp[i], scales[i],
                                                 mode == "nearest-exact"))
        return out
    if mode == "area":
        return adaptive_avg("interpolate", d, input, osz)
    if antialias and (mode not in ("bilinear", "bicubic") or d != 2):
        raise ValueError(f"interpolate: Anti-alias option is restricted to bilinear and bicubic modes and requires "
                         f"a 4-D tensor as input (got mode {mode!r} and input of size {list(input.shape)})")
    if mode == "bicubic" and d != 2 or mode != "bicubic" and _LINEAR.get(mode) != d:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported for {input.ndim}D input")
    image = input.dtype is dtypes.uint8  # computed in float32, rounded back into uint8 as PyTorch's kernels do
    if image:
        out = input.float()
    for i in range(d):
        if antialias:
            m = _table(input, "resize_aa_weights", osz[i], sp[i], scales[i], bool(align_corners), mode == "bicubic")
        elif mode == "bicubic":
            m = _table(input, "resize_cubic_weights", osz[i], sp[i], scales[i], bool(align_corners))
        else:
            m = _table(input, "resize_linear_weights", osz[i], sp[i], scales[i], bool(align_corners))
        m = m.to(out.dtype)
        axis = 2 + i
        out = (out.transpose(axis, -1) @ m.t()).transpose(axis, -1)
    return out.round().clamp(0, 255).to(dtypes.uint8) if image else out


@export(to=("nn.functional",))
def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    return interpolate(input, size, scale_factor, mode, align_corners)



@export(to=("nn.functional",))
def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated: :func:`interpolate` with ``mode='nearest'``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


@export(to=("nn.functional",))
def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """Deprecated: :func:`interpolate` with ``mode='bilinear'`` and ``align_corners=True``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
