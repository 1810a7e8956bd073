"""Datasets that are an ImageFolder once their archive is unpacked: EuroSAT, Country211, RenderedSST2."""
from __future__ import annotations

import os

from .folder import ImageFolder, default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import not_found


class _ArchivedImageFolder(ImageFolder):
    """An ImageFolder on ``data_folder`` under ``root``, fetched from ``_URL`` into ``download_root`` first
    when ``download`` is set; ``root`` stays the folder given."""

    _URL: str
    _MD5: str

    def _setup(self, root, data_folder: str, download_root: str, download: bool, **kwargs):
        if download and not os.path.isdir(data_folder):
            os.makedirs(download_root, exist_ok=True)
            download_and_extract_archive(self._URL, download_root, md5=self._MD5)
        if not os.path.isdir(data_folder):
            raise not_found(data_folder)
        super().__init__(data_folder, **kwargs)
        self.root = os.path.expanduser(os.fspath(root))


class EuroSAT(_ArchivedImageFolder):
    """Sentinel-2 land-use tiles in 10 classes, from ``root/eurosat/2750/<class>/*.jpg``."""

    _URL = ("https://huggingface.co/datasets/torchgeo/eurosat/resolve/c877bcd43f099cd0196738f714544e355477f3fd/"
            "EuroSAT.zip")
    _MD5 = "c8fa014336c82ac7804f0398fcb19387"

    def __init__(self, root, transform=None, target_transform=None, download: bool = False, loader=default_loader):
        base = os.path.join(os.path.expanduser(os.fspath(root)), "eurosat")
        self._base_folder, self._data_folder = base, os.path.join(base, "2750")
        self._setup(root, self._data_folder, base, download, transform=transform, target_transform=target_transform,
                    loader=loader)


class Country211(_ArchivedImageFolder):
    """Geolocation photos of 211 countries, from ``root/country211/<split>/<country>/*.jpg``."""

    _URL = "https://openaipublic.azureedge.net/clip/data/country211.tgz"
    _MD5 = "84988d7644798601126c29e9877aab6a"

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False,
                 loader=default_loader):
        self._split = verify_str_arg(split, "split", ("train", "valid", "test"))
        root = os.path.expanduser(os.fspath(root))
        self._base_folder = os.path.join(root, "country211")
        self._setup(root, os.path.join(self._base_folder, split), root, download, transform=transform,
                    target_transform=target_transform, loader=loader)


class RenderedSST2(_ArchivedImageFolder):
    """Sentences rendered as images, labelled negative/positive, from ``root/rendered-sst2/<split>/<label>``."""

    _URL = "https://openaipublic.azureedge.net/clip/data/rendered-sst2.tgz"
    _MD5 = "2384d08e9dcfa4bd55b324e610496ee5"

    def __init__(self, root, split: str = "train", transform=None, target_transform=None, download: bool = False,
                 loader=default_loader):
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        root = os.path.expanduser(os.fspath(root))
        self._base_folder = os.path.join(root, "rendered-sst2")
        folder = os.path.join(self._base_folder, {"train": "train", "val": "valid", "test": "test"}[split])
        self._setup(root, folder, root, download, transform=transform, target_transform=target_transform,
                    loader=loader)
