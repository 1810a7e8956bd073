"""LSUN scenes, from LMDB databases ``root/<category>_<split>_lmdb`` (needs the ``lmdb`` package)."""
from __future__ import annotations

import bisect
import io
import os

from PIL import Image

from .utils import iterable_to_str, verify_str_arg
from .vision import VisionDataset

CATEGORIES = ("bedroom", "bridge", "church_outdoor", "classroom", "conference_room", "dining_room", "kitchen",
              "living_room", "restaurant", "tower")
SPLITS = ("train", "val", "test")


class LSUNClass(VisionDataset):
    """One LSUN database: its images (RGB), with None targets."""

    def __init__(self, root: str, transform=None, target_transform=None):
        try:
            import lmdb
        except ImportError:
            raise ImportError("LSUN reads LMDB databases and needs the lmdb package: pip install lmdb") from None
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.env = lmdb.open(root, max_readers=1, readonly=True, lock=False, readahead=False, meminit=False)
        with self.env.begin(write=False) as txn:
            self.length = txn.stat()["entries"]
            self.keys = list(txn.cursor().iternext(keys=True, values=False))

    def __getitem__(self, index: int):
        with self.env.begin(write=False) as txn:
            buf = txn.get(self.keys[index])
        return self._apply(Image.open(io.BytesIO(buf)).convert("RGB"), None)

    def __len__(self) -> int:
        return self.length


class LSUN(VisionDataset):
    """LSUN: ``classes`` is a split (train, val: every category's database; test) or a list such as
    ``["bedroom_train", "tower_val"]``; the target is the index of the database in ``classes``."""

    def __init__(self, root, classes="train", transform=None, target_transform=None):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.classes = self._verify_classes(classes)
        self.dbs = [LSUNClass(os.path.join(self.root, f"{c}_lmdb"), transform=transform) for c in self.classes]
        self.indices, count = [], 0
        for db in self.dbs:
            count += len(db)
            self.indices.append(count)
        self.length = count

    @staticmethod
    def _verify_classes(classes) -> list:
        if isinstance(classes, str):
            verify_str_arg(classes, "classes", SPLITS)
            return ["test"] if classes == "test" else [f"{c}_{classes}" for c in CATEGORIES]
        try:
            classes = list(classes)
        except TypeError:
            raise ValueError(f"Expected type str or Iterable for argument classes, but got type {type(classes)}.") \
                from None
        for c in classes:
            verify_str_arg(c, custom_msg=f"Expected type str for elements in argument classes, but got type "
                                         f"{type(c)}.")
            category, _, split = c.rpartition("_")
            verify_str_arg(category, valid_values=CATEGORIES, custom_msg=f"Unknown value '{category}' for LSUN "
                           f"class. Valid values are {{{iterable_to_str(CATEGORIES)}}}.")
            verify_str_arg(split, valid_values=SPLITS, custom_msg=f"Unknown value '{split}' for postfix. Valid "
                           f"values are {{{iterable_to_str(SPLITS)}}}.")
        return classes

    def __getitem__(self, index: int):
        target = bisect.bisect_right(self.indices, index)
        start = self.indices[target - 1] if target else 0
        img, _ = self.dbs[target][index - start]
        return img, self.target_transform(target) if self.target_transform is not None else target

    def __len__(self) -> int:
        return self.length
