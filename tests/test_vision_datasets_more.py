"""More torchvision datasets in ember-vision: KMNIST, EMNIST, CIFAR100, SVHN, STL10, FER2013.

Each test writes tiny fake files in torchvision's on-disk layout; the same files are read by torchvision 0.28
in a reference process (checksums patched to the fakes' on both sides) and the items compared. Downloads
come from a loopback HTTP server started by the test; nothing reaches the internet.
"""
import gzip
import hashlib
import io
import os
import pickle
import struct
import sys
import tarfile
import zipfile

import numpy as np
import pytest

pytest.importorskip("ember_vision")
pytest.importorskip("PIL")
from ember_vision import datasets  # noqa: E402
from ember_vision.datasets import utils as dutils  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "plugins", "ember_vision", "tests"))
import local_server  # noqa: E402
sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

RNG = np.random.default_rng(0)


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def idx_bytes(array: np.ndarray) -> bytes:
    return bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape) + array.tobytes()


def write(path, data: bytes) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return md5(data)


def mnist_split_bytes(prefix, n):
    return {f"{prefix}-images-idx3-ubyte": idx_bytes(RNG.integers(0, 256, (n, 28, 28), dtype=np.uint8)),
            f"{prefix}-labels-idx1-ubyte": idx_bytes(RNG.integers(0, 10, n).astype(np.uint8))}


def fake_kmnist(root):
    files = {**mnist_split_bytes("train", 5), **mnist_split_bytes("t10k", 3)}
    for name, data in files.items():
        write(os.path.join(root, "KMNIST", "raw", name), data)
    return files


def fake_emnist(root):
    files = {**mnist_split_bytes("emnist-letters-train", 4), **mnist_split_bytes("emnist-letters-test", 3)}
    for name, data in files.items():
        write(os.path.join(root, "EMNIST", "raw", name), data)
    return files


def fake_cifar100(root):
    def batch(n):
        return pickle.dumps({"data": RNG.integers(0, 256, (n, 3072), dtype=np.uint8),
                             "fine_labels": RNG.integers(0, 100, n).tolist(),
                             "coarse_labels": RNG.integers(0, 20, n).tolist()})
    folder = os.path.join(root, "cifar-100-python")
    meta = pickle.dumps({"fine_label_names": [f"c{i}" for i in range(100)],
                         "coarse_label_names": [f"s{i}" for i in range(20)]})
    return {name: write(os.path.join(folder, name), data)
            for name, data in (("train", batch(4)), ("test", batch(3)), ("meta", meta))}


def fake_svhn(root, n=5):
    scipy_io = pytest.importorskip("scipy.io")
    buf = io.BytesIO()
    scipy_io.savemat(buf, {"X": RNG.integers(0, 256, (32, 32, 3, n), dtype=np.uint8),
                           "y": np.array([[10], [1], [2], [10], [9]][:n], np.uint8)})
    return write(os.path.join(root, "train_32x32.mat"), buf.getvalue())


def stl10_files(n_train=4, n_test=3, n_unlabeled=2):
    def images(n):
        return RNG.integers(0, 256, (n, 3, 96, 96), dtype=np.uint8).tobytes()
    return {"train_X.bin": images(n_train), "train_y.bin": RNG.integers(1, 11, n_train).astype(np.uint8).tobytes(),
            "unlabeled_X.bin": images(n_unlabeled), "test_X.bin": images(n_test),
            "test_y.bin": RNG.integers(1, 11, n_test).astype(np.uint8).tobytes(),
            "class_names.txt": "\n".join(f"k{i}" for i in range(10)).encode() + b"\n",
            "fold_indices.txt": b"0 2\n1 3\n" + b"0\n" * 8}


def fake_stl10(root):
    files = stl10_files()
    return {name: write(os.path.join(root, "stl10_binary", name), data) for name, data in files.items()}


def fake_fer2013(root):
    def pixels():
        return " ".join(str(v) for v in RNG.integers(0, 256, 48 * 48))
    train = "emotion,pixels\n" + "".join(f"{i % 7},{pixels()}\n" for i in range(3))
    test = "pixels\n" + "".join(f"{pixels()}\n" for _ in range(2))
    return {"train": write(os.path.join(root, "fer2013", "train.csv"), train.encode()),
            "test": write(os.path.join(root, "fer2013", "test.csv"), test.encode())}


ITEMS = """
import numpy as np
def plain(t):
    if hasattr(t, "tolist"):
        return [t.tolist(), str(t.dtype).split(".")[-1]]
    if hasattr(t, "mode"):
        return [np.asarray(t).tolist(), t.mode]
    return [plain(v) for v in t] if isinstance(t, tuple) else t
def items(ds):
    out = []
    for i in (0, len(ds) - 1):
        img, target = ds[i]
        out.append([np.asarray(img).tolist(), plain(target), img.mode])
    return [len(ds), list(getattr(ds, "classes", []) or []), out]
"""
REF_ITEMS = ITEMS
_scope = {}
exec(ITEMS, _scope)
_items = _scope["items"]  # length, classes, first and last items (pixels as nested lists), JSON-ready


