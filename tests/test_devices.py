"""Multi-device semantics (the seeds' "CUDA semantics"), run on a NumPy-backed test backend with three
devices (``fakegpu``, see ``fakegpu.py``) and, where a machine has two or more GPUs, on ``cuda``."""
import numpy as np
import pytest
from fakegpu import KINDS, cpu_default, multi_device, registered

import ember
from ember.accelerator import DeviceAPI, Event, Stream
from ember.ops.creation import legacy_type

kind = pytest.fixture(params=KINDS)(multi_device)
cpu_by_default = pytest.fixture(autouse=True)(cpu_default)


@pytest.fixture
def fake():
    with registered(3) as backend:
        yield backend


def tag(t):
    """The fake device an array is tagged with (the device index on cuda)."""
    return getattr(t._data, "fake_device", t.get_device())


# --------------------------------------------------------------------------- allocation
def test_device_context_chooses_where_new_tensors_go(kind):
    api = DeviceAPI(kind)
    x = ember.ones(1, device=kind)
    assert x.get_device() == 0 and tag(x) == 0
    with api.device(1):
        assert api.current_device() == 1
        a = ember.ones(1, device=kind)
        b = ember.ones(1).to(kind)
        assert a.get_device() == b.get_device() == 1 == tag(a) == tag(b)
        c = a + b
        assert c.get_device() == 1 and tag(c) == 1
        z = x + x
        assert z.get_device() == 0 and tag(z) == 0
        d = ember.randn(2).to(f"{kind}:2")
        assert d.get_device() == 2 and tag(d) == 2
    assert api.current_device() == 0
    assert ember.ones(1, device=kind).get_device() == 0


def test_legacy_constructor_under_device_context(kind):
    float_tensor = legacy_type(ember.float32, kind)
    assert float_tensor(1).get_device() == 0
    with DeviceAPI(kind).device(1):
        t = float_tensor(3)
        assert t.get_device() == 1 and t.dtype is ember.float32 and t.shape == (3,)
        assert isinstance(t, float_tensor)
    assert not isinstance(ember.zeros(1), float_tensor)


def test_default_device_follows_the_current_device(kind):
    ember.set_default_device(kind)
    try:
        with DeviceAPI(kind).device(2):
            assert ember.zeros(2).get_device() == 2
        assert ember.zeros(2).get_device() == 0
    finally:
        ember.set_default_device("cpu")
    assert ember.zeros(1).device.type == "cpu"


def test_set_device_and_bad_indices(kind):
    api = DeviceAPI(kind)
    api.set_device(1)
    try:
        assert ember.zeros(1, device=kind).get_device() == 1
    finally:
        api.set_device(0)
    n = api.device_count()
    with pytest.raises(RuntimeError, match="Invalid device id"):
        api.set_device(n)
    with pytest.raises(RuntimeError, match="out of range"):
        ember.zeros(1, device=f"{kind}:{n}")
    with pytest.raises(ValueError, match=f"Expected a {kind} device"):
        api.set_device("cpu")
    assert api.current_device() == 0


def test_device_queries(kind):
    api = DeviceAPI(kind)
    assert api.is_available() and api.device_count() >= 2
    props = api.get_device_properties(1)
    assert isinstance(props.name, str) and props.total_memory > 0
    assert api.get_device_name(1) == props.name
    assert api.get_device_capability(1) == (props.major, props.minor)


def test_current_accelerator_is_device_neutral(fake):
    ember.set_default_device("fakegpu")  # the accelerator of the default device (a GPU may be present too)
    acc = ember.accelerator.current_accelerator()
    assert acc == ember.device("fakegpu")
    assert ember.accelerator.device_count() == 3 and ember.accelerator.is_available()
    with ember.accelerator.device_index(2):
        assert ember.accelerator.current_device_index() == 2
        assert ember.ones(1, device=acc).get_device() == 2
        assert ember.ones(1).get_device() == 2
    assert ember.accelerator.current_device_index() == 0
    assert ember.ones(1).get_device() == 0


def test_no_accelerator_without_one():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present")
    assert ember.accelerator.current_accelerator() is None
    assert ember.accelerator.device_count() == 0
    with pytest.raises(RuntimeError, match="not available"):
        ember.accelerator.current_device_index()


# --------------------------------------------------------------------------- cross-device operations
CROSS = [
    ("add", lambda a, b: a + b),
    ("mul", lambda a, b: a * b),
    ("matmul", lambda a, b: a @ b),
    ("cat", lambda a, b: ember.cat([a, b])),
    ("add_", lambda a, b: a.add_(b)),
]


