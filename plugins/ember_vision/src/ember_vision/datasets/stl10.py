"""STL-10 from the binary files in ``root/stl10_binary`` (96x96 images stored column-major)."""
from __future__ import annotations

import os

import numpy as np
from PIL import Image

from .utils import check_integrity, download_and_extract_archive, verify_str_arg
from .vision import VisionDataset


class STL10(VisionDataset):
    """``split`` is train / train+unlabeled / unlabeled / test; unlabeled images have label -1.

    ``folds`` (0-9) keeps the training images listed on that line of ``fold_indices.txt``.
    """

    base_folder = "stl10_binary"
    url = "http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz"
    filename = "stl10_binary.tar.gz"
    tgz_md5 = "91f7769df0f17e558f3565bffb0c7dfb"
    class_names_file = "class_names.txt"
    folds_list_file = "fold_indices.txt"
    train_list = [["train_X.bin", "918c2871b30a85fa023e0c44e0bee87f"],
                  ["train_y.bin", "5a34089d4802c674881badbb80307741"],
                  ["unlabeled_X.bin", "5242ba1fed5e4be9e1e742405eb56ca4"]]
    test_list = [["test_X.bin", "7f263ba9f9e0b06b93213547f721ac82"],
                 ["test_y.bin", "36f9794fa4beb8a2c72628de14fa638e"]]
    splits = ("train", "train+unlabeled", "unlabeled", "test")

    def __init__(self, root, split: str = "train", folds=None, transform=None, target_transform=None,
                 download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self.splits)
        if folds is not None and not isinstance(folds, int):
            raise ValueError(f"Expected type None or int for argument folds, but got type {type(folds)}.")
        if folds is not None and folds not in range(10):
            raise ValueError(f"Value for argument folds should be in the range [0, 10), but got {folds}.")
        self.folds = folds
        if download:
            self.download()
        missing = self._missing()
        if missing:
            raise RuntimeError(f"Dataset not found or corrupted ({missing}). You can use download=True to download it")
        if split == "test":
            self.data, self.labels = self._load("test_X.bin"), self._labels("test_y.bin")
        elif split == "unlabeled":
            self.data = self._load("unlabeled_X.bin")
            self.labels = np.full(len(self.data), -1, np.int64)
        else:
            self.data, self.labels = self._load("train_X.bin"), self._labels("train_y.bin")
            if folds is not None:
                with open(self._path(self.folds_list_file)) as f:
                    keep = np.array(f.read().splitlines()[folds].split(), np.int64)
                self.data, self.labels = self.data[keep], self.labels[keep]
            if split == "train+unlabeled":
                extra = self._load("unlabeled_X.bin")
                self.data = np.concatenate([self.data, extra])
                self.labels = np.concatenate([self.labels, np.full(len(extra), -1, np.int64)])
        names = self._path(self.class_names_file)
        if os.path.isfile(names):
            with open(names) as f:
                self.classes = f.read().splitlines()

    def _path(self, name: str) -> str:
        return os.path.join(self.root, self.base_folder, name)

    def _missing(self):
        """The first file absent or failing its MD5, else None."""
        for name, md5 in self.train_list + self.test_list:
            if not check_integrity(self._path(name), md5):
                return self._path(name)
        return None

    def _load(self, name: str) -> np.ndarray:
        images = np.fromfile(self._path(name), np.uint8).reshape(-1, 3, 96, 96)
        return images.transpose(0, 1, 3, 2)  # the files hold each channel column by column

    def _labels(self, name: str) -> np.ndarray:
        return np.fromfile(self._path(name), np.uint8).astype(np.int64) - 1  # the files count from 1

    def download(self) -> None:
        """Fetch and unpack the archive unless every file is already there."""
        if self._missing() is not None:
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def __getitem__(self, index: int):
        return self._apply(Image.fromarray(np.transpose(self.data[index], (1, 2, 0))), int(self.labels[index]))

    def __len__(self) -> int:
        return len(self.data)
