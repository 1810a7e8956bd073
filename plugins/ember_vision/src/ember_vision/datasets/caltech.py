"""Caltech 101 from ``root/caltech101`` (``101_ObjectCategories/<class>/image_NNNN.jpg`` and ``Annotations``)."""
from __future__ import annotations

import os
import shutil

from PIL import Image

from .utils import download_and_extract_archive, extract_archive, verify_str_arg
from .vision import VisionDataset

# category folder -> its folder under Annotations, where the two differ
_ANNOTATION_NAMES = {"Faces": "Faces_2", "Faces_easy": "Faces_3", "Motorbikes": "Motorbikes_16",
                     "airplanes": "Airplanes_Side_2"}


class Caltech101(VisionDataset):
    """101 object categories (BACKGROUND_Google left out); ``target_type`` category and/or annotation (the
    object contour array of the ``.mat`` annotation, read with SciPy). Images keep their own mode."""

    _URL = "https://data.caltech.edu/records/mzrjq-6wc02/files/caltech-101.zip"
    _MD5 = "3138e1922a9193bfa496528edbbc45d0"

    def __init__(self, root, target_type="category", transform=None, target_transform=None, download: bool = False):
        super().__init__(os.path.join(root, "caltech101"), transform=transform, target_transform=target_transform)
        os.makedirs(self.root, exist_ok=True)
        if isinstance(target_type, str):
            target_type = [target_type]
        self.target_type = [verify_str_arg(t, "target_type", ("category", "annotation")) for t in target_type]
        folder = os.path.join(self.root, "101_ObjectCategories")
        if download and not os.path.exists(folder):
            self.download()
        if not os.path.exists(folder):
            raise RuntimeError(f"Dataset not found or corrupted ({folder}). You can use download=True to download it")
        self.categories = sorted(c for c in os.listdir(folder) if c != "BACKGROUND_Google")
        self.annotation_categories = [_ANNOTATION_NAMES.get(c, c) for c in self.categories]
        self.index, self.y = [], []
        for i, c in enumerate(self.categories):
            n = len(os.listdir(os.path.join(folder, c)))
            self.index.extend(range(1, n + 1))
            self.y.extend([i] * n)

    def download(self) -> None:
        """Fetch the zip, unpack the two tarballs inside it into ``root/caltech101`` and remove the rest."""
        download_and_extract_archive(self._URL, self.root, filename="caltech-101.zip", md5=self._MD5)
        inner = os.path.join(self.root, "caltech-101")
        for name in os.listdir(inner):
            if name.endswith(".gz"):
                extract_archive(os.path.join(inner, name), self.root)
        shutil.rmtree(inner)
        os.remove(os.path.join(self.root, "caltech-101.zip"))

    def __getitem__(self, index: int):
        cls, number = self.y[index], self.index[index]
        image = Image.open(os.path.join(self.root, "101_ObjectCategories", self.categories[cls],
                                        f"image_{number:04d}.jpg"))
        target = []
        for t in self.target_type:
            if t == "category":
                target.append(cls)
            else:
                import scipy.io

                mat = scipy.io.loadmat(os.path.join(self.root, "Annotations", self.annotation_categories[cls],
                                                    f"annotation_{number:04d}.mat"))
                target.append(mat["obj_contour"])
        target = tuple(target) if len(target) > 1 else target[0]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self) -> int:
        return len(self.index)


class Caltech256(VisionDataset):
    """256 object categories from ``root/caltech256/256_ObjectCategories/<NNN.name>/<NNN>_<MMMM>.jpg``."""

    _URL = "https://data.caltech.edu/records/nyy15-4j048/files/256_ObjectCategories.tar"
    _MD5 = "67b4f42ca05d46448c6bb8ecd2220f6d"

    def __init__(self, root, transform=None, target_transform=None, download: bool = False):
        super().__init__(os.path.join(root, "caltech256"), transform=transform, target_transform=target_transform)
        os.makedirs(self.root, exist_ok=True)
        folder = os.path.join(self.root, "256_ObjectCategories")
        if download and not os.path.exists(folder):
            download_and_extract_archive(self._URL, self.root, filename="256_ObjectCategories.tar", md5=self._MD5)
        if not os.path.exists(folder):
            raise RuntimeError(f"Dataset not found or corrupted ({folder}). You can use download=True to download it")
        self.categories = sorted(os.listdir(folder))
        self.index, self.y = [], []
        for i, c in enumerate(self.categories):
            n = sum(name.endswith(".jpg") for name in os.listdir(os.path.join(folder, c)))
            self.index.extend(range(1, n + 1))
            self.y.extend([i] * n)

    def __getitem__(self, index: int):
        cls = self.y[index]
        image = Image.open(os.path.join(self.root, "256_ObjectCategories", self.categories[cls],
                                        f"{cls + 1:03d}_{self.index[index]:04d}.jpg"))
        return self._apply(image, cls)

    def __len__(self) -> int:
        return len(self.index)
