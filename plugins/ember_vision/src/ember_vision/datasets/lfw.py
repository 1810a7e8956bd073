"""Labeled Faces in the Wild, from ``root/lfw-py``: the unpacked image folder (``lfw``, ``lfw_funneled`` or
``lfw-deepfunneled``/<person>/<person>_<nnnn>.jpg) and the view files (``people*.txt``, ``pairs*.txt``,
``lfw-names.txt``).  The files are read where they are; torchvision also demands the verified archive."""
from __future__ import annotations

import os

from .folder import default_loader
from .utils import verify_str_arg
from .vision import VisionDataset


class _LFW(VisionDataset):
    """What both LFW views share: the image set folder, the view's label file and the image paths."""

    base_folder = "lfw-py"
    file_dict = {
        "original": ("lfw", "lfw.tgz", "a17d05bd522c52d84eca14327a23d494"),
        "funneled": ("lfw_funneled", "lfw-funneled.tgz", "1b42dfed7d15c9b2dd63d5e5840c86ad"),
        "deepfunneled": ("lfw-deepfunneled", "lfw-deepfunneled.tgz", "68331da3eb755a505a502b5aacb3c201"),
    }
    annot_file = {"10fold": "", "train": "DevTrain", "test": "DevTest"}
    names = "lfw-names.txt"

    def __init__(self, root, split: str, image_set: str, view: str, transform=None, target_transform=None,
                 download: bool = False, loader=default_loader):
        super().__init__(os.path.join(os.fspath(root), self.base_folder), transform=transform,
                         target_transform=target_transform)
        self.image_set = verify_str_arg(image_set.lower(), "image_set", tuple(self.file_dict))
        images_dir, self.filename, self.md5 = self.file_dict[self.image_set]
        self.view = verify_str_arg(view.lower(), "view", ("people", "pairs"))
        self.split = verify_str_arg(split.lower(), "split", ("10fold", "train", "test"))
        self.labels_file = f"{self.view}{self.annot_file[self.split]}.txt"
        self.data: list = []
        if download:
            raise ValueError("LFW dataset is no longer available for automatic download. Please download the "
                             "dataset manually and place it in the specified directory. A commonly used mirror is "
                             "available at: https://www.kaggle.com/datasets/jessicali9530/lfw-dataset")
        self.images_dir = os.path.join(self.root, images_dir)
        needed = [self.images_dir, os.path.join(self.root, self.labels_file)]
        if self.view == "people":
            needed.append(os.path.join(self.root, self.names))
        missing = [p for p in needed if not os.path.exists(p)]
        if missing:
            raise RuntimeError(f"Dataset not found or corrupted (missing {', '.join(missing)}). "
                               "You can use download=True to download it")
        self._loader = loader

    def _lines(self) -> list:
        with open(os.path.join(self.root, self.labels_file)) as f:
            return f.readlines()

    def _get_path(self, identity: str, no) -> str:
        return os.path.join(self.images_dir, identity, f"{identity}_{int(no):04d}.jpg")

    def extra_repr(self) -> str:
        return f"Alignment: {self.image_set}\nSplit: {self.split}"

    def __len__(self) -> int:
        return len(self.data)


class LFWPeople(_LFW):
    """Face images labelled with the person's index in ``lfw-names.txt``."""

    def __init__(self, root, split: str = "10fold", image_set: str = "funneled", transform=None,
                 target_transform=None, download: bool = False, loader=default_loader):
        super().__init__(root, split, image_set, "people", transform, target_transform, download, loader)
        with open(os.path.join(self.root, self.names)) as f:
            self.class_to_idx = {line.split()[0]: i for i, line in enumerate(f) if line.strip()}
        self.data, self.targets = [], []
        lines = self._lines()
        n_folds, s = (int(lines[0]), 1) if self.split == "10fold" else (1, 0)
        for _ in range(n_folds):
            n = int(lines[s])
            for line in lines[s + 1:s + n + 1]:
                identity, count = line.strip().split("\t")
                for k in range(1, int(count) + 1):
                    self.data.append(self._get_path(identity, k))
                    self.targets.append(self.class_to_idx[identity])
            s += n + 1

    def __getitem__(self, index: int):
        return self._apply(self._loader(self.data[index]), self.targets[index])

    def extra_repr(self) -> str:
        return super().extra_repr() + f"\nClasses (identities): {len(self.class_to_idx)}"


class LFWPairs(_LFW):
    """Pairs of face images with target 1 for the same person and 0 for two people."""

    def __init__(self, root, split: str = "10fold", image_set: str = "funneled", transform=None,
                 target_transform=None, download: bool = False, loader=default_loader):
        super().__init__(root, split, image_set, "pairs", transform, target_transform, download, loader)
        self.pair_names, self.data, self.targets = [], [], []
        lines = self._lines()
        if self.split == "10fold":
            n_folds, n_pairs = (int(v) for v in lines[0].split("\t"))
        else:
            n_folds, n_pairs = 1, int(lines[0])
        s = 1
        for _ in range(n_folds):
            for line in lines[s:s + n_pairs]:
                name, a, b = line.strip().split("\t")
                self._add((name, name), self._get_path(name, a), self._get_path(name, b), 1)
            for line in lines[s + n_pairs:s + 2 * n_pairs]:
                name1, a, name2, b = line.strip().split("\t")
                self._add((name1, name2), self._get_path(name1, a), self._get_path(name2, b), 0)
            s += 2 * n_pairs

    def _add(self, names, path1, path2, same):
        self.pair_names.append(names)
        self.data.append((path1, path2))
        self.targets.append(same)

    def __getitem__(self, index: int):
        img1, img2 = (self._loader(p) for p in self.data[index])
        target = self.targets[index]
        if self.transform is not None:
            img1, img2 = self.transform(img1), self.transform(img2)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img1, img2, target
