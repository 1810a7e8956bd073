"""ember-vision datasets and downloads: image folders, IDX/CIFAR readers, a local HTTP server."""
import gzip
import hashlib
import io
import os
import pickle
import sys
import tarfile

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
Image = pytest.importorskip("PIL.Image")

from ember_vision import datasets, transforms  # noqa: E402
from ember_vision.datasets import utils as dutils  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "plugins", "ember_vision", "tests"))
import local_server  # noqa: E402

sys.path.pop(0)
BLOB = bytes(range(256)) * 40


def _png_tree(root, counts=(("cat", 2), ("dog", 3))):
    rng = np.random.default_rng(1)
    for cls, n in counts:
        os.makedirs(root / cls, exist_ok=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8)).save(root / cls / f"{i}.png")
    return root


def test_image_folder(tmp_path, device):
    root = _png_tree(tmp_path)
    (root / "dog" / "notes.txt").write_text("not an image")
    ds = datasets.ImageFolder(str(root), transform=transforms.ToTensor())
    assert ds.classes == ["cat", "dog"] and ds.class_to_idx == {"cat": 0, "dog": 1}
    assert ds.targets == [0, 0, 1, 1, 1] and len(ds) == 5
    img, label = ds[3]
    want = np.asarray(Image.open(root / "dog" / "1.png")).transpose(2, 0, 1) / 255.0
    np.testing.assert_allclose(img.numpy(), want, rtol=1e-6)
    assert label == 1
    loader = ember.utils.data.DataLoader(ds, batch_size=5)
    x, y = next(iter(loader))
    assert tuple(x.to(device).shape) == (5, 3, 4, 5) and y.tolist() == [0, 0, 1, 1, 1]


def test_dataset_folder_options(tmp_path):
    root = _png_tree(tmp_path)
    only_zero = datasets.ImageFolder(str(root), is_valid_file=lambda p: p.endswith("0.png"))
    assert [os.path.basename(p) for p, _ in only_zero.samples] == ["0.png", "0.png"]
    sizes = datasets.DatasetFolder(str(root), loader=os.path.getsize, extensions=(".png",))
    assert sizes[0][0] == os.path.getsize(root / "cat" / "0.png")


