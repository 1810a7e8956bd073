"""Stanford Cars, from ``root/stanford_cars`` (``cars_{train,test}/`` images, the devkit's ``.mat`` annotations;
needs scipy to read them)."""
from __future__ import annotations

import os

from .folder import default_loader
from .utils import verify_str_arg
from .vision import VisionDataset, not_found


class StanfordCars(VisionDataset):
    """196 car models; ``split`` train (``devkit/cars_train_annos.mat``) or test
    (``cars_test_annos_withlabels.mat``), class names from ``devkit/cars_meta.mat``.  The original URL is gone,
    so ``download=True`` raises ``ValueError`` as in torchvision."""

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False,
                 loader=default_loader):
        try:
            import scipy.io as sio
        except ImportError:
            raise RuntimeError("Scipy is not found. This dataset needs to have scipy installed: "
                               "pip install scipy") from None
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = os.path.join(self.root, "stanford_cars")
        devkit = os.path.join(self._base_folder, "devkit")
        if split == "train":
            self._annotations_mat_path = os.path.join(devkit, "cars_train_annos.mat")
            self._images_base_path = os.path.join(self._base_folder, "cars_train")
        else:
            self._annotations_mat_path = os.path.join(self._base_folder, "cars_test_annos_withlabels.mat")
            self._images_base_path = os.path.join(self._base_folder, "cars_test")
        if download:
            self.download()
        if not (os.path.isdir(devkit) and os.path.exists(self._annotations_mat_path)
                and os.path.isdir(self._images_base_path)):
            raise not_found(self._base_folder)
        annotations = sio.loadmat(self._annotations_mat_path, squeeze_me=True)["annotations"]
        # the devkit numbers classes from 1
        self._samples = [(os.path.join(self._images_base_path, str(a["fname"])), int(a["class"]) - 1)
                         for a in annotations.reshape(-1)]
        self.classes = sio.loadmat(os.path.join(devkit, "cars_meta.mat"), squeeze_me=True)["class_names"].tolist()
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.loader = loader

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, idx: int):
        path, target = self._samples[idx]
        return self._apply(self.loader(path), target)

    def download(self):
        """Refused: the dataset's original URL is broken."""
        raise ValueError("The original URL is broken so the StanfordCars dataset cannot be downloaded anymore.")
