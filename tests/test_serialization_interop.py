"""Checkpoints cross between ember and PyTorch: ``torch.load`` reads what ``ember.save`` writes and ``ember.load``
reads what ``torch.save`` writes (dtypes, shapes, strides, shared storages, Parameters, requires_grad, containers,
optimizer state), and ember's earlier archive format still loads."""
import io
import os
import pathlib
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember.testing.case import has_dtype

torch = pytest.importorskip("torch")

CHECKPOINTS = pathlib.Path(__file__).parent / "checkpoints"
DTYPES = ("float16", "float32", "float64", "bfloat16", "uint8", "int8", "int16", "int32", "int64", "bool",
          "complex64", "complex128")


def _as_numpy(t) -> np.ndarray:
    """A tensor of either library as a NumPy array (bfloat16 through float32)."""
    t = t.detach().cpu()
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return t.numpy()


def _same(ours, theirs, strides=True):
    """``ours`` (one library's object) equals ``theirs`` (the other's): types, tensor dtypes, shapes, strides
    (unless ``strides`` is False), values, requires_grad and Parameter-ness, recursively through containers."""
    if isinstance(theirs, (torch.Tensor, ember.Tensor)):
        assert isinstance(ours, (torch.Tensor, ember.Tensor))
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert tuple(ours.shape) == tuple(theirs.shape)
        if strides and ours.numel():  # (ember gives an empty tensor NumPy's zero strides)
            assert tuple(ours.stride()) == tuple(theirs.stride())
        assert ours.requires_grad == theirs.requires_grad and ours.is_leaf
        assert (type(ours).__name__ == "Parameter") == (type(theirs).__name__ == "Parameter")
        np.testing.assert_array_equal(_as_numpy(ours), _as_numpy(theirs))
    elif isinstance(theirs, (torch.dtype, ember.dtype, torch.device, ember.device)):
        assert str(ours).split(".")[-1] == str(theirs).split(".")[-1]
    elif isinstance(theirs, (dict, list, tuple)) and not isinstance(theirs, (torch.Size, ember.Size)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        if isinstance(theirs, dict):
            assert list(ours) == list(theirs)
            for k in theirs:
                _same(ours[k], theirs[k], strides)
        else:
            for a, b in zip(ours, theirs):
                _same(a, b, strides)
    else:
        assert type(ours).__name__ == type(theirs).__name__ and ours == theirs


def _checkpoint(lib, device, ember_device=None):
    """The same checkpoint built with ``lib`` (ember or torch) on ``device``: every dtype that ember's
    ``ember_device`` holds, views of one storage, a Parameter, a non-leaf and a leaf requiring grad, nested
    containers of plain values."""
    base = lib.arange(12.0, device=device).reshape(3, 4)
    x = lib.ones(2, device=device, requires_grad=True)
    tensors = OrderedDict((d, (lib.arange(6, device=device) % 3).to(getattr(lib, d)).reshape(2, 3)) for d in DTYPES
                          if has_dtype(ember_device or device, getattr(ember, d)))
    return {"tensors": tensors, "base": base, "row": base[1], "col": base[:, 2], "t": base.t(), "slice": base[1:, ::2],
            "scalar": lib.tensor(2.5, device=device), "empty": lib.zeros(0, 3, device=device),
            "param": lib.nn.Parameter(lib.ones(2, device=device)), "frozen": lib.nn.Parameter(lib.ones(1), False),
            "leaf": x, "nonleaf": x * 2,
            "plain": [1, 2.5, float("inf"), None, True, "s", b"\x00\xff", 1 + 2j, (3, {4: "four"}), {5, 6}],
            "size": lib.Size([2, 3]), "dtype": lib.float16, "device": lib.device("cpu")}


def _strided(device) -> bool:
    """Whether ``device``'s arrays are strided views of shared storage (array_api_strict's are not: a view
    there is a copy, saved with its own contiguous strides)."""
    base = ember.zeros(2, 3, device=device)
    return base[1].untyped_storage() == base.untyped_storage()


def _map(device):
    """What ``torch.load`` needs to read a storage saved on ``device`` (PyTorch knows the CPU and CUDA only)."""
    return None if device.split(":")[0] in ("cpu", "cuda") else "cpu"


@pytest.mark.parametrize("weights_only", [True, False])
def test_torch_loads_what_ember_saves(device, tmp_path, weights_only):
    path = tmp_path / "ckpt.pt"
    ember.save(_checkpoint(ember, device), path)
    loaded = torch.load(path, weights_only=weights_only, map_location=_map(device))
    _same(loaded, _checkpoint(ember, device), _strided(device))
    _same(loaded, _checkpoint(torch, "cpu", device), _strided(device))
    if not _strided(device):
        return
    loaded["base"][1, 2] = -1.0  # the views share the base's storage in PyTorch too
    assert loaded["row"][2] == -1.0 and loaded["col"][1] == -1.0 and loaded["t"][2, 1] == -1.0
    assert loaded["slice"][0, 1] == -1.0


def test_ember_loads_what_torch_saves(device, tmp_path):
    path = tmp_path / "ckpt.pt"
    torch.save(_checkpoint(torch, "cpu", device), path)
    loaded = ember.load(path, map_location=device)
    _same(loaded, _checkpoint(torch, "cpu", device), _strided(device))
    assert loaded["base"].device == ember.device(device)
    loaded["base"][1, 2] = -1.0
    if loaded["base"][1].untyped_storage() == loaded["base"].untyped_storage():
        assert loaded["row"][2].item() == -1.0 and loaded["col"][1].item() == -1.0


def test_optimizer_and_module_state_cross_both_ways(device, tmp_path):
    model = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.BatchNorm1d(2)).to(device)
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    model(ember.randn(4, 3, device=device)).sum().backward()
    opt.step()
    path = tmp_path / "train.pt"
    ember.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 1}, path)
    ckpt = torch.load(path, map_location=_map(device))
    tmodel = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    tmodel.load_state_dict(ckpt["model"])
    topt = torch.optim.Adam(tmodel.parameters(), lr=0.1)
    topt.load_state_dict(ckpt["opt"])
    _same(ckpt["opt"], ember.load(path)["opt"])
    _same(topt.state_dict()["state"], opt.state_dict()["state"])
    torch.save({"model": tmodel.state_dict(), "opt": topt.state_dict()}, path)
    back = ember.load(path, map_location=device)
    model.load_state_dict(back["model"])
    opt.load_state_dict(back["opt"])
    _same(back["model"], tmodel.state_dict())
    _same(opt.state_dict()["state"], topt.state_dict()["state"])


