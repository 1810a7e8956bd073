"""The Describable Textures Dataset from ``root/dtd/dtd`` (``images/<class>/*`` listed by ``labels/<split><n>.txt``)."""
from __future__ import annotations

import os

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import _ImageListDataset, not_found


class DTD(_ImageListDataset):
    """47 texture classes; ``split`` is train/val/test of ``partition`` 1-10."""

    _URL = "https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz"
    _MD5 = "fff73e5086ae6bdbea199a49dfb8a4c1"

    def __init__(self, root, split: str = "train", partition: int = 1, transform=None, target_transform=None,
                 download: bool = False, loader=default_loader):
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        if not isinstance(partition, int) or not 1 <= partition <= 10:
            raise ValueError(f"Parameter 'partition' should be an integer with `1 <= partition <= 10`, "
                             f"but got {partition} instead")
        self._partition = partition
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._base_folder = os.path.join(self.root, "dtd")
        self._data_folder = os.path.join(self._base_folder, "dtd")
        images = os.path.join(self._data_folder, "images")
        if download and not os.path.isdir(self._data_folder):
            download_and_extract_archive(self._URL, self._base_folder, md5=self._MD5)
        if not os.path.isdir(self._data_folder):
            raise not_found(self._data_folder)
        with open(os.path.join(self._data_folder, "labels", f"{split}{partition}.txt")) as f:
            pairs = [line.strip().split("/") for line in f if line.strip()]
        self.classes = sorted({cls for cls, _ in pairs})
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self._image_files = [os.path.join(images, cls, name) for cls, name in pairs]
        self._labels = [self.class_to_idx[cls] for cls, _ in pairs]
        self.loader = loader