@pytest.mark.parametrize("name,fn", CROSS, ids=[c[0] for c in CROSS])
def test_cross_device_ops_are_refused_naming_both_devices(kind, name, fn):
    a = ember.ones(2, 2, device=f"{kind}:0")
    b = ember.full((2, 2), 2.0, device=f"{kind}:1")
    with pytest.raises(RuntimeError) as info:
        fn(a, b)
    msg = str(info.value)
    assert f"{kind}:0" in msg and f"{kind}:1" in msg
    np.testing.assert_array_equal(a.cpu().numpy(), np.ones((2, 2)))  # inputs untouched
    np.testing.assert_array_equal(b.cpu().numpy(), np.full((2, 2), 2.0))


def test_cpu_tensor_and_device_tensor_do_not_mix(kind):
    a = ember.ones(3, device=f"{kind}:1")
    with pytest.raises(RuntimeError, match="cpu"):
        a + ember.ones(3)
    s = a * ember.tensor(2.0)  # a 0-dim CPU tensor joins any device, as in PyTorch
    assert s.get_device() == 1 and tag(s) == 1
    np.testing.assert_array_equal(s.cpu().numpy(), [2.0, 2.0, 2.0])


def test_kernels_refuse_arrays_of_another_device(fake):
    a = ember.ones(2, device="fakegpu:0")
    b = ember.ones(2, device="fakegpu:1")
    with pytest.raises(RuntimeError, match="fakegpu:0 was given an array of fakegpu:1"):
        a._dev.kernels["add"](a._data, b._data)


# --------------------------------------------------------------------------- copies
def test_copy_across_devices(kind):
    dst = ember.zeros(2, 3, device=f"{kind}:1")
    src = ember.arange(6.0).reshape(2, 3).to(f"{kind}:0")
    out = dst.copy_(src)
    assert out is dst and dst.get_device() == 1 and tag(dst) == 1
    np.testing.assert_array_equal(dst.cpu().numpy(), np.arange(6.0).reshape(2, 3))
    dst.copy_(ember.tensor([1.0, 2.0, 3.0]))  # from the CPU, broadcast
    np.testing.assert_array_equal(dst.cpu().numpy(), [[1, 2, 3], [1, 2, 3]])
    src.add_(1)  # the copy does not share memory with its source
    np.testing.assert_array_equal(dst.cpu().numpy(), [[1, 2, 3], [1, 2, 3]])


def test_to_device_is_differentiable(kind):
    x = ember.tensor([1.0, -2.0, 3.0], device=f"{kind}:0", requires_grad=True)
    y = (x.to(f"{kind}:2") * ember.tensor([1.0, 2.0, 3.0], device=f"{kind}:2")).sum()
    assert y.get_device() == 2
    y.backward()
    assert x.grad.get_device() == 0 and tag(x.grad) == 0
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [1.0, 2.0, 3.0])


def test_cuda_method_and_cpu(kind):
    t = ember.tensor([1.0, 2.0])
    moved = t.to(kind, non_blocking=False)
    assert moved.device == ember.device(kind, 0)
    back = moved.cpu()
    assert back.device.type == "cpu" and back.get_device() == -1
    assert t.cpu() is t
    assert moved.to(f"{kind}:0") is moved
    np.testing.assert_array_equal(back.numpy(), [1.0, 2.0])


def test_non_blocking_copy_is_correct_after_synchronize(kind):
    api = DeviceAPI(kind)
    host = ember.arange(1000.0).pin_memory()
    dev = host.to(f"{kind}:1", non_blocking=True)
    api.synchronize(1)
    np.testing.assert_array_equal(dev.cpu().numpy(), np.arange(1000.0))
    more = host.to(f"{kind}:1", non_blocking=True)
    doubled = more * 2  # work queued after the copy on the same device sees its data
    np.testing.assert_array_equal(doubled.cpu().numpy(), np.arange(1000.0) * 2)


def test_non_blocking_copy_is_deferred(fake):
    host = ember.ones(4).pin_memory()
    before = fake.copies_deferred
    dev = host.to("fakegpu:2", non_blocking=True)
    assert fake.copies_deferred == before + 1
    DeviceAPI("fakegpu").synchronize(0)
    assert fake.pending[2]  # synchronize() waits for the current device only
    DeviceAPI("fakegpu").synchronize(2)
    assert not fake.pending[2]
    np.testing.assert_array_equal(dev.cpu().numpy(), np.ones(4))


def test_pinned_memory(kind):
    x = ember.arange(6.0).reshape(2, 3)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu"
    assert p.data_ptr() != x.data_ptr()
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="pin"):
        p.to(f"{kind}:0").pin_memory()


