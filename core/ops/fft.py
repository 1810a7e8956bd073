"""Discrete Fourier transforms (``ember.fft``), window functions, ``stft`` and ``istft``.

Three primitives, each the array library's own FFT with its gradient beside it:
complex-to-complex (:class:`FftC2C`), real-to-complex one-sided
(:class:`FftR2C`) and complex-to-real (:class:`FftC2R`).  Every public
transform is one of them after trimming or zero-padding its input to the
signal sizes ``s`` (differentiable ops of their own); the Hermitian ones are
conjugated real ones, and ``stft``/``istft`` frame a signal with a strided view
and overlap-add it with one ``index_add``.  The gradient of a transform is
the adjoint transform (the other direction, the same scale: ``norm`` swapped),
as PyTorch computes it.

>>> import ember
>>> ember.fft.fft(ember.tensor([1.0, 0.0, 0.0, 0.0]))
tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
"""
from __future__ import annotations

import math
import warnings

from .. import dtypes
from ..autograd.function import Op, keep_saved
from ..dispatch import cast, unary
from ..writes import out_or
from ..registry import _type_name, check_tensor, export
from ..tensor import _wrap_dim
from .complex import conj, real, view_as_real
from .creation import arange, ones, zeros
from .nn import pad as _pad
from .shape import cat

FFT, TORCH = ("fft",), ("torch",)
_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}  # the scale of the adjoint direction


# --------------------------------------------------------------------------- the three transforms
_NORM_CODE = {"backward": 0, "ortho": 1, "forward": 2}  # PyTorch's fft_norm_mode of a forward transform's scaling


def _normalization(node):
    """PyTorch's ``_saved_normalization``: 0 unscaled, 1 by sqrt(n), 2 by n (an inverse transform reads ``norm``
    the other way round)."""
    code = _NORM_CODE[node.norm]
    return code if getattr(node, "fwd", False) else 2 - code


def _saved_dims(node):
    return tuple(int(d) for d in node.dims)  # (wrapped before the transform, as PyTorch's)


class FftC2C(Op):
    """``fftn`` (``forward``) or ``ifftn`` of a complex array over ``dims``."""

    backward_name = "FftC2CBackward0"
    saved_args = {"dim": _saved_dims, "normalization": _normalization, "forward": "fwd"}

    @staticmethod
    def forward(ctx, k, x, dims, norm, forward):
        ctx.dims, ctx.norm, ctx.fwd = dims, norm, forward
        return k["fft_c2c"](x, dims, norm, not forward)

    @staticmethod
    def backward(ctx, g):
        return _c2c(g, ctx.dims, _SWAP[ctx.norm], not ctx.fwd)


class FftR2C(Op):
    """The transform of a real array over ``dims``: one-sided (``rfftn``, the last dim halved) or the whole
    spectrum (``fftn``, or ``ifftn`` when not ``forward``), without making the input complex first."""

    backward_name = "FftR2CBackward0"
    saved_args = {"dim": _saved_dims, "normalization": _normalization, "onesided": "onesided"}
    save_inputs = True  # (as PyTorch's node: an in-place change of the input refuses the backward)
    saved_names = ("self",)

    @staticmethod
    def forward(ctx, k, x, dims, norm, onesided, forward):
        ctx.dims, ctx.norm, ctx.n, ctx.fwd, ctx.onesided = dims, norm, x.shape[dims[-1]], forward, onesided
        if onesided:
            return k["fft_r2c"](x, dims, norm)
        return k["fft_r2c_full"](x, dims, norm, not forward)

    @staticmethod
    def backward(ctx, g):
        # a one-sided spectrum's missing half counts zero: pad it, take the adjoint, keep the real part
        ctx.check_saved()
        last = ctx.dims[-1]
        missing = ctx.n - g.shape[last]
        if missing:
            shape = list(g.shape)
            shape[last] = missing
            g = cat([g, g.new_zeros(shape)], last)
        return real(_c2c(g, ctx.dims, _SWAP[ctx.norm], not ctx.fwd))


