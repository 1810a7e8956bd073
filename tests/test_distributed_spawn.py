"""``mp.spawn`` + ``init_process_group`` (the path of Lightning's ``ddp_spawn``): processes that
``ember.multiprocessing.spawn`` starts form one process group through a store, and their collectives and
DistributedDataParallel gradients equal PyTorch's single-process math."""
import contextlib
import importlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.multiprocessing as mp  # noqa: E402
from ember.distributed import run  # noqa: E402

if run.which_mpiexec() is None:
    pytest.skip("no mpiexec", allow_module_level=True)

BATCH, FEATURES = 6, 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, FEATURES)).astype(np.float32), rng.standard_normal(3).astype(np.float32),
            rng.standard_normal((1, 3)).astype(np.float32), rng.standard_normal((BATCH, FEATURES)).astype(np.float32),
            rng.standard_normal((BATCH, 1)).astype(np.float32))


def _model(lib, w1, b1, w2):
    nn = lib.nn
    model = nn.Sequential(nn.Linear(FEATURES, 3), nn.Tanh(), nn.Linear(3, 1, bias=False))
    with lib.no_grad():
        for p, v in zip(model.parameters(), (w1, b1, w2)):
            p.copy_(lib.from_numpy(v))
    return model


def _worker(rank, world_size, out_dir, init_method):
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world_size)
    summed = ember.tensor([float(rank + 1), 10.0 * rank])
    dist.all_reduce(summed)
    sent = ember.tensor([100.0 + rank])
    dist.broadcast(sent, src=1)
    w1, b1, w2, x, y = _data()
    # every rank starts from other weights: DDP must broadcast rank 0's
    model = _model(ember, w1 + rank, b1, w2)
    ddp = ember.nn.parallel.DistributedDataParallel(model)
    half = BATCH // world_size
    xs, ys = ember.tensor(x[rank * half:(rank + 1) * half]), ember.tensor(y[rank * half:(rank + 1) * half])
    ember.nn.functional.mse_loss(ddp(xs), ys).backward()
    np.savez(f"{out_dir}/rank{rank}.npz", summed=summed.numpy(), sent=sent.numpy(),
             size=dist.get_world_size(), got_rank=dist.get_rank(),
             **{f"grad{i}": p.grad.numpy() for i, p in enumerate(model.parameters())})
    # no destroy_process_group (as Lightning's ddp_spawn): the processes must still exit


def _run(fn, args, patience=120.0):
    """``mp.spawn(fn, args, nprocs=2)``, failing (not hanging) when the processes do not end in time."""
    _join_all(mp.start_processes(fn, args=args, nprocs=2, join=False), patience)


def _join_all(context, patience=120.0):
    """join() every process, failing (not hanging) when they do not end in time."""
    _wait_for(context, lambda: not context.sentinels, patience)


def _wait_for(context, done, patience=60.0):
    """Wait until ``done()``, join()ing the processes meanwhile (it raises if one failed); fail, ending them, when
    they all end first or it takes longer than ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while not done():
        if context.join(timeout=0.05) and not done():
            pytest.fail("the spawned processes ended first")
        if time.monotonic() > deadline:
            for p in context.processes:
                p.terminate()  # mpiexec passes SIGTERM on to its process
            pytest.fail(f"not done within {patience:.0f} s")


def _free_port_for(out_dir):
    with open(f"{out_dir}/port") as f:
        return int(f.read())


@pytest.mark.parametrize("how", ["env", pytest.param("tcp", marks=pytest.mark.slow)])
def test_spawned_processes_form_a_group_and_ddp_matches_pytorch(tmp_path, monkeypatch, how):
    """env:// (MASTER_ADDR/MASTER_PORT, as Lightning's ddp_spawn sets them) or tcp://host:port."""
    torch = pytest.importorskip("torch")
    port = _free_port()
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    init = f"tcp://127.0.0.1:{port}" if how == "tcp" else "env://"
    _run(_worker, (2, str(tmp_path), init))
    w1, b1, w2, x, y = _data()
    model = _model(torch, w1, b1, w2)  # rank 0's weights, the whole batch on one process
    torch.nn.functional.mse_loss(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    for rank in range(2):
        got = np.load(tmp_path / f"rank{rank}.npz")
        assert int(got["size"]) == 2 and int(got["got_rank"]) == rank
        np.testing.assert_array_equal(got["summed"], [3.0, 10.0])
        np.testing.assert_array_equal(got["sent"], [101.0])
        for i, p in enumerate(model.parameters()):
            np.testing.assert_allclose(got[f"grad{i}"], p.grad.numpy(), rtol=1e-5, atol=1e-6)


def _lonely(rank, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port_for(out_dir)}", rank=rank,
                            world_size=2)


