"""ember.multiprocessing: tensors cross processes through shared memory, and nothing leaks."""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp

METHODS = ["spawn", "forkserver"]


def _shm_entries():
    return {n for n in os.listdir("/dev/shm") if n.startswith("ember_")}


def _mapped_segments():
    """Names of the shared segments this process maps or holds a descriptor of (unlinked ones too)."""
    with open("/proc/self/maps") as f:
        names = {line.split("/ember_")[1].split()[0] for line in f if "/ember_" in line}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if "/ember_" in target:
            names.add(target.split("/ember_")[1].split()[0])
    return names


@pytest.fixture
def dev(device):
    """The device, for backends whose tensors can be shared between processes (host memory or CUDA IPC)."""
    d = ember.device(device)
    if not (d.backend.host or d.type == "cuda"):
        pytest.skip(f"tensors on {device} cannot be shared between processes")
    return device


@pytest.fixture(params=["file_descriptor", "file_system"])
def strategy(request):
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(old)


def _add_one(x, v):
    with ember.no_grad():
        x.add_(1)
    x.grad.mul_(2)
    v.fill_(7)


@pytest.mark.parametrize("method", METHODS)
def test_child_writes_are_seen_by_parent(dev, method, strategy):
    base = ember.zeros(6, device=dev)
    v = base[1:3]
    x = ember.arange(4.0, device=dev).requires_grad_()
    x.grad = ember.ones(4, device=dev)
    p = mp.get_context(method).Process(target=_add_one, args=(x, v))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert x.is_shared() and x.grad.is_shared() and base.is_shared()
    assert x.tolist() == [1, 2, 3, 4]
    assert x.grad.tolist() == [2, 2, 2, 2]
    assert base.tolist() == [0, 7, 7, 0, 0, 0]


def _echo(q_in, q_out, n, done):
    for _ in range(n):
        t = q_in.get()
        t.mul_(-1)
        q_out.put(t)
    done.wait(60)  # a sender stays alive until its tensors are received (file_descriptor strategy)


def test_queue_of_many_tensors_leaves_no_segment(dev, strategy):
    host = ember.zeros(1, device=dev)._dev.backend.host
    gc.collect()
    before_files, before_maps = _shm_entries(), _mapped_segments()
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    n = 40
    done = ctx.Event()
    p = ctx.Process(target=_echo, args=(q_in, q_out, n, done))
    p.start()
    sent = [ember.full((3, 2), float(i), device=dev) for i in range(n)]
    for t in sent:
        q_in.put(t)
    back = [q_out.get(timeout=60) for _ in range(n)]
    done.set()
    p.join(60)
    assert p.exitcode == 0
    assert [b[0, 0].item() for b in back] == [-float(i) for i in range(n)]
    assert sent[5][1, 1].item() == -5.0  # the parent's tensor was changed in place
    if host:
        assert _mapped_segments() - before_maps
        assert back[3]._storage_root() is sent[3]._storage_root()  # a round trip maps the same storage
    del sent, back, t
    q_in.close(), q_out.close()
    gc.collect()
    assert not _shm_entries() - before_files  # (segments of earlier tests may have gone meanwhile)
    assert not _mapped_segments() - before_maps


KILLED = textwrap.dedent("""
    import os, signal, sys, time
    import ember, ember.multiprocessing as mp

    def train(model, ready):
        opt = ember.optim.SGD(model.parameters(), lr=0.01)
        x = ember.ones(8, 1000)
        ready.set()
        while True:
            opt.zero_grad()
            (-model(x).sum()).backward()
            opt.step()

    if __name__ == "__main__":
        mp.set_sharing_strategy(sys.argv[1])
        ctx = mp.get_context("spawn")
        model = ember.nn.Linear(1000, 1).share_memory()
        with ember.no_grad():
            model.weight.zero_()
        w = model.weight
        ready = ctx.Event()
        p = ctx.Process(target=train, args=(model, ready))
        p.start()
        assert ready.wait(60)
        while w[0, 0].item() < 0.5:  # the child's steps reach the parent's model
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        assert p.exitcode == -signal.SIGKILL
        seen = w[0, 0].item()
        opt = ember.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(5):  # the parent trains on
            opt.zero_grad()
            (-model(ember.ones(8, 1000)).sum()).backward()
            opt.step()
        assert abs(w[0, 0].item() - (seen + 5 * 0.08)) < 1e-4
        q = ctx.SimpleQueue()
        q.put(w.detach() * 2)  # and can still share new tensors
        assert abs(q.get()[0, 0].item() - 2 * w[0, 0].item()) < 1e-5
        print("ok")
""")