class FftC2R(Op):
    """``irfftn`` of a one-sided spectrum over ``dims``: ``last_size`` real points along the last one."""

    backward_name = "FftC2RBackward0"
    saved_args = {"dim": _saved_dims, "normalization": _normalization}

    @staticmethod
    def forward(ctx, k, x, dims, norm, last_size):
        ctx.dims, ctx.norm, ctx.n = dims, norm, last_size
        return k["fft_c2r"](x, dims, norm, last_size)

    @staticmethod
    def backward(ctx, g):
        # the adjoint of the Hermitian extension: the bins that stand for two (their mirror too) count twice
        gi = _r2c(g, ctx.dims, _SWAP[ctx.norm])
        last = ctx.dims[-1]
        m = gi.shape[last]
        doubled = ctx.n - m
        if doubled <= 0:
            return gi
        w = ones(m, dtype=g.dtype, device=g.device)
        w[1:1 + doubled] = 2
        return gi * w.reshape((m,) + (1,) * (gi.dim() - 1 - last))


def _c2c(x, dims, norm, forward):
    return unary(FftC2C, x, dims, norm, forward)


def _r2c(x, dims, norm, onesided=True, forward=True):
    return unary(FftR2C, x, dims, norm, onesided, forward)


def _c2r(x, dims, norm, last_size):
    return unary(FftC2R, x, dims, norm, last_size)


# --------------------------------------------------------------------------- arguments
def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _float_input(x, name, complex_ok=True):
    """``x`` in a floating or complex dtype (integers and bools in the default float dtype)."""
    check_tensor(x, name)
    d = x.dtype
    if d.category == dtypes.COMPLEX and not complex_ok:
        raise RuntimeError(f"{name} expects a real input tensor, but got {_type_name(d)}")
    if d in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(f"{name}: Unsupported dtype {_type_name(d)}")
    if d.category < dtypes.FLOAT:
        x = cast(x, dtypes.get_default_dtype())
    return x


