"""MNIST, FashionMNIST, KMNIST, EMNIST and QMNIST from the official IDX files (``.gz`` or extracted) in
``root/<Name>/raw``.

>>> read_idx.__name__
'read_idx'
"""
from __future__ import annotations

import gzip
import os
import shutil
import string

import numpy as np
from PIL import Image

import ember

from .utils import check_integrity, download_and_extract_archive, download_url, extract_archive, verify_str_arg
from .vision import VisionDataset

# IDX type byte -> big-endian dtype
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str) -> np.ndarray:
    """Parse an IDX file (``.gz`` or plain) into a native-endian array; malformed files raise naming the file."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise RuntimeError(f"{path}: not an IDX file (bad magic number {data[:4].hex()})")
    ndim = data[3]
    dims = tuple(int(d) for d in np.frombuffer(data, ">i4", ndim, 4))
    dtype = np.dtype(_IDX_TYPES[data[2]])
    start = 4 + 4 * ndim
    expected = int(np.prod(dims)) * dtype.itemsize
    if len(data) - start != expected:
        raise RuntimeError(f"{path}: IDX header says shape {dims} ({expected} bytes of data) "
                           f"but the file holds {len(data) - start} bytes")
    return np.frombuffer(data, dtype, offset=start).reshape(dims).astype(dtype.newbyteorder("="))


class MNIST(VisionDataset):
    """Handwritten digits: ``data`` uint8 ``(N, 28, 28)``, ``targets`` int64; items are (PIL 'L' image, int)."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        images, labels = self._stems()
        self.data = ember.from_numpy(read_idx(self._file(images)))
        self.targets = ember.from_numpy(read_idx(self._file(labels)).astype(np.int64))
        if self.data.shape[0] != self.targets.shape[0]:
            raise RuntimeError(f"{type(self).__name__}: {self.data.shape[0]} images but {self.targets.shape[0]} "
                               f"labels in {self.raw_folder}")

    def _stems(self) -> tuple:
        """The (images, labels) file names of this split in ``raw_folder``, without ``.gz``."""
        prefix = "train" if self.train else "t10k"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self) -> dict:
        return {c: i for i, c in enumerate(self.classes)}

    def _file(self, stem: str) -> str:
        """The extracted file, else the checked ``.gz``; a missing or corrupt file raises naming it."""
        plain = os.path.join(self.raw_folder, stem)
        if os.path.isfile(plain):
            return plain
        md5 = dict(self.resources).get(stem + ".gz")
        gz = plain + ".gz"
        if not os.path.isfile(gz):
            raise RuntimeError(f"{type(self).__name__}: dataset not found: neither {plain} nor {gz} exists. "
                               f"You can use download=True to download it")
        if not check_integrity(gz, md5):
            raise RuntimeError(f"{type(self).__name__}: {gz} is corrupted: its md5 is not {md5}; "
                               f"delete it and download again")
        return gz

    def download(self) -> None:
        """Fetch each missing file, trying the mirrors in order; checked by MD5.

        A file already extracted (``train-images-idx3-ubyte``) counts as present, as in torchvision.
        """
        for name, md5 in self.resources:
            path = os.path.join(self.raw_folder, name)
            if os.path.isfile(os.path.splitext(path)[0]) or check_integrity(path, md5):
                continue
            errors = []
            for mirror in self.mirrors:
                try:
                    download_url(mirror + name, self.raw_folder, name, md5)
                    break
                except RuntimeError as e:
                    errors.append(str(e))
            else:
                raise RuntimeError(f"{type(self).__name__}: could not download {name}:\n" + "\n".join(errors))

    def __getitem__(self, index: int):
        img = Image.fromarray(self.data[index].numpy())
        return self._apply(img, int(self.targets[index]))

    def __len__(self) -> int:
        return int(self.data.shape[0])


