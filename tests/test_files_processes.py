"""Checkpoints under kills and hostile files, DataLoader workers under dropped loaders and a killed parent:
real processes and real files, each bounded in time."""
import gc
import io
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import CheckpointError

TIMEOUT = 60  # seconds any one wait may take (it never should come close)


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie counts: it runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False


def _wait_gone(pids, timeout=TIMEOUT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def _temporaries(path):
    d, base = os.path.dirname(path), os.path.basename(path)
    return sorted(n for n in os.listdir(d) if n.startswith(f".{base}.") and n.endswith(".tmp"))


# --------------------------------------------------------------------------- interrupted saves
_SAVER = textwrap.dedent("""
    import sys, ember
    path = sys.argv[1]
    big = {"w": ember.arange(6_000_000, dtype=ember.float32), "n": 7}
    print("ready", flush=True)
    while True:
        ember.save(big, path)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_saves_leave_no_debris_and_keep_the_previous_checkpoint(device, tmp_path):
    path = str(tmp_path / "ckpt.pt")
    ember.save({"w": ember.ones(3, device=device), "n": 1}, path)
    kills = 0
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, "-c", _SAVER, path], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            end = time.monotonic() + TIMEOUT
            while not _temporaries(path) and time.monotonic() < end:  # kill it mid-write
                time.sleep(0.002)
            proc.kill()
            kills += bool(_temporaries(path))
        finally:
            proc.kill()
            proc.wait(TIMEOUT)
            proc.stdout.close()
        loaded = ember.load(path)  # the previous checkpoint (or a complete newer one): never a torn file
        assert loaded["n"] in (1, 7)
    assert kills, "no save was caught mid-write"
    assert _temporaries(path) == []  # each load removed what the killed process had left
    ember.save({"w": ember.zeros(2, device=device), "n": 2}, path)
    assert _temporaries(path) == []
    assert ember.load(path)["n"] == 2


def test_a_live_process_temporary_is_kept(device, tmp_path):
    path = str(tmp_path / "m.pt")
    ember.save({"a": ember.ones(1, device=device)}, path)
    mine = tmp_path / f".m.pt.{os.getpid()}.abc.tmp"     # a save in progress in this (live) process
    dead = tmp_path / ".m.pt.999999999.abc.tmp"           # no such process
    other = tmp_path / ".other.pt.999999999.abc.tmp"      # another checkpoint's
    for f in (mine, dead, other):
        f.write_bytes(b"partial")
    ember.load(path)
    assert mine.exists() and other.exists() and not dead.exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_saved_files_follow_the_umask_and_keep_an_existing_mode(device, tmp_path):
    old = os.umask(0o027)
    try:
        new = tmp_path / "new.pt"
        ember.save({"a": ember.ones(1, device=device)}, str(new))
        assert new.stat().st_mode & 0o777 == 0o640
        with open(tmp_path / "plain", "w"):
            pass
        assert (tmp_path / "plain").stat().st_mode & 0o777 == 0o640  # as open() does
        os.chmod(new, 0o604)
        ember.save({"a": ember.zeros(1, device=device)}, str(new))
        assert new.stat().st_mode & 0o777 == 0o604
    finally:
        os.umask(old)


# --------------------------------------------------------------------------- hostile checkpoints
def _rewrite(src: bytes, edit) -> bytes:
    """The zip ``src`` with ``edit(name, data, info) -> (data, info)`` applied to each entry."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(src)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data, info = edit(info.filename, zin.read(info.filename), info)
            zout.writestr(info, data)
    return out.getvalue()


def _claim(src: bytes, entry_suffix: str, size: int) -> bytes:
    """The zip ``src`` whose central directory claims ``size`` bytes for the entry ending in ``entry_suffix``."""
    buf = io.BytesIO(src)
    with zipfile.ZipFile(buf, "a") as zf:
        for info in zf.infolist():
            if info.filename.endswith(entry_suffix):
                info.file_size = info.compress_size = size  # a zip64 directory record follows
        zf._didModify = True
    return buf.getvalue()


def _ember_bytes(device):
    buf = io.BytesIO()
    ember.save({"w": ember.arange(4.0, device=device)}, buf)
    return buf.getvalue()


def test_a_declared_huge_storage_is_refused_before_allocating(device):
    def edit(name, data, info):
        if name.endswith("/data.pkl"):  # the storage's persistent id declares 2**40 elements (a LONG1) instead of 4
            data, n = re.subn(rb"(X[\x00-\xff]\x00\x00\x00[a-z_:0-9]+(?:q[\x00-\xff])?)K\x04t",
                              lambda m: m[1] + b"\x8a\x06" + (2 ** 40).to_bytes(6, "little") + b"t", data)
            assert n == 1
        return data, info

    hostile = _rewrite(_ember_bytes(device), edit)
    with pytest.raises(CheckpointError, match="declares"):
        ember.load(io.BytesIO(hostile))


def test_a_zip64_directory_claiming_a_terabyte_is_refused(device, tmp_path):
    hostile = _claim(_ember_bytes(device), "data/0", 2 ** 40)
    path = tmp_path / "hostile.pt"
    path.write_bytes(hostile)
    for f in (io.BytesIO(hostile), str(path)):
        with pytest.raises(CheckpointError, match="claims|corrupted"):
            ember.load(f)


def test_hostile_torch_checkpoints_are_refused(device, torch, tmp_path):
    buf = io.BytesIO()
    torch.save({"w": torch.arange(4.0)}, buf)
    good = buf.getvalue()
    assert ember.load(io.BytesIO(good))["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    data_entry = next(n for n in zipfile.ZipFile(io.BytesIO(good)).namelist() if "/data/" in n)
    with pytest.raises(CheckpointError, match="claims|corrupted"):
        ember.load(io.BytesIO(_claim(good, data_entry, 2 ** 40)))


def test_legacy_torch_checkpoints_raise_a_clear_error(device, torch, tmp_path):
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, str(path), _use_new_zipfile_serialization=False)
    for weights_only in (True, False):
        with pytest.raises(CheckpointError, match="legacy PyTorch checkpoint"):
            ember.load(str(path), weights_only=weights_only)


# --------------------------------------------------------------------------- DataLoader workers
class _Squares(ember.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return ember.tensor([float(i * i)])


def _worker_pids(loader):
    return [w.pid for w in loader._iterator._workers]


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_dropping_a_persistent_loader_stops_its_workers_without_gc(device):
    was = gc.isenabled()
    gc.disable()
    try:
        loader = ember.utils.data.DataLoader(_Squares(), batch_size=4, num_workers=2, persistent_workers=True)
        assert [b.tolist() for b in loader] == [[[0.0], [1.0], [4.0], [9.0]], [[16.0], [25.0], [36.0], [49.0]]]
        assert len(list(loader)) == 2  # a second epoch on the same workers
        pids = _worker_pids(loader)
        del loader
        assert _wait_gone(pids), "the workers outlived their loader"
        loader = ember.utils.data.DataLoader(_Squares(), batch_size=4, num_workers=2, persistent_workers=True)
        it = iter(loader)
        next(it)
        pids = _worker_pids(loader)
        del loader  # the iterator still holds the workers
        assert not any(_gone(p) for p in pids)
        assert next(it).shape == (4, 1)
        del it
        assert _wait_gone(pids), "the workers outlived their iterator"
    finally:
        if was:
            gc.enable()


_PARENT = textwrap.dedent("""
    import sys, time, ember

    class D(ember.utils.data.Dataset):
        def __len__(self):
            return 1000

        def __getitem__(self, i):
            return ember.tensor([float(i)])

    loader = ember.utils.data.DataLoader(D(), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(loader)
    next(it)
    print(" ".join(str(w.pid) for w in loader._iterator._workers), flush=True)
    time.sleep(300)
""")


@pytest.mark.skipif(sys.platform != "linux" or not hasattr(signal, "SIGKILL"), reason="needs /proc and SIGKILL")
def test_workers_exit_when_the_main_process_is_killed(device):
    proc = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and not any(_gone(p) for p in pids)
        proc.send_signal(signal.SIGKILL)
        proc.wait(TIMEOUT)
        assert _wait_gone(pids), "DataLoader workers were left running after their main process was killed"
    finally:
        proc.kill()
        proc.wait(TIMEOUT)
        proc.stdout.close()
        for p in locals().get("pids", []):
            if not _gone(p):
                os.kill(p, signal.SIGKILL)


def test_checkpoint_roundtrip_still_exact(device, tmp_path):
    x = ember.tensor(np.arange(12.0).reshape(3, 4), device=device)
    path = str(tmp_path / "x.pt")
    ember.save({"x": x, "v": x[1]}, path)
    got = ember.load(path)
    assert got["x"].tolist() == x.tolist() and got["v"].tolist() == x[1].tolist()
