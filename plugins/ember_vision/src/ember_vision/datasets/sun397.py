"""SUN397 scene categories, from ``root/SUN397`` (``ClassName.txt`` and ``<l>/<class path>/sun_*.jpg``)."""
from __future__ import annotations

import pathlib

from .folder import default_loader
from .utils import download_and_extract_archive
from .vision import _ImageListDataset, not_found


class SUN397(_ImageListDataset):
    """397 scene classes; a class is its path under the letter folder (``/a/abbey`` is "abbey")."""

    _DATASET_URL = "http://vision.princeton.edu/projects/2010/SUN/SUN397.tar.gz"
    _DATASET_MD5 = "8ca2778205c41d23104230ba66911c7a"

    def __init__(self, root, transform=None, target_transform=None, download: bool = False, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._data_dir = pathlib.Path(self.root) / "SUN397"
        if download and not self._data_dir.is_dir():
            download_and_extract_archive(self._DATASET_URL, self.root, md5=self._DATASET_MD5)
        if not self._data_dir.is_dir():
            raise not_found(self._data_dir)
        with open(self._data_dir / "ClassName.txt") as f:
            self.classes = [line[3:].strip() for line in f]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self._image_files = list(self._data_dir.rglob("sun_*.jpg"))
        self._labels = [self.class_to_idx["/".join(p.relative_to(self._data_dir).parts[1:-1])]
                        for p in self._image_files]
        self.loader = loader
