"""Oxford 102 Flowers from ``root/flowers-102`` (``jpg/image_<id>.jpg``, ``imagelabels.mat``, ``setid.mat``)."""
from __future__ import annotations

import os

from .folder import default_loader
from .utils import check_integrity, download_and_extract_archive, download_url, verify_str_arg
from .vision import _ImageListDataset

CLASSES = [
    "pink primrose", "hard-leaved pocket orchid", "canterbury bells", "sweet pea", "english marigold",
    "tiger lily", "moon orchid", "bird of paradise", "monkshood", "globe thistle", "snapdragon", "colt's foot",
    "king protea", "spear thistle", "yellow iris", "globe-flower", "purple coneflower", "peruvian lily",
    "balloon flower", "giant white arum lily", "fire lily", "pincushion flower", "fritillary", "red ginger",
    "grape hyacinth", "corn poppy", "prince of wales feathers", "stemless gentian", "artichoke",
    "sweet william", "carnation", "garden phlox", "love in the mist", "mexican aster", "alpine sea holly",
    "ruby-lipped cattleya", "cape flower", "great masterwort", "siam tulip", "lenten rose", "barbeton daisy",
    "daffodil", "sword lily", "poinsettia", "bolero deep blue", "wallflower", "marigold", "buttercup",
    "oxeye daisy", "common dandelion", "petunia", "wild pansy", "primula", "sunflower", "pelargonium",
    "bishop of llandaff", "gaura", "geranium", "orange dahlia", "pink-yellow dahlia?", "cautleya spicata",
    "japanese anemone", "black-eyed susan", "silverbush", "californian poppy", "osteospermum", "spring crocus",
    "bearded iris", "windflower", "tree poppy", "gazania", "azalea", "water lily", "rose", "thorn apple",
    "morning glory", "passion flower", "lotus", "toad lily", "anthurium", "frangipani", "clematis", "hibiscus",
    "columbine", "desert-rose", "tree mallow", "magnolia", "cyclamen", "watercress", "canna lily",
    "hippeastrum", "bee balm", "ball moss", "foxglove", "bougainvillea", "camellia", "mallow",
    "mexican petunia", "bromelia", "blanket flower", "trumpet creeper", "blackberry lily",
]


class Flowers102(_ImageListDataset):
    """102 flower classes; ``split`` train/val/test picks the image ids of ``setid.mat`` (read with SciPy)."""

    _download_url_prefix = "https://www.robots.ox.ac.uk/~vgg/data/flowers/102/"
    _file_dict = {"image": ("102flowers.tgz", "52808999861908f626f3c1f4e79d11fa"),
                  "label": ("imagelabels.mat", "e0620be6f572b9609742df49c70aed4d"),
                  "setid": ("setid.mat", "a5357ecc9cb78c4bef273ce3793fc85c")}
    _splits_map = {"train": "trnid", "val": "valid", "test": "tstid"}
    classes = CLASSES

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False,
                 loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        self._base_folder = os.path.join(self.root, "flowers-102")
        self._images_folder = os.path.join(self._base_folder, "jpg")
        if download:
            self.download()
        missing = self._missing()
        if missing:
            raise RuntimeError(f"Dataset not found or corrupted ({missing}). You can use download=True to download it")
        from scipy.io import loadmat

        ids = loadmat(os.path.join(self._base_folder, "setid.mat"), squeeze_me=True)[self._splits_map[split]]
        labels = loadmat(os.path.join(self._base_folder, "imagelabels.mat"), squeeze_me=True)["labels"]
        ids = [int(i) for i in ids.reshape(-1)]
        self._labels = [int(labels.reshape(-1)[i - 1]) - 1 for i in ids]  # ids and labels count from 1
        self._image_files = [os.path.join(self._images_folder, f"image_{i:05d}.jpg") for i in ids]
        self.loader = loader

    def _missing(self):
        """What is absent or fails its MD5 (the image folder or a .mat file), else None."""
        if not os.path.isdir(self._images_folder):
            return self._images_folder
        for key in ("label", "setid"):
            name, md5 = self._file_dict[key]
            if not check_integrity(os.path.join(self._base_folder, name), md5):
                return os.path.join(self._base_folder, name)
        return None

    def download(self) -> None:
        """Fetch the image archive and the two .mat files unless they are all there."""
        if self._missing() is None:
            return
        name, md5 = self._file_dict["image"]
        download_and_extract_archive(self._download_url_prefix + name, self._base_folder, md5=md5)
        for key in ("label", "setid"):
            name, md5 = self._file_dict[key]
            download_url(self._download_url_prefix + name, self._base_folder, md5=md5)
