"""The German Traffic Sign Recognition Benchmark from ``root/gtsrb/GTSRB`` (``.ppm`` images)."""
from __future__ import annotations

import csv
import os

from PIL import Image

from .folder import find_classes, make_dataset
from .utils import download_and_extract_archive, verify_str_arg
from .vision import _ImageListDataset, not_found

_BASE_URL = "https://sid.erda.dk/public/archives/daaeac0d7ce1152aea9b61d9f1e19370/"


def _rgb_loader(path):
    with Image.open(path) as img:
        return img.convert("RGB")


class GTSRB(_ImageListDataset):
    """43 sign classes: train from ``Training/<class>/*.ppm``, test from ``Final_Test/Images`` and
    ``GT-final_test.csv``."""

    _ARCHIVES = {"train": [("GTSRB-Training_fixed.zip", "513f3c79a4c5141765e10e952eaa2478")],
                 "test": [("GTSRB_Final_Test_Images.zip", "c7e4e6327067d32654124b0fe9e82185"),
                          ("GTSRB_Final_Test_GT.zip", "fe31e9c9270bbcd7b84b7f21a9d9d9e5")]}

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = os.path.join(self.root, "gtsrb")
        self._target_folder = os.path.join(self._base_folder, "GTSRB",
                                           "Training" if split == "train" else os.path.join("Final_Test", "Images"))
        if download and not os.path.isdir(self._target_folder):
            for name, md5 in self._ARCHIVES[split]:
                download_and_extract_archive(_BASE_URL + name, self._base_folder, md5=md5)
        if not os.path.isdir(self._target_folder):
            raise not_found(self._target_folder)
        if split == "train":
            samples = make_dataset(self._target_folder, find_classes(self._target_folder)[1], extensions=(".ppm",))
        else:
            with open(os.path.join(self._base_folder, "GT-final_test.csv")) as f:
                samples = [(os.path.join(self._target_folder, row["Filename"]), int(row["ClassId"]))
                           for row in csv.DictReader(f, delimiter=";", skipinitialspace=True)]
        self._image_files = [path for path, _ in samples]
        self._labels = [label for _, label in samples]
        self.loader = _rgb_loader
