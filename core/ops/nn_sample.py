"""Spatial sampling: ``grid_sample`` (bilinear, nearest and bicubic taps; zeros, border and reflection
padding; 4-D and 5-D inputs) and ``affine_grid``.

Both are composed of ember ops: each tap of the interpolation is one ``gather`` from the flattened input
planes times a weight computed from the grid, so the gradient reaches the input (through the gather's
scatter) and the grid (through the weights), and every order of derivative is available.  The coordinate
rules (unnormalisation, clipping, reflection, cubic coefficients with ``A = -0.75``) are PyTorch's.

>>> import ember
>>> import ember.nn.functional as F
>>> x = ember.arange(4.).reshape(1, 1, 2, 2)
>>> F.grid_sample(x, ember.zeros(1, 1, 1, 2), align_corners=True).item()
1.5
"""
from __future__ import annotations

import itertools
import warnings

from .. import dtypes
from ..autograd.function import composite_node, keep_saved
from ..registry import check_tensor, export
from ..tensor import Tensor
from .creation import linspace, ones, tensor
from .pointwise import where
from .shape import stack

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}
_INTERP = {v: k for k, v in GRID_SAMPLE_INTERPOLATION_MODES.items()}
_PADDING = {v: k for k, v in GRID_SAMPLE_PADDING_MODES.items()}
_CUBIC_A = -0.75
_DEFAULT_CHANGED = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                    "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                    "grid_sample for details.")


def _unnormalize(c, size, align_corners):
    """Grid coordinates in [-1, 1] to pixel coordinates."""
    if align_corners:
        return (c + 1) * ((size - 1) / 2)
    return ((c + 1) * size - 1) / 2


def _clip(c, size):
    return c.clamp(0, size - 1)


def _reflect(c, twice_low, twice_high):
    """Reflect ``c`` into ``[twice_low / 2, twice_high / 2]`` (the floors carry no gradient)."""
    if twice_low == twice_high:
        return c * 0
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    a = (c - lo).abs()
    flips = (a / span).floor()
    extra = a - flips * span
    even = (flips - (flips / 2).floor() * 2) == 0
    return where(even, extra + lo, span - extra + lo)


def _pad_coordinate(c, size, padding_mode, align_corners):
    if padding_mode == "border":
        return _clip(c, size)
    if padding_mode == "reflection":
        r = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        return _clip(r, size)
    return c


def _cubic_coefficients(t):
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):   # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(c, size, mode, padding_mode, align_corners):
    """The taps of one dimension: ``(index, weight, in_bounds)`` per tap, from pixel coordinate ``c``."""
    if mode == "bicubic":
        base = c.floor()
        t = c - base
        taps = []
        for i, w in zip(range(-1, 3), _cubic_coefficients(t)):
            pos = _pad_coordinate(base + i, size, padding_mode, align_corners).detach()
            taps.append((pos, w))
    else:
        c = _pad_coordinate(c, size, padding_mode, align_corners)
        if mode == "nearest":
            # a weight of 1 that keeps the grid in the graph: its gradient is zero, as PyTorch's
            taps = [(c.round().detach(), (c - c.detach()) * 0 + 1)]
        else:
            base = c.floor().detach()
            t = c - base
            taps = [(base, 1 - t), (base + 1, t)]
    out = []
    for pos, w in taps:
        valid = (pos >= 0) & (pos <= size - 1)
        out.append((pos.clamp(0, size - 1).long(), w, valid))
    return out


def _check_sample(input, grid, mode):  # noqa: A002
    check_tensor(input, "grid_sampler")
    check_tensor(grid, "grid_sampler")
    d = input.ndim - 2
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != d:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {d} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but input is on "
                           f"{input.device} and grid is on {grid.device}")
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                           f"sizes {list(input.shape)}")
    if mode == "bicubic" and d == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    dtypes.check_kernel("grid_sampler_2d_{device}_kernel_impl" if d == 2 else "grid_sampler3d_{device}", input,
                        dtypes.FLOATING_AND_HALF)
    return d


