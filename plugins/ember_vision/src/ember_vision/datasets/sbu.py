"""SBU Captioned Photos, from ``root/dataset`` (the URL and caption lists, and the photos fetched)."""
from __future__ import annotations

import os

from .folder import default_loader
from .utils import check_integrity, download_and_extract_archive, download_url
from .vision import VisionDataset


class SBU(VisionDataset):
    """Photos with one caption each; a photo listed but not on disk is skipped.  As in torchvision ``download``
    defaults to True and the verified tarball must be in ``root``."""

    url = "https://www.cs.rice.edu/~vo9/sbucaptions/SBUCaptionedPhotoDataset.tar.gz"
    filename = "SBUCaptionedPhotoDataset.tar.gz"
    md5_checksum = "9aec147b3488753cf758b4d493422285"

    def __init__(self, root, transform=None, target_transform=None, download: bool = True,
                 loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader = loader
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError(f"Dataset not found or corrupted (looked for {os.path.join(self.root, self.filename)})."
                               " You can use download=True to download it")
        folder = os.path.join(self.root, "dataset")
        self.photos, self.captions = [], []
        with open(os.path.join(folder, "SBU_captioned_photo_dataset_urls.txt")) as urls, \
                open(os.path.join(folder, "SBU_captioned_photo_dataset_captions.txt")) as captions:
            for url, caption in zip(urls, captions):
                photo = os.path.basename(url.rstrip())
                if os.path.exists(os.path.join(folder, photo)):
                    self.photos.append(photo)
                    self.captions.append(caption.rstrip())

    def __getitem__(self, index: int):
        img = self.loader(os.path.join(self.root, "dataset", self.photos[index]))
        return self._apply(img, self.captions[index])

    def __len__(self) -> int:
        return len(self.photos)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.md5_checksum)

    def download(self) -> None:
        """Fetch and unpack the tarball, then each listed photo (photos that fail are skipped)."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, self.root, self.filename, self.md5_checksum)
        with open(os.path.join(self.root, "dataset", "SBU_captioned_photo_dataset_urls.txt")) as f:
            for line in f:
                try:
                    download_url(line.rstrip(), os.path.join(self.root, "dataset"))
                except (OSError, RuntimeError):
                    pass
