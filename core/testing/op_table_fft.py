"""Op table rows for ``ember.fft``, windows, ``stft``/``istft`` and complex numbers.

Rows follow :mod:`ember.testing.op_table_shape` (``Row(name, op(m, *args), samples)``).  The kit
compares real tensors, so a complex input is built inside the call from two real ones
(``m.complex(re, im)``: its gradient reaches them through the complex op), and a complex output is
returned as real pairs (:func:`real_pairs`): values, gradients, ``gradcheck`` and ``gradgradcheck``
then check complex results and PyTorch's conjugate gradient convention.
"""
from __future__ import annotations

from .op_table_shape import Row, r


def real_pairs(m, y):
    """A complex ``y`` as ``(..., 2)`` real pairs (resolving PyTorch's lazy conjugation first), a real one as is."""
    return m.view_as_real(y.resolve_conj()) if y.is_complex() else y


def _c(m, re, im):
    return m.complex(re, im)


def _fft_row(name, call, real_in=True, complex_in=True, shapes=((3, 6),), **kw):
    """Rows of one transform ``call(m, x)`` on real and on complex input of each shape."""
    rows = []
    for shape in shapes:
        if real_in:
            rows.append(Row(f"{name}_real{len(shape)}d", lambda m, x: real_pairs(m, call(m, x)), [[r(*shape)]], **kw))
        if complex_in:
            rows.append(Row(f"{name}_complex{len(shape)}d", lambda m, x, y: real_pairs(m, call(m, _c(m, x, y))),
                            [[r(*shape), r(*shape)]], **kw))
    return rows


