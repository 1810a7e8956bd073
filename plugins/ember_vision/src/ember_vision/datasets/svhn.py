"""SVHN (Street View House Numbers) from the ``<split>_32x32.mat`` files in ``root`` (read with SciPy)."""
from __future__ import annotations

import os

import numpy as np
from PIL import Image

from .utils import check_integrity, download_url, verify_str_arg
from .vision import VisionDataset


class SVHN(VisionDataset):
    """Digits cropped from house numbers: ``data`` uint8 ``(N, 3, 32, 32)``, ``labels`` int64 (digit 0 is 0)."""

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        path = os.path.join(self.root, self.filename)
        if not check_integrity(path, self.file_md5):
            raise RuntimeError(f"Dataset not found or corrupted ({path}). You can use download=True to download it")
        import scipy.io

        mat = scipy.io.loadmat(path)
        self.data = np.transpose(mat["X"], (3, 2, 0, 1))
        self.labels = mat["y"].astype(np.int64).squeeze(1)
        self.labels[self.labels == 10] = 0  # the files label the digit 0 as 10

    def download(self) -> None:
        """Fetch this split's ``.mat`` file (MD5-checked) unless it is already there."""
        download_url(self.url, self.root, self.filename, self.file_md5)

    def __getitem__(self, index: int):
        return self._apply(Image.fromarray(np.transpose(self.data[index], (1, 2, 0))), int(self.labels[index]))

    def __len__(self) -> int:
        return len(self.data)
