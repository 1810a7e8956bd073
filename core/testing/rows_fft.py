"""Op table: ``ember.fft``, windows and ``stft``/``istft``.  Row format and checks: :mod:`ember.testing.row`.

Each transform runs on real input and on complex input built inside the call from two real ones, and returns
real pairs, as the rows of :mod:`ember.testing.rows_complex` do."""
from __future__ import annotations

from .row import Row, Sampler
from .rows_complex import real_pairs

r = Sampler(7890).r


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

ROWS = FFT_ROWS + WINDOW_ROWS + STFT_ROWS
