"""CelebA from ``root/celeba`` (``img_align_celeba/`` and the attribute, identity, box, landmark and
partition text files)."""
from __future__ import annotations

import csv
import os

import numpy as np
from PIL import Image

import ember

from .utils import check_integrity, download_url, extract_archive, verify_str_arg
from .vision import VisionDataset

_TARGETS = {"attr": "attr", "identity": "identity", "bbox": "bbox", "landmarks": "landmarks_align"}


class CelebA(VisionDataset):
    """Faces with ``target_type`` one or a list of attr (40 binary int64s), identity, bbox, landmarks."""

    base_folder = "celeba"
    file_list = [
        ("0B7EVK8r0v71pZjFTYXZWM3FlRnM", "00d2c5bc6d35e252742224ab0c1e8fcb", "img_align_celeba.zip"),
        ("0B7EVK8r0v71pblRyaVFSWGxPY0U", "75e246fa4810816ffd6ee81facbd244c", "list_attr_celeba.txt"),
        ("1_ee_0u7vcNLOfNLegJRHmolfH5ICW-XS", "32bd1bd63d3c78cd57e08160ec5ed1e2", "identity_CelebA.txt"),
        ("0B7EVK8r0v71pbThiMVRxWXZ4dU0", "00566efa6fedff7a56946cd1c10f1c16", "list_bbox_celeba.txt"),
        ("0B7EVK8r0v71pd0FJY3Blby1HUTQ", "cc24ecafdb5b50baae59b03474781f8c", "list_landmarks_align_celeba.txt"),
        ("0B7EVK8r0v71pY0NSMzRuSXJEVkk", "d32c9cbf5e040fd4025c592c306e6668", "list_eval_partition.txt"),
    ]
    _DRIVE = "https://drive.google.com/uc?export=download&id="

    def __init__(self, root, split: str = "train", target_type="attr", transform=None, target_transform=None,
                 download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = split
        self.target_type = list(target_type) if isinstance(target_type, list) else [target_type]
        if not self.target_type and target_transform is not None:
            raise RuntimeError("target_transform is specified but target_type is empty")
        if download:
            self.download()
        missing = self._missing()
        if missing:
            raise RuntimeError(f"Dataset not found or corrupted ({missing}). You can use download=True to download it")
        part = {"train": 0, "valid": 1, "test": 2, "all": None}[
            verify_str_arg(split.lower() if isinstance(split, str) else split, "split",
                           ("train", "valid", "test", "all"))]
        names, splits, _ = self._load("list_eval_partition.txt")
        keep = np.ones(len(names), bool) if part is None else splits[:, 0] == part
        self.filename = [n for n, k in zip(names, keep) if k]
        tables = {key: self._load(name, header=header) for key, name, header in (
            ("identity", "identity_CelebA.txt", None), ("bbox", "list_bbox_celeba.txt", 1),
            ("landmarks_align", "list_landmarks_align_celeba.txt", 1), ("attr", "list_attr_celeba.txt", 1))}
        for key, (_, values, _) in tables.items():
            setattr(self, key, ember.from_numpy(values[keep]))
        self.attr = ember.from_numpy((tables["attr"][1][keep] + 1) // 2)  # -1/1 in the file -> 0/1
        self.attr_names = tables["attr"][2]

    def _load(self, filename: str, header=None):
        """(first column, int64 array of the rest, header row) of a space-separated CelebA list file."""
        with open(os.path.join(self.root, self.base_folder, filename)) as f:
            rows = list(csv.reader(f, delimiter=" ", skipinitialspace=True))
        head = rows[header] if header is not None else []
        rows = rows[header + 1:] if header is not None else rows
        return [r[0] for r in rows], np.array([[int(v) for v in r[1:]] for r in rows], np.int64), head

    def _missing(self):
        for _, md5, name in self.file_list:
            path = os.path.join(self.root, self.base_folder, name)
            if not name.endswith(".zip") and not check_integrity(path, md5):
                return path
        images = os.path.join(self.root, self.base_folder, "img_align_celeba")
        return None if os.path.isdir(images) else images

    def download(self) -> None:
        """Fetch the files from their Google Drive ids (MD5-checked) and unpack the images."""
        if self._missing() is None:
            return
        folder = os.path.join(self.root, self.base_folder)
        for file_id, md5, name in self.file_list:
            download_url(self._DRIVE + file_id, folder, name, md5)
        extract_archive(os.path.join(folder, "img_align_celeba.zip"))

    def __getitem__(self, index: int):
        for t in self.target_type:
            if t not in _TARGETS:
                raise ValueError(f'Target type "{t}" is not recognized.')
        image = Image.open(os.path.join(self.root, self.base_folder, "img_align_celeba", self.filename[index]))
        target = []
        for t in self.target_type:
            table = getattr(self, _TARGETS[t])
            target.append(table[index, 0] if t == "identity" else table[index, :])
        if self.transform is not None:
            image = self.transform(image)
        if not target:
            return image, None
        target = tuple(target) if len(target) > 1 else target[0]
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self) -> int:
        return len(self.attr)
