"""The CUDA backend: its stand-in where CuPy or a GPU is missing, and on a GPU its own kernels
(fused updates and activations, cuDNN convolutions) against the shared kernels and PyTorch, memory
statistics, pinned memory, streams, events and generators.  The device semantics common to every
multi-device backend are in ``test_devices.py``."""
import numpy as np
import pytest

import ember
from ember.plugins import REGISTRY

BACKEND = REGISTRY.backends.get("cuda")
REASON = BACKEND.unavailable_reason() if BACKEND is not None and not BACKEND.is_available() else ""
gpu = pytest.mark.skipif(not ember.cuda.is_available(), reason=f"CUDA unavailable: {REASON}")
no_gpu = pytest.mark.skipif(ember.cuda.is_available(), reason="a GPU is present")


@pytest.mark.skipif(not ember.plugins.autoload_enabled(), reason="plugin autoload is disabled")
def test_cuda_backend_is_registered_through_its_entry_point():
    assert BACKEND is not None and BACKEND.name == "cuda"
    assert BACKEND.plugin == "cuda"
    assert BACKEND.has_index()


@no_gpu
@pytest.mark.skipif(BACKEND is None, reason="no cuda backend is registered (plugin autoload disabled)")
def test_unavailable_cuda_says_why():
    assert not ember.cuda.is_available() and ember.cuda.device_count() == 0
    assert REASON
    for call in (ember.cuda.current_device, ember.cuda.synchronize, ember.cuda.memory_allocated,
                 lambda: ember.cuda.set_device(0), lambda: ember.cuda.Stream(), ember.cuda.init):
        with pytest.raises(RuntimeError, match="not available") as info:
            call()
        assert REASON in str(info.value)
    with pytest.raises(RuntimeError, match="not available"):
        ember.zeros(2, device="cuda")
    t = ember.ones(2)
    with pytest.raises(RuntimeError, match="not available"):
        t.cuda()
    with pytest.raises(RuntimeError, match="not available"):
        ember.cuda.FloatTensor(2)
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0])  # input untouched
    ember.cuda.manual_seed(1)  # silently ignored without CUDA, as in PyTorch
    ember.cuda.manual_seed_all(1)
    ember.cuda.empty_cache()
    assert ember.get_default_device().type == "cpu"


def test_legacy_cuda_types_check_device_and_dtype():
    assert ember.cuda.FloatTensor.__name__ == "FloatTensor"
    assert not isinstance(ember.ones(1, device="cpu"), ember.cuda.FloatTensor)
    assert isinstance(ember.ones(1, device="cpu"), ember.FloatTensor)
    assert {"FloatTensor", "DoubleTensor", "LongTensor", "ByteTensor", "HalfTensor"} <= set(vars(ember.cuda))


# --------------------------------------------------------------------------- on a GPU
@gpu
def test_default_device_is_the_cpu_and_seeds_example():
    import os

    if not os.environ.get("EMBER_DEVICE"):
        assert ember.backend._init_default().type == "cpu"  # as in PyTorch, even with a GPU present
    x = ember.cuda.FloatTensor(1)
    y = ember.FloatTensor(1).cuda()
    assert x.get_device() == y.get_device() == ember.cuda.current_device()
    assert x.type() == "ember.cuda.FloatTensor" and isinstance(x, ember.cuda.FloatTensor)


def _pair(shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape).astype(dtype)


# fused optimizer kernels: (kernel, number of state arrays, which are left None, settings after the step;
# rmsprop takes no step)
UPDATES = [
    ("adam_update", 3, (2,), (1e-2, 0.9, 0.999, 1e-8, 0.0, False, False)),
    ("adam_update", 3, (), (1e-2, 0.9, 0.999, 1e-8, 0.1, False, False)),  # AMSGrad, L2 weight decay
    ("adam_update", 3, (2,), (1e-2, 0.9, 0.999, 1e-8, 0.01, True, True)),  # AdamW, maximize
    ("adagrad_update", 1, (), (0.1, 0.01, 1e-10, 0.01, False)),
    ("rmsprop_update", 3, (1, 2), (0.01, 0.99, 1e-8, 0.0, 0.0, False)),
    ("rmsprop_update", 3, (1,), (0.01, 0.99, 1e-8, 0.01, 0.9, True)),  # momentum
    ("rmsprop_update", 3, (2,), (0.01, 0.99, 1e-8, 0.0, 0.0, False)),  # centered: shared fallback
]
SGD = [(0.0, False, 0.0), (0.9, False, 0.01), (0.9, True, 0.0)]


@gpu
@pytest.mark.parametrize("kernel,n_state,off,settings", UPDATES, ids=[f"{u[0]}-{i}" for i, u in enumerate(UPDATES)])
def test_fused_update_matches_the_shared_kernel(kernel, n_state, off, settings):
    import cupy as cp

    from ember.kernels import optim

    fused, shared = BACKEND.kernels[kernel], optim.kernels(cp)[kernel]
    p = cp.asarray(_pair(1000))
    state = [None if i in off else cp.zeros(1000, dtype=cp.float32) for i in range(n_state)]  # fresh state
    runs = [(p.copy(), [None if a is None else a.copy() for a in state]) for _ in range(2)]
    for step in range(1, 4):
        g = cp.asarray(_pair(1000, 10 + step))
        for fn, (q, st) in zip((fused, shared), runs):
            fn(q, g, *st, *(() if kernel == "rmsprop_update" else (float(step),)), *settings)
    for a, b in zip([runs[0][0], *runs[0][1]], [runs[1][0], *runs[1][1]]):
        if a is not None:
            # the fused kernel contracts products and sums into FMAs: where a value cancels to far below the
            # array's scale (p - lr * buf), the two differ by a rounding at that scale, not the value's own
            b = cp.asnumpy(b)
            np.testing.assert_allclose(cp.asnumpy(a), b, rtol=1e-5, atol=8 * np.finfo(np.float32).eps * np.abs(b).max())


