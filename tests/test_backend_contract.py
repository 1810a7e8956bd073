"""The backend contract (``ember.backend.Backend``): each optional part's documented default on minimal
backends built here, the routing of pinning, IPC and collectives through the tensor's backend, and a
meta-test that every method of the contract has a docstring and a place in docs/plugins.md."""
import contextlib
import inspect
import pathlib
import pickle
import sys
import threading
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
from fakegpu import _Plugin
from fakegpu import registered as fakegpu_registered

import ember
import ember.distributed as dist
import ember.multiprocessing  # noqa: F401 - registers the tensor reducer with ForkingPickler
from ember.accelerator import DeviceAPI
from ember.backend import ArrayBackend, Backend, SimpleEvent, SimpleStream
from ember.distributed import collectives

ROOT = pathlib.Path(__file__).resolve().parent.parent


class Bare(Backend):
    """Nothing but a name: every required part raises, every optional part is the default."""

    name = "bare"


class Minimal(ArrayBackend):
    """A two-device array backend that overrides only what numbering devices needs."""

    name = "minimal"

    def __init__(self):
        super().__init__(np)
        self.synced = []

    def has_index(self):
        return True

    def device_count(self):
        return 2

    def synchronize(self, index=None):
        self.synced.append(index)


@contextlib.contextmanager
def registered(backend):
    """``backend`` registered for the duration of the block (resolved devices forgotten afterwards)."""
    ember.plugins.register(_Plugin(backend), name=f"test-{backend.name}")
    try:
        yield backend
    finally:
        ember.plugins.unregister(f"test-{backend.name}")
        ember.set_default_device(None)
        for dev in list(ember.device._cache.values()):
            if dev.type == backend.name:
                dev.backend = dev.kernels = None


@pytest.fixture
def minimal():
    with registered(Minimal()) as b:
        yield b


# --------------------------------------------------------------------------- required parts
@pytest.mark.parametrize("call", [lambda b: b.from_numpy(np.ones(2), None), lambda b: b.to_numpy(None),
                                  lambda b: b.new_generator(0, 1), lambda b: b.generator_state(None),
                                  lambda b: b.set_generator_state(None, None)],
                         ids=["from_numpy", "to_numpy", "new_generator", "generator_state", "set_generator_state"])
def test_required_parts_raise_naming_the_backend(call):
    with pytest.raises(NotImplementedError, match="'bare' backend does not implement"):
        call(Bare())


# --------------------------------------------------------------------------- devices
def test_device_defaults():
    b = Bare()
    assert b.is_available() and b.unavailable_reason() == "" and b.version() == ""
    assert not b.has_index() and b.device_count() == 1 and b.current_device() == 0
    assert b.kernels_for(0) is b.kernels
    b.set_device(0)
    with pytest.raises(RuntimeError, match=r"invalid device index 1 for the 'bare' backend \(1 device"):
        b.set_device(1)
    assert b.synchronize() is None and b.synchronize(0) is None


def test_current_device_is_per_thread_and_the_context_restores_it():
    b = Minimal()
    seen = []
    with b.device_context(1):
        assert b.current_device() == 1
        t = threading.Thread(target=lambda: seen.append(b.current_device()))
        t.start()
        t.join()
        with b.device_context(None):  # None: no change
            assert b.current_device() == 1
    assert b.current_device() == 0 and seen == [0]


def test_device_properties_default_raises(minimal):
    with pytest.raises(NotImplementedError, match="the 'minimal' backend .* does not support device properties"):
        DeviceAPI("minimal").get_device_properties(0)


def test_the_default_context_serves_ember_accelerator(minimal):
    api = DeviceAPI("minimal")
    with api.device(1):
        assert ember.ones(2, device="minimal").get_device() == 1
    assert api.current_device() == 0


