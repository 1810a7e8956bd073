"""Omniglot handwritten characters, from ``root/omniglot-py/images_{background,evaluation}/<alphabet>/<char>``."""
from __future__ import annotations

import os

from PIL import Image

from .utils import check_integrity, download_and_extract_archive, list_dir, list_files
from .vision import VisionDataset, not_found


class Omniglot(VisionDataset):
    """Grayscale character images labelled by character (alphabet/character folder); ``background`` picks the
    background set, else the evaluation set.  ``root`` becomes ``root/omniglot-py``; the set is read from its
    unpacked folder, or from the verified zip beside it when ``download`` is set."""

    folder = "omniglot-py"
    download_url_prefix = "https://raw.githubusercontent.com/brendenlake/omniglot/master/python"
    zips_md5 = {"images_background": "68d2efa1b9178cc56df9314c21c6e718",
                "images_evaluation": "6b91aef0f799c5bb55b94e3f2daec811"}

    def __init__(self, root, background: bool = True, transform=None, target_transform=None,
                 download: bool = False, loader=None):
        super().__init__(os.path.join(os.fspath(root), self.folder), transform=transform,
                         target_transform=target_transform)
        self.background = background
        name = self._get_target_folder()
        self.target_folder = os.path.join(self.root, name)
        if download and not check_integrity(os.path.join(self.root, name + ".zip"), self.zips_md5[name]):
            download_and_extract_archive(f"{self.download_url_prefix}/{name}.zip", self.root,
                                         filename=name + ".zip", md5=self.zips_md5[name])
        if not os.path.isdir(self.target_folder):
            raise not_found(self.target_folder)
        # classes in directory-listing order, as torchvision numbers them
        self._alphabets = list_dir(self.target_folder)
        self._characters = [os.path.join(a, c) for a in self._alphabets
                            for c in list_dir(os.path.join(self.target_folder, a))]
        self._character_images = [[(image, idx) for image in list_files(os.path.join(self.target_folder, c), ".png")]
                                  for idx, c in enumerate(self._characters)]
        self._flat_character_images = [pair for images in self._character_images for pair in images]
        self.loader = loader

    def __len__(self) -> int:
        return len(self._flat_character_images)

    def __getitem__(self, index: int):
        name, character = self._flat_character_images[index]
        path = os.path.join(self.target_folder, self._characters[character], name)
        image = Image.open(path).convert("L") if self.loader is None else self.loader(path)
        return self._apply(image, character)

    def _get_target_folder(self) -> str:
        return "images_background" if self.background else "images_evaluation"