FFT_ROWS = [
    *_fft_row("fft", lambda m, x: m.fft.fft(x)),
    *_fft_row("fft_n_pad", lambda m, x: m.fft.fft(x, n=8, dim=0)),
    *_fft_row("fft_n_trim_ortho", lambda m, x: m.fft.fft(x, n=4, norm="ortho")),
    *_fft_row("fft_forward", lambda m, x: m.fft.fft(x, norm="forward"), shapes=((5,),)),
    *_fft_row("ifft", lambda m, x: m.fft.ifft(x)),
    *_fft_row("ifft_n_ortho", lambda m, x: m.fft.ifft(x, n=7, dim=-1, norm="ortho")),
    *_fft_row("ifft_forward", lambda m, x: m.fft.ifft(x, norm="forward")),
    *_fft_row("fft2", lambda m, x: m.fft.fft2(x), shapes=((2, 3, 4),)),
    *_fft_row("fft2_s", lambda m, x: m.fft.fft2(x, s=(4, 3), norm="ortho")),
    *_fft_row("ifft2", lambda m, x: m.fft.ifft2(x, dim=(0, 2)), shapes=((2, 3, 4),)),
    *_fft_row("fftn", lambda m, x: m.fft.fftn(x), shapes=((2, 3, 4),)),
    *_fft_row("fftn_s", lambda m, x: m.fft.fftn(x, s=(2, 5)), shapes=((2, 3, 4),)),
    *_fft_row("fftn_dim", lambda m, x: m.fft.fftn(x, dim=(0, -1), norm="forward"), shapes=((2, 3, 4),)),
    *_fft_row("ifftn", lambda m, x: m.fft.ifftn(x, norm="ortho"), shapes=((2, 3, 4),)),
    *_fft_row("rfft", lambda m, x: m.fft.rfft(x), complex_in=False, shapes=((3, 6), (7,))),
    *_fft_row("rfft_n", lambda m, x: m.fft.rfft(x, n=5, dim=0, norm="ortho"), complex_in=False),
    *_fft_row("rfft_forward", lambda m, x: m.fft.rfft(x, n=9, norm="forward"), complex_in=False),
    *_fft_row("irfft", lambda m, x: m.fft.irfft(x), shapes=((3, 6), (4,))),
    *_fft_row("irfft_odd", lambda m, x: m.fft.irfft(x, n=7, norm="ortho")),
    *_fft_row("irfft_n_trim", lambda m, x: m.fft.irfft(x, n=4, dim=0, norm="forward")),
    *_fft_row("rfft2", lambda m, x: m.fft.rfft2(x), complex_in=False, shapes=((2, 3, 4),)),
    *_fft_row("irfft2", lambda m, x: m.fft.irfft2(x, s=(3, 5)), shapes=((2, 3, 4),)),
    *_fft_row("rfftn", lambda m, x: m.fft.rfftn(x, norm="ortho"), complex_in=False, shapes=((2, 3, 4),)),
    *_fft_row("rfftn_dim", lambda m, x: m.fft.rfftn(x, s=(4, 3), dim=(2, 0)), complex_in=False,
              shapes=((2, 3, 4),)),
    *_fft_row("irfftn", lambda m, x: m.fft.irfftn(x), shapes=((2, 3, 4),)),
    *_fft_row("irfftn_s", lambda m, x: m.fft.irfftn(x, s=(2, 3, 5), norm="forward"), shapes=((2, 3, 4),)),
    *_fft_row("hfft", lambda m, x: m.fft.hfft(x), shapes=((3, 6),)),
    *_fft_row("hfft_n", lambda m, x: m.fft.hfft(x, n=7, dim=0, norm="ortho")),
    *_fft_row("ihfft", lambda m, x: m.fft.ihfft(x), complex_in=False, shapes=((3, 6), (5,))),
    *_fft_row("ihfft_n", lambda m, x: m.fft.ihfft(x, n=4, norm="forward"), complex_in=False),
    *_fft_row("hfft2", lambda m, x: m.fft.hfft2(x, s=(3, 4)), shapes=((2, 3, 4),)),
    *_fft_row("ihfft2", lambda m, x: m.fft.ihfft2(x), complex_in=False, shapes=((2, 3, 4),)),
    *_fft_row("hfftn", lambda m, x: m.fft.hfftn(x, norm="ortho"), shapes=((2, 3, 4),)),
    *_fft_row("ihfftn", lambda m, x: m.fft.ihfftn(x, dim=(0, 1)), complex_in=False, shapes=((2, 3, 4),)),
    *_fft_row("fftshift", lambda m, x: m.fft.fftshift(x), shapes=((3, 6),)),
    *_fft_row("fftshift_dim", lambda m, x: m.fft.fftshift(x, dim=1), complex_in=False, shapes=((3, 5),)),
    *_fft_row("ifftshift", lambda m, x: m.fft.ifftshift(x, dim=(0, -1)), complex_in=False, shapes=((3, 5),)),
    *_fft_row("fft_of_fft", lambda m, x: m.fft.ifft(m.fft.rfft(x) * m.fft.rfft(x)), complex_in=False),
    Row("fft_out", lambda m, x: m.fft.fft(x, out=m.empty(0, dtype=m.complex64).to(x.device)).abs(),
        [[r(4, grad=False)]], grad=False),
    Row("fftfreq", lambda m, n: m.fft.fftfreq(n), [[5], [4], [1]], grad=False),
    Row("fftfreq_d", lambda m, n: m.fft.fftfreq(n, 0.25, dtype=m.float64), [[6]], grad=False),
    Row("rfftfreq", lambda m, n: m.fft.rfftfreq(n, d=2.0), [[5], [8]], grad=False),
]

WINDOW_ROWS = [
    Row(f"{name}{'' if periodic else '_symmetric'}",
        lambda m, n, name=name, periodic=periodic: getattr(m, name)(n, periodic, dtype=m.float64), [[0], [1], [2], [7]],
        grad=False)
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window")
    for periodic in (True, False)
] + [
    Row("hamming_window_alpha", lambda m, n: m.hamming_window(n, False, 0.6, 0.4), [[6]], grad=False),
    Row("kaiser_window_beta", lambda m, n: m.kaiser_window(n, True, 5.0, dtype=m.float64), [[8]], grad=False),
    Row("kaiser_window_f32", lambda m, n: m.kaiser_window(n), [[9]], grad=False),
]


