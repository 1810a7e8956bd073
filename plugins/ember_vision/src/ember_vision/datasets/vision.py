"""The base of the vision datasets: a root folder and optional transforms."""
from __future__ import annotations

import os

from ember.utils.data import Dataset


class VisionDataset(Dataset):
    """``root`` and either ``transforms`` (on the pair) or ``transform`` (on the image) and ``target_transform``
    (on the target), as torchvision's base class takes them."""

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        self.root = os.path.expanduser(os.fspath(root)) if root is not None else None
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = transforms if transforms is not None else (
            _PairTransform(transform, target_transform) if transform or target_transform else None)

    def _apply(self, img, target):
        return self.transforms(img, target) if self.transforms is not None else (img, target)

    def __repr__(self):
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"    Root location: {self.root}")
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        return "\n".join(lines)


class _PairTransform:
    """``transform`` on the image and ``target_transform`` on the target, as one callable on the pair."""

    def __init__(self, transform, target_transform):
        self.transform, self.target_transform = transform, target_transform

    def __call__(self, img, target):
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


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
