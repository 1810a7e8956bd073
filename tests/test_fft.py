"""``ember.fft``, the window functions, ``stft`` and ``istft`` against PyTorch on every backend: names,
dtypes, arguments, ``out=`` and errors (the rows of ember.testing.rows_fft, every check, run in
tests/test_kit.py)."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.testing import assert_close

torch = pytest.importorskip("torch")


NAMES = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
         "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def test_every_torch_fft_name_is_shown():
    public = [n for n in dir(torch.fft) if not n.startswith("_") and callable(getattr(torch.fft, n))
              and getattr(getattr(torch.fft, n), "__module__", "").startswith("torch")]
    assert set(NAMES) <= set(public)
    assert [n for n in NAMES if not callable(getattr(ember.fft, n, None))] == []


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("fftfreq", "rfftfreq", "fftshift", "ifftshift")])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_dtypes_follow_torch(name, dtype, device):
    data = np.arange(24).reshape(2, 3, 4) % 5
    x = ember.tensor(data.astype(dtype), device=device)
    got = getattr(ember.fft, name)(x)
    want = getattr(torch.fft, name)(torch.tensor(data.astype(dtype))).resolve_conj()
    assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["fft", "ifft", "fftn", "hfft", "irfft"])
def test_gradcheck_complex128(name, device):
    z = ember.randn(3, 4, dtype=ember.float64, device=device)
    z = ember.complex(z, z.flip(1)).detach().requires_grad_()
    fn = getattr(ember.fft, name)
    assert gradcheck(lambda t: fn(t, norm="ortho"), (z,))
    assert gradgradcheck(lambda t: fn(t, norm="forward").sum() * t.conj(), (z,))


def test_out(device):
    x = ember.randn(8, device=device)
    out = ember.empty(0, dtype=ember.complex64, device=device)
    r = ember.fft.fft(x, out=out)
    assert r is out and out.shape == (8,)
    assert_close(out, torch.fft.fft(torch.tensor(x.cpu().numpy())), rtol=1e-5, atol=1e-5)
    real_out = ember.empty(0, device=device)
    assert ember.fft.irfft(ember.fft.rfft(x), out=real_out) is real_out
    assert_close(real_out, x, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.fft.fft(x, out=ember.empty(8, device=device))


def test_fftfreq_options(device):
    f = ember.fft.fftfreq(6, 0.5, dtype=ember.float64, device=device, requires_grad=True)
    assert f.requires_grad and f.dtype is ember.float64 and f.device.type == device
    assert_close(f.detach(), torch.fft.fftfreq(6, 0.5, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="fftfreq"):
        ember.fft.fftfreq(4, dtype=ember.int64)


def test_windows_options(device):
    w = ember.hann_window(6, dtype=ember.float64, device=device, requires_grad=True)
    assert w.requires_grad and w.is_leaf and w.device.type == device
    assert ember.hann_window(0).shape == (0,)
    assert_close(ember.blackman_window(6), torch.blackman_window(6))


def test_stft_istft_roundtrip_batched(device):
    x = ember.randn(3, 100, dtype=ember.float64, device=device)
    w = ember.hann_window(16, dtype=ember.float64, device=device)
    spec = ember.stft(x, 16, 4, window=w, return_complex=True)
    assert spec.shape == torch.stft(torch.zeros(3, 100, dtype=torch.float64), 16, 4, return_complex=True,
                                    window=torch.hann_window(16, dtype=torch.float64)).shape
    assert_close(ember.istft(spec, 16, 4, window=w, length=100), x)
    assert_close(ember.stft(x[0], 16, 4, window=w, return_complex=True), spec[0])
    assert_close(x.stft(16, 4, window=w, return_complex=True), spec)


def test_stft_return_complex_false_is_deprecated_real_pairs(device):
    x = ember.randn(20, device=device)
    w = ember.hann_window(8, device=device)
    with pytest.warns(UserWarning, match="deprecated"):
        pairs = ember.stft(x, 8, window=w, return_complex=False)
    assert_close(pairs, ember.view_as_real(ember.stft(x, 8, window=w, return_complex=True)))


def test_stft_without_window_warns_as_torch(device):
    x = ember.randn(16, device=device)
    with pytest.warns(UserWarning, match="window was not provided"):
        spec = ember.stft(x, 4, return_complex=True)
    with pytest.warns(UserWarning, match="window was not provided"):
        assert ember.istft(spec, 4, length=16).shape == (16,)


def test_stft_gradient_through_window_and_signal(device):
    x = ember.randn(30, dtype=ember.float64, device=device, requires_grad=True)
    w = ember.rand(8, dtype=ember.float64, device=device, requires_grad=True)
    assert gradcheck(lambda a, b: ember.view_as_real(ember.stft(a, 8, 3, window=b, return_complex=True)), (x, w))


BAD = [
    ("fft_norm", lambda m, d: m.fft.fft(m.ones(4, device=d), norm="bad"), RuntimeError, "Invalid normalization"),
    ("rfft_complex", lambda m, d: m.fft.rfft(m.ones(4, dtype=m.complex64, device=d)), RuntimeError,
     "expects a real input tensor"),
    ("ihfft_complex", lambda m, d: m.fft.ihfft(m.ones(4, dtype=m.complex64, device=d)), RuntimeError,
     "expects a real input tensor"),
    ("fft_n_zero", lambda m, d: m.fft.fft(m.ones(4, device=d), n=0), RuntimeError, "Invalid number of data points"),
    ("irfft_n_zero", lambda m, d: m.fft.irfft(m.ones(1, device=d)), RuntimeError, "Invalid number of data points"),
    ("fftn_s_dim", lambda m, d: m.fft.fftn(m.ones(3, 3, device=d), s=(2,), dim=(0, 1)), RuntimeError,
     "must have the same length"),
    ("fftn_dup_dims", lambda m, d: m.fft.fftn(m.ones(3, 3, device=d), dim=(0, 0)), RuntimeError, "unique"),
    ("fft_dim_range", lambda m, d: m.fft.fft(m.ones(3, device=d), dim=2), IndexError, "range"),
    ("fft_half", lambda m, d: m.fft.fft(m.ones(4, dtype=m.float16)), RuntimeError, "Unsupported dtype"),
    ("fft_not_tensor", lambda m, d: m.fft.fft([1.0, 2.0]), TypeError, "Tensor"),
    ("window_int", lambda m, d: m.hann_window(4, dtype=m.int64), RuntimeError, "floating point"),
    ("window_negative", lambda m, d: m.hann_window(-1), RuntimeError, "non-negative"),
    ("stft_no_return_complex", lambda m, d: m.stft(m.ones(16, device=d), 4, window=m.ones(4, device=d)),
     RuntimeError, "return_complex"),
    ("stft_3d", lambda m, d: m.stft(m.ones(1, 1, 16, device=d), 4, window=m.ones(4, device=d),
                                                    return_complex=True), RuntimeError, "1D or 2D"),
    ("stft_window_size", lambda m, d: m.stft(m.ones(16, device=d), 4, window=m.ones(3, device=d),
                                             return_complex=True), RuntimeError, "window"),
    ("stft_n_fft_large", lambda m, d: m.stft(m.ones(8, device=d), 32, center=False, window=m.ones(32, device=d),
                                                     return_complex=True),
     RuntimeError, "n_fft"),
    ("stft_hop_zero", lambda m, d: m.stft(m.ones(16, device=d), 4, hop_length=0, window=m.ones(4, device=d),
                                          return_complex=True),
     RuntimeError, "hop_length"),
    ("istft_real", lambda m, d: m.istft(m.ones(3, 4, device=d), 4, window=m.ones(4, device=d)), RuntimeError,
     "complex"),
    ("istft_freq", lambda m, d: m.istft(m.ones(5, 4, dtype=m.complex64, device=d), 4, window=m.ones(4, device=d)),
     RuntimeError, "n_fft"),
    ("istft_no_overlap", lambda m, d: m.istft(m.ones(3, 4, dtype=m.complex64, device=d), 4, hop_length=4,
                                              window=m.hann_window(4, device=d)), RuntimeError, "overlap"),
]


@pytest.mark.parametrize("name,call,exc,pattern", BAD, ids=[b[0] for b in BAD])
def test_bad_input(name, call, exc, pattern, device):
    with pytest.raises(exc, match=pattern):
        call(ember, device)
    with pytest.raises(exc):
        call(torch, "cpu")


def test_failed_call_leaves_input_untouched(device):
    x = ember.randn(4, device=device, requires_grad=True)
    before = x.detach().clone()
    with pytest.raises(RuntimeError):
        ember.fft.fft(x, norm="sideways")
    assert_close(x.detach(), before)
    assert x.grad is None
