"""WIDER FACE, from ``root/widerface`` (``WIDER_{train,val,test}/images`` and ``wider_face_split``)."""
from __future__ import annotations

import os

import numpy as np
from PIL import Image

import ember

from .utils import download_and_extract_archive, download_file_from_google_drive, extract_archive, verify_str_arg
from .vision import VisionDataset

_FIELDS = ("blur", "expression", "illumination", "occlusion", "pose", "invalid")


class WIDERFace(VisionDataset):
    """Face detection: the target is a dict of int64 tensors (``bbox`` as ``(N, 4)`` x, y, width, height, and the
    per-face attributes ``blur``, ``expression``, ``illumination``, ``occlusion``, ``pose``, ``invalid``); None
    for the test split.  The unpacked folders are read (the zip archives may be deleted)."""

    BASE_FOLDER = "widerface"
    FILE_LIST = [
        ("15hGDLhsx8bLgLcIRD5DhYt5iBxnjNF1M", "3fedf70df600953d25982bcd13d91ba2", "WIDER_train.zip"),
        ("1GUCogbp16PMGa39thoMMeWxp7Rp5oM8Q", "dfa7d7e790efa35df3788964cf0bbaea", "WIDER_val.zip"),
        ("1HIfDbVEWKmsYKJZm4lchTBDLW5N7dY5T", "e5d8f4248ed24c334bbd12f49c29dd40", "WIDER_test.zip"),
    ]
    ANNOTATIONS_FILE = ("http://shuoyang1213.me/WIDERFACE/support/bbx_annotation/wider_face_split.zip",
                        "0e3767bcf0e326556d407bf5bff5d27c", "wider_face_split.zip")

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False):
        super().__init__(os.path.join(os.fspath(root), self.BASE_FOLDER), transform=transform,
                         target_transform=target_transform)
        self.split = verify_str_arg(split, "split", ("train", "val", "test"))
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(f"Dataset not found or corrupted (looked for WIDER_train, WIDER_val, WIDER_test and "
                               f"wider_face_split in {self.root}). You can use download=True to download and "
                               "prepare it")
        self.img_info: list = []
        if split == "test":
            self._parse_test()
        else:
            self._parse_train_val()

    def __getitem__(self, index: int):
        with open(self.img_info[index]["img_path"], "rb") as f:
            img = Image.open(f)
            img.load()
        if self.transform is not None:
            img = self.transform(img)
        target = None if self.split == "test" else self.img_info[index]["annotations"]
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.img_info)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"

    def _parse_train_val(self) -> None:
        # blocks of: image path, box count n, then max(n, 1) lines of 10 integers (a picture without faces still
        # has one all-zero line, which torchvision keeps as a box)
        path = os.path.join(self.root, "wider_face_split", f"wider_face_{self.split}_bbx_gt.txt")
        with open(path) as f:
            lines = [line.rstrip() for line in f]
        i = 0
        while i < len(lines) and lines[i]:
            try:
                count = max(int(lines[i + 1]), 1)
                boxes = np.array([[int(v) for v in lines[j].split()] for j in range(i + 2, i + 2 + count)], np.int64)
            except (IndexError, ValueError) as e:
                raise RuntimeError(f"Error parsing annotation file {path} near line {i + 1}") from e
            labels = ember.from_numpy(boxes.reshape(count, 10))
            annotations = {"bbox": labels[:, 0:4].clone()}
            annotations.update({name: labels[:, 4 + k].clone() for k, name in enumerate(_FIELDS)})
            image = os.path.join(self.root, f"WIDER_{self.split}", "images", lines[i])
            self.img_info.append({"img_path": os.path.abspath(image), "annotations": annotations})
            i += 2 + count

    def _parse_test(self) -> None:
        with open(os.path.join(self.root, "wider_face_split", "wider_face_test_filelist.txt")) as f:
            self.img_info = [{"img_path": os.path.abspath(os.path.join(self.root, "WIDER_test", "images", line))}
                             for line in (raw.rstrip() for raw in f) if line]

    def _check_integrity(self) -> bool:
        names = [name for _, _, name in self.FILE_LIST] + [self.ANNOTATIONS_FILE[2]]
        return all(os.path.exists(os.path.join(self.root, os.path.splitext(n)[0])) for n in names)

    def download(self) -> None:
        """Fetch and unpack the image archives (Google Drive) and the annotations."""
        if self._check_integrity():
            return
        for file_id, md5, name in self.FILE_LIST:
            download_file_from_google_drive(file_id, self.root, name, md5)
            extract_archive(os.path.join(self.root, name))
        url, md5, _ = self.ANNOTATIONS_FILE
        download_and_extract_archive(url, self.root, md5=md5)
