"""Semantic Boundaries Dataset, from ``root`` (``img/<id>.jpg``, ``cls/<id>.mat`` and ``<image_set>.txt``;
needs scipy to read the ``.mat`` files)."""
from __future__ import annotations

import os
import shutil

import numpy as np
from PIL import Image

from .utils import download_and_extract_archive, download_url, verify_str_arg
from .vision import VisionDataset


class SBDataset(VisionDataset):
    """VOC images with ``mode`` segmentation targets (a PIL image of class ids) or boundaries targets (a
    ``(20, H, W)`` array, one boundary map per class); ``image_set`` train, val or train_noval."""

    url = "https://www2.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/semantic_contours/benchmark.tgz"
    md5 = "82b4d87ceb2ed10f6038a1cba92111cb"
    filename = "benchmark.tgz"
    voc_train_url = "https://www.cs.cornell.edu/~bharathh/train_noval.txt"
    voc_split_filename = "train_noval.txt"
    voc_split_md5 = "79bff800c5f0b1ec6b21080a3c066722"

    def __init__(self, root, image_set: str = "train", mode: str = "boundaries", download: bool = False,
                 transforms=None):
        try:
            from scipy.io import loadmat
        except ImportError:
            raise RuntimeError("Scipy is not found. This dataset needs to have scipy installed: "
                               "pip install scipy") from None
        self._loadmat = loadmat
        super().__init__(root, transforms)
        self.image_set = verify_str_arg(image_set, "image_set", ("train", "val", "train_noval"))
        self.mode = verify_str_arg(mode, "mode", ("segmentation", "boundaries"))
        self.num_classes = 20
        if download:
            self._download()
        split_file = os.path.join(self.root, image_set + ".txt")
        if not os.path.isfile(split_file):
            raise RuntimeError(f"Dataset not found or corrupted (no {split_file}). You can use download=True to "
                               "download it")
        with open(split_file) as f:
            names = [line.strip() for line in f if line.strip()]
        self.images = [os.path.join(self.root, "img", n + ".jpg") for n in names]
        self.masks = [os.path.join(self.root, "cls", n + ".mat") for n in names]
        self._get_target = self._segmentation if mode == "segmentation" else self._boundaries

    def _download(self) -> None:
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.md5)
        extracted = os.path.join(self.root, "benchmark_RELEASE", "dataset")
        for name in ("cls", "img", "inst", "train.txt", "val.txt"):
            shutil.move(os.path.join(extracted, name), self.root)
        if self.image_set == "train_noval":
            download_url(self.voc_train_url, self.root, self.voc_split_filename, self.voc_split_md5)

    def _gtcls(self, path: str):
        return self._loadmat(path)["GTcls"][0]

    def _segmentation(self, path: str):
        return Image.fromarray(self._gtcls(path)["Segmentation"][0])

    def _boundaries(self, path: str) -> np.ndarray:
        boundaries = self._gtcls(path)["Boundaries"][0]
        return np.stack([boundaries[i][0].toarray() for i in range(self.num_classes)])

    def __getitem__(self, index: int):
        with open(self.images[index], "rb") as f:
            img = Image.open(f).convert("RGB")
        return self._apply(img, self._get_target(self.masks[index]))

    def __len__(self) -> int:
        return len(self.images)

    def extra_repr(self) -> str:
        return f"Image set: {self.image_set}\nMode: {self.mode}"
