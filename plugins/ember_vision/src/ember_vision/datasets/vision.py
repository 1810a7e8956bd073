"""The base of the vision datasets: a root folder and optional transforms."""
from __future__ import annotations

import os

from ember.utils.data import Dataset


class VisionDataset(Dataset):
    """``root``, ``transform`` (on the image) and ``target_transform`` (on the label)."""

    def __init__(self, root, transform=None, target_transform=None):
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        self.transform = transform
        self.target_transform = target_transform

    def _apply(self, img, target):
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"    Root location: {self.root}")
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        return "\n".join(lines)