@pytest.mark.parametrize("strategy_name", ["file_descriptor", "file_system"])
def test_killed_child_leaves_parent_working_and_no_segment(tmp_path, strategy_name):
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    before = _shm_entries()
    r = subprocess.run([sys.executable, str(script), strategy_name], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert not _shm_entries() - before


def test_pipe_shares_and_views_keep_geometry(dev):
    a, b = mp.Pipe()
    x = ember.arange(12.0, device=dev).reshape(3, 4) * 1  # a tensor owning its storage
    a.send(x.t()[1:])
    y = b.recv()
    assert y.shape == (3, 3) and y.tolist() == x.t()[1:].tolist()
    y[0, 0] = 100.0
    assert x[0, 1].item() == 100.0


def test_non_leaf_requiring_grad_is_refused_before_sharing(dev):
    x = ember.ones(3, device=dev, requires_grad=True)
    y = x * 2
    q = mp.SimpleQueue()
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        q.put(y)
    if y._dev.backend.host:
        assert not y.is_shared()
    q.put(y.detach())
    assert q.get().tolist() == [2.0, 2.0, 2.0]


def test_share_memory_keeps_values_and_is_idempotent(dev):
    x = ember.randn(5, 3, device=dev)
    ref = x.tolist()
    assert x.is_shared() == (x.device.type == "cuda")  # CUDA memory is always shareable
    assert x.share_memory_() is x
    assert x.is_shared() and x.tolist() == ref
    ptr = x.data_ptr()
    x.share_memory_()
    assert x.data_ptr() == ptr


def test_unshareable_device_is_refused(device):
    d = ember.device(device)
    if d.backend.host or d.type == "cuda":
        pytest.skip(f"tensors on {device} can be shared")
    x = ember.ones(2, device=device)
    with pytest.raises(RuntimeError, match=f"share_memory_\\(\\): tensors on {device} cannot be shared"):
        x.share_memory_()
    assert not x.is_shared() and x.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="cannot be shared between processes"):
        mp.SimpleQueue().put(x)


def test_unknown_strategy_is_rejected():
    with pytest.raises(ValueError, match="set_sharing_strategy\\(\\): unknown strategy 'mmap'"):
        mp.set_sharing_strategy("mmap")
    assert mp.get_sharing_strategy() == "file_descriptor"


def _fail(i, n):
    if i == n:
        raise ValueError(f"rank {i} broke")


def test_spawn_runs_every_process_and_reports_the_failing_one():
    assert mp.spawn(_fail, args=(5,), nprocs=1) is None
    with pytest.raises(mp.ProcessRaisedException, match="rank 1 broke") as e:
        mp.spawn(_fail, args=(1,), nprocs=2)
    assert e.value.error_index == 1


def test_drop_in_exports_multiprocessing():
    import multiprocessing

    for name in multiprocessing.__all__:
        assert getattr(mp, name) is getattr(multiprocessing, name)
    assert np.asarray(mp.cpu_count()) > 0


def test_views_made_before_sharing_follow_their_base(dev):
    base = ember.arange(8.0, device=dev) * 1
    even, odd = base[0::2], base[1::2]
    a, b = mp.Pipe()
    a.send(even)  # moves base (and even) to shared memory
    a.send(odd)   # odd was a view of the old memory: it follows base
    got_even, got_odd = b.recv(), b.recv()
    got_even.fill_(-1.0)
    got_odd.fill_(-2.0)
    assert base.tolist() == [-1.0, -2.0] * 4
    assert even.tolist() == [-1.0] * 4 and odd.tolist() == [-2.0] * 4


def test_module_share_memory_shares_parameters_and_grads(dev):
    model = ember.nn.Linear(3, 2).to(dev)
    model(ember.ones(1, 3, device=dev)).sum().backward()
    model.share_memory()
    assert all(p.is_shared() and p.grad.is_shared() for p in model.parameters())
    q = mp.SimpleQueue()
    q.put(model.weight)
    w = q.get()
    assert type(w) is ember.nn.Parameter and w.requires_grad
    w.grad.add_(1.0)
    with ember.no_grad():
        w.mul_(0.0)
    assert model.weight.abs().sum().item() == 0.0
    assert model.weight.grad.tolist() == [[2.0, 2.0, 2.0]] * 2


def test_hogwild_example_reaches_single_process_accuracy():
    pytest.importorskip("sklearn")
    script = os.path.join(os.path.dirname(__file__), "..", "examples", "hogwild.py")
    r = subprocess.run([sys.executable, script, "--procs", "2", "--epochs", "4", "--compare"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    acc = [float(line.split("test accuracy ")[1].split()[0]) for line in r.stdout.splitlines()]
    assert len(acc) == 2 and min(acc) > 0.9, r.stdout
    assert abs(acc[0] - acc[1]) < 0.04, r.stdout