class FashionMNIST(MNIST):
    """Zalando's article images, in MNIST's format."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: cursive Japanese characters, in MNIST's format."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


_EMNIST_MERGED = set("cijklmopsuvwxyz")
_EMNIST_ALL = sorted(string.digits + string.ascii_letters)


class EMNIST(MNIST):
    """Extended MNIST: ``split`` is one of ``splits``; files ``emnist-<split>-<train|test>-*`` in ``raw_folder``."""

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    classes_split_dict = {
        "byclass": _EMNIST_ALL,
        "bymerge": [c for c in _EMNIST_ALL if c not in _EMNIST_MERGED],
        "balanced": [c for c in _EMNIST_ALL if c not in _EMNIST_MERGED],
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split: str, **kwargs):
        self.split = verify_str_arg(split, "split", self.splits)
        self.classes = self.classes_split_dict[split]
        super().__init__(root, **kwargs)

    def _stems(self) -> tuple:
        prefix = f"emnist-{self.split}-{'train' if self.train else 'test'}"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    def download(self) -> None:
        """Fetch and unpack ``gzip.zip`` (all splits) unless this split's files are already there."""
        if all(os.path.isfile(os.path.join(self.raw_folder, s)) for s in self._stems()):
            return
        download_and_extract_archive(self.url, self.raw_folder, md5=self.md5)
        unpacked = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(unpacked):
            if name.endswith(".gz"):
                extract_archive(os.path.join(unpacked, name), self.raw_folder)
        shutil.rmtree(unpacked)


_QMNIST_URL = "https://raw.githubusercontent.com/facebookresearch/qmnist/master/"


class QMNIST(MNIST):
    """MNIST's reconstruction with extended labels: ``targets`` int64 ``(N, 8)``; with ``compat`` an item's
    target is the class (column 0) alone. ``what``: train, test, test10k, test50k or nist."""

    subsets = {"train": "train", "test": "test", "test10k": "test", "test50k": "test", "nist": "nist"}
    resources = {
        "train": [(_QMNIST_URL + "qmnist-train-images-idx3-ubyte.gz", "ed72d4157d28c017586c42bc6afe6370"),
                  (_QMNIST_URL + "qmnist-train-labels-idx2-int.gz", "0058f8dd561b90ffdd0f734c6a30e5e4")],
        "test": [(_QMNIST_URL + "qmnist-test-images-idx3-ubyte.gz", "1394631089c404de565df7b7aeaf9412"),
                 (_QMNIST_URL + "qmnist-test-labels-idx2-int.gz", "5b5b05890a5e13444e108efe57b788aa")],
        "nist": [(_QMNIST_URL + "xnist-images-idx3-ubyte.xz", "7f124b3b8ab81486c9d8c2749c17f834"),
                 (_QMNIST_URL + "xnist-labels-idx2-int.xz", "5ed0e788978e45d4a8bd4b7caec3d79d")],
    }

    def __init__(self, root, what: str | None = None, compat: bool = True, train: bool = True, **kwargs):
        what = what if what is not None else ("train" if train else "test")
        self.what = verify_str_arg(what, "what", tuple(self.subsets))
        self.compat = compat
        super().__init__(root, train, **kwargs)
        rows = {"test10k": slice(0, 10000), "test50k": slice(10000, None)}.get(what, slice(None))
        self.data, self.targets = self.data[rows], self.targets[rows]

    def _stems(self) -> tuple:
        return tuple(os.path.splitext(os.path.basename(url))[0] for url, _ in self.resources[self.subsets[self.what]])

    def download(self) -> None:
        """Fetch and unpack this subset's two files unless they are already there."""
        if all(os.path.isfile(os.path.join(self.raw_folder, s)) for s in self._stems()):
            return
        for url, md5 in self.resources[self.subsets[self.what]]:
            download_and_extract_archive(url, self.raw_folder, md5=md5)

    def __getitem__(self, index: int):
        target = self.targets[index]
        return self._apply(Image.fromarray(self.data[index].numpy(), mode="L"),
                           int(target[0]) if self.compat else target)
