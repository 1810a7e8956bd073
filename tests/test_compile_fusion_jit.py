"""ember.compile's numba fusion of elementwise runs (ember._dynamo.jit): equal to eager mode for forward,
gradients and optimizer steps, bit-identical where a run is only arithmetic, and NumPy's fusion without numba."""
import sys

import numpy as np
import pytest

import ember
from ember._dynamo import jit


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def _sources(g):
    cf = getattr(g, "_compiled", None) or g.__dict__["_compiled"]
    return "".join((v.source or "") + (v.aot.source if v.aot is not None else "") for v in cf.cache.values())


@pytest.fixture
def numba_cache(tmp_path_factory, monkeypatch):
    """numba present, its kernels compiled into a cache folder of this test session."""
    pytest.importorskip("numba", exc_type=ImportError)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ember-cache"))
    return tmp_path_factory.getbasetemp() / "ember-cache" / "jit"


def _numpy_device(device) -> bool:
    """Whether ``device``'s arrays are NumPy's (the numba kernels serve those; other backends keep their own)."""
    return isinstance(ember.ones(1, device=device)._data, np.ndarray)


def _numba_used(device, src) -> bool:
    """Whether the compiled sources call a numba kernel (on a NumPy device, where the runs qualify)."""
    return "J0(" in src or not _numpy_device(device)


def block(x, w, b):
    """A run of every kind of operand: a bias per column, statistics per row, transcendental forms."""
    m = x.mean(-1, keepdim=True)
    h = (x - m) * w + b                           # per row, per column, full
    g = (h * 0.5).tanh() + (h - 1).sigmoid() * (h * -0.25).exp()
    return ember.where(h > 0, g, g * 0.1).relu() - h.clamp_min(0.5) * 0.0


def test_forward_gradients_equal_eager(device, numba_cache):
    x = ember.randn(8, 300, device=device, requires_grad=True)
    w = ember.randn(300, device=device, requires_grad=True)
    b = ember.randn(300, device=device, requires_grad=True)
    g = ember.compile(block, options={"fusion": "numba"})
    for _ in range(2):  # the capture, then the compiled forward and backward
        x.grad = w.grad = b.grad = None
        got = g(x, w, b)
        got.square().sum().backward()
        grads = [_np(t.grad) for t in (x, w, b)]
        x.grad = w.grad = b.grad = None
        want = block(x, w, b)
        want.square().sum().backward()
        np.testing.assert_allclose(_np(got), _np(want), rtol=2e-6, atol=1e-6)
        for got_grad, t in zip(grads, (x, w, b)):
            np.testing.assert_allclose(got_grad, _np(t.grad), rtol=2e-5, atol=1e-5)
    assert _numba_used(device, _sources(g))
    if _numpy_device(device):  # (compiled with cache=True: the machine code is kept for the next process)
        assert list(numba_cache.glob("k*.py")) and list(numba_cache.glob("__pycache__/*.nbi"))


def test_arithmetic_run_is_bit_identical(device, numba_cache):
    def f(x, y):
        return ((x * y + 0.5) / (y.abs() + 1) - x).sqrt() * 3

    x, y = ember.rand(64, 33, device=device) + 1, ember.randn(64, 33, device=device)
    g = ember.compile(f, options={"fusion": "numba"})
    with ember.no_grad():
        g(x, y)
        np.testing.assert_array_equal(_np(g(x, y)), _np(f(x, y)))
    assert _numba_used(device, _sources(g))


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid", "erf"])
def test_transcendental_forms_within_float32_ulps(device, numba_cache, name):
    torch = pytest.importorskip("torch")
    if not _numpy_device(device):
        pytest.skip("the numba forms serve NumPy arrays")
    v = np.concatenate([np.linspace(-110, 100, 4001), np.linspace(-1, 1, 2001),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.3, -103.9]]).astype(np.float32)

    def f(x):
        return getattr(x * 1.0, name)() * 1.0

    g = ember.compile(f, options={"fusion": "numba"})
    with ember.no_grad():
        x = ember.tensor(v, device=device)
        g(x)
        got = _np(g(x))
    want = getattr(torch, name)(torch.tensor(v, dtype=torch.float64)).numpy()
    with np.errstate(over="ignore"):
        rounded = want.astype(np.float32)  # (exp overflows float32 above 88.72)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(rounded)
    np.testing.assert_array_equal(got[~finite], rounded[~finite])
    ulp = np.spacing(np.abs(rounded[finite])).astype(np.float64)
    assert np.max(np.abs(got[finite] - want[finite]) / ulp) <= 3
    assert _numba_used(device, _sources(g))


class _Net(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = ember.nn.Linear(16, 64), ember.nn.Linear(64, 1)

    def forward(self, x):
        h = self.a(x)
        return self.b((h * 0.5).tanh() * h.sigmoid() + h * 0.1)


def test_optimizer_steps_equal_eager(device, numba_cache):
    nets = []
    for _ in range(2):
        ember.manual_seed(0)
        nets.append(_Net().to(device))
    eager, model = nets
    compiled = ember.compile(model, options={"fusion": "numba"})
    x, y = ember.randn(32, 16, device=device), ember.randn(32, 1, device=device)
    for net in (eager, compiled):
        opt = ember.optim.AdamW(net.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
    for p, q in zip(model.parameters(), eager.parameters()):
        np.testing.assert_allclose(_np(p), _np(q), rtol=1e-5, atol=1e-6)
    assert _numba_used(device, _sources(compiled))


def test_without_numba_runs_are_numpy_fusion(device, monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # (import numba raises ImportError)
    monkeypatch.setattr(jit, "_STATE", {})
    x, w, b = (ember.randn(*s, device=device) for s in ((4, 50), (50,), (50,)))
    g = ember.compile(block)
    with ember.no_grad():
        g(x, w, b)
        np.testing.assert_array_equal(_np(g(x, w, b)), _np(block(x, w, b)))
    src = _sources(g)
    assert "def run0(" in src and "J0(" not in src
    with pytest.raises(RuntimeError, match=r"pip install ember\[jit\]"):
        ember.compile(block, options={"fusion": "numba"})
    with pytest.raises(RuntimeError, match="invalid options"):
        ember.compile(block, options={"fusion": "llvm"})