@gpu
@pytest.mark.parametrize("momentum,nesterov,wd", SGD)
def test_fused_sgd_matches_the_shared_kernel(momentum, nesterov, wd):
    import cupy as cp

    from ember.kernels import optim

    fused, shared = BACKEND.kernels["sgd_update"], optim.kernels(cp)["sgd_update"]
    p1, p2 = cp.asarray(_pair(500)), cp.asarray(_pair(500))
    b1 = b2 = None
    for step in range(3):
        g = cp.asarray(_pair(500, step + 1))
        b1 = fused(p1, g, b1, 0.1, wd, momentum, 0.0, nesterov, False)
        b2 = shared(p2, g, b2, 0.1, wd, momentum, 0.0, nesterov, False)
    np.testing.assert_allclose(cp.asnumpy(p1), cp.asnumpy(p2), rtol=1e-5, atol=1e-6)


@gpu
def test_fused_activation_and_softmax_against_torch(torch):
    F = pytest.importorskip("ember.nn.functional")
    x = ember.randn(4, 7, device="cuda", requires_grad=True)
    tx = torch.tensor(x.detach().cpu().numpy(), requires_grad=True)
    for fn, tfn in ((lambda a: a.relu(), torch.relu), (lambda a: F.softmax(a, -1), lambda a: a.softmax(-1)),
                    (lambda a: F.log_softmax(a, 0), lambda a: a.log_softmax(0))):
        x.grad = None
        tx.grad = None
        out, tout = fn(x), tfn(tx)
        ember.testing.assert_close(out, tout)
        (out * out).sum().backward()
        (tout * tout).sum().backward()
        ember.testing.assert_close(x.grad, tx.grad, rtol=1e-4, atol=1e-5)


@gpu
@pytest.mark.parametrize("stride,padding,groups", [(1, 1, 1), (2, 0, 1), (1, 2, 2)])
def test_cudnn_convolution_against_torch(torch, stride, padding, groups):
    F = pytest.importorskip("ember.nn.functional")
    x = ember.randn(2, 4, 9, 9, device="cuda", requires_grad=True)
    w = ember.randn(6, 4 // groups, 3, 3, device="cuda", requires_grad=True)
    b = ember.randn(6, device="cuda", requires_grad=True)
    tx, tw, tb = (torch.tensor(t.detach().cpu().numpy(), requires_grad=True) for t in (x, w, b))
    out = F.conv2d(x, w, b, stride=stride, padding=padding, groups=groups)
    tout = torch.nn.functional.conv2d(tx, tw, tb, stride=stride, padding=padding, groups=groups)
    ember.testing.assert_close(out, tout, rtol=1e-4, atol=1e-4)
    out.sum().backward()
    tout.sum().backward()
    for a, e in ((x, tx), (w, tw), (b, tb)):
        ember.testing.assert_close(a.grad, e.grad, rtol=1e-4, atol=1e-4)


@gpu
def test_memory_pool_statistics():
    ember.cuda.synchronize()
    ember.cuda.empty_cache()
    base = ember.cuda.memory_allocated()
    ember.cuda.reset_peak_memory_stats()
    x = ember.empty(1 << 20, dtype=ember.float32, device="cuda")
    assert ember.cuda.memory_allocated() >= base + (4 << 20)
    assert ember.cuda.max_memory_allocated() >= base + (4 << 20)
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    del x
    assert ember.cuda.memory_allocated() == base
    assert ember.cuda.max_memory_allocated() >= base + (4 << 20)
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() <= ember.cuda.max_memory_reserved()


@gpu
def test_pinned_non_blocking_copy_overlaps_and_is_correct():
    host = ember.arange(1 << 16, dtype=ember.float32, device="cpu").pin_memory()
    assert host.is_pinned() and not ember.arange(4.0, device="cpu").is_pinned()
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        dev = host.to("cuda", non_blocking=True)
        out = dev * 2
    s.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), np.arange(1 << 16, dtype=np.float32) * 2)


@gpu
def test_events_time_work():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    start.record()
    a = ember.randn(256, 256, device="cuda")
    _ = a @ a
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0


@gpu
def test_generator_state_round_trip_and_per_device_seeding():
    ember.cuda.manual_seed(3)
    a = ember.rand(5, device="cuda")
    ember.cuda.manual_seed(3)
    assert bool((ember.rand(5, device="cuda") == a).all())
    state = ember.cuda.get_rng_state()
    b = ember.randn(5, device="cuda")
    ember.cuda.set_rng_state(state)
    assert bool((ember.randn(5, device="cuda") == b).all())
    assert not bool((ember.randn(5, device="cuda") == b).all())


def test_probe_names_the_extra_when_cupy_is_missing(monkeypatch):
    import builtins

    from ember_cuda_cupy import _probe

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy" or name.startswith("cupy."):
            raise ModuleNotFoundError("No module named 'cupy'", name="cupy")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    monkeypatch.delitem(__import__("sys").modules, "cupy", raising=False)
    module, reason = _probe()
    assert module is None
    assert "ember[cuda]" in reason and "ember[cuda12]" in reason and "cupy-cuda13x" in reason
