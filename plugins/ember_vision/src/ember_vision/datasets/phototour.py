"""Multi-view Stereo Correspondence (PhotoTour) patches, from ``root/<name>`` (``*.bmp`` sheets of 64x64
patches, ``info.txt``, the matches file), cached as ``root/<name>.pt`` on first use."""
from __future__ import annotations

import os
import zipfile

import numpy as np
from PIL import Image

import ember

from .utils import download_url
from .vision import VisionDataset

_BROWN = "http://matthewalunbrown.com/patchdata/"
_ICVL = "http://icvl.ee.ic.ac.uk/vbalnt/"


class PhotoTour(VisionDataset):
    """Patches of ``name`` (notredame, yosemite, liberty, or their ``_harris`` sets): with ``train`` each item is a
    ``(64, 64)`` uint8 patch, else ``(patch1, patch2, match)`` over the matches file's pairs."""

    urls = {
        "notredame_harris": [_BROWN + "notredame_harris.zip", "notredame_harris.zip",
                             "69f8c90f78e171349abdf0307afefe4d"],
        "yosemite_harris": [_BROWN + "yosemite_harris.zip", "yosemite_harris.zip",
                            "a73253d1c6fbd3ba2613c45065c00d46"],
        "liberty_harris": [_BROWN + "liberty_harris.zip", "liberty_harris.zip", "c731fcfb3abb4091110d0ae8c7ba182c"],
        "notredame": [_ICVL + "notredame.zip", "notredame.zip", "509eda8535847b8c0a90bbb210c83484"],
        "yosemite": [_ICVL + "yosemite.zip", "yosemite.zip", "533b2e8eb7ede31be40abc317b2fd4f0"],
        "liberty": [_ICVL + "liberty.zip", "liberty.zip", "fdd9152f138ea5ef2091746689176414"],
    }
    means = {"notredame": 0.4854, "yosemite": 0.4844, "liberty": 0.4437, "notredame_harris": 0.4854,
             "yosemite_harris": 0.4844, "liberty_harris": 0.4437}
    stds = {"notredame": 0.1864, "yosemite": 0.1818, "liberty": 0.2019, "notredame_harris": 0.1864,
            "yosemite_harris": 0.1818, "liberty_harris": 0.2019}
    lens = {"notredame": 468159, "yosemite": 633587, "liberty": 450092, "liberty_harris": 379587,
            "yosemite_harris": 450912, "notredame_harris": 325295}
    image_ext = "bmp"
    info_file = "info.txt"
    matches_files = "m50_100000_100000_0.txt"

    def __init__(self, root, name: str, train: bool = True, transform=None, download: bool = False):
        super().__init__(root, transform=transform)
        self.name = name
        self.data_dir = os.path.join(self.root, name)
        self.data_down = os.path.join(self.root, f"{name}.zip")
        self.data_file = os.path.join(self.root, f"{name}.pt")
        self.train = train
        self.mean, self.std = self.means[name], self.stds[name]
        if download:
            self.download()
        if not os.path.exists(self.data_file):
            if not os.path.isdir(self.data_dir):
                raise RuntimeError(f"Dataset not found (looked for {self.data_file} and {self.data_dir}). You can "
                                   "use download=True to download it")
            self.cache()
        self.data, self.labels, self.matches = ember.load(self.data_file, weights_only=True)

    def __getitem__(self, index: int):
        if self.train:
            data = self.data[index]
            return self.transform(data) if self.transform is not None else data
        i, j = (int(v) for v in self.matches[index][:2])
        data1, data2 = self.data[i], self.data[j]
        if self.transform is not None:
            data1, data2 = self.transform(data1), self.transform(data2)
        return data1, data2, self.matches[index][2]

    def __len__(self) -> int:
        return len(self.data if self.train else self.matches)

    def download(self) -> None:
        """Fetch and unpack the patch archive (skipped when the cache or the folder is there)."""
        if os.path.exists(self.data_file) or os.path.isdir(self.data_dir):
            return
        url, filename, md5 = self.urls[self.name]
        path = download_url(url, self.root, filename, md5)
        with zipfile.ZipFile(path) as z:
            z.extractall(self.data_dir)
        os.unlink(path)

    def cache(self) -> None:
        """Read the patch sheets, point ids and matches once and save them to ``data_file``."""
        data = (read_image_file(self.data_dir, self.image_ext, self.lens[self.name]),
                read_info_file(self.data_dir, self.info_file), read_matches_files(self.data_dir, self.matches_files))
        ember.save(data, self.data_file)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


def read_image_file(data_dir: str, image_ext: str, n: int) -> ember.Tensor:
    """The first ``n`` 64x64 patches of the sorted ``*.<image_ext>`` sheets, row by row, as ``(n, 64, 64)`` uint8."""
    patches = []
    for name in sorted(f for f in os.listdir(data_dir) if f.endswith(image_ext)):
        with Image.open(os.path.join(data_dir, name)) as img:
            sheet = np.asarray(img.convert("L"))
        h, w = sheet.shape[0] // 64 * 64, sheet.shape[1] // 64 * 64
        patches.append(sheet[:h, :w].reshape(h // 64, 64, w // 64, 64).transpose(0, 2, 1, 3).reshape(-1, 64, 64))
    stacked = np.concatenate(patches) if patches else np.zeros((0, 64, 64), np.uint8)
    return ember.from_numpy(np.ascontiguousarray(stacked[:n]))


def read_info_file(data_dir: str, info_file: str) -> ember.Tensor:
    """The 3D point id of each patch (the first column of ``info_file``), int64."""
    with open(os.path.join(data_dir, info_file)) as f:
        return ember.tensor([int(line.split()[0]) for line in f if line.strip()], dtype=ember.int64)


def read_matches_files(data_dir: str, matches_file: str) -> ember.Tensor:
    """``(N, 3)`` int64 rows ``patch1, patch2, same 3D point (1) or not (0)``."""
    rows = []
    with open(os.path.join(data_dir, matches_file)) as f:
        for line in f:
            v = line.split()
            if v:
                rows.append([int(v[0]), int(v[3]), int(v[1] == v[4])])
    return ember.tensor(rows, dtype=ember.int64).reshape(-1, 3)