def test_records_are_pytorchs(tmp_path):
    obj = {"w": ember.arange(6.0).reshape(2, 3), "b": ember.ones(3, dtype=ember.int64)}
    ours, theirs = tmp_path / "ours.pt", tmp_path / "theirs.pt"
    ember.save(obj, ours)
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "b": torch.ones(3, dtype=torch.int64)}, theirs)
    with zipfile.ZipFile(ours) as zo, zipfile.ZipFile(theirs) as zt:
        names = zo.namelist()
        assert [n.split("/", 1)[1] for n in names] == [n.split("/", 1)[1] for n in zt.namelist()]
        assert {n.split("/")[0] for n in names} == {"ours"}  # the file's name without extension, as PyTorch
        for record in ("version", "byteorder", ".format_version", ".storage_alignment"):
            assert zo.read(f"ours/{record}") == zt.read(f"theirs/{record}")
        assert len(zo.read("ours/.data/serialization_id")) == 40
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zo.infolist())
    raw = ours.read_bytes()
    for i in zipfile.ZipFile(ours).infolist():  # each record's bytes start at a multiple of 64 (mmap loading)
        name_len, extra_len = int.from_bytes(raw[i.header_offset + 26:][:2], "little"), \
            int.from_bytes(raw[i.header_offset + 28:][:2], "little")
        assert (i.header_offset + 30 + name_len + extra_len) % 64 == 0, i.filename
    assert torch.load(ours, mmap=True)["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    buf = io.BytesIO()
    ember.save(obj, buf)
    assert zipfile.ZipFile(buf).namelist()[0] == "archive/data.pkl"


def test_whole_model_saved_by_ember_loads_in_ember_only_when_trusted(tmp_path):
    model = ember.nn.Linear(2, 2)
    path = tmp_path / "model.pt"
    ember.save(model, path)
    with pytest.raises(Exception, match="Weights only load failed"):
        torch.load(path)
    again = ember.load(path, weights_only=False)
    assert type(again) is ember.nn.Linear and again.weight.tolist() == model.weight.tolist()


def test_whole_model_saved_by_pytorch_loads_in_ember_when_trusted(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.BatchNorm1d(3)).eval()
    path = tmp_path / "model.pt"
    torch.save(model, path)
    with pytest.raises(Exception, match="Weights only load failed"):
        ember.load(path)
    ours = ember.load(path, weights_only=False)  # PyTorch's classes read as ember's
    assert type(ours) is ember.nn.Sequential and type(ours[0]) is ember.nn.Linear
    x = np.arange(6, dtype=np.float32).reshape(2, 3)[:, :2]
    np.testing.assert_allclose(ours(ember.tensor(x)).detach().numpy(), model(torch.tensor(x)).detach().numpy(),
                               rtol=1e-6)


def test_earlier_ember_archives_still_load():
    state = ember.load(CHECKPOINTS / "ember_v1_state.pt")
    assert type(state) is OrderedDict and state["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    state["w"][1, 2] = -1.0
    assert state["row"][2].item() == -1.0 and state["col"][1].item() == -1.0
    assert state["i"].dtype == ember.int64 and state["b"].dtype == ember.bool
    assert isinstance(state["p"], ember.nn.Parameter) and state["g"].requires_grad
    assert state["meta"] == {"size": ember.Size([2, 3]), "dtype": ember.float64, "step": 3, "t": (1, 2.5)}
    for weights_only in (True, False):  # a pickled archive: a Counter (on PyTorch's allow-list) beside a tensor
        obj = ember.load(CHECKPOINTS / "ember_v1_pickle.pt", weights_only=weights_only)
        assert obj["c"] == {"a": 2, "b": 1} and obj["w"].shape == (2, 3)


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


def test_a_failed_save_leaves_the_old_file_and_a_symlink_is_written_through(tmp_path):
    target = tmp_path / "real.pt"
    link = tmp_path / "link.pt"
    ember.save({"w": ember.ones(2)}, target)
    os.symlink(target, link)
    ember.save({"w": ember.zeros(2)}, link)
    assert link.is_symlink() and torch.load(target)["w"].tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="cannot pickle"):
        ember.save({"w": ember.full((2,), 7.0), "x": _Unpicklable()}, link)
    assert torch.load(target)["w"].tolist() == [0.0, 0.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.pt", "real.pt"]


def _data_pkl(lib, obj, **kwargs) -> bytes:
    buf = io.BytesIO()
    lib.save(obj, buf, **kwargs)
    with zipfile.ZipFile(buf) as zf:
        return zf.read("archive/data.pkl")


def test_data_pkl_is_byte_for_byte_pytorchs():
    def state(lib):
        base = lib.arange(12.0).reshape(3, 4)
        return {"w": base, "row": base[1], "t": base.t(), "i": lib.ones(3, dtype=lib.int64),
                "p": lib.nn.Parameter(lib.zeros(2)), "frozen": lib.nn.Parameter(lib.ones(1), requires_grad=False),
                "size": lib.Size([2, 3]), "dtype": lib.float16, "plain": [1, 2.5, "s", (None, True), {3: b"x"}],
                "nested": OrderedDict(a=lib.tensor(2.5), b=[lib.float64, lib.bool])}
    assert _data_pkl(ember, state(ember)) == _data_pkl(torch, state(torch))


def test_other_protocols_and_plain_pickles_keep_their_names():
    import pickle
    obj = {"w": ember.arange(3.0), "dtype": ember.int32, "size": ember.Size([3])}
    for protocol in (3, 4):
        buf = io.BytesIO()
        ember.save(obj, buf, pickle_protocol=protocol)
        assert b"torch._utils" in zipfile.ZipFile(buf).read("archive/data.pkl")
        buf.seek(0)
        _same(torch.load(buf, weights_only=False), {"w": torch.arange(3.0), "dtype": torch.int32,
                                                    "size": torch.Size([3])})
    # the names ember.save writes for PyTorch do not leak into ordinary pickles of ember's objects
    plain = (ember.float32, ember.Size([2]), ember.device("cpu"), ember.ones(2))
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        data = pickle.dumps(plain, protocol)
        assert b"torch" not in data
        back = pickle.loads(data)
        assert back[:3] == plain[:3] and back[3].tolist() == [1.0, 1.0]


def _sparse_checkpoint(lib, device="cpu"):
    """Sparse tensors of every layout in ``lib``: COO (coalesced, uncoalesced with a repeated index, hybrid), CSR,
    CSC, BSR, BSC and a batched CSR."""
    dense = lib.tensor([[0., 2., 0., 0.], [3., 0., 0., 4.]], device=device)
    return {"coo": dense.to_sparse(), "dup": lib.sparse_coo_tensor([[0, 0, 1], [1, 1, 0]], [1., 2., 3.], (2, 2)),
            "hybrid": lib.stack([dense, dense], -1).to_sparse(dense_dim=1), "csr": dense.to_sparse_csr(),
            "csc": dense.to_sparse_csc(), "bsr": dense.to_sparse_bsr((1, 2)), "bsc": dense.to_sparse_bsc((2, 1)),
            "batched": lib.stack([dense, dense]).to_sparse_csr(), "plain": dense}


def _same_sparse(ours, theirs):
    for key in theirs:
        a, b = ours[key], theirs[key]
        assert str(a.layout).split(".")[-1] == str(b.layout).split(".")[-1], key
        np.testing.assert_array_equal(_as_numpy(a.to_dense()), _as_numpy(b.to_dense()))
        if str(b.layout).endswith("coo"):
            assert a.is_coalesced() == b.is_coalesced() and a._indices().tolist() == b._indices().tolist()
        elif not str(b.layout).endswith("strided"):
            assert a.values().tolist() == b.values().tolist()


@pytest.mark.filterwarnings("ignore:Sparse:UserWarning")
def test_sparse_tensors_cross_both_ways(device, tmp_path):
    ours, theirs = tmp_path / "ours.pt", tmp_path / "theirs.pt"
    ember.save(_sparse_checkpoint(ember, device), ours)
    torch.save(_sparse_checkpoint(torch), theirs)
    for weights_only in (True, False):
        _same_sparse(torch.load(ours, weights_only=weights_only, map_location=_map(device)),
                     _sparse_checkpoint(torch))
        _same_sparse(ember.load(theirs, weights_only=weights_only), _sparse_checkpoint(torch))
        _same_sparse(ember.load(ours, weights_only=weights_only), _sparse_checkpoint(torch))
    import pickletools
    names = [[arg for op, arg, _ in pickletools.genops(_data_pkl(lib, _sparse_checkpoint(lib))) if op.name in
              ("GLOBAL", "BINUNICODE")] for lib in (ember, torch)]  # the same calls (index strides may differ)
    assert names[0] == names[1]


@pytest.mark.filterwarnings("ignore:Sparse:UserWarning")
def test_a_sparse_tensor_pointing_outside_its_values_does_not_load(tmp_path):
    path = tmp_path / "hostile.pt"
    torch.save({"s": torch.sparse_coo_tensor([[0, 7]], [1., 2.], (3,), check_invariants=False)}, path)
    for weights_only in (True, False):
        with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
            ember.load(path, weights_only=weights_only)
