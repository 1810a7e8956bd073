"""CLEVR object counting, from ``root/clevr/CLEVR_v1.0`` (``images/<split>/*`` and ``scenes/*.json``)."""
from __future__ import annotations

import json
import pathlib

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import _ImageListDataset, not_found


class CLEVRClassification(_ImageListDataset):
    """CLEVR scenes labelled with their number of objects (None for the test split, which has no scenes)."""

    _URL = "https://dl.fbaipublicfiles.com/clevr/CLEVR_v1.0.zip"
    _MD5 = "b11922020e72d0cd9154779b2d3d07d2"

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False,
                 loader=default_loader):
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader = loader
        self._base_folder = pathlib.Path(self.root) / "clevr"
        self._data_folder = self._base_folder / "CLEVR_v1.0"
        if download and not self._data_folder.is_dir():
            download_and_extract_archive(self._URL, str(self._base_folder), md5=self._MD5)
        if not self._data_folder.is_dir():
            raise not_found(self._data_folder)
        self._image_files = sorted(self._data_folder.joinpath("images", split).glob("*"))
        if split == "test":
            self._labels = [None] * len(self._image_files)
            return
        with open(self._data_folder / "scenes" / f"CLEVR_{split}_scenes.json") as f:
            scenes = json.load(f)["scenes"]
        counts = {scene["image_filename"]: len(scene["objects"]) for scene in scenes}
        self._labels = [counts[p.name] for p in self._image_files]

    def extra_repr(self) -> str:
        return f"split={self._split}"
