"""``DatasetFolder`` and ``ImageFolder``: one sub-folder per class.

>>> IMG_EXTENSIONS[:2]
('.jpg', '.jpeg')
"""
from __future__ import annotations

import os

from PIL import Image, UnidentifiedImageError

from .vision import VisionDataset

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def pil_loader(path: str):
    """Open an image file as an RGB PIL image; an unreadable file raises ``OSError`` naming it."""
    try:
        with open(path, "rb") as f:
            img = Image.open(f)
            return img.convert("RGB")
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise OSError(f"cannot read image file {path!r}: {e}") from e


default_loader = pil_loader


def has_file_allowed_extension(filename: str, extensions) -> bool:
    return filename.lower().endswith(tuple(e.lower() for e in extensions))


def is_image_file(filename: str) -> bool:
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def _check_root(directory: str) -> None:
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"root folder {directory!r} does not exist or is not a directory")


def find_classes(directory: str):
    """``(classes, class_to_idx)``: the sorted sub-folder names of ``directory``."""
    _check_root(directory)
    classes = sorted(e.name for e in os.scandir(directory) if e.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {c: i for i, c in enumerate(classes)}


def make_dataset(directory: str, class_to_idx: dict, extensions=None, is_valid_file=None,
                 allow_empty: bool = False) -> list:
    """``[(path, class_index)]`` for every valid file under each class folder, sorted."""
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    valid = is_valid_file or (lambda p: has_file_allowed_extension(p, extensions))
    samples, empty = [], []
    for cls in sorted(class_to_idx):
        found = 0
        for root, _, fnames in sorted(os.walk(os.path.join(directory, cls), followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if valid(path):
                    samples.append((path, class_to_idx[cls]))
                    found += 1
        if not found:
            empty.append(cls)
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(empty)} in {directory}. "
        if extensions is not None:
            msg += f"Supported extensions are: {', '.join(extensions)}"
        raise FileNotFoundError(msg)
    return samples


class DatasetFolder(VisionDataset):
    """Samples ``root/<class>/**/<file>`` read by ``loader``; ``classes``, ``class_to_idx``, ``samples``, ``targets``.

    >>> import os, tempfile
    >>> root = tempfile.mkdtemp(); os.makedirs(os.path.join(root, "a"))
    >>> open(os.path.join(root, "a", "x.txt"), "w").close()
    >>> DatasetFolder(root, loader=open, extensions=(".txt",)).class_to_idx
    {'a': 0}
    """

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None,
                 is_valid_file=None, allow_empty: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        self.samples = make_dataset(self.root, class_to_idx, extensions, is_valid_file, allow_empty)
        self.loader, self.extensions = loader, extensions
        self.classes, self.class_to_idx = classes, class_to_idx
        self.targets = [s[1] for s in self.samples]

    @staticmethod
    def find_classes(directory):
        return find_classes(directory)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        return self._apply(self.loader(path), target)

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/...`` (PNG, JPEG, ...) as RGB PIL images; ``imgs`` is ``samples``."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader,
                 is_valid_file=None, allow_empty: bool = False):
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform,
                         target_transform, is_valid_file, allow_empty)
        self.imgs = self.samples
