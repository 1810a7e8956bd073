"""Small handwritten-digit sets stored as text: USPS (libsvm ``.bz2``) and SEMEION (``semeion.data``)."""
from __future__ import annotations

import bz2
import os

import numpy as np
from PIL import Image

from .utils import check_integrity, download_url
from .vision import VisionDataset


class _GreyDigits(VisionDataset):
    """``data`` uint8 ``(N, 16, 16)``; items are (PIL "L" image, int label from ``_labels_of()``)."""

    def _labels_of(self):
        raise NotImplementedError

    def __getitem__(self, index: int):
        return self._apply(Image.fromarray(self.data[index], mode="L"), int(self._labels_of()[index]))

    def __len__(self) -> int:
        return len(self.data)


class USPS(_GreyDigits):
    """16x16 digits from the libsvm files ``usps.bz2`` (train) / ``usps.t.bz2`` (test) in ``root``."""

    split_list = {
        "train": ["https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/usps.bz2", "usps.bz2",
                  "ec16c51db3855ca6c91edd34d0e9b197"],
        "test": ["https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/usps.t.bz2", "usps.t.bz2",
                 "8ea070ee2aca1ac39742fdd1ef5ed118"],
    }

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        url, filename, md5 = self.split_list["train" if train else "test"]
        path = os.path.join(self.root, filename)
        if download and not os.path.exists(path):
            download_url(url, self.root, filename, md5)
        if not os.path.exists(path):
            raise RuntimeError(f"Dataset not found ({path}). You can use download=True to download it")
        with bz2.open(path) as f:
            rows = [line.decode().split() for line in f]
        values = np.asarray([[v.split(":")[-1] for v in r[1:]] for r in rows], np.float32).reshape(-1, 16, 16)
        self.data = ((values + 1) / 2 * 255).astype(np.uint8)  # the files hold pixels in [-1, 1]
        self.targets = [int(r[0]) - 1 for r in rows]

    def _labels_of(self):
        return self.targets


class SEMEION(_GreyDigits):
    """16x16 binary digits from ``root/semeion.data`` (256 pixels then a one-hot label per row)."""

    url = "http://archive.ics.uci.edu/ml/machine-learning-databases/semeion/semeion.data"
    filename = "semeion.data"
    md5_checksum = "cb545d371d2ce14ec121470795a77432"

    def __init__(self, root, transform=None, target_transform=None, download: bool = True):
        super().__init__(root, transform=transform, target_transform=target_transform)
        path = os.path.join(self.root, self.filename)
        if download and not check_integrity(path, self.md5_checksum):
            download_url(self.url, self.root, self.filename, self.md5_checksum)
        if not check_integrity(path, self.md5_checksum):
            raise RuntimeError(f"Dataset not found or corrupted ({path}). You can use download=True to download it")
        table = np.loadtxt(path)
        self.data = (table[:, :256] * 255).astype(np.uint8).reshape(-1, 16, 16)
        self.labels = np.nonzero(table[:, 256:])[1]

    def _labels_of(self):
        return self.labels