def _dims_sizes(x, s, dim, name, one_dim=False):
    """The transformed dims (wrapped, unique) and the signal size along each (``None``: the input's)."""
    if one_dim:
        s = None if s is None else (s,)
        dim = (dim,)
    elif dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if s is not None:
        s = (s,) if isinstance(s, int) else tuple(s)
        if dim is None:
            if len(s) > x.dim():
                raise RuntimeError(f"{name}: Got shape with {len(s)} values but input tensor only has {x.dim()} "
                                   f"dimensions.")
            dim = tuple(range(x.dim() - len(s), x.dim()))
        elif len(s) != len(dim):
            raise RuntimeError(f"{name}: When given, dim and shape arguments must have the same length")
    elif dim is None:
        dim = tuple(range(x.dim()))
    dims = tuple(_wrap_dim(d, max(x.dim(), 1), name) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{name}: FFT dims must be unique (got {list(dim)})")
    sizes = [None] * len(dims) if s is None else [None if n == -1 else int(n) for n in s]
    for n in sizes:
        if n is not None and n < 1:
            raise RuntimeError(f"{name}: Invalid number of data points ({n}) specified")
    return dims, sizes


def _resize(x, dims, sizes):
    """``x`` trimmed or zero-padded (at the end) to ``sizes`` along ``dims`` (differentiable)."""
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if n is None or n == have:
            continue
        if n < have:
            x = x.narrow(d, 0, n)
        else:
            shape = list(x.shape)
            shape[d] = n - have
            x = cat([x, x.new_zeros(shape)], d)
    return x


def _c2c_public(name, input, s, dim, norm, forward, out, one_dim=False):  # noqa: A002
    x = _float_input(input, name)
    dims, sizes = _dims_sizes(x, s, dim, name, one_dim)
    x = _resize(x, dims, sizes)
    if not dims:
        r = cast(x, x.dtype.to_complex()).clone()
    elif x.dtype.category != dtypes.COMPLEX and len(dims) == 1:
        r = _r2c(x, dims, _norm(norm), False, forward)
    else:  # (as PyTorch, a real input transformed over several dims is made complex first: its node keeps nothing)
        r = _c2c(x if x.dtype.category == dtypes.COMPLEX else cast(x, x.dtype.to_complex()), dims, _norm(norm),
                 forward)
    return out_or(r, out)


def _r2c_public(name, input, s, dim, norm, out, one_dim=False):  # noqa: A002
    x = _float_input(input, name, complex_ok=False)
    dims, sizes = _dims_sizes(x, s, dim, name, one_dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    return out_or(_r2c(_resize(x, dims, sizes), dims, _norm(norm)), out)


def _c2r_public(name, input, s, dim, norm, out, one_dim=False, last_c2r=False):  # noqa: A002
    """The c2r transform of ``input`` over ``dim``; ``last_c2r``: as PyTorch's hfftn, an inverse c2c over the other
    dims first and the c2r over the last one only."""
    x = _float_input(input, name)
    dims, sizes = _dims_sizes(x, s, dim, name, one_dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    if x.dtype.category != dtypes.COMPLEX:
        x = cast(x, x.dtype.to_complex())
    last = sizes[-1] if sizes[-1] is not None else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"{name}: Invalid number of data points ({last}) specified")
    x = _resize(x, dims, sizes[:-1] + [last // 2 + 1])
    norm = _norm(norm)
    if last_c2r and len(dims) > 1:
        x, dims = _c2c(x, dims[:-1], norm, False), dims[-1:]
    return out_or(_c2r(x, dims, norm, last), out)


# --------------------------------------------------------------------------- ember.fft
@export(to=FFT)
def fft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """The one-dimensional discrete Fourier transform along ``dim`` (``n`` points: trimmed or zero-padded).

    ``norm``: "backward" (no scaling, the default), "ortho" (``1/sqrt(n)``) or "forward" (``1/n``).

    >>> import ember
    >>> ember.fft.fft(ember.tensor([1.0, 2.0]))
    tensor([ 3.+0.j, -1.+0.j])
    """
    return _c2c_public("fft_fft", input, n, dim, norm, True, out, one_dim=True)


@export(to=FFT)
def ifft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """The inverse of :func:`fft` ("backward" norm: scaled by ``1/n``).

    >>> import ember
    >>> ember.fft.ifft(ember.tensor([3.0, -1.0]))
    tensor([1.+0.j, 2.+0.j])
    """
    return _c2c_public("fft_ifft", input, n, dim, norm, False, out, one_dim=True)


@export(to=FFT)
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    """The two-dimensional discrete Fourier transform (over the last two dims by default)."""
    return _c2c_public("fft_fft2", input, s, dim, norm, True, out)


@export(to=FFT)
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    """The inverse of :func:`fft2`."""
    return _c2c_public("fft_ifft2", input, s, dim, norm, False, out)


@export(to=FFT)
def fftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """The N-dimensional discrete Fourier transform over ``dim`` (all dims, or the last ``len(s)``)."""
    return _c2c_public("fft_fftn", input, s, dim, norm, True, out)


@export(to=FFT)
def ifftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """The inverse of :func:`fftn`."""
    return _c2c_public("fft_ifftn", input, s, dim, norm, False, out)


@export(to=FFT)
def rfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """The transform of a real signal: its ``n // 2 + 1`` non-negative frequencies.

    >>> import ember
    >>> ember.fft.rfft(ember.tensor([1.0, 2.0, 3.0, 4.0]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    return _r2c_public("fft_rfft", input, n, dim, norm, out, one_dim=True)


@export(to=FFT)
def irfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """The inverse of :func:`rfft`: ``n`` real points (``2 * (size - 1)`` by default) from a one-sided spectrum.

    >>> import ember
    >>> ember.fft.irfft(ember.tensor([10.0, -2 + 2j, -2.0]))
    tensor([1., 2., 3., 4.])
    """
    return _c2r_public("fft_irfft", input, n, dim, norm, out, one_dim=True)


@export(to=FFT)
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    """:func:`rfftn` over two dims."""
    return _r2c_public("fft_rfft2", input, s, dim, norm, out)


@export(to=FFT)
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    """:func:`irfftn` over two dims."""
    return _c2r_public("fft_irfft2", input, s, dim, norm, out)


@export(to=FFT)
def rfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """The N-dimensional transform of a real signal, one-sided along the last of ``dim``."""
    return _r2c_public("fft_rfftn", input, s, dim, norm, out)


@export(to=FFT)
def irfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """The inverse of :func:`rfftn`."""
    return _c2r_public("fft_irfftn", input, s, dim, norm, out)


@export(to=FFT)
def hfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """The transform of a Hermitian-symmetric signal given by its first half: ``n`` real values.

    >>> import ember
    >>> ember.fft.hfft(ember.tensor([1.0, 0.0, 0.0]))
    tensor([1., 1., 1., 1.])
    """
    x = conj(_float_input(input, "fft_hfft"))
    return _c2r_public("fft_hfft", x, n, dim, _SWAP[_norm(norm)], out, one_dim=True)


@export(to=FFT)
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):  # noqa: A002
    """The inverse of :func:`hfft`: the first half of the spectrum of a real signal.

    >>> import ember
    >>> ember.fft.ihfft(ember.tensor([1.0, 1.0, 1.0, 1.0]))
    tensor([1.-0.j, 0.-0.j, 0.-0.j])
    """
    return out_or(conj(_r2c_public("fft_ihfft", input, n, dim, _SWAP[_norm(norm)], None, one_dim=True)), out)


@export(to=FFT)
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    """:func:`hfftn` over two dims."""
    return hfftn(input, s, dim, norm, out=out)


@export(to=FFT)
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):  # noqa: A002
    """:func:`ihfftn` over two dims."""
    return ihfftn(input, s, dim, norm, out=out)


@export(to=FFT)
def hfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """The N-dimensional :func:`hfft`: Hermitian-symmetric along the last of ``dim``."""
    x = conj(_float_input(input, "fft_hfftn"))
    return _c2r_public("fft_hfftn", x, s, dim, _SWAP[_norm(norm)], out, last_c2r=True)


@export(to=FFT)
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):  # noqa: A002
    """The inverse of :func:`hfftn`."""
    return out_or(conj(_r2c_public("fft_ihfftn", input, s, dim, _SWAP[_norm(norm)], None)), out)


def _freq_dtype(dtype, name):
    d = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if d.category < dtypes.FLOAT:
        raise RuntimeError(f"{name}: expected a floating point or complex dtype, got {d}")
    return d


@export(to=FFT)
def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`fft`: ``[0, 1, ..., -(n // 2), ..., -1] / (d * n)``.

    >>> import ember
    >>> ember.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    dt = _freq_dtype(dtype, "fftfreq")
    k = (arange(n, device=device) + n // 2) % n - n // 2
    r = (k.to(dt) * (1.0 / (n * d))).requires_grad_(requires_grad)
    return out_or(r, out)


@export(to=FFT)
def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`rfft`: ``[0, 1, ..., n // 2] / (d * n)``.

    >>> import ember
    >>> ember.fft.rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    dt = _freq_dtype(dtype, "rfftfreq")
    r = (arange(n // 2 + 1, device=device).to(dt) * (1.0 / (n * d))).requires_grad_(requires_grad)
    return out_or(r, out)


def _shift(input, dim, sign, name):  # noqa: A002
    check_tensor(input, name)
    dims = tuple(range(input.dim())) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(_wrap_dim(d, max(input.dim(), 1), name) for d in dims)
    if not dims:
        return input.clone()
    return input.roll(tuple((input.shape[d] + (sign < 0)) // 2 for d in dims), dims)  # (PyTorch's shifts)


@export(to=FFT)
def fftshift(input, dim=None):  # noqa: A002
    """Move the zero frequency to the centre (a roll by ``size // 2`` along ``dim``, all dims by default).

    >>> import ember
    >>> ember.fft.fftshift(ember.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1, "fftshift")


@export(to=FFT)
def ifftshift(input, dim=None):  # noqa: A002
    """The inverse of :func:`fftshift`."""
    return _shift(input, dim, -1, "ifftshift")


# --------------------------------------------------------------------------- windows
def _window(name, window_length, dtype, device, requires_grad, fn):
    if not isinstance(window_length, int) or window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window length, got window_length={window_length}")
    d = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    if d.category == dtypes.COMPLEX and window_length > 1:  # (PyTorch's arange has no complex kernel)
        kind = "cpu" if device is None else str(device).split(":")[0]
        raise NotImplementedError(f"\"arange_{kind}\" not implemented for '{dtypes.type_name(d)}'")
    if d.category < dtypes.FLOAT:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if window_length == 0:
        w = zeros(0, dtype=d, device=device)
    elif window_length == 1:
        w = ones(1, dtype=d, device=device)
    else:
        w = fn(arange(window_length, dtype=d, device=device), window_length)
    return w.requires_grad_(requires_grad)


def _periodic(window_length, periodic):
    """A periodic window of length N is the symmetric one of length N + 1 without its last point."""
    return window_length + 1 if periodic and window_length > 1 else window_length


def _trim(w, window_length):
    return w[:window_length] if w.shape[0] > window_length else w


@export(to=TORCH)
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """``alpha - beta * cos(2 pi k / (N - 1))`` (``N = window_length + 1`` when periodic).

    >>> import ember
    >>> ember.hamming_window(4)
    tensor([0.0800, 0.5400, 1.0000, 0.5400])
    """
    n = _periodic(window_length, periodic)
    w = _window("hamming_window", n, dtype, device, False,
                lambda k, N: (k * (2 * math.pi / (N - 1))).cos() * -beta + alpha)
    return _trim(w, window_length).requires_grad_(requires_grad)


@export(to=TORCH)
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """``0.5 - 0.5 cos(2 pi k / (N - 1))`` (``N = window_length + 1`` when periodic).

    >>> import ember
    >>> ember.hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad)


@export(to=TORCH)
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))``.

    >>> import ember
    >>> ember.blackman_window(3, periodic=False)
    tensor([-1.4901e-08,  1.0000e+00, -1.4901e-08])
    """
    def fn(k, N):
        t = k * (math.pi / (N - 1))
        return (t * 4).cos() * 0.08 - (t * 2).cos() * 0.5 + 0.42

    n = _periodic(window_length, periodic)
    return _trim(_window("blackman_window", n, dtype, device, False, fn), window_length).requires_grad_(requires_grad)


@export(to=TORCH)
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """The triangular window ``1 - |2 k / (N - 1) - 1|``.

    >>> import ember
    >>> ember.bartlett_window(5, periodic=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    n = _periodic(window_length, periodic)
    w = _window("bartlett_window", n, dtype, device, False, lambda k, N: 1 - (k * (2.0 / (N - 1)) - 1).abs())
    return _trim(w, window_length).requires_grad_(requires_grad)


class KaiserI0(Op):
    """The modified Bessel function I0 on a window's table (no gradient: a window is built from sizes)."""

    @staticmethod
    def forward(ctx, k, x):
        return k["kaiser_i0"](x)


@export(to=TORCH)
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    """``I0(beta sqrt(1 - ((k - a) / a) ** 2)) / I0(beta)`` with ``a = (N - 1) / 2``.

    >>> import ember
    >>> ember.kaiser_window(3, periodic=False, beta=0.0)
    tensor([1., 1., 1.])
    """
    def fn(k, N):
        a = (N - 1) / 2
        x = (k.double() - a) / a
        arg = (1 - x * x).clamp(min=0).sqrt() * beta
        return (unary(KaiserI0, arg) / unary(KaiserI0, arg.new_full((), beta))).to(k.dtype)

    n = _periodic(window_length, periodic)
    return _trim(_window("kaiser_window", n, dtype, device, False, fn), window_length).requires_grad_(requires_grad)


# --------------------------------------------------------------------------- stft / istft
def _stft_window(window, win_length, n_fft, like, name):
    if window is None:
        warnings.warn(f"{name}: A window was not provided. A rectangular window will be applied, which is known to "
                      f"cause spectral leakage (and istft needs the window stft used). To suppress this warning "
                      f"and use a rectangular window, explicitly set `window=ember.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=3)
        w = ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    else:
        check_tensor(window, name)
        if window.dim() != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to win_length={win_length}, but "
                               f"got window with size {list(window.shape)}")
        if window._dev is not like._dev:
            raise RuntimeError(f"{name}: expected the window on {like.device}, got it on {window.device}")
        w = window
    if win_length < n_fft:  # centred in n_fft points
        left = (n_fft - win_length) // 2
        w = _pad(w, (left, n_fft - win_length - left))
    return w


def _stft_lengths(name, n_fft, hop_length, win_length):
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if hop_length <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"{name}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    return hop_length, win_length


def _center(x, p, mode):
    """``x`` padded by ``p`` on each side of its last dim; reflection as one join of the mirrored ends."""
    if mode == "reflect" and 0 < p < x.shape[-1] and x.shape[0]:
        return keep_saved(cat([x[:, 1:p + 1].flip(-1), x, x[:, -p - 1:-1].flip(-1)], -1), x)  # (as PyTorch's pad)
    # (as PyTorch's: the signals are the channels of one batch, so that no signals is refused as its pad does)
    return _pad(x.unsqueeze(0), (p, p), mode=mode).squeeze(0)


@export
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",  # noqa: A002
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform: ``(..., n_fft // 2 + 1 or n_fft, n_frames)`` complex.

    Frames are a strided view of the (centred, ``pad_mode``-padded) signal, windowed and transformed at once.
    Real input needs ``return_complex`` (True; False gives the deprecated real pairs).  ``align_to_window``
    (only without ``center``) starts the frames where a window shorter than ``n_fft`` starts.

    >>> import ember
    >>> ember.stft(ember.ones(8), 4, hop_length=2, window=ember.ones(4), return_complex=True).shape
    ember.Size([3, 5])
    """
    check_tensor(input, "stft")
    complex_in = input.dtype.category == dtypes.COMPLEX
    if return_complex is None:
        if not complex_in and not (window is not None and window.dtype.category == dtypes.COMPLEX):
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.dim()}D tensor of shape "
                           f"{list(input.shape)}")
    hop_length, win_length = _stft_lengths("stft", n_fft, hop_length, win_length)
    if input.dtype.category < dtypes.FLOAT:  # (PyTorch pads first: its reflection pad has no bool kernel)
        if center and pad_mode == "reflect":
            dtypes.check_kernel("reflection_pad1d", input, dtypes.ALL_TYPES)
        raise RuntimeError(f"stft: expected a tensor of floating point or complex values, got {input.dtype}")
    x = _float_input(input, "stft")
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if center:
        if align_to_window:
            raise RuntimeError("stft align_to_window should only be set when center = false")
        x = _center(x, n_fft // 2, pad_mode)
    elif align_to_window:
        x = _pad(x, ((n_fft - win_length) // 2,) * 2)
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    w = _stft_window(window, win_length, n_fft, x, "stft")
    frames = x.unfold(-1, n_fft, hop_length) * w  # (batch, n_frames, n_fft)
    norm = "ortho" if normalized else "backward"
    onesided = (not complex_in and w.dtype.category != dtypes.COMPLEX) if onesided is None else onesided
    if onesided:
        if frames.dtype.category == dtypes.COMPLEX:
            raise RuntimeError("stft: Cannot have onesided output if window or input is complex")
        spec = _r2c(frames, (2,), norm)
    else:
        if frames.dtype.category != dtypes.COMPLEX:
            frames = cast(frames, frames.dtype.to_complex())
        spec = _c2c(frames, (2,), norm, True)
    spec = spec.transpose(1, 2)
    if not batched:
        spec = spec.squeeze(0)
    if return_complex:
        return spec
    warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                  "complex tensors for all inputs, and return_complex=False will raise an error.", UserWarning,
                  stacklevel=2)
    return view_as_real(spec)


export(stft, "stft", to=("Tensor",))


@export
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,  # noqa: A002
          onesided=None, length=None, return_complex=False):
    """The inverse of :func:`stft`: each frame transformed back, windowed and overlap-added (one ``index_add``),
    divided by the summed squared window.

    >>> import ember
    >>> x = ember.randn(64, dtype=ember.float64)
    >>> w = ember.hann_window(16, dtype=ember.float64)
    >>> spec = ember.stft(x, 16, 4, window=w, return_complex=True)
    >>> bool(ember.allclose(ember.istft(spec, 16, 4, window=w, length=64), x))
    True
    """
    check_tensor(input, "istft")
    if input.dtype.category != dtypes.COMPLEX:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, got {input.dim()}")
    hop_length, win_length = _stft_lengths("istft", n_fft, hop_length, win_length)
    batched = input.dim() == 3
    spec = input if batched else input.unsqueeze(0)
    n_frames = spec.shape[-1]
    fft_size = spec.shape[-2]
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and fft_size != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and fft_size != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {fft_size}")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(1, 2)  # (batch, n_frames, fft_size)
    if onesided:
        if return_complex:
            raise RuntimeError("istft: cannot have onesided output if window or input is complex")
        frames = _c2r(frames, (2,), norm, n_fft)
    else:
        frames = _c2c(frames, (2,), norm, False)
        if not return_complex:
            frames = real(frames)
    w = _stft_window(window, win_length, n_fft, frames, "istft")
    frames = frames * w
    total = n_fft + hop_length * (n_frames - 1)
    idx = (arange(n_frames, device=spec.device).unsqueeze(1) * hop_length
           + arange(n_fft, device=spec.device)).reshape(-1)
    y = frames.new_zeros((frames.shape[0], total)).index_add(1, idx, frames.reshape(frames.shape[0], -1))
    w2 = (w * w.conj() if w.dtype.category == dtypes.COMPLEX else w * w).expand(n_frames, n_fft).reshape(-1)
    envelope = w2.new_zeros(total).index_add(0, idx, w2)
    start = n_fft // 2 if center else 0
    end = total if length is None and not center else total - n_fft // 2 if length is None else start + length
    end = min(end, total)
    y, envelope = y[:, start:end], envelope[start:end]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(f"istft: window overlap add min: {float(envelope.abs().min())} (the window and hop_length "
                           f"{hop_length} must overlap so that their squares sum to more than 1e-11 everywhere)")
    y = y / envelope
    if length is not None and y.shape[-1] < length:
        y = _pad(y, (0, length - y.shape[-1]))
    return y if batched else y.squeeze(0)


export(istft, "istft", to=("Tensor",))
