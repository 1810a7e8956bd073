"""PASCAL VOC 2007-2012 from ``root/VOCdevkit/VOC<year>`` (``JPEGImages``, ``ImageSets``, masks and XML)."""
from __future__ import annotations

import os
from xml.etree.ElementTree import parse as parse_xml

from PIL import Image

from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

_HOST = "https://thor.robots.ox.ac.uk/pascal/VOC/"
# year -> (archive url under _HOST, file name, md5, folder in root)
DATASET_YEAR_DICT = {
    key: {"url": _HOST + url, "filename": filename, "md5": md5, "base_dir": os.path.join(*base.split("/"))}
    for key, (url, filename, md5, base) in {
        "2012": ("voc2012/VOCtrainval_11-May-2012.tar", "VOCtrainval_11-May-2012.tar",
                 "6cd6e144f989b92b3379bac3b3de84fd", "VOCdevkit/VOC2012"),
        "2011": ("voc2011/VOCtrainval_25-May-2011.tar", "VOCtrainval_25-May-2011.tar",
                 "6c3384ef61512963050cb5d687e5bf1e", "TrainVal/VOCdevkit/VOC2011"),
        "2010": ("voc2010/VOCtrainval_03-May-2010.tar", "VOCtrainval_03-May-2010.tar",
                 "da459979d0c395079b5c75ee67908abb", "VOCdevkit/VOC2010"),
        "2009": ("voc2009/VOCtrainval_11-May-2009.tar", "VOCtrainval_11-May-2009.tar",
                 "a3e00b113cfcfebf17e343f59da3caa1", "VOCdevkit/VOC2009"),
        "2008": ("voc2008/VOCtrainval_14-Jul-2008.tar", "VOCtrainval_11-May-2012.tar",
                 "2629fa636546599198acfcfbfcf1904a", "VOCdevkit/VOC2008"),
        "2007": ("voc2007/VOCtrainval_06-Nov-2007.tar", "VOCtrainval_06-Nov-2007.tar",
                 "c52e279531787c972589f7e41ab4ae64", "VOCdevkit/VOC2007"),
        "2007-test": ("voc2007/VOCtest_06-Nov-2007.tar", "VOCtest_06-Nov-2007.tar",
                      "b6e924de25625d8de591ea690078ad9f", "VOCdevkit/VOC2007"),
    }.items()
}


class _VOCBase(VisionDataset):
    _SPLITS_DIR: str
    _TARGET_DIR: str
    _TARGET_FILE_EXT: str

    def __init__(self, root, year: str = "2012", image_set: str = "train", download: bool = False, transform=None,
                 target_transform=None, transforms=None):
        super().__init__(root, transforms=transforms, transform=transform, target_transform=target_transform)
        self.year = verify_str_arg(year, "year", [str(y) for y in range(2007, 2013)])
        self.image_set = verify_str_arg(image_set, "image_set",
                                        ["train", "trainval", "val"] + (["test"] if year == "2007" else []))
        entry = DATASET_YEAR_DICT["2007-test" if year == "2007" and image_set == "test" else year]
        self.url, self.filename, self.md5 = entry["url"], entry["filename"], entry["md5"]
        voc_root = os.path.join(self.root, entry["base_dir"])
        if download:
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.md5)
        if not os.path.isdir(voc_root):
            raise RuntimeError(f"Dataset not found or corrupted ({voc_root}). You can use download=True to download it")
        with open(os.path.join(voc_root, "ImageSets", self._SPLITS_DIR, image_set + ".txt")) as f:
            names = [line.strip() for line in f]
        self.images = [os.path.join(voc_root, "JPEGImages", n + ".jpg") for n in names]
        self.targets = [os.path.join(voc_root, self._TARGET_DIR, n + self._TARGET_FILE_EXT) for n in names]

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int):
        return self._apply(Image.open(self.images[index]).convert("RGB"), self._target(index))


class VOCSegmentation(_VOCBase):
    """Images with their class-index mask (a palette PNG) from ``SegmentationClass``."""

    _SPLITS_DIR = "Segmentation"
    _TARGET_DIR = "SegmentationClass"
    _TARGET_FILE_EXT = ".png"

    @property
    def masks(self) -> list:
        return self.targets

    def _target(self, index: int):
        return Image.open(self.masks[index])


class VOCDetection(_VOCBase):
    """Images with their ``Annotations`` XML as nested dicts (``target["annotation"]["object"]`` is a list)."""

    _SPLITS_DIR = "Main"
    _TARGET_DIR = "Annotations"
    _TARGET_FILE_EXT = ".xml"

    @property
    def annotations(self) -> list:
        return self.targets

    def _target(self, index: int):
        return self.parse_voc_xml(parse_xml(self.annotations[index]).getroot())

    @staticmethod
    def parse_voc_xml(node) -> dict:
        """An XML element as ``{tag: text}`` for a leaf, else ``{tag: {child tag: value or list of values}}``."""
        children = list(node)
        if not children:
            text = (node.text or "").strip()
            return {node.tag: text} if node.text else {}
        grouped: dict = {}
        for child in children:
            for tag, value in VOCDetection.parse_voc_xml(child).items():
                grouped.setdefault(tag, []).append(value)
        if node.tag == "annotation":
            grouped["object"] = [grouped.get("object", [])]  # always a list, even of one object
        return {node.tag: {tag: v[0] if len(v) == 1 else v for tag, v in grouped.items()}}