# --------------------------------------------------------------------------- streams and events
def test_stream_defaults():
    b = Minimal()
    d0, d1 = b.default_stream(0), b.default_stream(1)
    assert isinstance(d0, SimpleStream) and b.default_stream(0) is d0 and d0 is not d1
    s = b.new_stream(1, priority=-1)
    assert s.index == 1 and s is not d1 and b.current_stream(1) is d1
    b.set_stream(s)
    assert b.current_stream(1) is s and b.current_stream(0) is d0
    other = []
    t = threading.Thread(target=lambda: other.append(b.current_stream(1)))
    t.start()
    t.join()
    assert other == [d1]  # the current stream is per thread
    b.stream_synchronize(s)
    assert b.synced == [1]
    assert b.stream_query(s) is True and b.synced == [1, 1]


def test_event_defaults():
    b = Minimal()
    start, end = b.new_event(True, False), b.new_event(True, False)
    assert isinstance(start, SimpleEvent) and b.event_query(start)
    with pytest.raises(RuntimeError, match="elapsed_time: both events must be recorded first.*'minimal'"):
        b.event_elapsed_ms(start, end)
    s = b.new_stream(1)
    b.event_record(start, s)
    b.stream_wait_event(b.default_stream(0), start)
    b.event_record(end, s)
    b.event_synchronize(end)
    assert b.synced == [1, 1]  # recording waited for the stream's device
    assert b.event_query(end) and b.event_elapsed_ms(start, end) >= 0.0


def test_streams_and_events_through_ember_accelerator(minimal):
    api = DeviceAPI("minimal")
    stream_t = type("S", (ember.accelerator.Stream,), {"api": api})
    event_t = type("E", (ember.accelerator.Event,), {"api": api})
    s = stream_t(device=1)
    with api.stream(s):
        assert api.current_device() == 1 and api.current_stream() == s
        e = event_t(enable_timing=True)
        e.record()
    assert api.current_stream(1) == api.default_stream(1) and e.query()
    assert s.query() and minimal.synced[-1] == 1


# --------------------------------------------------------------------------- memory, pinning
def test_memory_defaults(minimal):
    api = DeviceAPI("minimal")
    assert minimal.memory_stats(0) == {} and api.memory_stats(1) == {}
    assert api.memory_allocated(1) == 0 and api.max_memory_reserved(0) == 0
    api.empty_cache()
    api.reset_peak_memory_stats(1)
    assert api.max_memory_allocated(1) == 0


def test_memory_summary_tabulates_the_counters_as_pytorch_does(minimal, monkeypatch, torch):
    api = DeviceAPI("minimal")
    counters = {"allocated_bytes.all.current": 3 << 20, "allocated_bytes.all.peak": 5 << 20,
                "allocated_bytes.all.allocated": 7 << 30, "allocated_bytes.all.freed": (7 << 30) - (3 << 20),
                "reserved_bytes.all.current": 1000, "reserved_bytes.all.peak": 800 * 1024}
    monkeypatch.setattr(minimal, "memory_stats", lambda index=None: counters if index == 1 else {})
    text = api.memory_summary(1)
    lines = text.splitlines()
    assert all(len(line) == 77 and line[0] == line[-1] == "|" for line in lines)
    assert "ember MINIMAL memory summary, device ID 1" in lines[1]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in lines
            if line.count("|") == 6 and "Metric" not in line}
    assert rows == {"Allocated memory": ["3072 KiB", "5120 KiB", "7168 MiB", "7165 MiB"],
                    "GPU reserved memory": ["1000 B", "800 KiB", "", ""]}
    # the cells as PyTorch's own summary writes them, from the same counters
    full = {f"{k}.{p}.{c}": 0 for k in ("allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes",
                                        "inactive_split_bytes", "allocation", "active", "segment",
                                        "inactive_split") for p in ("all", "large_pool", "small_pool")
            for c in ("current", "peak", "allocated", "freed")}
    full.update({f"{k}.{c}": 0 for k in ("oversize_allocations", "oversize_segments")
                 for c in ("current", "peak", "allocated", "freed")})
    full.update(num_ooms=0, num_alloc_retries=0, **counters)
    monkeypatch.setattr(torch.cuda.memory, "memory_stats", lambda device=None: full)
    theirs = torch.cuda.memory.memory_summary(0, abbreviated=True)
    line = next(row for row in theirs.splitlines() if "Allocated memory" in row)
    assert line == next(row for row in lines if "Allocated memory" in row)
    assert api.memory_summary(1, abbreviated=True) == text  # no pool rows to leave out
    assert api.memory_summary(0).count("|\n") == 5  # no counters: the frame only


