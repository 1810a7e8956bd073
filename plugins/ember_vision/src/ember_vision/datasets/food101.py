"""Food-101 from ``root/food-101`` (``images/<class>/<id>.jpg`` listed by ``meta/<split>.json``)."""
from __future__ import annotations

import json
import os

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import _ImageListDataset, not_found


class Food101(_ImageListDataset):
    """101 food categories; ``split`` is train or test."""

    _URL = "http://data.vision.ee.ethz.ch/cvl/food-101.tar.gz"
    _MD5 = "85eeb15f3717b99a5da872d97d918f87"

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False,
                 loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = os.path.join(self.root, "food-101")
        self._meta_folder = os.path.join(self._base_folder, "meta")
        self._images_folder = os.path.join(self._base_folder, "images")
        if download and not self._check_exists():
            download_and_extract_archive(self._URL, self.root, md5=self._MD5)
        if not self._check_exists():
            raise not_found(self._base_folder)
        with open(os.path.join(self._meta_folder, f"{split}.json")) as f:
            metadata = json.load(f)
        self.classes = sorted(metadata)
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self._image_files, self._labels = [], []
        for cls, stems in metadata.items():
            self._labels += [self.class_to_idx[cls]] * len(stems)
            self._image_files += [os.path.join(self._images_folder, *f"{stem}.jpg".split("/")) for stem in stems]
        self.loader = loader

    def _check_exists(self) -> bool:
        return os.path.isdir(self._meta_folder) and os.path.isdir(self._images_folder)
