"""CIFAR-10 from the official python batches, read by a restricted unpickler (no code runs).

The batch pickles hold dicts of bytes, lists and one NumPy array; the unpickler resolves only
the globals that rebuild a plain ``numpy.ndarray`` (and ``_codecs.encode`` for bytes) and refuses
anything else before it is called.
"""
from __future__ import annotations

import io
import os
import pickle

import numpy as np
from PIL import Image

from .utils import check_integrity, download_and_extract_archive
from .vision import VisionDataset


def _reconstruct(subtype, shape, dtype):
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError(f"only numpy.ndarray may be rebuilt, not {subtype!r}")
    return np.ndarray.__new__(np.ndarray, shape, dtype)


def _encode(text, encoding="latin1"):
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} is not allowed")
    return text.encode(encoding)


_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _encode,
}


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, f, path):
        super().__init__(f, encoding="latin1")
        self.path = path

    def find_class(self, module, name):
        fn = _ALLOWED.get((module, name))
        if fn is None:
            raise pickle.UnpicklingError(f"{self.path}: refusing to load global {module}.{name}: a CIFAR batch "
                                         f"holds only dicts, lists, bytes and NumPy arrays")
        return fn


def load_batch(path: str):
    """The object in a CIFAR python batch file, unpickled without running any code from it."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return _RestrictedUnpickler(io.BytesIO(data), path).load()
    except pickle.UnpicklingError:
        raise
    except Exception as e:
        raise RuntimeError(f"{path}: not a readable CIFAR batch: {type(e).__name__}: {e}") from e


class CIFAR10(VisionDataset):
    """32x32 colour images in 10 classes: ``data`` uint8 ``(N, 32, 32, 3)``, ``targets`` list of ints."""

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        chunks, self.targets = [], []
        for name, md5 in self.train_list if train else self.test_list:
            entry = load_batch(self._checked(name, md5))
            chunks.append(np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            self.targets.extend(int(v) for v in entry.get("labels", entry.get("fine_labels", [])))
        self.data = np.ascontiguousarray(np.concatenate(chunks).transpose(0, 2, 3, 1))
        meta = load_batch(self._checked(self.meta["filename"], self.meta["md5"]))
        self.classes = [c.decode() if isinstance(c, bytes) else c for c in meta[self.meta["key"]]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def _checked(self, name: str, md5: str) -> str:
        path = os.path.join(self.root, self.base_folder, name)
        if not os.path.isfile(path):
            raise RuntimeError(f"{type(self).__name__}: dataset not found: {path} does not exist. "
                               f"You can use download=True to download it")
        if not check_integrity(path, md5):
            raise RuntimeError(f"{type(self).__name__}: {path} is corrupted: its md5 is not {md5}")
        return path

    def _check_integrity(self) -> bool:
        return all(check_integrity(os.path.join(self.root, self.base_folder, n), m)
                   for n, m in self.train_list + self.test_list)

    def download(self) -> None:
        if not self._check_integrity():
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def __getitem__(self, index: int):
        return self._apply(Image.fromarray(self.data[index]), self.targets[index])

    def __len__(self) -> int:
        return len(self.data)


class CIFAR100(CIFAR10):
    """32x32 colour images in 100 fine classes (``targets`` are the fine labels), CIFAR-10's format otherwise."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
