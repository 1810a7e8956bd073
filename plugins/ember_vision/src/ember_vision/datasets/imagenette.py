"""Imagenette: ten easy ImageNet classes, from ``root/imagenette2[-320|-160]/<split>/<wnid>/*.JPEG``."""
from __future__ import annotations

import os

from .folder import default_loader, find_classes, make_dataset
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset, not_found


class Imagenette(VisionDataset):
    """Ten ImageNet classes; ``split`` is train or val, ``size`` full, 320px or 160px (the archive unpacked).

    ``classes`` holds each class's names (a tuple), ``class_to_idx`` maps every one of those names to its index.
    """

    _ARCHIVES = {
        "full": ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2.tgz", "fe2fc210e6bb7c5664d602c3cd71e612"),
        "320px": ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-320.tgz",
                  "3df6f0d01a2c9592104656642f5e78a3"),
        "160px": ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-160.tgz",
                  "e793b78cc4c9e9a4ccc0c1155377a412"),
    }
    _WNID_TO_CLASS = {
        "n01440764": ("tench", "Tinca tinca"),
        "n02102040": ("English springer", "English springer spaniel"),
        "n02979186": ("cassette player",),
        "n03000684": ("chain saw", "chainsaw"),
        "n03028079": ("church", "church building"),
        "n03394916": ("French horn", "horn"),
        "n03417042": ("garbage truck", "dustcart"),
        "n03425413": ("gas pump", "gasoline pump", "petrol pump", "island dispenser"),
        "n03445777": ("golf ball",),
        "n03888257": ("parachute", "chute"),
    }

    def __init__(self, root, split: str = "train", size: str = "full", download: bool = False, transform=None,
                 target_transform=None, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val"))
        self._size = verify_str_arg(size, "size", ("full", "320px", "160px"))
        url, md5 = self._ARCHIVES[size]
        self._size_root = os.path.join(self.root, os.path.basename(url).rsplit(".", 1)[0])
        self._image_root = os.path.join(self._size_root, split)
        if download and not os.path.isdir(self._size_root):
            download_and_extract_archive(url, self.root, md5=md5)
        if not os.path.isdir(self._image_root):
            raise not_found(self._image_root)
        self.wnids, self.wnid_to_idx = find_classes(self._image_root)
        self.classes = [self._WNID_TO_CLASS[w] for w in self.wnids]
        self.class_to_idx = {name: i for w, i in self.wnid_to_idx.items() for name in self._WNID_TO_CLASS[w]}
        self._samples = make_dataset(self._image_root, self.wnid_to_idx, extensions=".jpeg")
        self.loader = loader

    def __getitem__(self, idx: int):
        path, label = self._samples[idx]
        return self._apply(self.loader(path), label)

    def __len__(self) -> int:
        return len(self._samples)