@pytest.fixture(scope="module")
def fakes(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fakes"))
    return root, {"cifar100": fake_cifar100(root), "svhn": fake_svhn(root), "stl10": fake_stl10(root),
                  "fer": fake_fer2013(root), "kmnist": fake_kmnist(root), "emnist": fake_emnist(root)}


def _ember_all(root, md5s, monkeypatch):
    C = datasets.CIFAR100
    monkeypatch.setattr(C, "train_list", [["train", md5s["cifar100"]["train"]]])
    monkeypatch.setattr(C, "test_list", [["test", md5s["cifar100"]["test"]]])
    monkeypatch.setattr(C, "meta", {**C.meta, "md5": md5s["cifar100"]["meta"]})
    monkeypatch.setitem(datasets.SVHN.split_list, "train", ["unused", "train_32x32.mat", md5s["svhn"]])
    s = md5s["stl10"]
    monkeypatch.setattr(datasets.STL10, "train_list", [[n, s[n]] for n in ("train_X.bin", "train_y.bin",
                                                                          "unlabeled_X.bin")])
    monkeypatch.setattr(datasets.STL10, "test_list", [[n, s[n]] for n in ("test_X.bin", "test_y.bin")])
    monkeypatch.setattr(datasets.FER2013, "_RESOURCES", {
        **datasets.FER2013._RESOURCES, "train": ("train.csv", md5s["fer"]["train"]),
        "test": ("test.csv", md5s["fer"]["test"])})
    return {
        "kmnist_train": _items(datasets.KMNIST(root)), "kmnist_test": _items(datasets.KMNIST(root, train=False)),
        "emnist": _items(datasets.EMNIST(root, "letters", train=False)),
        "cifar100": _items(C(root)), "cifar100_test": _items(C(root, train=False)),
        "svhn": _items(datasets.SVHN(root)),
        "stl10_train": _items(datasets.STL10(root)), "stl10_test": _items(datasets.STL10(root, split="test")),
        "stl10_fold": _items(datasets.STL10(root, folds=1)),
        "stl10_all": _items(datasets.STL10(root, split="train+unlabeled")),
        "stl10_unlabeled": _items(datasets.STL10(root, split="unlabeled")),
        "fer_train": _items(datasets.FER2013(root)), "fer_test": _items(datasets.FER2013(root, split="test")),
    }


def test_datasets_match_torchvision(fakes, monkeypatch):
    root, md5s = fakes
    mine = _ember_all(root, md5s, monkeypatch)
    assert mine["svhn"][2][0][1] == 0 and mine["stl10_unlabeled"][2][0][1] == -1
    assert mine["fer_test"][2][0][1] is None and mine["emnist"][1][0] == "N/A"
    ref = vision_reference.run(REF_ITEMS + f"""
from torchvision import datasets as D
root, m = {root!r}, {md5s!r}
D.CIFAR100.train_list = [["train", m["cifar100"]["train"]]]
D.CIFAR100.test_list = [["test", m["cifar100"]["test"]]]
D.CIFAR100.meta = dict(D.CIFAR100.meta, md5=m["cifar100"]["meta"])
D.SVHN.split_list["train"] = ["unused", "train_32x32.mat", m["svhn"]]
s = m["stl10"]
D.STL10.train_list = [[n, s[n]] for n in ("train_X.bin", "train_y.bin", "unlabeled_X.bin")]
D.STL10.test_list = [[n, s[n]] for n in ("test_X.bin", "test_y.bin")]
D.FER2013._RESOURCES = dict(D.FER2013._RESOURCES, train=("train.csv", m["fer"]["train"]),
                           test=("test.csv", m["fer"]["test"]))
print(json.dumps({{
    "kmnist_train": items(D.KMNIST(root)), "kmnist_test": items(D.KMNIST(root, train=False)),
    "emnist": items(D.EMNIST(root, "letters", train=False)),
    "cifar100": items(D.CIFAR100(root)), "cifar100_test": items(D.CIFAR100(root, train=False)),
    "svhn": items(D.SVHN(root)),
    "stl10_train": items(D.STL10(root)), "stl10_test": items(D.STL10(root, split="test")),
    "stl10_fold": items(D.STL10(root, folds=1)),
    "stl10_all": items(D.STL10(root, split="train+unlabeled")),
    "stl10_unlabeled": items(D.STL10(root, split="unlabeled")),
    "fer_train": items(D.FER2013(root)), "fer_test": items(D.FER2013(root, split="test")),
}}))
""")
    assert set(ref) == set(mine)
    for key in ref:
        assert mine[key] == ref[key], key


def test_bad_arguments_and_missing_files(tmp_path):
    with pytest.raises(ValueError, match="Unknown value 'nope' for argument split"):
        datasets.SVHN(str(tmp_path), split="nope")
    with pytest.raises(ValueError, match="argument split"):
        datasets.EMNIST(str(tmp_path), split="bytes")
    with pytest.raises(ValueError, match=r"folds should be in the range \[0, 10\)"):
        datasets.STL10(str(tmp_path), folds=10)
    with pytest.raises(RuntimeError, match="train_32x32.mat.*download=True"):
        datasets.SVHN(str(tmp_path))
    with pytest.raises(RuntimeError, match="train_X.bin.*download=True"):
        datasets.STL10(str(tmp_path))
    with pytest.raises(RuntimeError, match="train.csv not found"):
        datasets.FER2013(str(tmp_path))
    with pytest.raises(RuntimeError, match="emnist-digits-train-images-idx3-ubyte"):
        datasets.EMNIST(str(tmp_path), "digits")
    with pytest.raises(RuntimeError, match="cifar-100-python.train"):
        datasets.CIFAR100(str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_kmnist_and_emnist_download(tmp_path, monkeypatch):
    kmnist = {name + ".gz": gzip.compress(data) for name, data in
              {**mnist_split_bytes("train", 3), **mnist_split_bytes("t10k", 2)}.items()}
    emnist = {**mnist_split_bytes("emnist-digits-train", 3), **mnist_split_bytes("emnist-digits-test", 2)}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in emnist.items():
            z.writestr(f"gzip/{name}.gz", gzip.compress(data))
    with local_server.serve({**kmnist, "gzip.zip": buf.getvalue()}) as (url, httpd):
        monkeypatch.setattr(datasets.KMNIST, "mirrors", [url])
        monkeypatch.setattr(datasets.KMNIST, "resources", [(n, md5(d)) for n, d in kmnist.items()])
        ds = datasets.KMNIST(str(tmp_path), train=False, download=True)
        assert len(ds) == 2 and ds.classes[1] == "ki"
        assert np.array_equal(ds.data.numpy()[1], np.frombuffer(gzip.decompress(kmnist["t10k-images-idx3-ubyte.gz"]),
                                                                np.uint8, offset=16).reshape(2, 28, 28)[1])
        monkeypatch.setattr(datasets.EMNIST, "url", url + "gzip.zip")
        monkeypatch.setattr(datasets.EMNIST, "md5", md5(buf.getvalue()))
        ds = datasets.EMNIST(str(tmp_path), "digits", download=True)
        assert len(ds) == 3 and ds.classes == list("0123456789")
        raw = os.path.join(tmp_path, "EMNIST", "raw")
        assert sorted(os.listdir(raw)) == sorted(["gzip.zip", *emnist])
        n = len(httpd.ranges)
        datasets.EMNIST(str(tmp_path), "digits", train=False, download=True)  # already there: no request
        assert len(httpd.ranges) == n


def test_svhn_download_and_checksum_mismatch(tmp_path, monkeypatch):
    source = tmp_path / "source"
    good = fake_svhn(str(source))
    blob = (source / "train_32x32.mat").read_bytes()
    with local_server.serve({"train_32x32.mat": blob}) as (url, _):
        monkeypatch.setitem(datasets.SVHN.split_list, "train", [url + "train_32x32.mat", "train_32x32.mat", "0" * 32])
        root = tmp_path / "bad"
        with pytest.raises(RuntimeError, match="checksum mismatch for .*train_32x32.mat"):
            datasets.SVHN(str(root), download=True)
        assert os.listdir(root) == []  # nothing partial left behind
        monkeypatch.setitem(datasets.SVHN.split_list, "train", [url + "train_32x32.mat", "train_32x32.mat", good])
        ds = datasets.SVHN(str(tmp_path / "good"), download=True)
        assert len(ds) == 5 and [int(v) for v in ds.labels] == [0, 1, 2, 0, 9]


def _tar_gz(files: dict, folder: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_stl10_download_and_truncated_archive(tmp_path, monkeypatch):
    files = stl10_files()
    archive = _tar_gz(files, "stl10_binary")
    truncated = archive[: len(archive) // 2]
    names = ("train_X.bin", "train_y.bin", "unlabeled_X.bin", "test_X.bin", "test_y.bin")
    monkeypatch.setattr(datasets.STL10, "train_list", [[n, md5(files[n])] for n in names[:3]])
    monkeypatch.setattr(datasets.STL10, "test_list", [[n, md5(files[n])] for n in names[3:]])
    with local_server.serve({"stl.tar.gz": archive, "cut.tar.gz": truncated}) as (url, _):
        monkeypatch.setattr(datasets.STL10, "url", url + "cut.tar.gz")
        monkeypatch.setattr(datasets.STL10, "tgz_md5", md5(truncated))
        with pytest.raises((tarfile.TarError, EOFError), match="stl10_binary.tar.gz is truncated or corrupt"):
            datasets.STL10(str(tmp_path / "cut"), download=True)
        monkeypatch.setattr(datasets.STL10, "url", url + "stl.tar.gz")
        monkeypatch.setattr(datasets.STL10, "tgz_md5", md5(archive))
        ds = datasets.STL10(str(tmp_path / "ok"), split="test", download=True)
        assert len(ds) == 3 and ds.classes[0] == "k0" and ds[0][0].size == (96, 96)


def test_extract_gz_truncated_leaves_nothing(tmp_path):
    path = tmp_path / "blob.bin.gz"
    path.write_bytes(gzip.compress(os.urandom(5000))[:-40])
    with pytest.raises(EOFError, match="blob.bin.gz is truncated"):
        dutils.extract_archive(str(path))
    assert os.listdir(tmp_path) == ["blob.bin.gz"]


def _img(path, size=(6, 5), mode="RGB"):
    from PIL import Image
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shape = (size[1], size[0], 3) if mode == "RGB" else (size[1], size[0])
    Image.fromarray(RNG.integers(0, 256, shape, dtype=np.uint8), mode).save(path)


def fake_image_lists(root):
    """Food101, DTD and GTSRB trees (PNG/PPM so pixels survive exactly; names as torchvision expects)."""
    import json
    food = os.path.join(root, "food-101")
    meta = {"train": {"ramen": ["ramen/1", "ramen/2"], "apple_pie": ["apple_pie/7"]}, "test": {"ramen": ["ramen/3"]}}
    for split, classes in meta.items():
        write(os.path.join(food, "meta", f"{split}.json"), json.dumps(classes).encode())
        for stems in classes.values():
            for stem in stems:
                _img(os.path.join(food, "images", f"{stem}.jpg"))
    dtd = os.path.join(root, "dtd", "dtd")
    lines = {"train1": ["banded/b_1.jpg", "zigzag/z_1.jpg", "banded/b_2.jpg"], "test3": ["zigzag/z_2.jpg"]}
    for name, entries in lines.items():
        write(os.path.join(dtd, "labels", f"{name}.txt"), ("\n".join(entries) + "\n").encode())
        for entry in entries:
            _img(os.path.join(dtd, "images", entry))
    gt = os.path.join(root, "gtsrb", "GTSRB")
    for cls, n in (("00000", 2), ("00002", 1)):
        for i in range(n):
            _img(os.path.join(gt, "Training", cls, f"{i:05d}_00000.ppm"))
        write(os.path.join(gt, "Training", cls, f"GT-{cls}.csv"), b"Filename;ClassId\n")
    for i in range(2):
        _img(os.path.join(gt, "Final_Test", "Images", f"{i:05d}.ppm"), mode="L" if i else "RGB")
    scipy_io = pytest.importorskip("scipy.io")
    flowers = os.path.join(root, "flowers-102")
    for i in range(1, 6):
        _img(os.path.join(flowers, "jpg", f"image_{i:05d}.jpg"))
    os.makedirs(flowers, exist_ok=True)
    scipy_io.savemat(os.path.join(flowers, "imagelabels.mat"), {"labels": np.array([[3, 1, 102, 2, 3]])})
    scipy_io.savemat(os.path.join(flowers, "setid.mat"), {"trnid": np.array([[2, 5, 1]]), "valid": np.array([[3]]),
                                                          "tstid": np.array([[4, 3]])})
    pets = os.path.join(root, "oxford-iiit-pet")
    rows = ["Abyssinian_1 1 1 1", "great_pyrenees_2 2 2 1", "Abyssinian_3 1 1 1", "yorkshire_terrier_9 37 2 25"]
    write(os.path.join(pets, "annotations", "trainval.txt"), ("\n".join(rows[:3]) + "\n").encode())
    write(os.path.join(pets, "annotations", "test.txt"), (rows[3] + "\n").encode())
    for row in rows:
        _img(os.path.join(pets, "images", row.split()[0] + ".jpg"))
        _img(os.path.join(pets, "annotations", "trimaps", row.split()[0] + ".png"), mode="L")
    write(os.path.join(root, "gtsrb", "GT-final_test.csv"),
          b"Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId\n00000.ppm;6;5;0;0;5;4;16\n"
          b"00001.ppm;6;5;0;0;5;4;1\n")


IMAGE_LIST_CASES = """
cases = {
    "food_train": D.Food101(root), "food_test": D.Food101(root, split="test"),
    "dtd_train": D.DTD(root), "dtd_test": D.DTD(root, split="test", partition=3),
    "gtsrb_train": D.GTSRB(root), "gtsrb_test": D.GTSRB(root, split="test"),
    "flowers_train": D.Flowers102(root), "flowers_test": D.Flowers102(root, split="test"),
    "pets": D.OxfordIIITPet(root, target_types=["category", "binary-category", "segmentation"]),
    "pets_test": D.OxfordIIITPet(root, split="test"), "pets_seg": D.OxfordIIITPet(root, target_types="segmentation"),
    "pets_none": D.OxfordIIITPet(root, target_types=[]),
}
"""


FLOWERS_MD5 = """
import hashlib, os
for key in ("label", "setid"):
    name = D.Flowers102._file_dict[key][0]
    with open(os.path.join(root, "flowers-102", name), "rb") as f:
        D.Flowers102._file_dict[key] = (name, hashlib.md5(f.read()).hexdigest())
"""


def test_image_list_datasets_match_torchvision(tmp_path, monkeypatch):
    root = str(tmp_path)
    fake_image_lists(root)
    patched = {"D": datasets, "root": root}
    monkeypatch.setattr(datasets.Flowers102, "_file_dict", dict(datasets.Flowers102._file_dict))
    exec(FLOWERS_MD5, patched)
    scope = {"D": datasets, "root": root}
    exec(IMAGE_LIST_CASES, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    assert mine["food_train"][1] == ["apple_pie", "ramen"] and mine["gtsrb_test"][2][1][1:] == [1, "RGB"]
    assert mine["flowers_train"][2][0][1] == 0 and mine["pets"][1] == ["Abyssinian", "Great Pyrenees"]
    ref = vision_reference.run(REF_ITEMS + f"from torchvision import datasets as D\nroot = {root!r}\n"
                               + FLOWERS_MD5
                               + IMAGE_LIST_CASES + "print(json.dumps({k: items(v) for k, v in cases.items()}))")
    assert ref == mine


def test_image_list_missing_and_download(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="food-101.*download=True"):
        datasets.Food101(str(tmp_path))
    with pytest.raises(ValueError, match="partition"):
        datasets.DTD(str(tmp_path), partition=11)
    with pytest.raises(RuntimeError, match="Training.*download=True"):
        datasets.GTSRB(str(tmp_path))
    with pytest.raises(RuntimeError, match="flowers-102.jpg.*download=True"):
        datasets.Flowers102(str(tmp_path))
    with pytest.raises(ValueError, match="Unknown value 'mask' for argument target_types"):
        datasets.OxfordIIITPet(str(tmp_path), target_types=["category", "mask"])
    with pytest.raises(RuntimeError, match="oxford-iiit-pet.*download=True"):
        datasets.OxfordIIITPet(str(tmp_path))
    source = tmp_path / "source"
    fake_image_lists(str(source))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(source / "dtd" / "dtd", arcname="dtd")
    archive = buf.getvalue()
    with local_server.serve({"dtd.tar.gz": archive}) as (url, _):
        monkeypatch.setattr(datasets.DTD, "_URL", url + "dtd.tar.gz")
        monkeypatch.setattr(datasets.DTD, "_MD5", md5(archive))
        ds = datasets.DTD(str(tmp_path / "dl"), download=True)
    assert len(ds) == 3 and ds.classes == ["banded", "zigzag"] and ds[1][1] == 1
    assert sorted(os.listdir(tmp_path / "dl" / "dtd")) == ["dtd", "dtd.tar.gz"]


def test_joint_transforms(tmp_path):
    fake_image_lists(str(tmp_path))
    ds = datasets.OxfordIIITPet(str(tmp_path), target_types=["category", "binary-category"],
                                transforms=lambda img, target: (img.size, target[::-1]))
    assert ds[1] == ((6, 5), (1, 1)) and ds[0] == ((6, 5), (0, 0))
    ds = datasets.DTD(str(tmp_path), transform=lambda img: img.mode, target_transform=lambda t: t + 10)
    assert ds[1] == ("RGB", 11) and ds.transforms is not None
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        datasets.OxfordIIITPet(str(tmp_path), transforms=print, transform=print)


def fake_voc(root):
    from PIL import Image
    voc = os.path.join(root, "VOCdevkit", "VOC2012")
    names = ["2008_000001", "2008_000002"]
    for folder in ("Segmentation", "Main"):
        write(os.path.join(voc, "ImageSets", folder, "train.txt"), ("\n".join(names) + "\n").encode())
    objects = ["<object><name>dog</name><difficult>0</difficult><bndbox><xmin>1</xmin><ymin>2</ymin>"
               "<xmax>5</xmax><ymax>4</ymax></bndbox><part><name>head</name></part></object>",
               "<object><name>cat</name><bndbox><xmin>0</xmin><ymin>0</ymin><xmax>3</xmax><ymax>3</ymax></bndbox>"
               "</object>"]
    for i, name in enumerate(names):
        _img(os.path.join(voc, "JPEGImages", name + ".jpg"))
        mask = Image.fromarray(RNG.integers(0, 21, (5, 6), dtype=np.uint8), "P")
        mask.putpalette([v for c in range(256) for v in (c, 255 - c, c // 2)])
        os.makedirs(os.path.join(voc, "SegmentationClass"), exist_ok=True)
        mask.save(os.path.join(voc, "SegmentationClass", name + ".png"))
        xml = (f"<annotation><folder>VOC2012</folder><filename>{name}.jpg</filename><size><width>6</width>"
               f"<height>5</height><depth>3</depth></size><segmented> 1 </segmented><empty></empty>"
               + "".join(objects[: i + 1]) + "</annotation>")
        write(os.path.join(voc, "Annotations", name + ".xml"), xml.encode())
    return voc


def test_voc_matches_torchvision(tmp_path):
    root = str(tmp_path)
    fake_voc(root)
    cases = "cases = {'seg': D.VOCSegmentation(root), 'det': D.VOCDetection(root, year='2012')}\n"
    scope = {"D": datasets, "root": root}
    exec(cases, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    det = mine["det"][2]
    assert det[0][1]["annotation"]["object"][0]["name"] == "dog" and len(det[1][1]["annotation"]["object"]) == 2
    assert mine["seg"][2][0][1][1] == "P"
    ref = vision_reference.run(REF_ITEMS + f"from torchvision import datasets as D\nroot = {root!r}\n" + cases
                               + "print(json.dumps({k: items(v) for k, v in cases.items()}))")
    assert ref == mine
    with pytest.raises(ValueError, match="Unknown value 'test' for argument image_set"):
        datasets.VOCDetection(root, year="2012", image_set="test")
    with pytest.raises(RuntimeError, match="VOC2007.*download=True"):
        datasets.VOCSegmentation(root, year="2007")


def test_coco(tmp_path):
    import json
    for name in ("b.jpg", "a.png"):
        _img(str(tmp_path / "imgs" / name), mode="L")
    ann = {"images": [{"id": 9, "file_name": "b.jpg"}, {"id": 4, "file_name": "a.png"},
                      {"id": 7, "file_name": "a.png"}],
           "annotations": [{"id": 1, "image_id": 9, "bbox": [0, 0, 2, 2], "category_id": 3, "caption": "a b"},
                           {"id": 2, "image_id": 4, "bbox": [1, 1, 2, 3], "category_id": 1, "caption": "c"},
                           {"id": 3, "image_id": 9, "bbox": [2, 2, 1, 1], "category_id": 3, "caption": "d e"}],
           "categories": [{"id": 1, "name": "x"}, {"id": 3, "name": "y"}]}
    (tmp_path / "ann.json").write_text(json.dumps(ann))
    det = datasets.CocoDetection(str(tmp_path / "imgs"), str(tmp_path / "ann.json"))
    assert det.ids == [4, 7, 9] and len(det) == 3
    img, target = det[2]
    assert img.mode == "RGB" and img.size == (6, 5) and [a["id"] for a in target] == [1, 3]
    assert det[1][1] == [] and det[0][1][0]["bbox"] == [1, 1, 2, 3]
    caps = datasets.CocoCaptions(str(tmp_path / "imgs"), str(tmp_path / "ann.json"),
                                 transforms=lambda i, t: (i.mode, t))
    assert caps[2] == ("RGB", ["a b", "d e"])
    with pytest.raises(ValueError, match="Index must be of type integer"):
        det[np.int64(0).item() + 0.0]
    with pytest.raises(FileNotFoundError, match="missing.json"):
        datasets.CocoDetection(str(tmp_path), str(tmp_path / "missing.json"))


def fake_celeba(root, md5s=None):
    folder = os.path.join(root, "celeba")
    names = [f"{i:06d}.jpg" for i in range(1, 6)]
    for n in names:
        _img(os.path.join(folder, "img_align_celeba", n))
    attrs = ["Bald", "Smiling", "Young"]
    texts = {
        "list_eval_partition.txt": "".join(f"{n} {p}\n" for n, p in zip(names, (0, 2, 1, 2, 0))),
        "identity_CelebA.txt": "".join(f"{n} {i * 7}\n" for i, n in enumerate(names)),
        "list_bbox_celeba.txt": "5\nimage_id x_1 y_1 width height\n"
                                + "".join(f"{n}   {i} {i + 1}  10 12\n" for i, n in enumerate(names)),
        "list_landmarks_align_celeba.txt": "5\nlefteye_x lefteye_y\n"
                                           + "".join(f"{n} {i} {2 * i}\n" for i, n in enumerate(names)),
        "list_attr_celeba.txt": "5\n" + " ".join(attrs) + " \n"
                                + "".join(f"{n} {' '.join(RNG.choice(['-1', ' 1'], 3))}\n" for n in names),
    }
    return {name: write(os.path.join(folder, name), text.encode()) for name, text in texts.items()}


CELEBA_CASES = """
cases = {"train": D.CelebA(root), "all": D.CelebA(root, split="all", target_type=["identity", "bbox", "landmarks"]),
         "test": D.CelebA(root, split="TEST", target_type="landmarks"), "none": D.CelebA(root, target_type=[])}
"""


def test_celeba_matches_torchvision(tmp_path, monkeypatch):
    root = str(tmp_path)
    md5s = fake_celeba(root)
    files = [(i, md5s.get(name, m), name) for i, m, name in datasets.CelebA.file_list]
    monkeypatch.setattr(datasets.CelebA, "file_list", files)
    scope = {"D": datasets, "root": root}
    exec(CELEBA_CASES, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    assert mine["train"][0] == 2 and mine["test"][0] == 2 and mine["all"][0] == 5 and mine["none"][2][0][1] is None
    assert scope["cases"]["train"].attr_names == ["Bald", "Smiling", "Young", ""]  # the trailing space, as torchvision
    ref = vision_reference.run(REF_ITEMS + f"from torchvision import datasets as D\nroot = {root!r}\n"
                               f"D.CelebA.file_list = {files!r}\n" + CELEBA_CASES
                               + "print(json.dumps({k: items(v) for k, v in cases.items()}))")
    assert ref == mine
    with pytest.raises(ValueError, match='Target type "age" is not recognized'):
        datasets.CelebA(root, target_type="age")[0]
    with pytest.raises(RuntimeError, match="list_attr_celeba.txt.*download=True"):
        datasets.CelebA(str(tmp_path / "empty"))


def test_caltech101_matches_torchvision(tmp_path):
    scipy_io = pytest.importorskip("scipy.io")
    base = os.path.join(str(tmp_path), "caltech101")
    for cls, n in (("airplanes", 2), ("BACKGROUND_Google", 1), ("ant", 1)):
        for i in range(1, n + 1):
            _img(os.path.join(base, "101_ObjectCategories", cls, f"image_{i:04d}.jpg"),
                 mode="L" if cls == "ant" else "RGB")
            folder = os.path.join(base, "Annotations", {"airplanes": "Airplanes_Side_2"}.get(cls, cls))
            os.makedirs(folder, exist_ok=True)
            scipy_io.savemat(os.path.join(folder, f"annotation_{i:04d}.mat"),
                             {"obj_contour": np.arange(6, dtype=np.float64).reshape(2, 3) * i})
    cases = ("cases = {'cat': D.Caltech101(root), 'both': D.Caltech101(root, target_type=['category', 'annotation'])}\n"
             "for ds in cases.values():\n"
             "    ds.target_transform = lambda t: [t[0], t[1].tolist()] if isinstance(t, tuple) else t\n")
    scope = {"D": datasets, "root": str(tmp_path)}
    exec(cases, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    assert scope["cases"]["cat"].categories == ["airplanes", "ant"] and mine["cat"][0] == 3
    assert mine["both"][2][1][1] == [1, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]] and mine["both"][2][1][2] == "L"
    for cls, n in (("001.ak47", 2), ("002.bat", 1)):
        for i in range(1, n + 1):
            _img(os.path.join(str(tmp_path), "caltech256", "256_ObjectCategories", cls, f"{cls[:3]}_{i:04d}.jpg"))
    write(os.path.join(str(tmp_path), "caltech256", "256_ObjectCategories", "002.bat", "notes.txt"), b"x")
    cases += "cases['c256'] = D.Caltech256(root)\n"
    exec(cases, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    assert mine["c256"][0] == 3 and mine["c256"][2][1][1] == 1
    ref = vision_reference.run(REF_ITEMS + f"from torchvision import datasets as D\nroot = {str(tmp_path)!r}\n"
                               + cases + "print(json.dumps({k: items(v) for k, v in cases.items()}))")
    assert ref == mine
    with pytest.raises(RuntimeError, match="101_ObjectCategories.*download=True"):
        datasets.Caltech101(str(tmp_path / "none"))


def test_archived_image_folders_match_torchvision(tmp_path, monkeypatch):
    root = str(tmp_path)
    for path in ("eurosat/2750/Forest/Forest_1.jpg", "eurosat/2750/River/River_1.jpg", "eurosat/2750/River/River_2.jpg",
                 "country211/valid/AD/1.jpg", "country211/valid/ZW/2.jpg", "country211/train/AD/3.jpg",
                 "rendered-sst2/valid/negative/0.png", "rendered-sst2/valid/positive/1.png"):
        _img(os.path.join(root, *path.split("/")))
    cases = ("cases = {'eurosat': D.EuroSAT(root), 'country': D.Country211(root, split='valid'),\n"
             "         'sst2': D.RenderedSST2(root, split='val')}\n")
    scope = {"D": datasets, "root": root}
    exec(cases, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    assert mine["eurosat"][0] == 3 and scope["cases"]["country"].root == root
    ref = vision_reference.run(REF_ITEMS + f"from torchvision import datasets as D\nroot = {root!r}\n" + cases
                               + "print(json.dumps({k: items(v) for k, v in cases.items()}))")
    assert ref == mine
    with pytest.raises(RuntimeError, match="2750.*download=True"):
        datasets.EuroSAT(str(tmp_path / "none"))
    image = (tmp_path / "country211" / "train" / "AD" / "3.jpg").read_bytes()
    archive = _tar_gz({"test/NZ/9.jpg": image}, "country211")
    with local_server.serve({"c.tgz": archive}) as (url, _):
        monkeypatch.setattr(datasets.Country211, "_URL", url + "c.tgz")
        monkeypatch.setattr(datasets.Country211, "_MD5", md5(archive))
        ds = datasets.Country211(str(tmp_path / "dl"), split="test", download=True)
    assert ds.classes == ["NZ"] and len(ds) == 1 and ds[0][0].size == (6, 5)


def test_usps_semeion_match_torchvision(tmp_path, monkeypatch):
    import bz2
    root = str(tmp_path)
    rows = [f"{i % 10 + 1} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(RNG.uniform(-1, 1, 256)))
            for i in range(4)]
    write(os.path.join(root, "usps.t.bz2"), bz2.compress(("\n".join(rows) + "\n").encode()))
    table = np.concatenate([RNG.integers(0, 2, (3, 256)), np.eye(10)[[4, 0, 9]]], 1)
    semeion_md5 = write(os.path.join(root, "semeion.data"),
                        "".join(" ".join(f"{v:.4f}" for v in r) + " \n" for r in table).encode())
    monkeypatch.setattr(datasets.SEMEION, "md5_checksum", semeion_md5)
    cases = "cases = {'usps': D.USPS(root, train=False), 'semeion': D.SEMEION(root, download=False)}\n"
    scope = {"D": datasets, "root": root}
    exec(cases, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    assert mine["semeion"][2][0][1] == 4 and mine["usps"][2][1][1] == 3
    ref = vision_reference.run(REF_ITEMS + f"from torchvision import datasets as D\nroot = {root!r}\n"
                               f"D.SEMEION.md5_checksum = {semeion_md5!r}\n" + cases
                               + "print(json.dumps({k: items(v) for k, v in cases.items()}))")
    assert ref == mine
    with pytest.raises(RuntimeError, match="usps.bz2.*download=True"):
        datasets.USPS(root)


def test_qmnist_matches_torchvision(tmp_path):
    root = str(tmp_path)
    raw = os.path.join(root, "QMNIST", "raw")
    labels = RNG.integers(0, 70000, (3, 8)).astype(">i4")
    labels[:, 0] %= 10
    write(os.path.join(raw, "qmnist-test-images-idx3-ubyte"),
          idx_bytes(RNG.integers(0, 256, (3, 28, 28), dtype=np.uint8)))
    write(os.path.join(raw, "qmnist-test-labels-idx2-int"),
          bytes([0, 0, 0x0C, 2]) + struct.pack(">2i", 3, 8) + labels.tobytes())
    cases = "cases = {'compat': D.QMNIST(root, what='test'), 'full': D.QMNIST(root, train=False, compat=False)}\n"
    scope = {"D": datasets, "root": root}
    exec(cases, scope)
    mine = {k: _items(v) for k, v in scope["cases"].items()}
    assert mine["compat"][2][0][1] == int(labels[0, 0]) and mine["full"][2][1][1][0] == labels[2].tolist()
    ref = vision_reference.run(REF_ITEMS + f"from torchvision import datasets as D\nroot = {root!r}\n" + cases
                               + "print(json.dumps({k: items(v) for k, v in cases.items()}))")
    assert ref == mine
    with pytest.raises(ValueError, match="Unknown value 'val' for argument what"):
        datasets.QMNIST(root, what="val")


def test_extract_xz_and_bz2(tmp_path):
    import bz2
    import lzma
    for name, data in (("a.bin.xz", lzma.compress(b"xz data")), ("b.bin.bz2", bz2.compress(b"bz2 data"))):
        (tmp_path / name).write_bytes(data)
        out = dutils.extract_archive(str(tmp_path / name))
        with open(out, "rb") as f:
            assert f.read() == (b"xz data" if name.endswith("xz") else b"bz2 data")
    (tmp_path / "c.bin.xz").write_bytes(lzma.compress(os.urandom(3000))[:-30])
    with pytest.raises((EOFError, lzma.LZMAError), match="c.bin.xz is truncated"):
        dutils.extract_archive(str(tmp_path / "c.bin.xz"))
    assert not (tmp_path / "c.bin").exists()
