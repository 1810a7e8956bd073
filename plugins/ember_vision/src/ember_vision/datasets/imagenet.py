"""ImageNet 2012 classification, from the unpacked ``root/{train,val}/<wnid>/*.JPEG`` and, when present,
``root/meta.bin`` (the ``(wnid_to_classes, val_wnids)`` that torchvision writes from the devkit)."""
from __future__ import annotations

import os

import ember

from .folder import ImageFolder
from .utils import verify_str_arg

ARCHIVE_META = {
    "train": ("ILSVRC2012_img_train.tar", "1d675b47d978889d74fa0da5fadfb00e"),
    "val": ("ILSVRC2012_img_val.tar", "29b22e2961454d5413ddabcf34fc5622"),
    "devkit": ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf"),
}
META_FILE = "meta.bin"


class ImageNet(ImageFolder):
    """The ImageNet split ``split`` (train or val) as an ImageFolder of wnid folders.

    ``wnids`` and ``wnid_to_idx`` are the folder names; ``classes`` holds each class's names from ``meta.bin``
    (a wnid without metadata is named by itself), and ``class_to_idx`` maps every name to its index.  The
    archives are not unpacked here: a split folder that is missing raises ``RuntimeError`` naming the archive.
    """

    def __init__(self, root, split: str = "train", **kwargs):
        root = os.path.expanduser(os.fspath(root))
        self.split = verify_str_arg(split, "split", ("train", "val"))
        if not os.path.isdir(os.path.join(root, split)):
            archive = ARCHIVE_META[split][0]
            raise RuntimeError(f"The ImageNet {split} folder {os.path.join(root, split)} is not present: unpack "
                               f"{archive} there as <wnid>/<image>.JPEG folders (ember-vision reads the unpacked "
                               f"layout)")
        meta = os.path.join(root, META_FILE)
        wnid_to_classes = load_meta_file(root)[0] if os.path.isfile(meta) else {}
        super().__init__(os.path.join(root, split), **kwargs)
        self.root = root
        self.wnids, self.wnid_to_idx = self.classes, self.class_to_idx
        self.classes = [tuple(wnid_to_classes.get(w, (w,))) for w in self.wnids]
        self.class_to_idx = {name: i for i, names in enumerate(self.classes) for name in names}

    @property
    def split_folder(self) -> str:
        return os.path.join(self.root, self.split)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"


def load_meta_file(root, file: str | None = None):
    """``(wnid_to_classes, val_wnids)`` from ``root/meta.bin`` (a ``torch.save`` file)."""
    path = os.path.join(os.fspath(root), file or META_FILE)
    if not os.path.isfile(path):
        raise RuntimeError(f"The meta file {path} is not present in the root directory or is corrupted. "
                           "This file is automatically created by the ImageNet dataset.")
    return ember.load(path, weights_only=True)
