"""Device-generic streams and events, accelerator errors, the device modules, layout and memory-format types,
``set_flush_denormal`` and DLPack, each against PyTorch where it computes."""
import pickle

import numpy as np
import pytest

import ember


def _np(t):
    return t.detach().cpu().numpy()


# ------------------------------------------------------------------------------------------- errors, modules
def test_accelerator_errors_follow_pytorchs_hierarchy(torch):
    for name in ("AcceleratorError", "OutOfMemoryError"):
        cls = getattr(ember, name)
        assert issubclass(cls, RuntimeError) and cls.__name__ == name
        assert issubclass(getattr(torch, name), RuntimeError)
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError
    with pytest.raises(RuntimeError):
        raise ember.OutOfMemoryError("out of memory")


def test_cuda_pool_exhaustion_raises_out_of_memory_error():
    """The CUDA backend's allocator turns CuPy's out-of-memory error into ``ember.OutOfMemoryError``."""
    import types

    memory = pytest.importorskip("ember_cuda_cupy.memory")

    class CupyOOM(MemoryError):
        pass

    class Pool:
        def malloc(self, size):
            raise CupyOOM(f"Out of memory allocating {size} bytes")

    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(memory=types.SimpleNamespace(OutOfMemoryError=CupyOOM)))
    with pytest.raises(ember.cuda.OutOfMemoryError, match="CUDA out of memory. Tried to allocate 1024 bytes"):
        memory.PeakTracker(cp, Pool()).malloc(1024)


def test_get_device_module_and_grad_scaler():
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cuda:0")) is ember.cuda
    assert ember.get_device_module() in (ember.cpu, ember.cuda)
    with pytest.raises(RuntimeError, match="Invalid value of device"):
        ember.get_device_module(3)
    assert ember.GradScaler is ember.amp.GradScaler


def test_stream_and_event_on_cpu(torch):
    s, ts = ember.Stream("cpu"), torch.Stream("cpu")
    assert s.device_type == ts.device_type == 0 and s.device.type == ts.device.type == "cpu"
    assert s.query() and ts.query()
    s.synchronize()
    e = ember.Event("cpu")
    e.record(s)
    assert e.query() and e.device.type == torch.Event("cpu").device.type == "cpu"
    e.synchronize()
    assert isinstance(s.record_event(), ember.Event)
    with s:
        assert ember.ones(2).sum().item() == 2
    with pytest.raises(TypeError, match="priority"):
        ember.Stream("cpu", priority="high")
    with pytest.raises(TypeError, match="device"):
        ember.Event(device=1.5)


def test_record_stream(device):
    t = ember.ones(3, device=device)
    if t.device.type in ("cpu", "meta"):
        with pytest.raises(NotImplementedError, match="record_stream"):
            t.record_stream(ember.Stream("cpu"))
    with pytest.raises(RuntimeError, match="Stream"):
        t.record_stream(3)


# ------------------------------------------------------------------------------------- layout, memory_format
def test_layout_and_memory_format_constants(torch):
    assert ember.zeros(2).layout is ember.strided
    assert isinstance(ember.strided, ember.layout) and isinstance(ember.sparse_coo, ember.layout)
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        assert isinstance(getattr(ember, name), ember.memory_format)
        assert repr(getattr(ember, name)) == f"ember.{name}"
    with pytest.raises(TypeError, match="cannot create"):
        ember.layout()
    assert pickle.loads(pickle.dumps(ember.channels_last)) is ember.channels_last
    assert ember.zeros(2).layout == "strided"  # the older string spelling still compares equal


@pytest.mark.parametrize("shape,perm", [((2, 3, 4, 5), None), ((2, 3, 4, 5), (0, 2, 3, 1)), ((1, 1, 1, 1), None),
                                        ((0, 3, 4, 5), None), ((3, 4, 5), None), ((2, 3, 1, 1), (0, 2, 3, 1)),
                                        ((2, 3, 4, 5, 6), (0, 2, 3, 4, 1))])
def test_is_contiguous_answers_for_each_memory_format(device, torch, shape, perm):
    def build(lib):
        x = lib.zeros(shape)
        if perm is not None:  # the strides of a channels-last tensor, seen in NC... order
            inv = [perm.index(i) for i in range(len(perm))]
            x = x.permute(*perm).contiguous().permute(*inv)
        return x

    if perm is not None and ember.zeros(2, 3, device=device).t().stride() != (1, 3):
        pytest.skip(f"the {device} backend keeps no memory layout (its arrays report no strides)")
    e, t = build(ember).to(device), build(torch)
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        assert e.is_contiguous(memory_format=getattr(ember, name)) == \
            t.is_contiguous(memory_format=getattr(torch, name)), name


def test_memory_format_is_accepted_where_pytorch_takes_it(device):
    x = ember.arange(24.0, device=device).reshape(1, 2, 3, 4)
    for fmt in (ember.contiguous_format, ember.channels_last, ember.preserve_format):
        np.testing.assert_array_equal(_np(x.contiguous(memory_format=fmt)), _np(x))
        np.testing.assert_array_equal(_np(x.clone(memory_format=fmt)), _np(x))
        np.testing.assert_array_equal(_np(x.to(memory_format=fmt)), _np(x))
        assert ember.empty_like(x, memory_format=fmt).shape == x.shape


def test_memory_format_errors_as_pytorch(device, torch):
    x, tx = ember.zeros(2, 3, 4, device=device), torch.zeros(2, 3, 4)
    calls = [lambda m, t, f: t.contiguous(memory_format=f), lambda m, t, f: t.clone(memory_format=f),
             lambda m, t, f: m.empty_like(t, memory_format=f), lambda m, t, f: t.to(memory_format=f),
             lambda m, t, f: m.zeros_like(t, memory_format=f)]
    for call in calls:
        with pytest.raises(RuntimeError, match="required rank 4"):
            call(torch, tx, torch.channels_last)
        with pytest.raises(RuntimeError, match="required rank 4"):
            call(ember, x, ember.channels_last)
        with pytest.raises(RuntimeError, match="required rank 5"):
            call(ember, x, ember.channels_last_3d)
    with pytest.raises(TypeError, match="memory_format"):
        tx.contiguous(memory_format="channels_last")
    with pytest.raises(TypeError, match="memory_format"):
        x.contiguous(memory_format="channels_last")


def test_set_flush_denormal_and_thread_safe_generator():
    assert ember.set_flush_denormal(True) is False and ember.set_flush_denormal(False) is False
    with pytest.raises(TypeError, match="mode"):
        ember.set_flush_denormal(1)
    assert ember.thread_safe_generator() is None  # main process (and process workers)


def test_to_dlpack_roundtrip(device, torch):
    x = ember.arange(4.0, device=device, requires_grad=True)
    if x.device.type == "meta":
        pytest.skip("meta tensors have no memory")
    cap = ember.to_dlpack(x)
    assert type(cap).__name__ == "PyCapsule"
    if x.device.type == "cpu":
        np.testing.assert_array_equal(ember.from_dlpack(cap).numpy(), [0, 1, 2, 3])
        np.testing.assert_array_equal(torch.from_dlpack(ember.to_dlpack(x.detach())).numpy(), [0, 1, 2, 3])
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.to_dlpack(3)
