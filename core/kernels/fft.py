"""Kernels of the Fourier transforms and of complex numbers: the array library's own ``xp.fft``.

``numpy.fft``, ``cupy.fft`` and the array API's ``fft`` extension share one
signature (``fftn(x, s=, axes=, norm=)``), so one kernel serves each.  A
transform keeps the precision of its input (complex64 from float32), as
PyTorch's does.
"""
from __future__ import annotations


def kernels(xp, strategy=None):
    fft = xp.fft

    def _as(r, dtype):  # NumPy before 2.0 computes in double precision
        return r if r.dtype == dtype else r.astype(dtype)

    def _complex_of(d):
        return xp.result_type(d, xp.complex64)

    def fft_c2c(x, axes, norm, inverse):
        return _as((fft.ifftn if inverse else fft.fftn)(x, axes=axes, norm=norm), x.dtype)

    def fft_r2c_full(x, axes, norm, inverse):  # the library makes each line complex as it goes
        return _as((fft.ifftn if inverse else fft.fftn)(x, axes=axes, norm=norm), _complex_of(x.dtype))

    def fft_r2c(x, axes, norm):
        return _as(fft.rfftn(x, axes=axes, norm=norm), _complex_of(x.dtype))

    def fft_c2r(x, axes, norm, last_size):
        s = [x.shape[a] for a in axes[:-1]] + [last_size]
        return _as(fft.irfftn(x, s=s, axes=axes, norm=norm), xp.finfo(x.dtype).dtype)

    def real(x):
        return xp.real(x)  # a view of a complex array where the library has views

    def imag(x):
        return xp.imag(x)

    def view_as_real(x):  # the real parts' view, with a last dim of 2 stepping onto the imaginary parts
        re = xp.real(x)
        return xp.lib.stride_tricks.as_strided(re, re.shape + (2,), re.strides + (re.itemsize,))

    def view_as_complex(x):
        return x.view(_complex_of(x.dtype))[..., 0]

    def make_complex(re, im, shape):
        out = xp.empty(shape, dtype=_complex_of(re.dtype))
        out.real[...] = re  # not re + 1j * im: that makes nan of 0 * inf
        out.imag[...] = im
        return out

    angle = getattr(xp, "angle", None) or (lambda x: xp.atan2(xp.imag(x), xp.real(x)))

    def real_angle(x, pi):
        pi = xp.asarray(pi, dtype=x.dtype)  # (in x's dtype: a number beside bfloat16 would widen it)
        zero, nan = xp.zeros_like(x), xp.isnan(x)
        return xp.where(xp.where(nan, zero, x) < 0, pi, xp.where(nan, x, zero))  # 0 (at inf too) or pi, NaN kept

    return {
        "fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_r2c_full": fft_r2c_full, "fft_c2r": fft_c2r,
        "complex_real": real, "complex_imag": imag, "view_as_real": view_as_real,
        "view_as_complex": view_as_complex, "make_complex": make_complex, "complex_conj": xp.conj,
        "complex_angle": angle, "real_angle": real_angle,
        "kaiser_i0": getattr(xp, "i0", None) or _i0(xp),
    }


def _i0(xp):
    """The modified Bessel function I0 by its power series (for libraries without ``i0``)."""
    def i0(x):
        term = xp.ones_like(x)
        total = xp.ones_like(x)
        q = (x / 2) ** 2
        for k in range(1, 60):  # a fixed number of terms: enough for |x| < 50 in float64
            term = term * q / (k * k)
            total = total + term
        return total

    return i0
