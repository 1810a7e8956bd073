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


class _ImageListDataset(VisionDataset):
    """A dataset that is a list of image files with integer labels: ``_image_files``, ``_labels``, ``loader``."""

    _image_files: list
    _labels: list

    def __getitem__(self, index: int):
        return self._apply(self.loader(self._image_files[index]), self._labels[index])

    def __len__(self) -> int:
        return len(self._image_files)


def not_found(path) -> RuntimeError:
    """torchvision's error for a dataset whose files are missing, naming where they were looked for."""
    return RuntimeError(f"Dataset not found (looked in {path}). You can use download=True to download it")