def _ones(m, n, like):
    return m.ones(n, device=like.device, dtype=like.dtype)


def _stft(m, x, **kw):
    return real_pairs(m, m.stft(x, return_complex=True, **kw))


STFT_ROWS = [
    Row("stft", lambda m, x: _stft(m, x, n_fft=8, hop_length=2, window=m.hann_window(8, device=x.device,
                                                                                      dtype=x.dtype)),
        [[r(32)], [r(2, 20)]]),
    Row("stft_defaults", lambda m, x: _stft(m, x, n_fft=8, window=_ones(m, 8, x)), [[r(24)]]),
    Row("stft_win_length", lambda m, x: _stft(m, x, n_fft=8, hop_length=3, win_length=5, normalized=True,
                                              window=m.hamming_window(5, device=x.device, dtype=x.dtype)),
        [[r(2, 21)]]),
    Row("stft_no_center", lambda m, x: _stft(m, x, n_fft=6, hop_length=4, center=False, onesided=False,
                                             window=_ones(m, 6, x)), [[r(25)]]),
    Row("stft_constant_pad", lambda m, x: _stft(m, x, n_fft=4, hop_length=1, pad_mode="constant",
                                                window=_ones(m, 4, x)), [[r(9)]]),
    Row("stft_window_grad", lambda m, x, w: _stft(m, x, n_fft=6, hop_length=3, window=w), [[r(2, 15), r(6)]]),
    Row("stft_complex", lambda m, x, y: _stft(m, _c(m, x, y), n_fft=4, hop_length=2, window=_ones(m, 4, x)),
        [[r(12), r(12)]]),
    Row("istft", lambda m, x, y: m.istft(_c(m, x, y), 8, 2, window=m.hann_window(8, device=x.device, dtype=x.dtype)),
        [[r(5, 7), r(5, 7)], [r(2, 5, 4), r(2, 5, 4)]]),
    Row("istft_length", lambda m, x, y: m.istft(_c(m, x, y), 6, 3, window=m.hann_window(6, device=x.device,
                                                                                         dtype=x.dtype), length=13),
        [[r(4, 6), r(4, 6)]]),
    Row("istft_no_center", lambda m, x, y: m.istft(_c(m, x, y), 4, 1, center=False, normalized=True,
                                                   window=_ones(m, 4, x)),
        [[r(3, 6), r(3, 6)]]),
    Row("istft_twosided", lambda m, x, y: real_pairs(m, m.istft(_c(m, x, y), 4, 2, onesided=False,
                                                               window=_ones(m, 4, x), return_complex=True)),
        [[r(4, 5), r(4, 5)]]),
    Row("stft_istft_roundtrip", lambda m, x: m.istft(m.stft(x, 8, 2, window=m.hann_window(8, device=x.device,
                                                                                          dtype=x.dtype),
                                                            return_complex=True), 8, 2,
                                                     window=m.hann_window(8, device=x.device, dtype=x.dtype),
                                                     length=30), [[r(30)]]),
]

