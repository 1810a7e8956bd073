"""COCO detection and captions: images under ``root`` indexed by a COCO-format annotation JSON.

The annotation file is read with the standard library (pycocotools is not needed): ``images`` give the ids
and file names, ``annotations`` are grouped by ``image_id`` in file order.
"""
from __future__ import annotations

import json
import os

from PIL import Image

from .vision import VisionDataset


class CocoDetection(VisionDataset):
    """Items are (RGB image, list of the image's annotation dicts), in increasing image id."""

    def __init__(self, root, annFile: str, transform=None, target_transform=None, transforms=None):  # noqa: N803
        super().__init__(root, transforms=transforms, transform=transform, target_transform=target_transform)
        if not os.path.isfile(annFile):
            raise FileNotFoundError(f"CocoDetection: annotation file {annFile} does not exist")
        with open(annFile) as f:
            dataset = json.load(f)
        self.images = {img["id"]: img for img in dataset.get("images", [])}
        self.anns = {}
        for ann in dataset.get("annotations", []):
            self.anns.setdefault(ann["image_id"], []).append(ann)
        self.ids = sorted(self.images)

    def _load_image(self, id: int):  # noqa: A002
        return Image.open(os.path.join(self.root, self.images[id]["file_name"])).convert("RGB")

    def _load_target(self, id: int) -> list:  # noqa: A002
        return list(self.anns.get(id, []))

    def __getitem__(self, index: int):
        if not isinstance(index, int):
            raise ValueError(f"Index must be of type integer, got {type(index)} instead.")
        id = self.ids[index]  # noqa: A001
        return self._apply(self._load_image(id), self._load_target(id))

    def __len__(self) -> int:
        return len(self.ids)


class CocoCaptions(CocoDetection):
    """Items are (RGB image, list of the image's caption strings)."""

    def _load_target(self, id: int) -> list:  # noqa: A002
        return [ann["caption"] for ann in super()._load_target(id)]
