"""Cityscapes, from ``root/leftImg8bit/<split>/<city>`` and ``root/gtFine`` or ``gtCoarse`` (unpacked from the
archives beside them when the folders are missing)."""
from __future__ import annotations

import json
import os
from collections import namedtuple

from PIL import Image

from .utils import extract_archive, iterable_to_str, verify_str_arg
from .vision import VisionDataset

CityscapesClass = namedtuple("CityscapesClass", ["name", "id", "train_id", "category", "category_id",
                                                 "has_instances", "ignore_in_eval", "color"])

# cityscapesScripts' label table: name, id, train id, category, category id, has instances, ignored in eval, colour
_LABELS = [
    ("unlabeled", 0, 255, "void", 0, False, True, (0, 0, 0)),
    ("ego vehicle", 1, 255, "void", 0, False, True, (0, 0, 0)),
    ("rectification border", 2, 255, "void", 0, False, True, (0, 0, 0)),
    ("out of roi", 3, 255, "void", 0, False, True, (0, 0, 0)),
    ("static", 4, 255, "void", 0, False, True, (0, 0, 0)),
    ("dynamic", 5, 255, "void", 0, False, True, (111, 74, 0)),
    ("ground", 6, 255, "void", 0, False, True, (81, 0, 81)),
    ("road", 7, 0, "flat", 1, False, False, (128, 64, 128)),
    ("sidewalk", 8, 1, "flat", 1, False, False, (244, 35, 232)),
    ("parking", 9, 255, "flat", 1, False, True, (250, 170, 160)),
    ("rail track", 10, 255, "flat", 1, False, True, (230, 150, 140)),
    ("building", 11, 2, "construction", 2, False, False, (70, 70, 70)),
    ("wall", 12, 3, "construction", 2, False, False, (102, 102, 156)),
    ("fence", 13, 4, "construction", 2, False, False, (190, 153, 153)),
    ("guard rail", 14, 255, "construction", 2, False, True, (180, 165, 180)),
    ("bridge", 15, 255, "construction", 2, False, True, (150, 100, 100)),
    ("tunnel", 16, 255, "construction", 2, False, True, (150, 120, 90)),
    ("pole", 17, 5, "object", 3, False, False, (153, 153, 153)),
    ("polegroup", 18, 255, "object", 3, False, True, (153, 153, 153)),
    ("traffic light", 19, 6, "object", 3, False, False, (250, 170, 30)),
    ("traffic sign", 20, 7, "object", 3, False, False, (220, 220, 0)),
    ("vegetation", 21, 8, "nature", 4, False, False, (107, 142, 35)),
    ("terrain", 22, 9, "nature", 4, False, False, (152, 251, 152)),
    ("sky", 23, 10, "sky", 5, False, False, (70, 130, 180)),
    ("person", 24, 11, "human", 6, True, False, (220, 20, 60)),
    ("rider", 25, 12, "human", 6, True, False, (255, 0, 0)),
    ("car", 26, 13, "vehicle", 7, True, False, (0, 0, 142)),
    ("truck", 27, 14, "vehicle", 7, True, False, (0, 0, 70)),
    ("bus", 28, 15, "vehicle", 7, True, False, (0, 60, 100)),
    ("caravan", 29, 255, "vehicle", 7, True, True, (0, 0, 90)),
    ("trailer", 30, 255, "vehicle", 7, True, True, (0, 0, 110)),
    ("train", 31, 16, "vehicle", 7, True, False, (0, 80, 100)),
    ("motorcycle", 32, 17, "vehicle", 7, True, False, (0, 0, 230)),
    ("bicycle", 33, 18, "vehicle", 7, True, False, (119, 11, 32)),
    ("license plate", -1, -1, "vehicle", 7, False, True, (0, 0, 142)),
]
_SUFFIXES = {"instance": "instanceIds.png", "semantic": "labelIds.png", "color": "color.png",
             "polygon": "polygons.json"}


class Cityscapes(VisionDataset):
    """Street scenes with ``target_type`` instance, semantic, color (PIL images) or polygon (the JSON), or a list
    of them (a tuple target); ``mode`` fine (train, val, test) or coarse (train, train_extra, val)."""

    CityscapesClass = CityscapesClass
    classes = [CityscapesClass(*row) for row in _LABELS]

    def __init__(self, root, split: str = "train", mode: str = "fine", target_type="instance", transform=None,
                 target_transform=None, transforms=None):
        super().__init__(root, transforms, transform, target_transform)
        verify_str_arg(mode, "mode", ("fine", "coarse"))
        self.mode = "gtFine" if mode == "fine" else "gtCoarse"
        valid = ("train", "test", "val") if mode == "fine" else ("train", "train_extra", "val")
        verify_str_arg(split, "split", valid, f"Unknown value '{split}' for argument split if mode is '{mode}'. "
                                              f"Valid values are {{{iterable_to_str(valid)}}}.")
        self.split = split
        self.target_type = target_type if isinstance(target_type, list) else [target_type]
        for t in self.target_type:
            verify_str_arg(t, "target_type", tuple(_SUFFIXES))
        self.images_dir = os.path.join(self.root, "leftImg8bit", split)
        self.targets_dir = os.path.join(self.root, self.mode, split)
        if not (os.path.isdir(self.images_dir) and os.path.isdir(self.targets_dir)):
            self._extract()
        self.images, self.targets = [], []
        for city in sorted(os.listdir(self.images_dir)):
            for name in sorted(os.listdir(os.path.join(self.images_dir, city))):
                stem = name.split("_leftImg8bit")[0]
                self.images.append(os.path.join(self.images_dir, city, name))
                self.targets.append([os.path.join(self.targets_dir, city, f"{stem}_{self.mode}_{_SUFFIXES[t]}")
                                     for t in self.target_type])

    def _extract(self) -> None:
        images_zip = os.path.join(self.root, "leftImg8bit_trainextra.zip" if self.split == "train_extra"
                                  else "leftImg8bit_trainvaltest.zip")
        targets_zip = os.path.join(self.root, "gtFine_trainvaltest.zip" if self.mode == "gtFine" else "gtCoarse.zip")
        if not (os.path.isfile(images_zip) and os.path.isfile(targets_zip)):
            raise RuntimeError(f"Dataset not found or incomplete: {self.images_dir} and {self.targets_dir} (or "
                               f"{os.path.basename(images_zip)} and {os.path.basename(targets_zip)}) must be inside "
                               f"the root directory {self.root}")
        extract_archive(images_zip, self.root)
        extract_archive(targets_zip, self.root)

    def __getitem__(self, index: int):
        image = _open(self.images[index]).convert("RGB")
        targets = []
        for t, path in zip(self.target_type, self.targets[index]):
            if t == "polygon":
                with open(path) as f:
                    targets.append(json.load(f))
            else:
                targets.append(_open(path))
        return self._apply(image, tuple(targets) if len(targets) > 1 else targets[0])

    def __len__(self) -> int:
        return len(self.images)

    def extra_repr(self) -> str:
        return f"Split: {self.split}\nMode: {self.mode}\nType: {self.target_type}"


def _open(path: str):
    """A Pillow image read whole, its file closed."""
    with open(path, "rb") as f:
        img = Image.open(f)
        img.load()
    return img