def test_pinning_defaults(minimal):
    a = np.ones(3)
    assert minimal.pin_memory(a) is a and not minimal.is_pinned(a)
    x = ember.ones(3)
    assert x.pin_memory(device="minimal") is x and not x.is_pinned()
    ember.set_default_device("minimal")  # the accelerator in use
    assert x.pin_memory() is x


class Pinning(Minimal):
    name = "pinning"

    def __init__(self):
        super().__init__()
        self.pinned, self.copies = [], []

    def pin_memory(self, array):
        out = array.copy()
        self.pinned.append(out)
        return out

    def is_pinned(self, array):
        return any(array is p for p in self.pinned)

    def from_numpy(self, array, index, copy=False, non_blocking=False):
        self.copies.append(non_blocking)
        return super().from_numpy(array, index, copy, non_blocking)


def test_pin_memory_and_non_blocking_go_through_the_backend():
    with registered(Pinning()) as b:
        ember.set_default_device("cpu")
        x = ember.arange(4.0)
        p = x.pin_memory(device="pinning")
        assert p is not x and p._data is b.pinned[-1] and p.is_pinned() and not x.is_pinned()
        np.testing.assert_array_equal(p.numpy(), x.numpy())
        x.to("pinning:1", non_blocking=True)  # pageable memory: a blocking copy, as in PyTorch
        y = p.to("pinning:1", non_blocking=True)
        assert b.copies == [False, True]
        np.testing.assert_array_equal(y.cpu().numpy(), x.numpy())


def test_non_blocking_copy_from_pageable_memory_is_not_deferred():
    with fakegpu_registered(2) as fake:
        ember.ones(4).to("fakegpu:1", non_blocking=True)
        assert fake.copies_deferred == 0 and not fake.pending[1]
        ember.ones(4).pin_memory(device="fakegpu").to("fakegpu:1", non_blocking=True)
        assert fake.copies_deferred == 1


# --------------------------------------------------------------------------- IPC
def test_ipc_defaults(minimal):
    assert not minimal.supports_ipc()
    with pytest.raises(NotImplementedError, match="the 'minimal' backend .* does not support sharing device "
                                                  "memory between processes; copy the tensor to the CPU"):
        minimal.ipc_handle(np.ones(2))
    with pytest.raises(NotImplementedError, match="'minimal' backend"):
        minimal.ipc_open(None, 0)
    x = ember.ones(2, device="minimal:1")
    assert not x.is_shared()
    with pytest.raises(RuntimeError, match=r"share_memory_\(\): tensors on minimal:1 cannot be shared between "
                                           r"processes .*the 'minimal' backend does not"):
        x.share_memory_()
    with pytest.raises(RuntimeError, match=r"reduce_tensor\(\): tensors on minimal:1 cannot be shared"):
        ForkingPickler.dumps(x)


class Ipc(Minimal):
    """IPC handles within one process: a handle is a key into a table of arrays."""

    name = "ipc"

    def __init__(self):
        super().__init__()
        self.exported, self.opened = {}, []

    def supports_ipc(self):
        return True

    def ipc_handle(self, array):
        key = len(self.exported)
        self.exported[key] = array
        return ("ipc-key", key)

    def ipc_open(self, handle, index):
        self.opened.append((handle, index))
        return self.exported[handle[1]]


def test_ipc_goes_through_the_tensor_backend():
    with registered(Ipc()) as b:
        x = ember.arange(3.0, device="ipc:1").requires_grad_()
        assert x.is_shared() and x.share_memory_() is x
        y = pickle.loads(ForkingPickler.dumps(x))
        assert b.opened == [(("ipc-key", 0), 1)]
        assert y.device == ember.device("ipc:1") and y.requires_grad and y._data is x._data
        y.data.add_(1)  # the same memory
        np.testing.assert_array_equal(x.detach().cpu().numpy(), [1.0, 2.0, 3.0])


def test_sharing_asks_the_backend(device):
    x = ember.ones(2, device=device)
    b = x._dev.backend
    if b.host or b.supports_ipc():
        assert x.share_memory_() is x and x.is_shared()
    else:
        with pytest.raises(RuntimeError, match=f"tensors on {x.device} cannot be shared"):
            x.share_memory_()


