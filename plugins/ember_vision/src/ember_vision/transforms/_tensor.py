"""Image operations on ember tensors of shape ``(..., C, H, W)``, written with ember ops only.

Geometry (resize weights, rotation source coordinates, padding indices) is computed on the host
with NumPy as small index/weight tables; the pixel work is vectorised ember ops (two matmuls for a
resize, one gather for a rotation), so it runs on any backend.  Integer images are computed in
float and rounded back, like PIL does.
"""
from __future__ import annotations

import math

import numpy as np

import ember
from ember.nn import functional as F

# PIL's resampling filters: (filter on distance in input pixels, support radius)
_A = -0.5  # PIL's bicubic parameter


def _triangle(x):
    return np.clip(1.0 - np.abs(x), 0.0, None)


def _cubic(x):
    x = np.abs(x)
    near = ((_A + 2) * x - (_A + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * _A
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


FILTERS = {"bilinear": (_triangle, 1.0), "bicubic": (_cubic, 2.0)}


def bound(img) -> float:
    return 1.0 if img.is_floating_point() else float(ember.iinfo(img.dtype).max)


def size(img):
    return [int(img.shape[-1]), int(img.shape[-2])]


def channels(img) -> int:
    return 1 if img.ndim == 2 else int(img.shape[-3])


def _as_float(img):
    return img if img.is_floating_point() else img.to(ember.float32)


def _back(out, img):
    """Cast a float result back to ``img``'s dtype (rounded and clamped for integer images)."""
    if img.is_floating_point():
        return out.to(img.dtype)
    return out.round().clamp(0, bound(img)).to(img.dtype)


def _resize_matrix(n_in: int, n_out: int, mode: str) -> np.ndarray:
    """``(n_out, n_in)`` weights of PIL's antialiased resampling (the filter widens when shrinking)."""
    if mode not in FILTERS:
        raise ValueError(f"resize: interpolation {mode!r} works on PIL images only; tensors take nearest, "
                         f"bilinear or bicubic")
    filt, _ = FILTERS[mode]
    scale = n_in / n_out
    center = (np.arange(n_out) + 0.5) * scale
    w = filt((np.arange(n_in)[None, :] + 0.5 - center[:, None]) / max(scale, 1.0))
    return w / w.sum(axis=1, keepdims=True)


def _table(a: np.ndarray, like):
    """A host-computed weight table as a tensor on ``like``'s device, in its float dtype."""
    dtype = like.dtype if like.is_floating_point() else ember.float32
    return ember.as_tensor(a, device=like.device).to(dtype)


def _nearest_index(n_in: int, n_out: int, exact: bool, like):
    """PyTorch's nearest source pixels, ``floor(i * in / out)`` (``exact``: of the centres, ``i + 0.5``), in
    float32 as its kernel computes them."""
    scale = np.float32(n_in) / np.float32(n_out)
    src = np.floor((np.arange(n_out, dtype=np.float32) + np.float32(0.5 if exact else 0.0)) * scale)
    return ember.as_tensor(np.minimum(src.astype(np.int64), n_in - 1), device=like.device)


def resize(img, hw, mode: str, antialias: bool = True):
    """torchvision's tensor resize: nearest takes PyTorch's ``floor(i * in / out)`` source pixels (nearest-exact
    the pixels under the centres, as PIL); bilinear and bicubic ``interpolate`` in float, antialiased when
    ``antialias``, rounded back for integer images.  Box, hamming and lanczos, which ``interpolate`` lacks, take
    PIL's filters in a width pass then a height pass."""
    if mode in ("nearest", "nearest-exact"):  # a gather of whole pixels: no arithmetic on the values
        exact = mode == "nearest-exact"
        rows, cols = (_nearest_index(int(img.shape[d]), n, exact, img) for d, n in ((-2, hw[0]), (-1, hw[1])))
        return img.index_select(-2, rows).index_select(-1, cols)
    if mode in ("bilinear", "bicubic"):
        x = _as_float(img)
        x4 = x.reshape(-1, *x.shape[-3:])
        out = F.interpolate(x4, size=tuple(hw), mode=mode, align_corners=False, antialias=antialias)
        out = out.reshape(*x.shape[:-2], *hw)
        if img.is_floating_point():
            return out.to(img.dtype)
        return (out.clamp(0, 255) if mode == "bicubic" and img.dtype == ember.uint8 else out).round().to(img.dtype)
    h, w = int(img.shape[-2]), int(img.shape[-1])
    x = img
    if hw[1] != w:
        x = _back(ember.matmul(_as_float(x), _table(_resize_matrix(w, hw[1], mode).T, x)), img)
    if hw[0] != h:
        x = _back(ember.matmul(_table(_resize_matrix(h, hw[0], mode), x), _as_float(x)), img)
    return x


def crop(img, top: int, left: int, height: int, width: int):
    h, w = int(img.shape[-2]), int(img.shape[-1])
    if top < 0 or left < 0 or top + height > h or left + width > w:
        # as torchvision: the part outside the image is zero padding
        pads = [max(-left, 0), max(left + width - w, 0), max(-top, 0), max(top + height - h, 0)]
        img = pad(img, pads, 0, "constant")
        top, left = top + pads[2], left + pads[0]
    return img[..., top:top + height, left:left + width]


def pad(img, padding, fill, mode: str):
    """``padding = [left, right, top, bottom]``; the non-constant modes gather rows and columns
    by indices that ``np.pad`` computes with the same mode names (edge, reflect, symmetric)."""
    left, right, top, bottom = padding
    if mode == "constant":
        if not isinstance(fill, (int, float)):
            raise TypeError(f"pad: a tensor image takes a number as fill, got {type(fill).__name__}")
        return F.pad(img, (left, right, top, bottom), value=float(fill))
    h, w = int(img.shape[-2]), int(img.shape[-1])
    rows = np.pad(np.arange(h), (top, bottom), mode=mode)
    cols = np.pad(np.arange(w), (left, right), mode=mode)
    dev = img.device
    return img.index_select(-2, ember.as_tensor(rows, device=dev)).index_select(-1, ember.as_tensor(cols, device=dev))


def hflip(img):
    return img.flip(-1)


def vflip(img):
    return img.flip(-2)


def rgb_to_grayscale(img, num_output_channels: int):
    """torchvision's tensor luma ``0.2989 R + 0.587 G + 0.114 B`` (truncated for integer images)."""
    r, g, b = img[..., 0, :, :], img[..., 1, :, :], img[..., 2, :, :]
    gray = (0.2989 * _as_float(r) + 0.587 * _as_float(g) + 0.114 * _as_float(b)).unsqueeze(-3).to(img.dtype)
    return gray.expand(*gray.shape[:-3], num_output_channels, *gray.shape[-2:]).contiguous()


def _blend(a, b, ratio: float, img):
    """``ratio * a + (1 - ratio) * b`` clamped to the image range; an integer image's result is truncated, not
    rounded, as torchvision's tensor kernels do."""
    return (ratio * _as_float(a) + (1.0 - ratio) * _as_float(b)).clamp(0, bound(img)).to(img.dtype)


def adjust_brightness(img, factor: float):
    return _blend(img, ember.zeros_like(_as_float(img)), factor, img)


def adjust_contrast(img, factor: float):
    gray = rgb_to_grayscale(img, 1) if channels(img) == 3 else img
    mean = _as_float(gray).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, factor, img)


def adjust_saturation(img, factor: float):
    if channels(img) == 1:
        return img
    return _blend(img, rgb_to_grayscale(img, 1), factor, img)


def _rgb_to_hsv(x):
    r, g, b = x.unbind(-3)
    maxc, minc = x.amax(dim=-3), x.amin(dim=-3)
    cr = maxc - minc
    s = cr / ember.where(maxc == 0, ember.ones_like(maxc), maxc)
    crd = ember.where(cr == 0, ember.ones_like(cr), cr)
    rc, gc, bc = (maxc - r) / crd, (maxc - g) / crd, (maxc - b) / crd
    h = ember.where(maxc == r, bc - gc, ember.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = ember.remainder(h / 6.0 + 1.0, 1.0)
    return h, s, maxc


def _hsv_to_rgb(h, s, v):
    i = (h * 6.0).floor()
    f = h * 6.0 - i
    i = ember.remainder(i, 6).unsqueeze(-3)
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    # the channel values for each of the six hue sectors
    table = {0: (v, t, p), 1: (q, v, p), 2: (p, v, t), 3: (p, q, v), 4: (t, p, v), 5: (v, p, q)}
    out = ember.zeros_like(ember.stack((v, v, v), dim=-3))
    for sector, rgb in table.items():
        out = ember.where(i == sector, ember.stack(rgb, dim=-3), out)
    return out


def adjust_hue(img, factor: float):
    if channels(img) == 1:
        return img
    x = _as_float(img) / bound(img)
    h, s, v = _rgb_to_hsv(x)
    h = ember.remainder(h + factor, 1.0)
    out = _hsv_to_rgb(h, s, v)
    return out.to(img.dtype) if img.is_floating_point() else rescale(out, img.dtype)  # as torchvision converts back


def erase(img, i: int, j: int, h: int, w: int, v):
    out = img.clone()
    out[..., i:i + h, j:j + w] = v
    return out


def normalize(img, mean, std):
    dev, dt = img.device, img.dtype
    m = ember.as_tensor(mean, dtype=dt, device=dev).reshape(-1, 1, 1)
    s = ember.as_tensor(std, dtype=dt, device=dev).reshape(-1, 1, 1)
    if bool((s == 0).any()):
        raise ValueError(f"normalize: std evaluated to zero after conversion to {dt}, leading to division by zero")
    return (img - m) / s


# -- AutoAugment's colour operations
def invert(img):
    return (bound(img) if img.is_floating_point() else int(bound(img))) - img


def posterize(img, bits: int):
    """Keep the top ``bits`` bits of each uint8 value."""
    return img & -int(2 ** (8 - bits))


def solarize(img, threshold: float):
    return ember.where(img >= threshold, invert(img), img)


def autocontrast(img):
    """Stretch each channel to the full range (a flat channel is left as it is)."""
    x = _as_float(img)
    low, high = x.amin(dim=(-2, -1), keepdim=True), x.amax(dim=(-2, -1), keepdim=True)
    flat = high == low
    scale = ember.where(flat, ember.ones_like(high), bound(img) / ember.where(flat, ember.ones_like(high), high - low))
    low = ember.where(flat, ember.zeros_like(low), low)
    return ((x - low) * scale).clamp(0, bound(img)).to(img.dtype)


def _equalize_channel(chan):
    """PIL's histogram equalisation of one uint8 channel: a look-up table from the cumulative histogram, the
    last non-empty bin excluded from the step."""
    hist = ember.bincount(chan.reshape(-1).long(), minlength=256)
    nonzero = hist[hist != 0]
    step = int(nonzero[:-1].sum().item()) // 255
    if step == 0:
        return chan
    lut = ember.div(ember.cumsum(hist, 0) + step // 2, step, rounding_mode="floor")
    lut = F.pad(lut, [1, 0])[:-1].clamp(0, 255)
    return lut[chan.long()].to(ember.uint8)


def equalize(img):
    flat = img.reshape(-1, *img.shape[-2:])
    return ember.stack([_equalize_channel(c) for c in flat]).reshape(img.shape)


def adjust_sharpness(img, factor: float):
    """Blend with a smoothed copy (3x3 kernel, centre weight 5, border pixels kept)."""
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    c = channels(img)
    x = _as_float(img).reshape(-1, c, *img.shape[-2:])
    kernel = ember.ones(3, 3, device=img.device, dtype=x.dtype)
    kernel[1, 1] = 5.0
    kernel = (kernel / kernel.sum()).expand(c, 1, 3, 3)
    smooth = _back(F.conv2d(x, kernel, groups=c), img).reshape(*img.shape[:-2], *(s - 2 for s in img.shape[-2:]))
    degenerate = img.clone()
    degenerate[..., 1:-1, 1:-1] = smooth
    return _blend(img, degenerate, factor, img)


# -- geometry through a sampling grid (torchvision's tensor affine, perspective and elastic transforms)
def _grid_taps(grid: np.ndarray, h: int, w: int, mode: str):
    """The taps of ``grid_sample`` (zeros padding, ``align_corners=False``) at ``grid`` ([L, 2], (x, y) in
    [-1, 1]) on an ``h`` x ``w`` plane padded with zeros (one row and column before, two after): a list of (flat
    indices into the padded plane, weights) per tap, in PyTorch's order (north-west, north-east, south-west,
    south-east) and arithmetic, in ``grid``'s dtype.  A tap outside the plane reads a zero of the padding; a
    sample with no tap inside reads the last two rows and columns."""
    ix = ((grid[:, 0] + 1) * w - 1) / 2
    iy = ((grid[:, 1] + 1) * h - 1) / 2
    near = mode == "nearest"
    fx, fy = (np.rint(ix), np.rint(iy)) if near else (np.floor(ix), np.floor(iy))
    lo = 0 if near else -1  # the lowest source whose taps reach into the plane
    x0 = np.where((fx >= lo) & (fx <= w - 1), fx, w)
    y0 = np.where((fy >= lo) & (fy <= h - 1), fy, h)
    stride = w + 3
    big = (h + 3) * stride > 2 ** 24  # flat indices exact in float32 and held in int32 below that
    dt = np.float64 if big else np.float32
    x0, y0 = x0.astype(dt, copy=False), y0.astype(dt, copy=False)
    y0 += 1
    y0 *= stride
    x0 += 1
    y0 += x0
    nw = y0.astype(np.int64 if big else np.int32)
    if near:
        return [(nw, None)]
    ix -= fx
    iy -= fy
    ex, sy = np.subtract(1, ix, out=fx), np.subtract(1, iy, out=fy)
    return [(nw, sy * ex), (nw + 1, sy * ix), (nw + stride, iy * ex), (nw + (stride + 1), iy * ix)]


def grid_transform(img, grid, mode: str, fill):
    """Sample ``img`` at ``grid`` ([1, H, W, 2] in [-1, 1]); outside is zero, or ``fill`` when given (nearest:
    pixels whose sample is mostly outside; bilinear: blended by the inside fraction).

    A grid without gradient is turned into taps on the host (:func:`_grid_taps`) and every image of the batch
    reads them in one ``index_select`` per tap from the zero-padded image; the arithmetic is ``grid_sample``'s,
    tap by tap (a tap outside adds weight times zero, as there)."""
    if grid.requires_grad:
        return _grid_sample(img, grid, mode, fill)
    h, w = int(img.shape[-2]), int(img.shape[-1])
    oh, ow = int(grid.shape[1]), int(grid.shape[2])
    x = _as_float(img).reshape(-1, h, w)
    if fill is not None:  # a plane of ones, whose sample is the inside fraction
        x = ember.cat((x, ember.ones_like(x[:1])))
    x = F.pad(x, [1, 2, 1, 2]).reshape(x.shape[0], -1)
    out = None
    for index, weight in _grid_taps(grid.detach().cpu().numpy().reshape(-1, 2), h, w, mode):
        term = x.index_select(1, ember.as_tensor(index, device=img.device))
        term = term if weight is None else term * _table(weight, x)
        out = term if out is None else out + term
    if fill is not None:
        out = _fill_outside(out[:-1].reshape(-1, channels(img), oh, ow), out[-1].reshape(oh, ow), mode, fill)
    out = out.reshape(*img.shape[:-2], oh, ow)
    return out.to(img.dtype) if img.is_floating_point() else out.round().to(img.dtype)


def _fill_outside(out, mask, mode, fill):
    """``out`` with ``fill`` where ``mask`` (the inside fraction of each sample) says the source is outside."""
    values = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
    fill_img = ember.tensor(values, dtype=out.dtype, device=out.device).view(1, -1, 1, 1).expand_as(out)
    if mode == "nearest":
        return ember.where(mask < 0.5, fill_img, out)
    return out * mask + (1.0 - mask) * fill_img


def _grid_sample(img, grid, mode: str, fill):
    """:func:`grid_transform` through ``grid_sample``, differentiable in ``grid``."""
    x = _as_float(img).reshape(1, -1, *img.shape[-2:])
    grid = grid.to(x.dtype)
    if fill is not None:
        x = ember.cat((x, ember.ones_like(x[:, :1])), dim=1)
    out = F.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        out = _fill_outside(out[:, :-1].reshape(-1, channels(img), *out.shape[-2:]), out[0, -1], mode, fill)
    out = out.reshape(*img.shape[:-2], *out.shape[-2:])
    return out.to(img.dtype) if img.is_floating_point() else out.round().to(img.dtype)


def _base_grid(h: int, w: int, like):
    """[1, H, W, 3] pixel-centre coordinates (x, y, 1) from the image centre."""
    xs = ember.linspace(-w * 0.5 + 0.5, w * 0.5 - 0.5, w, dtype=like, device=None)
    ys = ember.linspace(-h * 0.5 + 0.5, h * 0.5 - 0.5, h, dtype=like, device=None)
    return ember.stack([xs[None, :].expand(h, w), ys[:, None].expand(h, w), ember.ones(h, w, dtype=like)], -1)[None]


def affine(img, matrix, mode: str, fill, out_size=None):
    """Sample at the inverse-affine positions ``matrix`` ([a, b, c, d, e, f], centre-origin pixels), into an
    ``out_size`` ``(height, width)`` output (the input's size by default)."""
    h, w = int(img.shape[-2]), int(img.shape[-1])
    oh, ow = (h, w) if out_size is None else out_size
    dtype = img.dtype if img.is_floating_point() else ember.float32
    theta = ember.tensor(matrix, dtype=dtype).reshape(1, 2, 3)
    scale = ember.tensor([0.5 * w, 0.5 * h], dtype=dtype)
    grid = (_base_grid(oh, ow, dtype).reshape(1, oh * ow, 3) @ (theta.transpose(1, 2) / scale)).reshape(1, oh, ow, 2)
    return grid_transform(img, grid.to(img.device), mode, fill)


def perspective(img, coeffs, mode: str, fill):
    """Sample at ``((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1))`` for each output
    pixel centre ``(x, y)``."""
    oh, ow = int(img.shape[-2]), int(img.shape[-1])
    dtype = img.dtype if img.is_floating_point() else ember.float32
    theta1 = ember.tensor([[coeffs[0], coeffs[1], coeffs[2]], [coeffs[3], coeffs[4], coeffs[5]]], dtype=dtype)
    theta2 = ember.tensor([[coeffs[6], coeffs[7], 1.0]] * 2, dtype=dtype)
    xs = ember.linspace(0.5, ow - 0.5, ow, dtype=dtype)
    ys = ember.linspace(0.5, oh - 0.5, oh, dtype=dtype)
    base = ember.stack([xs[None, :].expand(oh, ow), ys[:, None].expand(oh, ow), ember.ones(oh, ow, dtype=dtype)], -1)
    base = base.reshape(oh * ow, 3)
    scale = ember.tensor([0.5 * ow, 0.5 * oh], dtype=dtype)
    grid = (base @ (theta1.t() / scale)) / (base @ theta2.t()) - 1.0
    return grid_transform(img, grid.reshape(1, oh, ow, 2).to(img.device), mode, fill)


def elastic(img, displacement, mode: str, fill):
    """Sample at the identity grid plus ``displacement`` ([1, H, W, 2], in [-1, 1] units)."""
    h, w = int(img.shape[-2]), int(img.shape[-1])
    ys = ember.linspace((-h + 1) / h, (h - 1) / h, h)
    xs = ember.linspace((-w + 1) / w, (w - 1) / w, w)
    identity = ember.stack([xs[None, :].expand(h, w), ys[:, None].expand(h, w)], -1)[None]
    return grid_transform(img, identity.to(img.device) + displacement.to(img.device), mode, fill)


def gaussian_blur(img, kernel_size, sigma):
    """Separable Gaussian of ``kernel_size`` (kx, ky) and ``sigma`` (sx, sy), reflect-padded."""
    dtype = img.dtype if img.is_floating_point() else ember.float32
    k1 = []
    for k, s in zip(kernel_size, sigma):
        x = ember.linspace(-(k - 1) * 0.5, (k - 1) * 0.5, k, dtype=dtype, device=img.device)
        pdf = ember.exp(-0.5 * (x / s) ** 2)
        k1.append(pdf / pdf.sum())
    c = channels(img)
    kernel = (k1[1][:, None] @ k1[0][None, :]).expand(c, 1, kernel_size[1], kernel_size[0])
    x = _as_float(img).to(dtype).reshape(-1, c, *img.shape[-2:])
    pad = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    out = F.conv2d(F.pad(x, pad, mode="reflect"), kernel, groups=c).reshape(img.shape)
    return out.to(img.dtype) if img.is_floating_point() else out.round().to(img.dtype)


def affine_matrix(center, angle, translate, scale, shear, inverted):
    """torchvision's affine matrix (rotation about ``center``, shear, scale, then translation), as
    ``[a, b, c, d, e, f]``; ``inverted`` maps output pixels back to input pixels."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    (cx, cy), (tx, ty) = center, translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
        return m
    m = [a * scale, b * scale, 0.0, c * scale, d * scale, 0.0]
    m[2] += cx - m[0] * cx - m[1] * cy + tx
    m[5] += cy - m[3] * cx - m[4] * cy + ty
    return m


_MAX = {ember.uint8: 255, ember.int8: 127, ember.int16: 32767, ember.int32: 2 ** 31 - 1, ember.int64: 2 ** 63 - 1}


def rescale(t, dtype):
    """``t`` in ``dtype``, values rescaled between integer ranges and ``[0, 1]`` for floats (torchvision's
    rule for image dtypes)."""
    fin, fout = t.is_floating_point(), dtype.is_floating_point
    if fin and fout:
        out = t.to(dtype)
    elif not fin and fout:
        out = t.to(dtype) / _MAX[t.dtype]
    elif fin and not fout:
        out = (t * (_MAX[dtype] + 1.0 - 0.001)).to(dtype)
    else:
        bits_in, bits_out = _MAX[t.dtype].bit_length(), _MAX[dtype].bit_length()
        out = (t.to(dtype) << (bits_out - bits_in)) if bits_out > bits_in else (t >> (bits_in - bits_out)).to(dtype)
    return out