@export(to=("torch",))
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,  # noqa: A002
                 align_corners: bool) -> Tensor:
    """``torch.grid_sampler``: :func:`grid_sample` with the modes as integers (``GRID_SAMPLE_*_MODES``)."""
    mode, padding = _INTERP.get(interpolation_mode), _PADDING.get(padding_mode)
    if mode is None or padding is None:
        raise RuntimeError(f"grid_sampler(): invalid interpolation_mode {interpolation_mode} or padding_mode "
                           f"{padding_mode}")
    d = _check_sample(input, grid, mode)
    n, c = input.shape[:2]
    sizes = tuple(input.shape[2:])
    out_sp = tuple(grid.shape[1:-1])
    # grid's last axis is (x, y[, z]): x indexes the last spatial dimension
    per_dim = [_taps(_unnormalize(grid[..., d - 1 - i], sizes[i], align_corners), sizes[i], mode, padding,
                     align_corners) for i in range(d)]
    strides = [1] * d
    for i in reversed(range(d - 1)):
        strides[i] = strides[i + 1] * sizes[i + 1]
    planes = input.reshape(n, c, -1)
    out = None
    for combo in itertools.product(*per_dim):
        flat, weight, valid = None, None, None
        for (pos, w, ok), s in zip(combo, strides):
            flat = pos * s if flat is None else flat + pos * s
            weight = w if weight is None else weight * w
            valid = ok if valid is None else valid & ok
        if n == 1:  # one grid for every channel: a take along the plane, not a gather of an index per element
            vals = planes.index_select(2, flat.reshape(-1)).reshape((n, c) + out_sp)
        else:
            idx = flat.reshape(n, 1, -1).expand(n, c, flat[0].numel())
            vals = planes.gather(2, idx).reshape((n, c) + out_sp)
        weight = where(valid, weight, weight.new_zeros(()))
        term = vals * weight.unsqueeze(1)
        out = term if out is None else out + term
    return keep_saved(composite_node(out, f"GridSampler{d}DBackward0"), input, grid)  # PyTorch's one node


def _grid_sampler_nd(d):
    def fn(input, grid, interpolation_mode, padding_mode, align_corners):  # noqa: A002
        if input.ndim != d + 2:
            raise RuntimeError(f"grid_sampler_{d}d(): expected {d + 2}D input, got input with sizes "
                               f"{list(input.shape)}")
        return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)

    fn.__name__ = fn.__qualname__ = f"grid_sampler_{d}d"
    fn.__doc__ = f"``torch.grid_sampler_{d}d``: :func:`grid_sampler` for {d + 2}-D inputs."
    return export(fn, to=("torch",))


grid_sampler_2d = _grid_sampler_nd(2)
grid_sampler_3d = _grid_sampler_nd(3)


@export(to=("nn.functional",))
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",  # noqa: A002
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` (or ``(N, C, D, H, W)``) at the normalised positions of ``grid``
    ``(N, H_out, W_out, 2)`` (or ``(..., 3)``), ``(-1, -1)`` the top-left corner; differentiable with respect to
    both ``input`` and ``grid``."""
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, UserWarning, stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, GRID_SAMPLE_INTERPOLATION_MODES[mode], GRID_SAMPLE_PADDING_MODES[padding_mode],
                        align_corners)


def _base_coordinates(steps, align_corners, like):
    if steps <= 1:
        return tensor([0.0], dtype=like.dtype, device=like.device)
    r = linspace(-1, 1, steps, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((steps - 1) / steps)


@export(to=("torch",))
def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``torch.affine_grid_generator``: the sampling grid of the affine maps ``theta``."""
    size = tuple(int(s) for s in size)
    sp = size[2:]
    d = len(sp)
    n = size[0]
    axes = [_base_coordinates(s, align_corners, theta) for s in reversed(sp)]  # x, y[, z]
    full = tuple(sp)
    cols = []
    for i, a in enumerate(axes):
        shape = [1] * d
        shape[d - 1 - i] = -1
        cols.append(a.reshape(shape).expand(full))
    cols.append(ones(full, dtype=theta.dtype, device=theta.device))
    base = stack(cols, -1).reshape(1, -1, d + 1)
    grid = base.matmul(theta.transpose(1, 2))
    return composite_node(grid.reshape((n,) + full + (d,)), "AffineGridGeneratorBackward0")


@export(to=("nn.functional",))
def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The ``grid_sample`` grid of a batch of affine maps: ``theta`` ``(N, 2, 3)`` for a 4-D ``size``,
    ``(N, 3, 4)`` for a 5-D one.

    >>> import ember
    >>> theta = ember.tensor([[[1., 0., 0.], [0., 1., 0.]]])
    >>> ember.nn.functional.affine_grid(theta, (1, 1, 1, 2), align_corners=True).tolist()
    [[[[-1.0, 0.0], [1.0, 0.0]]]]
    """
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, UserWarning, stacklevel=2)
        align_corners = False
    check_tensor(theta, "affine_grid")
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {list(size)}. Got "
                             f"{list(theta.shape)}.")
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {list(size)}. Got "
                             f"{list(theta.shape)}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {list(size)}.")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {list(size)}")
    return affine_grid_generator(theta, size, align_corners)


export(GRID_SAMPLE_INTERPOLATION_MODES, "GRID_SAMPLE_INTERPOLATION_MODES", to=("nn.functional",))
export(GRID_SAMPLE_PADDING_MODES, "GRID_SAMPLE_PADDING_MODES", to=("nn.functional",))