# --------------------------------------------------------------------------- streams, events, memory
def _api_types(kind):
    api = DeviceAPI(kind)
    return api, type("S", (Stream,), {"api": api}), type("E", (Event,), {"api": api})


def test_streams_and_events(kind):
    api, stream_t, event_t = _api_types(kind)
    s = stream_t(device=1)
    assert s.device == ember.device(kind, 1)
    assert api.current_stream(1) == api.default_stream(1)
    with api.stream(s):
        assert api.current_device() == 1 and api.current_stream() == s
        start, end = event_t(enable_timing=True), event_t(enable_timing=True)
        start.record()
        y = ember.ones(64, device=kind) * 3
        end.record()
    assert api.current_stream(1) == api.default_stream(1) and api.current_device() == 0
    end.synchronize()
    s.synchronize()
    assert s.query() and end.query()
    assert start.elapsed_time(end) >= 0
    with pytest.raises(RuntimeError, match="enable_timing"):
        event_t().elapsed_time(end)
    assert float(y.sum()) == 192.0


def test_memory_statistics(kind):
    api = DeviceAPI(kind)
    api.synchronize(1)
    api.empty_cache()
    base = api.memory_allocated(1)
    x = ember.zeros(1024, dtype=ember.float32, device=f"{kind}:1")
    assert api.memory_allocated(1) >= base + 4096
    assert api.max_memory_allocated(1) >= base + 4096
    assert api.memory_reserved(1) >= api.memory_allocated(1)
    del x
    assert api.memory_allocated(1) <= base
    api.reset_peak_memory_stats(1)
    assert api.max_memory_allocated(1) <= base + 4096 - 1 or kind == "cuda"
    assert "allocated_bytes.all.current" in api.memory_stats(1)


def test_module_state_moves_between_devices(kind):
    nn = pytest.importorskip("ember.nn")
    if not hasattr(nn, "Linear"):
        pytest.skip("ember.nn.Linear is not there yet")
    m = nn.Linear(3, 2)
    m.to(f"{kind}:1")
    assert all(p.get_device() == 1 for p in m.parameters())
    out = m(ember.ones(4, 3, device=f"{kind}:1"))
    assert out.get_device() == 1 and out.shape == (4, 2)
    with pytest.raises(RuntimeError, match=f"{kind}:1"):
        m(ember.ones(4, 3, device=f"{kind}:0"))


def test_a_plugin_kernel_reaches_every_resolved_device(fake):
    t = ember.ones(3, device="fakegpu:1")
    assert float((t + t).sum()) == 6.0

    class Doubler:
        @ember.plugins.hookimpl
        def ember_kernels(self, registry):
            registry.add_kernel("fakegpu", "add", lambda x, y: (x + y) * 2, priority=1)

    ember.plugins.register(Doubler(), name="doubler")
    try:
        assert float((t + t).sum()) == 12.0
        with pytest.raises(RuntimeError, match="was given an array of fakegpu:0"):
            t._dev.kernels["add"](t._data, ember.ones(3, device="fakegpu:0")._data)  # guarded too
    finally:
        ember.plugins.unregister("doubler")
    assert float((t + t).sum()) == 6.0


def test_each_device_has_its_own_generator(kind):
    ember.manual_seed(0)
    a1, a2 = ember.rand(4, device=f"{kind}:1"), ember.rand(4, device=f"{kind}:1")
    ember.manual_seed(0)
    b = ember.rand(4, device=f"{kind}:2")  # drawing on device 1 did not advance device 2's stream
    assert tag(b) == 2
    np.testing.assert_array_equal(b.cpu().numpy(), a1.cpu().numpy())
    assert not np.array_equal(a1.cpu().numpy(), a2.cpu().numpy())
    g = ember.default_generator(f"{kind}:1")
    state = g.get_state()
    c = ember.randn(3, device=f"{kind}:1")
    g.set_state(state)
    np.testing.assert_array_equal(ember.randn(3, device=f"{kind}:1").cpu().numpy(), c.cpu().numpy())


def test_legacy_cpu_types_stay_on_the_cpu(kind):
    ember.set_default_device(kind)
    try:
        assert ember.FloatTensor(2).device.type == "cpu"
        assert ember.zeros(2).device.type == kind
    finally:
        ember.set_default_device("cpu")


def test_a_bare_index_names_an_accelerator_device(fake):
    expected = "cuda" if ember.cuda.is_available() else "fakegpu"
    assert ember.device(1) == ember.device(expected, 1)