COMPLEX_ROWS = [
    Row("complex", lambda m, x, y: real_pairs(m, m.complex(x, y)), [[r(2, 3), r(2, 3)], [r(2, 1), r(3)]]),
    Row("polar", lambda m, x, y: real_pairs(m, m.polar(x, y)), [[r(2, 3, positive=True), r(2, 3)]]),
    Row("real", lambda m, x, y: m.complex(x, y).real * 2, [[r(2, 3), r(2, 3)]]),
    Row("imag", lambda m, x, y: m.imag(m.complex(x, y) ** 2), [[r(2, 3), r(2, 3)]]),
    Row("real_of_real", lambda m, x: m.real(x), [[r(3)]]),
    Row("view_as_real", lambda m, x, y: m.view_as_real(m.complex(x, y) * (1 - 2j)), [[r(2, 3), r(2, 3)]]),
    Row("view_as_complex", lambda m, x: real_pairs(m, m.view_as_complex(x.contiguous()) ** 2), [[r(3, 2)]],
        tags=("contiguous_only",)),
    Row("view_as_real_copy", lambda m, x, y: m.view_as_real_copy(m.complex(x, y)), [[r(2, 3), r(2, 3)]]),
    Row("view_as_complex_copy", lambda m, x: real_pairs(m, m.view_as_complex_copy(x.contiguous())),
        [[r(3, 2, grad=False)]], grad=False,
        tags=("contiguous_only",)),
    Row("angle", lambda m, x, y: m.angle(m.complex(x, y)), [[r(2, 3), r(2, 3)]]),
    Row("angle_real", lambda m, x: m.angle(x), [[r(5)]]),
    Row("conj", lambda m, x, y: real_pairs(m, m.complex(x, y).conj() * (2 + 1j)), [[r(2, 3), r(2, 3)]]),
    Row("conj_physical", lambda m, x, y: real_pairs(m, m.conj_physical(m.complex(x, y)) ** 2),
        [[r(2, 3), r(2, 3)]]),
    Row("conj_real", lambda m, x: m.conj(x) * 2, [[r(3)]]),
    Row("abs", lambda m, x, y: m.complex(x, y).abs(), [[r(2, 3), r(2, 3)]]),
    Row("isreal", lambda m, x: m.isreal(m.complex(x, x * (x > 0))), [[r(2, 3, grad=False)]], grad=False),
    *[Row(f"complex_{f}", lambda m, x, y, f=f: real_pairs(m, getattr(m.complex(x, y), f)()), [[r(2, 3), r(2, 3)]])
      for f in ("exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "reciprocal", "rsqrt", "square", "neg",
                "sum", "mean")],
    Row("complex_arith", lambda m, x, y: real_pairs(m, (m.complex(x, y) * 3 - 1j) / (m.complex(y, x) + 2) ** 2),
        [[r(2, 3), r(2, 3)]]),
    Row("complex_pow", lambda m, x, y: real_pairs(m, m.complex(x + 1, y) ** m.complex(y, x)),
        [[r(2, 3), r(2, 3)]]),
    Row("complex_mixed", lambda m, x, y: real_pairs(m, x * m.complex(y, x) + x.exp() * 1j), [[r(2, 3), r(2, 3)]]),
    Row("complex_matmul", lambda m, x, y: real_pairs(m, m.complex(x, y) @ m.complex(y, x).mT),
        [[r(2, 3), r(2, 3)], [r(2, 2, 3), r(2, 2, 3)]]),
    Row("complex_matvec", lambda m, x, y: real_pairs(m, m.complex(x, y) @ m.complex(y[0], x[0])),
        [[r(3, 3), r(3, 3)]]),
    Row("complex_views", lambda m, x, y: real_pairs(m, m.complex(x, y).reshape(3, 2).t()[1:, ::2] * 2),
        [[r(2, 3), r(2, 3)]]),
    Row("complex_index_cat",
        lambda m, x, y: real_pairs(m, m.cat([m.complex(x, y)[1], m.stack([m.complex(y, x)[0]])[0]])),
        [[r(2, 3), r(2, 3)]]),
    Row("mH", lambda m, x, y: real_pairs(m, m.complex(x, y).mH * (1 + 1j)), [[r(2, 3), r(2, 3)]]),
    Row("adjoint", lambda m, x, y: real_pairs(m, m.adjoint(m.complex(x, y))), [[r(2, 2, 3), r(2, 2, 3)]]),
    Row("to_complex", lambda m, x: real_pairs(m, x.to(m.complex64 if x.dtype == m.float32 else m.complex128) * 1j),
        [[r(2, 3)]]),
]

ROWS = FFT_ROWS + WINDOW_ROWS + STFT_ROWS + COMPLEX_ROWS
