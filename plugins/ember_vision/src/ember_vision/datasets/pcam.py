"""PatchCamelyon, from ``root/pcam/camelyonpatch_level_2_split_<split>_{x,y}.h5`` (needs h5py)."""
from __future__ import annotations

import gzip
import os
import shutil

from PIL import Image

from .utils import download_file_from_google_drive, verify_str_arg
from .vision import VisionDataset, not_found


class PCAM(VisionDataset):
    """96x96 histopathology patches labelled 0/1 for metastatic tissue; ``split`` train, val or test."""

    _FILES = {
        "train": {"images": ("camelyonpatch_level_2_split_train_x.h5", "1Ka0XfEMiwgCYPdTI-vv6eUElOBnKFKQ2",
                             "1571f514728f59376b705fc836ff4b63"),
                  "targets": ("camelyonpatch_level_2_split_train_y.h5", "1269yhu3pZDP8UYFQs-NYs3FPwuK-nGSG",
                              "35c2d7259d906cfc8143347bb8e05be7")},
        "test": {"images": ("camelyonpatch_level_2_split_test_x.h5", "1qV65ZqZvWzuIVthK8eVDhIwrbnsJdbg_",
                            "d8c2d60d490dbd479f8199bdfa0cf6ec"),
                 "targets": ("camelyonpatch_level_2_split_test_y.h5", "17BHrSrwWKjYsOgTMmoqrIjDy6Fa2o_gP",
                             "60a7035772fbdb7f34eb86d4420cf66a")},
        "val": {"images": ("camelyonpatch_level_2_split_valid_x.h5", "1hgshYGWK8V-eGRy8LToWJJgDU_rXWVJ3",
                           "d5b63470df7cfa627aeec8b9dc0c066e"),
                "targets": ("camelyonpatch_level_2_split_valid_y.h5", "1bH8ZRbhSVAhScTS0p9-ZzGnX91cHT3uO",
                            "2b85f58b927af9964a4c15b8f7e8f179")},
    }

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False):
        try:
            import h5py
        except ImportError:
            raise RuntimeError("h5py is not found. This dataset needs to have h5py installed: please run "
                               "pip install h5py") from None
        self.h5py = h5py
        self._split = verify_str_arg(split, "split", ("train", "test", "val"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._base_folder = os.path.join(self.root, "pcam")
        if download and not self._check_exists():
            for name, file_id, md5 in self._FILES[split].values():
                download_file_from_google_drive(file_id, self._base_folder, name + ".gz", md5)
                with gzip.open(os.path.join(self._base_folder, name + ".gz")) as src, \
                        open(os.path.join(self._base_folder, name), "wb") as dst:
                    shutil.copyfileobj(src, dst)
        if not self._check_exists():
            raise not_found(self._base_folder)

    def _path(self, kind: str) -> str:
        return os.path.join(self._base_folder, self._FILES[self._split][kind][0])

    def __len__(self) -> int:
        with self.h5py.File(self._path("images")) as f:
            return f["x"].shape[0]

    def __getitem__(self, idx: int):
        with self.h5py.File(self._path("images")) as f:
            image = Image.fromarray(f["x"][idx]).convert("RGB")
        with self.h5py.File(self._path("targets")) as f:
            target = int(f["y"][idx, 0, 0, 0])
        return self._apply(image, target)

    def _check_exists(self) -> bool:
        return all(os.path.exists(self._path(kind)) for kind in ("images", "targets"))