# --------------------------------------------------------------------------- collectives
def test_collective_defaults(minimal):
    assert not minimal.supports_collectives()
    for call in (lambda: minimal.collective_all_reduce(None, np.ones(2), "sum", False),
                 lambda: minimal.collective_broadcast(None, np.ones(2), 0, False)):
        with pytest.raises(NotImplementedError, match="the 'minimal' backend .* does not support "
                                                      "collectives on device memory; ember.distributed uses host"):
            call()
    assert minimal.release_collectives(None) is None


class StubComm:
    """Two ranks holding the same values, as an mpi4py communicator would combine them."""

    def __init__(self):
        self.calls = []

    def Get_size(self):
        return 2

    def Get_rank(self):
        return 0

    def Allreduce(self, send, recv, op):
        self.calls.append(("Allreduce", op))
        recv[...] *= 2

    def Bcast(self, buf, root):
        self.calls.append(("Bcast", root))
        buf[...] = 7

    def Free(self):
        self.calls.append(("Free",))


@pytest.fixture
def group(monkeypatch):
    """A process group over :class:`StubComm` (no MPI is started)."""
    comm = StubComm()
    monkeypatch.setattr(collectives, "_OPS", {op: op.value for op in dist.ReduceOp})
    monkeypatch.setitem(collectives._STATE, "in_place", "IN_PLACE")
    monkeypatch.setitem(collectives._STATE, "excepthook", sys.excepthook)
    monkeypatch.setitem(collectives._STATE, "backend", "mpi")
    monkeypatch.setitem(collectives._STATE, "comm", comm)
    return comm


class Collective(Minimal):
    name = "collective"

    def __init__(self):
        super().__init__()
        self.calls = []

    def supports_collectives(self):
        return True

    def collective_all_reduce(self, comm, array, op, async_op):
        self.calls.append(("all_reduce", comm, op, async_op))
        array *= 3

    def collective_broadcast(self, comm, array, src, async_op):
        self.calls.append(("broadcast", comm, src, async_op))

    def release_collectives(self, comm):
        self.calls.append(("release", comm))


def test_collectives_go_through_the_tensor_backend(group):
    with registered(Collective()) as b:
        assert dist.is_nccl_available()
        t = ember.ones(2, device="collective:1")
        assert dist.all_reduce(t, op=dist.ReduceOp.MAX) is None
        dist.broadcast(t, src=1)
        assert b.calls == [("all_reduce", group, "max", False), ("broadcast", group, 1, False)]
        assert group.calls == []  # MPI was not used
        np.testing.assert_array_equal(t.cpu().numpy(), [3.0, 3.0])
        dist.destroy_process_group()
        assert b.calls[-1] == ("release", group) and group.calls == [("Free",)]


def test_devices_without_collectives_go_through_host_memory(group):
    with fakegpu_registered(2):
        t = ember.full((3,), 2.0, device="fakegpu:1")
        dist.all_reduce(t)
        assert group.calls == [("Allreduce", "sum")]
        assert t.device == ember.device("fakegpu:1") and t._data.fake_device == 1
        np.testing.assert_array_equal(t.cpu().numpy(), [4.0, 4.0, 4.0])
        dist.broadcast(t, src=0)
        np.testing.assert_array_equal(t.cpu().numpy(), [7.0, 7.0, 7.0])


# --------------------------------------------------------------------------- the contract is documented
CONTRACT = sorted(n for n, f in inspect.getmembers(Backend, inspect.isfunction) if not n.startswith("_"))


def test_contract_found():
    assert {"from_numpy", "pin_memory", "ipc_handle", "collective_all_reduce", "new_stream"} <= set(CONTRACT)


@pytest.mark.parametrize("method", CONTRACT)
def test_contract_method_is_documented(method):
    assert inspect.getdoc(getattr(Backend, method)), f"Backend.{method} has no docstring"
    guide = (ROOT / "docs" / "plugins.md").read_text()
    assert f"`{method}(" in guide, f"docs/plugins.md does not document Backend.{method}"
