"""iNaturalist, from ``root/<version>`` (class folders; for 2021 named ``<id>_<kingdom>_..._<genus>_<species>``,
for 2017-2019 ``<super category>/<class>``)."""
from __future__ import annotations

import os

from PIL import Image

from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

CATEGORIES_2021 = ["kingdom", "phylum", "class", "order", "family", "genus"]
_BASE = "https://ml-inat-competition-datasets.s3.amazonaws.com/"
DATASET_URLS = {
    "2017": _BASE + "2017/train_val_images.tar.gz",
    "2018": _BASE + "2018/train_val2018.tar.gz",
    "2019": _BASE + "2019/train_val2019.tar.gz",
    "2021_train": _BASE + "2021/train.tar.gz",
    "2021_train_mini": _BASE + "2021/train_mini.tar.gz",
    "2021_valid": _BASE + "2021/val.tar.gz",
}
DATASET_MD5 = {
    "2017": "7c784ea5e424efaec655bd392f87301f",
    "2018": "b1c6952ce38f31868cc50ea72d066cc3",
    "2019": "c60a6e2962c9b8ccbd458d12c8582644",
    "2021_train": "e0526d53c7f7b2e3167b2b43bb2690ed",
    "2021_train_mini": "db6ed8330e634445efc8fec83ae81442",
    "2021_valid": "f6f6e0e242e3d4c9569ba56400938afc",
}


class INaturalist(VisionDataset):
    """Species photos; ``target_type`` (a name or a list, giving a tuple) is ``full`` (the class index) or, for
    2021, a taxonomic level (kingdom ... genus), for 2017-2019 ``super``.  Without ``loader`` images open lazily
    with Pillow, as in torchvision."""

    def __init__(self, root, version: str = "2021_train", target_type="full", transform=None,
                 target_transform=None, download: bool = False, loader=None):
        self.version = verify_str_arg(version, "version", tuple(DATASET_URLS))
        super().__init__(os.path.join(os.fspath(root), version), transform=transform,
                         target_transform=target_transform)
        os.makedirs(os.path.dirname(self.root), exist_ok=True)
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError(f"Dataset not found or corrupted (looked in {self.root}). You can use download=True "
                               "to download it")
        self.all_categories: list = []
        self.categories_index: dict = {}
        self.categories_map: list = []
        types = target_type if isinstance(target_type, list) else [target_type]
        if version.startswith("2021"):
            self.target_type = [verify_str_arg(t, "target_type", ("full", *CATEGORIES_2021)) for t in types]
            self._init_2021()
        else:
            self.target_type = [verify_str_arg(t, "target_type", ("full", "super")) for t in types]
            self._init_pre2021()
        self.index = [(i, name) for i, folder in enumerate(self.all_categories)
                      for name in sorted(os.listdir(os.path.join(self.root, folder)))]
        self.loader = loader

    def _init_2021(self) -> None:
        self.all_categories = sorted(os.listdir(self.root))
        self.categories_index = {k: {} for k in CATEGORIES_2021}
        for i, folder in enumerate(self.all_categories):
            pieces = folder.split("_")
            if len(pieces) != 8:
                raise RuntimeError(f"Unexpected category name {folder}, wrong number of pieces")
            if pieces[0] != f"{i:05d}":
                raise RuntimeError(f"Unexpected category id {pieces[0]}, expecting {i:05d}")
            self.categories_map.append({cat: self.categories_index[cat].setdefault(name,
                                                                                   len(self.categories_index[cat]))
                                        for cat, name in zip(CATEGORIES_2021, pieces[1:7])})

    def _init_pre2021(self) -> None:
        # 2017 numbers classes in folder order; 2018 and 2019 name each class folder by its number
        self.categories_index = {"super": {}}
        by_index: dict = {}
        for s, super_cat in enumerate(sorted(os.listdir(self.root))):
            self.categories_index["super"][super_cat] = s
            for sub in sorted(os.listdir(os.path.join(self.root, super_cat))):
                if self.version == "2017":
                    k = len(by_index)
                else:
                    try:
                        k = int(sub)
                    except ValueError:
                        raise RuntimeError(f"Unexpected non-numeric dir name: {sub}") from None
                if k in by_index:
                    raise RuntimeError(f"Duplicate category {sub}")
                by_index[k] = (s, os.path.join(super_cat, sub))
        missing = [k for k in range(len(by_index)) if k not in by_index]
        if missing:
            raise RuntimeError(f"Missing category {missing[0]}")
        self.categories_map = [{"super": by_index[k][0]} for k in range(len(by_index))]
        self.all_categories = [by_index[k][1] for k in range(len(by_index))]

    def __getitem__(self, index: int):
        cat_id, name = self.index[index]
        path = os.path.join(self.root, self.all_categories[cat_id], name)
        img = self.loader(path) if self.loader is not None else Image.open(path)
        target = [cat_id if t == "full" else self.categories_map[cat_id][t] for t in self.target_type]
        return self._apply(img, tuple(target) if len(target) > 1 else target[0])

    def __len__(self) -> int:
        return len(self.index)

    def category_name(self, category_type: str, category_id: int) -> str:
        """The name of class ``category_id`` of ``category_type`` (full, a 2021 taxonomic level, or super)."""
        if category_type == "full":
            return self.all_categories[category_id]
        if category_type not in self.categories_index:
            raise ValueError(f"Invalid category type '{category_type}'")
        for name, i in self.categories_index[category_type].items():
            if i == category_id:
                return name
        raise ValueError(f"Invalid category id {category_id} for {category_type}")

    def _check_exists(self) -> bool:
        return os.path.isdir(self.root) and len(os.listdir(self.root)) > 0

    def download(self) -> None:
        """Fetch and unpack the version's archive, renaming its folder to ``root/<version>``."""
        if self._check_exists():
            return
        base = os.path.dirname(self.root)
        url = DATASET_URLS[self.version]
        download_and_extract_archive(url, base, filename=f"{self.version}.tgz", md5=DATASET_MD5[self.version])
        unpacked = os.path.join(base, os.path.basename(url).removesuffix(".tar.gz"))
        if not os.path.exists(unpacked):
            raise RuntimeError(f"Unable to find downloaded files at {unpacked}")
        os.rename(unpacked, self.root)
