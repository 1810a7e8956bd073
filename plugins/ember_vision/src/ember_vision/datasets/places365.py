"""Places365, from ``root``: ``categories_places365.txt``, the split's file list (``places365_<split>.txt``) and
the image folder (``data_{large,256}_{standard,challenge}`` for training, ``<split>_{large,256}`` otherwise)."""
from __future__ import annotations

import os
from urllib.parse import urljoin

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset


class Places365(VisionDataset):
    """365 scene categories; ``split`` train-standard, train-challenge, val or test (no targets: None);
    ``small`` picks the 256x256 images.  With ``download`` the file lists and images are fetched when missing."""

    _SPLITS = ("train-standard", "train-challenge", "val", "test")
    _BASE_URL = "http://data.csail.mit.edu/places/places365/"
    _DEVKIT_META = {
        "standard": ("filelist_places365-standard.tar", "35a0585fee1fa656440f3ab298f8479c"),
        "challenge": ("filelist_places365-challenge.tar", "70a8307e459c3de41690a7c76c931734"),
    }
    _CATEGORIES_META = ("categories_places365.txt", "06c963b85866bd0649f97cb43dd16673")
    _FILE_LIST_META = {
        "train-standard": ("places365_train_standard.txt", "30f37515461640559006b8329efbed1a"),
        "train-challenge": ("places365_train_challenge.txt", "b2931dc997b8c33c27e7329c073a6b57"),
        "val": ("places365_val.txt", "e9f2fd57bfd9d07630173f4e8708e4b1"),
        "test": ("places365_test.txt", "2fce8233fe493576d724142e45d93653"),
    }
    _IMAGES_META = {
        ("train-standard", False): ("train_large_places365standard.tar", "67e186b496a84c929568076ed01a8aa1"),
        ("train-challenge", False): ("train_large_places365challenge.tar", "605f18e68e510c82b958664ea134545f"),
        ("val", False): ("val_large.tar", "9b71c4993ad89d2d8bcbdc4aef38042f"),
        ("test", False): ("test_large.tar", "41a4b6b724b1d2cd862fb3871ed59913"),
        ("train-standard", True): ("train_256_places365standard.tar", "53ca1c756c3d1e7809517cc47c5561c5"),
        ("train-challenge", True): ("train_256_places365challenge.tar", "741915038a5e3471ec7332404dfb64ef"),
        ("val", True): ("val_256.tar", "e27b17d8d44f4af9a78502beb927f808"),
        ("test", True): ("test_256.tar", "f532f6ad7b582262a2ec8009075e186b"),
    }

    def __init__(self, root, split: str = "train-standard", small: bool = False, download: bool = False,
                 transform=None, target_transform=None, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self._SPLITS)
        self.small = small
        self.loader = loader
        self.classes, self.class_to_idx = self.load_categories(download)
        self.imgs, self.targets = self.load_file_list(download)
        if download:
            self.download_images()

    def __getitem__(self, index: int):
        file, target = self.imgs[index]
        return self._apply(self.loader(file), target)

    def __len__(self) -> int:
        return len(self.imgs)

    @property
    def variant(self) -> str:
        return "challenge" if "challenge" in self.split else "standard"

    @property
    def images_dir(self) -> str:
        size = "256" if self.small else "large"
        folder = f"data_{size}_{self.variant}" if self.split.startswith("train") else f"{self.split}_{size}"
        return os.path.join(self.root, folder)

    def _meta_file(self, name: str, download: bool) -> str:
        path = os.path.join(self.root, name)
        if not os.path.isfile(path):
            if not download:
                raise RuntimeError(f"The file {path} does not exist or is corrupted. You can set download=True "
                                   "to download it.")
            self.download_devkit()
        return path

    def load_categories(self, download: bool = True):
        """``(classes, class_to_idx)`` from ``categories_places365.txt`` (lines ``/a/airfield 0``)."""
        with open(self._meta_file(self._CATEGORIES_META[0], download)) as f:
            class_to_idx = {cls: int(idx) for cls, idx in (line.split() for line in f if line.strip())}
        return sorted(class_to_idx), class_to_idx

    def load_file_list(self, download: bool = True):
        """``(imgs, targets)``: each image's path under ``images_dir`` and its class (None for test)."""
        images = []
        with open(self._meta_file(self._FILE_LIST_META[self.split][0], download)) as f:
            for line in f:
                if not line.strip():
                    continue
                name, idx = (line.split() + [None])[:2]
                images.append((os.path.join(self.images_dir, *name.lstrip("/").split("/")),
                               int(idx) if idx is not None else None))
        return images, [t for _, t in images]

    def download_devkit(self) -> None:
        """Fetch and unpack the variant's file lists."""
        file, md5 = self._DEVKIT_META[self.variant]
        download_and_extract_archive(urljoin(self._BASE_URL, file), self.root, md5=md5)

    def download_images(self) -> None:
        """Fetch and unpack the split's images when ``images_dir`` is missing."""
        if os.path.exists(self.images_dir):
            return
        file, md5 = self._IMAGES_META[(self.split, self.small)]
        download_and_extract_archive(urljoin(self._BASE_URL, file), self.root, md5=md5)
        if self.split.startswith("train"):
            os.rename(self.images_dir.rsplit("_", 1)[0], self.images_dir)

    def extra_repr(self) -> str:
        return f"Split: {self.split}\nSmall: {self.small}"