@pytest.mark.slow
def test_bare_multiprocessing_children_get_a_clear_error(tmp_path, monkeypatch):
    """Without their own mpiexec the children are MPICH singletons, which cannot connect: init_process_group
    says how to start them."""
    monkeypatch.setenv("EMBER_SPAWN_MPIEXEC", "0")
    (tmp_path / "port").write_text(str(_free_port()))
    with pytest.raises(mp.ProcessRaisedException, match="Start them with ember.multiprocessing.spawn"):
        _run(_lonely, (str(tmp_path),))


def test_a_rank_outside_the_world_is_refused_before_any_connection():
    with pytest.raises(ValueError, match=r"init_process_group\(\): rank must be in \[0, 2\), got 3"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=3, world_size=2)
    assert not dist.is_initialized()


def _killed_or_failing(rank):
    if rank == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)  # ended by join() once rank 0 has died


def test_a_child_ended_by_a_signal_is_reported_by_its_name_without_mpichs_banner(capfd):
    """PyTorch's ProcessExitedException: "process 0 terminated with signal SIGKILL", exit_code -9; the child runs
    under its own mpiexec, whose "BAD TERMINATION" banner (for the killed child and for the sibling join() ends
    with SIGTERM) PyTorch has no counterpart of."""
    with pytest.raises(mp.ProcessExitedException, match="^process 0 terminated with signal SIGKILL$") as info:
        _run(_killed_or_failing, ())
    assert (info.value.exit_code, info.value.signal_name, info.value.error_index) == (-9, "SIGKILL", 0)
    assert "BAD TERMINATION" not in "".join(capfd.readouterr())


# the signals mpiexec passes on to the process group it runs (the reaper's, which the child shares)
_PASSED_ON = (signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM, signal.SIGTERM)


def _noting_signals(rank, out_dir):
    seen = []

    def note(number, frame):
        seen.append(number)
        with open(f"{out_dir}/seen", "a") as f:
            f.write(signal.Signals(number).name + "\n")

    for number in _PASSED_ON:
        signal.signal(number, note)
    open(f"{out_dir}/ready", "w").close()
    deadline = time.monotonic() + 60
    while signal.SIGTERM not in seen and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # a second copy of a signal would come meanwhile


def test_signals_sent_to_a_child_reach_it_once_and_it_finishes_normally(tmp_path, capfd):
    """As a plain PyTorch child, the child under its own mpiexec gets each signal sent to its pid once, by its own
    handler (faulthandler dumps its stack on SIGUSR1, say), and then finishes normally: the reaper between
    them neither dies of one (mpiexec would then kill the child and report exit code 10) nor passes on a copy."""
    context = mp.start_processes(_noting_signals, args=(str(tmp_path),), nprocs=1, join=False)
    seen = tmp_path / "seen"

    def noted():
        return seen.read_text().split() if seen.exists() else []

    _wait_for(context, (tmp_path / "ready").exists)
    for i, number in enumerate(_PASSED_ON):
        os.kill(context.processes[0].pid, number)
        _wait_for(context, lambda count=i + 1: len(noted()) >= count)
    _join_all(context)
    assert noted() == [s.name for s in _PASSED_ON]
    assert "BAD TERMINATION" not in "".join(capfd.readouterr())


def test_a_signal_that_comes_as_the_reaper_starts_its_child_ends_the_child(tmp_path):
    """A terminate() that reaches the reaper before its child is in its process group (here: sent to the reaper
    itself as its Popen returns) is passed on, so the child ends with it and is not left running alone."""
    reaper_code = importlib.import_module("ember.multiprocessing.spawn")._REAPER  # (mp.spawn is the function)
    hook = textwrap.dedent(f"""\
        import os, signal, subprocess
        start = subprocess.Popen
        def started(*args, **kwargs):
            child = start(*args, **kwargs)
            with open({str(tmp_path / "child")!r}, "w") as f:
                f.write(str(child.pid))
            os.kill(os.getpid(), signal.SIGTERM)
            return child
        subprocess.Popen = started
        """)
    status = tmp_path / "status"
    reaper = subprocess.run([sys.executable, "-c", hook + reaper_code, str(status),
                             "-c", "import time; time.sleep(30)"], timeout=60)
    child = int((tmp_path / "child").read_text())
    try:
        assert reaper.returncode == 128 + signal.SIGTERM
        assert status.read_text() == str(int(signal.SIGTERM))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
