"""Moving MNIST: 10 000 sequences of 20 frames, from ``root/MovingMNIST/mnist_test_seq.npy``."""
from __future__ import annotations

import os

import numpy as np

import ember

from .utils import download_url, verify_str_arg
from .vision import VisionDataset, not_found


class MovingMNIST(VisionDataset):
    """Each item is a ``(T, 1, 64, 64)`` uint8 tensor; ``split`` train keeps the first ``split_ratio`` frames of
    each sequence, test the rest, None all 20."""

    _URL = "http://www.cs.toronto.edu/~nitish/unsupervised_video/mnist_test_seq.npy"
    _MD5 = "be083ec986bfe91a449d63653c411eb2"

    def __init__(self, root, split: str | None = None, split_ratio: int = 10, download: bool = False,
                 transform=None):
        super().__init__(root, transform=transform)
        self._base_folder = os.path.join(self.root, type(self).__name__)
        self._filename = self._URL.rsplit("/", 1)[-1]
        if split is not None:
            verify_str_arg(split, "split", ("train", "test"))
        self.split = split
        if not isinstance(split_ratio, int):
            raise TypeError(f"`split_ratio` should be an integer, but got {type(split_ratio)}")
        if not 1 <= split_ratio <= 19:
            raise ValueError(f"`split_ratio` should be `1 <= split_ratio <= 19`, but got {split_ratio} instead.")
        self.split_ratio = split_ratio
        path = os.path.join(self._base_folder, self._filename)
        if download and not os.path.exists(path):
            download_url(self._URL, self._base_folder, self._filename, self._MD5)
        if not os.path.exists(path):
            raise not_found(path)
        data = np.load(path)  # (T, N, H, W)
        data = data[:split_ratio] if split == "train" else data[split_ratio:] if split == "test" else data
        self.data = ember.from_numpy(np.ascontiguousarray(data.transpose(1, 0, 2, 3)[:, :, None]))

    def __getitem__(self, idx: int):
        data = self.data[idx]
        return self.transform(data) if self.transform is not None else data

    def __len__(self) -> int:
        return len(self.data)
