"""ember.save / ember.load: round trips, shared storages, safety, atomicity, corruption, PyTorch files."""
import io
import json
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import time
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.serialization import CheckpointError

CHECKPOINTS = pathlib.Path(__file__).parent / "checkpoints"

DTYPES = [d for d in ("float16", "float32", "float64", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool",
                      "complex64", "complex128") if getattr(ember, d).np is not None]


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **kw)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_through_a_file(device, tmp_path, dtype):
    d = getattr(ember, dtype)
    try:
        t = ember.tensor((np.arange(12) % 3).reshape(3, 4), device=device).to(d)
    except TypeError as e:
        pytest.skip(f"{device} has no {dtype}: {e}")
    path = tmp_path / "t.pt"
    ember.save({"t": t}, path)
    back = ember.load(path)["t"]
    assert back.dtype == d and back.shape == (3, 4) and back.device == t.device
    assert np.array_equal(back.cpu().numpy(), t.cpu().numpy())


def test_views_share_one_storage(device):
    base = ember.arange(12.0, device=device).reshape(3, 4)
    if base[1].untyped_storage() != base.untyped_storage():
        pytest.skip(f"the {device} backend's arrays do not expose shared storage")
    buf = io.BytesIO()
    ember.save({"base": base, "row": base[1], "col": base[:, 2], "t": base.t()}, buf)
    storages = [n for n in zipfile.ZipFile(buf).namelist() if n.startswith("archive/data/")]
    assert len(storages) == 1
    buf.seek(0)
    out = ember.load(buf)
    assert out["col"].tolist() == [2.0, 6.0, 10.0] and out["t"].shape == (4, 3)
    out["base"][1, 2] = -1.0
    assert out["row"][2].item() == -1.0 and out["col"][1].item() == -1.0 and out["t"][2, 1].item() == -1.0


def test_nested_containers(device):
    obj = {"sd": OrderedDict(w=ember.ones(2, device=device)), 3: [1, 2.5, (True, None)], "__x": b"\x00\xff",
           "f": float("inf"), "set": {1, 2}, "size": ember.Size([2, 3]), "dtype": ember.float64,
           "dev": ember.device("cpu"), "c": 1 + 2j, "np": np.int64(7), "rng": np.random.get_state()}
    with pytest.raises(pickle.UnpicklingError, match="numpy"):  # NumPy objects are not weights, as in PyTorch
        _roundtrip(obj)
    out = _roundtrip(obj, weights_only=False)
    assert type(out["sd"]) is OrderedDict and out["sd"]["w"].tolist() == [1.0, 1.0]
    assert out[3] == [1, 2.5, (True, None)] and out["__x"] == b"\x00\xff" and out["f"] == float("inf")
    assert out["set"] == {1, 2} and out["size"] == ember.Size([2, 3]) and isinstance(out["size"], ember.Size)
    assert out["dtype"] is ember.float64 and out["dev"] == ember.device("cpu") and out["c"] == 1 + 2j
    assert out["np"] == 7 and out["rng"][0] == "MT19937" and np.array_equal(out["rng"][1], np.random.get_state()[1])


def test_requires_grad_and_parameters(device):
    from ember.nn.parameter import Parameter

    p = Parameter(ember.ones(2, device=device))
    x = ember.zeros(2, device=device, requires_grad=True)
    out = _roundtrip([p, x, x * 2])
    assert isinstance(out[0], Parameter) and out[0].requires_grad
    assert out[1].requires_grad and out[1].is_leaf and out[2].requires_grad and out[2].is_leaf  # as PyTorch


class Model:
    def __init__(self):
        self.w = ember.ones(3)