def test_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        datasets.ImageFolder(str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        datasets.ImageFolder(str(tmp_path))
    root = _png_tree(tmp_path)
    os.makedirs(root / "empty")
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes empty"):
        datasets.ImageFolder(str(root))
    assert len(datasets.ImageFolder(str(root), allow_empty=True)) == 5
    (root / "cat" / "1.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    ds = datasets.ImageFolder(str(root), allow_empty=True)
    with pytest.raises(OSError, match=r"cannot read image file .*cat.*1\.png"):
        ds[1]


def test_fake_data_is_deterministic():
    ds = datasets.FakeData(size=4, image_size=(3, 6, 5), num_classes=3)
    a, b = ds[2], ds[2]
    assert np.array_equal(np.asarray(a[0]), np.asarray(b[0])) and a[1] == b[1]
    assert a[0].size == (5, 6) and 0 <= a[1] < 3
    assert not np.array_equal(np.asarray(ds[0][0]), np.asarray(ds[1][0]))
    with pytest.raises(IndexError, match="index 4 out of range"):
        ds[4]


def _idx(arr, type_byte):
    header = bytes([0, 0, type_byte, arr.ndim]) + np.asarray(arr.shape, ">i4").tobytes()
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def _md5(data):
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def mnist_files():
    rng = np.random.default_rng(2)
    files = {}
    for prefix, n in (("train", 3), ("t10k", 2)):
        files[f"{prefix}-images-idx3-ubyte.gz"] = gzip.compress(
            _idx(rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), 0x08), mtime=0)
        files[f"{prefix}-labels-idx1-ubyte.gz"] = gzip.compress(
            _idx(np.arange(n, dtype=np.uint8), 0x08), mtime=0)
    return files


def _resources(files):
    return [(name, _md5(data)) for name, data in files.items()]


def test_mnist_reads_idx(tmp_path, mnist_files, monkeypatch):
    monkeypatch.setattr(datasets.FashionMNIST, "resources", _resources(mnist_files))
    raw = tmp_path / "FashionMNIST" / "raw"
    os.makedirs(raw)
    for name, data in mnist_files.items():
        (raw / name).write_bytes(data)
    ds = datasets.FashionMNIST(str(tmp_path), train=True)
    want = np.frombuffer(gzip.decompress(mnist_files["train-images-idx3-ubyte.gz"]), np.uint8, offset=16)
    assert ds.data.dtype == ember.uint8 and tuple(ds.data.shape) == (3, 28, 28)
    assert np.array_equal(ds.data.numpy().ravel(), want)
    img, label = ds[2]
    assert img.mode == "L" and label == 2 and ds.targets.dtype == ember.int64
    assert len(datasets.FashionMNIST(str(tmp_path), train=False)) == 2
    (raw / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x03" + b"\x00" * 5))
    with pytest.raises(RuntimeError, match="t10k-images-idx3-ubyte.gz is corrupted"):
        datasets.FashionMNIST(str(tmp_path), train=False)


def test_idx_errors(tmp_path):
    bad = tmp_path / "bad-idx"
    bad.write_bytes(bytes([0, 0, 8, 1]) + np.asarray([5], ">i4").tobytes() + b"\x00\x01")
    with pytest.raises(RuntimeError, match="bad-idx: IDX header says shape"):
        datasets.read_idx(str(bad))
    bad.write_bytes(b"PK\x03\x04")
    with pytest.raises(RuntimeError, match="not an IDX file"):
        datasets.read_idx(str(bad))
    with pytest.raises(RuntimeError, match="dataset not found.*download=True"):
        datasets.MNIST(str(tmp_path))


def _batch(n, seed):
    rng = np.random.default_rng(seed)
    return {"batch_label": "batch", "labels": list(range(n)),
            "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "filenames": [f"{i}.png" for i in range(n)]}


def _cifar_files(monkeypatch):
    """Batch files in the official layout; the dataset's checksums are pointed at them."""
    batches = {"data_batch_1": _batch(2, 0), "test_batch": _batch(3, 1),
               "batches.meta": {"label_names": [f"c{i}" for i in range(10)], "num_vis": 3072}}
    files = {name: pickle.dumps(obj, protocol=2) for name, obj in batches.items()}
    md5 = {name: _md5(data) for name, data in files.items()}
    monkeypatch.setattr(datasets.CIFAR10, "train_list", [["data_batch_1", md5["data_batch_1"]]])
    monkeypatch.setattr(datasets.CIFAR10, "test_list", [["test_batch", md5["test_batch"]]])
    monkeypatch.setattr(datasets.CIFAR10, "meta", {"filename": "batches.meta", "key": "label_names",
                                                   "md5": md5["batches.meta"]})
    return batches, files


def test_cifar10_restricted_unpickler(tmp_path, monkeypatch):
    folder = tmp_path / "cifar-10-batches-py"
    os.makedirs(folder)
    batches, files = _cifar_files(monkeypatch)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    ds = datasets.CIFAR10(str(tmp_path), train=False)
    assert len(ds) == 3 and ds.classes[3] == "c3" and ds.targets == [0, 1, 2]
    img, label = ds[1]
    want = batches["test_batch"]["data"][1].reshape(3, 32, 32).transpose(1, 2, 0)
    assert np.array_equal(np.asarray(img), want) and label == 1

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    evil = tmp_path / "evil"
    evil.write_bytes(pickle.dumps({"data": Evil()}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"evil: refusing to load global (posix|os|nt)\.system"):
        datasets.cifar.load_batch(str(evil))
    (folder / "test_batch").write_bytes(b"tampered")
    with pytest.raises(RuntimeError, match="test_batch is corrupted"):
        datasets.CIFAR10(str(tmp_path), train=False)


@pytest.fixture
def server(mnist_files):
    files = dict(mnist_files, **{"blob.bin": BLOB})
    with local_server.serve(files) as (url, httpd):
        yield url, httpd


def test_download_resumes_and_checks(server, tmp_path):
    server, httpd = server
    blob = BLOB
    (tmp_path / "blob.bin.part").write_bytes(blob[:1000])
    path = dutils.download_url(server + "blob.bin", str(tmp_path), md5=_md5(blob))
    with open(path, "rb") as f:
        assert f.read() == blob
    assert httpd.ranges == ["bytes=1000-"]
    assert not os.path.exists(path + ".part")
    dutils.download_url(server + "blob.bin", str(tmp_path), md5=_md5(blob))  # cached: no request
    assert len(httpd.ranges) == 1
    with pytest.raises(RuntimeError, match="checksum mismatch for .*blob.bin: expected md5 0+"):
        dutils.download_url(server + "blob.bin", str(tmp_path / "other"), md5="0" * 32)
    assert os.listdir(tmp_path / "other") == []
    with pytest.raises(RuntimeError, match="HTTP 404"):
        dutils.download_url(server + "missing.bin", str(tmp_path))


def test_download_offline_error(tmp_path):
    with pytest.raises(RuntimeError, match=r"could not download http://127\.0\.0\.1:9/x\.bin .*offline"):
        dutils.download_url("http://127.0.0.1:9/x.bin", str(tmp_path), md5="0" * 32, timeout=2)
    with pytest.raises(RuntimeError, match=r"Put the file at .*x\.bin and try again") as e:
        dutils.download_url("http://127.0.0.1:9/x.bin", str(tmp_path), timeout=2)
    assert "md5" not in str(e.value)


def test_mnist_download(server, tmp_path, mnist_files, monkeypatch):
    server, _ = server
    monkeypatch.setattr(datasets.MNIST, "resources", _resources(mnist_files))
    monkeypatch.setattr(datasets.MNIST, "mirrors", ["http://127.0.0.1:9/", server])
    ds = datasets.MNIST(str(tmp_path), train=True, download=True)
    assert len(ds) == 3 and ds[1][1] == 1
    assert sorted(os.listdir(tmp_path / "MNIST" / "raw")) == sorted(mnist_files)


def test_cifar10_download_and_extract(tmp_path, monkeypatch):
    _, files = _cifar_files(monkeypatch)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tgz = buf.getvalue()
    with local_server.serve({"cifar.tgz": tgz}) as (url, httpd):
        monkeypatch.setattr(datasets.CIFAR10, "url", url + "cifar.tgz")
        monkeypatch.setattr(datasets.CIFAR10, "tgz_md5", _md5(tgz))
        ds = datasets.CIFAR10(str(tmp_path), train=True, download=True)
        datasets.CIFAR10(str(tmp_path), train=True, download=True)  # already there: no second request
    assert len(ds) == 2 and ds.targets == [0, 1] and len(httpd.ranges) == 1


def test_extract_refuses_paths_outside_the_target(tmp_path):
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    os.makedirs(tmp_path / "out")
    with pytest.raises((tarfile.TarError, RuntimeError), match="escaped.txt"):
        dutils.extract_archive(str(archive), str(tmp_path / "out"))
    assert not (tmp_path / "escaped.txt").exists()
