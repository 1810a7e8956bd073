"""FER2013 (48x48 grey faces, 7 expressions) from the Kaggle CSV files in ``root/fer2013``."""
from __future__ import annotations

import csv
import os

import numpy as np
from PIL import Image

from .utils import check_integrity, verify_str_arg
from .vision import VisionDataset


class FER2013(VisionDataset):
    """Reads ``fer2013.csv`` or ``icml_face_data.csv`` (both splits, by their Usage column) when present, else
    ``train.csv`` / ``test.csv``; the test split of ``test.csv`` has no labels (target None)."""

    _RESOURCES = {
        "train": ("train.csv", "3f0dfb3d3fd99c811a1299cb947e3131"),
        "test": ("test.csv", "b02c2298636a634e8c2faabbf3ea9a23"),
        "fer": ("fer2013.csv", "f8428a1edbd21e88f42c73edd2a14f95"),
        "icml": ("icml_face_data.csv", "b114b9e04e6949e5fe8b6a98b3892b1d"),
    }
    _URL = "https://www.kaggle.com/c/challenges-in-representation-learning-facial-expression-recognition-challenge"

    def __init__(self, root, split: str = "train", transform=None, target_transform=None):
        self._split = verify_str_arg(split, "split", ("train", "test"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        folder = os.path.join(self.root, "fer2013")
        kind = next((k for k in ("fer", "icml") if os.path.exists(os.path.join(folder, self._RESOURCES[k][0]))),
                    split)
        name, md5 = self._RESOURCES[kind]
        if not check_integrity(os.path.join(folder, name), md5):
            raise RuntimeError(f"{name} not found in {folder} or corrupted. You can download it from {self._URL}")
        prefix = " " if kind == "icml" else ""  # icml_face_data.csv's header has a space after each comma
        usage = ("Training",) if split == "train" else ("PublicTest", "PrivateTest")
        with open(os.path.join(folder, name), newline="") as f:
            rows = [r for r in csv.DictReader(f) if kind == split or r[prefix + "Usage"] in usage]
        labelled = kind != "test"
        self._samples = [(np.array(r[prefix + "pixels"].split(), np.uint8).reshape(48, 48),
                          int(r["emotion"]) if labelled else None) for r in rows]

    def __getitem__(self, index: int):
        pixels, target = self._samples[index]
        return self._apply(Image.fromarray(pixels), target)

    def __len__(self) -> int:
        return len(self._samples)
