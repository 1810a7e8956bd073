"""KITTI 2D object detection, from ``root/Kitti/raw/{training,testing}/image_2`` and ``training/label_2``."""
from __future__ import annotations

import os

from PIL import Image

from .utils import download_and_extract_archive
from .vision import VisionDataset


class Kitti(VisionDataset):
    """Street scenes; the target (training only, else None) is a list of one dict per object: ``type``,
    ``truncated``, ``occluded``, ``alpha``, ``bbox`` (left, top, right, bottom), ``dimensions``, ``location``,
    ``rotation_y``, as KITTI's label files give them."""

    data_url = "https://s3.eu-central-1.amazonaws.com/avg-kitti/"
    resources = ["data_object_image_2.zip", "data_object_label_2.zip"]
    image_dir_name = "image_2"
    labels_dir_name = "label_2"

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, transforms=None,
                 download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform, transforms=transforms)
        self.train = train
        self._location = "training" if train else "testing"
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError(f"Dataset not found (looked in {os.path.join(self._raw_folder, self._location)}). "
                               "You may use download=True to download it.")
        image_dir = os.path.join(self._raw_folder, self._location, self.image_dir_name)
        labels_dir = os.path.join(self._raw_folder, self._location, self.labels_dir_name)
        self.images = [os.path.join(image_dir, name) for name in sorted(os.listdir(image_dir))]
        self.targets = [os.path.join(labels_dir, os.path.basename(p).split(".")[0] + ".txt")
                        for p in self.images] if train else []

    def __getitem__(self, index: int):
        with open(self.images[index], "rb") as f:
            image = Image.open(f)
            image.load()
        return self._apply(image, self._parse_target(index) if self.train else None)

    def _parse_target(self, index: int) -> list:
        target = []
        with open(self.targets[index]) as f:
            for line in f:
                v = line.split()
                if not v:
                    continue
                target.append({"type": v[0], "truncated": float(v[1]), "occluded": int(v[2]), "alpha": float(v[3]),
                               "bbox": [float(x) for x in v[4:8]], "dimensions": [float(x) for x in v[8:11]],
                               "location": [float(x) for x in v[11:14]], "rotation_y": float(v[14])})
        return target

    def __len__(self) -> int:
        return len(self.images)

    @property
    def _raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    def _check_exists(self) -> bool:
        folders = [self.image_dir_name] + ([self.labels_dir_name] if self.train else [])
        return all(os.path.isdir(os.path.join(self._raw_folder, self._location, f)) for f in folders)

    def download(self) -> None:
        """Fetch and unpack the image and label archives into ``root/Kitti/raw``."""
        if self._check_exists():
            return
        os.makedirs(self._raw_folder, exist_ok=True)
        for name in self.resources:
            download_and_extract_archive(f"{self.data_url}{name}", self._raw_folder, filename=name)