def test_whole_objects_need_weights_only_false(device, tmp_path):
    path = tmp_path / "model.pt"
    ember.save(Model(), path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed.*weights_only=False"):
        ember.load(path)
    m = ember.load(path, weights_only=False)
    assert isinstance(m, Model) and m.w.tolist() == [1.0, 1.0, 1.0]


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _torch_like_zip(payload: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/version", "3")
    return buf.getvalue()


def test_malicious_pickles_are_refused_without_running(tmp_path):
    target = tmp_path / "pwned"
    payload = pickle.dumps(_Evil(str(target)), protocol=2)
    raw = tmp_path / "raw.pt"
    raw.write_bytes(payload)
    with pytest.raises(CheckpointError, match="not an ember or PyTorch checkpoint"):
        ember.load(raw)
    zipped = tmp_path / "zipped.pt"
    zipped.write_bytes(_torch_like_zip(payload))
    # open pickles as io.open, as _io.open from Python 3.12 on
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL (_?io|builtins).open"):
        ember.load(zipped)
    assert not target.exists()


_SAVER = """
import sys, ember
big = {"w": ember.ones(48 * 1024 * 1024 // 4)}
while True:
    ember.save(big, sys.argv[1])
"""


def test_sigkill_during_save_keeps_previous_checkpoint(tmp_path):
    path = tmp_path / "ckpt.pt"
    ember.save({"epoch": 1, "w": ember.arange(4.0)}, path)
    proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(path)])
    try:
        deadline = time.monotonic() + 60
        while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
            assert time.monotonic() < deadline, "the saver never started writing"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    out = ember.load(path)
    if "epoch" in out:  # killed during the first save: the previous file is intact
        assert out["epoch"] == 1 and out["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    else:  # a save completed before the kill: the file is that complete save
        assert out["w"].shape == (48 * 1024 * 1024 // 4,)


def test_truncated_and_corrupted_files(tmp_path):
    path = tmp_path / "c.pt"
    ember.save({"w": ember.arange(1000.0)}, path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupted"):
        ember.load(path)
    bad = bytearray(data)
    start = data.find(np.arange(1000.0, dtype=np.float32)[500:502].tobytes())
    bad[start] ^= 0xFF
    path.write_bytes(bytes(bad))
    with pytest.raises(CheckpointError, match="truncated or corrupted.*CRC"):
        ember.load(path)


def _rewrite_header(src: bytes, **changes) -> bytes:
    zin = zipfile.ZipFile(io.BytesIO(src))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for name in zin.namelist():
            body = zin.read(name)
            if name == "ember/header.json":
                header = json.loads(body)
                header.update(changes)
                body = json.dumps(header).encode()
            zout.writestr(name, body)
    return out.getvalue()


def test_newer_version_and_unknown_format(tmp_path):
    old = (CHECKPOINTS / "ember_v1_state.pt").read_bytes()  # ember's earlier archive format
    path = tmp_path / "v.pt"
    path.write_bytes(_rewrite_header(old, version=99))
    with pytest.raises(CheckpointError, match="format version 99, newer"):
        ember.load(path)
    path.write_bytes(_rewrite_header(old, format="other"))
    with pytest.raises(CheckpointError, match="unknown format 'other'"):
        ember.load(path)


def _relocated(src: bytes, location: str) -> bytes:
    """The checkpoint ``src`` (saved on the CPU) with its storages' saved location changed to ``location``."""
    zin = zipfile.ZipFile(io.BytesIO(src))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for name in zin.namelist():
            body = zin.read(name)
            if name.endswith("/data.pkl"):
                where = b"X" + len(location).to_bytes(4, "little") + location.encode()  # a BINUNICODE string
                body = body.replace(b"X\x03\x00\x00\x00cpu", where)
            zout.writestr(name, body)
    return out.getvalue()


def test_map_location_for_a_cuda_checkpoint(tmp_path):
    buf = io.BytesIO()
    ember.save({"w": ember.arange(3.0)}, buf)
    path = tmp_path / "gpu.pt"
    path.write_bytes(_relocated(buf.getvalue(), "cuda:0"))
    out = ember.load(path, map_location="cpu")
    assert out["w"].device == ember.device("cpu") and out["w"].tolist() == [0.0, 1.0, 2.0]
    assert ember.load(path, map_location={"cuda:0": "cpu"})["w"].tolist() == [0.0, 1.0, 2.0]
    seen = []
    ember.load(path, map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cuda:0"]
    if not ember.cuda.is_available():
        with pytest.raises(Exception, match="(?i)cuda"):
            ember.load(path)


def test_torch_checkpoints_load_with_equal_values(torch, tmp_path):
    base = torch.arange(12.0).reshape(3, 4)
    sd = OrderedDict(w=torch.randn(3, 4), b=torch.arange(5), h=torch.ones(2, dtype=torch.float16),
                     m=torch.tensor([True, False]), col=base[:, 1], base=base, c=torch.randn(2, dtype=torch.complex64))
    obj = {"model": sd, "param": torch.nn.Parameter(torch.ones(2)), "epoch": 3, "shape": base.shape,
           "dtype": torch.float64, "opt": {"state": {0: {"step": torch.tensor(4.0)}}, "param_groups": [{"lr": 0.1}]}}
    path = tmp_path / "torch.pth"
    torch.save(obj, path)
    out = ember.load(path)
    assert type(out["model"]) is OrderedDict and list(out["model"]) == list(sd)
    for k, v in sd.items():
        ours = out["model"][k]
        assert ours.dtype.name == str(v.dtype).replace("torch.", "") and np.array_equal(ours.numpy(), v.numpy())
    out["model"]["base"][0, 1] = 100.0
    assert out["model"]["col"][0].item() == 100.0
    assert out["param"].requires_grad and out["epoch"] == 3 and out["shape"] == ember.Size([3, 4])
    assert out["dtype"] is ember.float64 and out["opt"]["state"][0]["step"].item() == 4.0


def test_torch_whole_model_is_refused(torch, tmp_path):
    path = tmp_path / "model.pth"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.linear.Linear was not an allowed global"):
        ember.load(path)


def test_safetensors_round_trip(device, tmp_path):
    pytest.importorskip("safetensors")
    path = tmp_path / "w.safetensors"
    tensors = {"w": ember.arange(6.0, device=device).reshape(2, 3), "i": ember.arange(3, device=device)}
    ember.save_safetensors(tensors, path, metadata={"epoch": "2"})
    out = ember.load_safetensors(path, device=device)
    assert out["w"].tolist() == tensors["w"].tolist() and out["i"].dtype == ember.int64
    with pytest.raises(TypeError, match="expected a Tensor"):
        ember.save_safetensors({"x": 1}, path)
    assert ember.load_safetensors(path)["w"].shape == (2, 3)


def test_whole_module_and_state_dict(device, tmp_path):
    nn = pytest.importorskip("ember.nn")
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU()).to(device)
    x = ember.ones(1, 3, device=device)
    path = tmp_path / "m.pt"
    ember.save(model, path)
    with pytest.raises(pickle.UnpicklingError, match="weights_only=False"):
        ember.load(path)
    again = ember.load(path, weights_only=False)
    assert bool((again(x) == model(x)).all())
    ember.save(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(3, 2), nn.ReLU()).to(device)
    fresh.load_state_dict(ember.load(path))
    assert bool((fresh(x) == model(x)).all())


def test_torch_state_dict_into_ember_module(torch, tmp_path):
    nn = pytest.importorskip("ember.nn")
    tm = torch.nn.Linear(3, 2)
    path = tmp_path / "linear.pth"
    torch.save(tm.state_dict(), path)
    em = nn.Linear(3, 2)
    em.load_state_dict(ember.load(path))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(em(ember.tensor(x)).detach().cpu().numpy(), tm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6)
