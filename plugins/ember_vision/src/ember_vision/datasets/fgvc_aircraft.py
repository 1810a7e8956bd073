"""FGVC-Aircraft, from ``root/fgvc-aircraft-2013b/data`` (``images/*.jpg`` and the per-split label lists)."""
from __future__ import annotations

import os

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import _ImageListDataset, not_found


class FGVCAircraft(_ImageListDataset):
    """Aircraft photos; ``split`` train, val, trainval or test; ``annotation_level`` variant, family or
    manufacturer (the class list and labels read from that level's files)."""

    _URL = "https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/archives/fgvc-aircraft-2013b.tar.gz"
    _CLASS_FILES = {"variant": "variants.txt", "family": "families.txt", "manufacturer": "manufacturers.txt"}

    def __init__(self, root, split: str = "trainval", annotation_level: str = "variant", transform=None,
                 target_transform=None, download: bool = False, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val", "trainval", "test"))
        self._annotation_level = verify_str_arg(annotation_level, "annotation_level", tuple(self._CLASS_FILES))
        self._data_path = os.path.join(self.root, "fgvc-aircraft-2013b")
        if download and not os.path.isdir(self._data_path):
            download_and_extract_archive(self._URL, self.root)
        if not os.path.isdir(self._data_path):
            raise not_found(self._data_path)
        data = os.path.join(self._data_path, "data")
        with open(os.path.join(data, self._CLASS_FILES[annotation_level])) as f:
            self.classes = [line.strip() for line in f]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self._image_files, self._labels = [], []
        with open(os.path.join(data, f"images_{annotation_level}_{split}.txt")) as f:
            for line in f:
                name, label = line.strip().split(" ", 1)
                self._image_files.append(os.path.join(data, "images", f"{name}.jpg"))
                self._labels.append(self.class_to_idx[label])
        self.loader = loader
