"""The Oxford-IIIT Pet dataset from ``root/oxford-iiit-pet`` (``images/*.jpg``, ``annotations/<split>.txt``,
``annotations/trimaps/*.png``)."""
from __future__ import annotations

import os

from PIL import Image

from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset, not_found


class OxfordIIITPet(VisionDataset):
    """37 breeds; ``target_types`` is one or a list of ``category``, ``binary-category`` (cat/dog) and
    ``segmentation`` (the trimap image); several give a tuple, none gives None."""

    _RESOURCES = (("https://www.robots.ox.ac.uk/~vgg/data/pets/data/images.tar.gz", "5c4f3ee8e5d25df40f4fd59a7f44e54c"),
                  ("https://www.robots.ox.ac.uk/~vgg/data/pets/data/annotations.tar.gz",
                   "95a8c909bbe2e81eed6a22bccdf3f68f"))
    _VALID_TARGET_TYPES = ("category", "binary-category", "segmentation")

    def __init__(self, root, split: str = "trainval", target_types="category", transforms=None, transform=None,
                 target_transform=None, download: bool = False):
        self._split = verify_str_arg(split, "split", ("trainval", "test"))
        if isinstance(target_types, str):
            target_types = [target_types]
        self._target_types = [verify_str_arg(t, "target_types", self._VALID_TARGET_TYPES) for t in target_types]
        super().__init__(root, transforms=transforms, transform=transform, target_transform=target_transform)
        self._base_folder = os.path.join(self.root, "oxford-iiit-pet")
        self._images_folder = os.path.join(self._base_folder, "images")
        self._anns_folder = os.path.join(self._base_folder, "annotations")
        self._segs_folder = os.path.join(self._anns_folder, "trimaps")
        if download and not self._check_exists():
            for url, md5 in self._RESOURCES:
                download_and_extract_archive(url, self._base_folder, md5=md5)
        if not self._check_exists():
            raise not_found(self._base_folder)
        with open(os.path.join(self._anns_folder, f"{split}.txt")) as f:
            rows = [line.split() for line in f if line.strip()]
        ids = [r[0] for r in rows]
        self._labels = [int(r[1]) - 1 for r in rows]  # the file counts from 1
        self._bin_labels = [int(r[2]) - 1 for r in rows]
        self.bin_classes = ["Cat", "Dog"]
        breeds = sorted({(i.rsplit("_", 1)[0], label) for i, label in zip(ids, self._labels)}, key=lambda p: p[1])
        self.classes = [" ".join(part.title() for part in raw.split("_")) for raw, _ in breeds]
        self.bin_class_to_idx = {c: i for i, c in enumerate(self.bin_classes)}
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self._images = [os.path.join(self._images_folder, f"{i}.jpg") for i in ids]
        self._segs = [os.path.join(self._segs_folder, f"{i}.png") for i in ids]

    def _check_exists(self) -> bool:
        return os.path.isdir(self._images_folder) and os.path.isdir(self._anns_folder)

    def __len__(self) -> int:
        return len(self._images)

    def __getitem__(self, index: int):
        image = Image.open(self._images[index]).convert("RGB")
        parts = {"category": lambda: self._labels[index], "binary-category": lambda: self._bin_labels[index],
                 "segmentation": lambda: Image.open(self._segs[index])}
        target = [parts[t]() for t in self._target_types]
        target = None if not target else target[0] if len(target) == 1 else tuple(target)
        return self._apply(image, target)
