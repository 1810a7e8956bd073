"""Flickr8k and Flickr30k captions: images in ``root``, captions from ``ann_file``."""
from __future__ import annotations

import glob
import os
from collections import defaultdict
from html.parser import HTMLParser

from .folder import default_loader
from .vision import VisionDataset


class Flickr8kParser(HTMLParser):
    """Reads Flickr8k's caption page: each table row links an image id and lists its captions."""

    def __init__(self, root: str):
        super().__init__()
        self.root = root
        self.annotations: dict = {}
        self.in_table = False
        self.current_tag = None
        self.current_img = None

    def handle_starttag(self, tag, attrs):
        self.current_tag = tag
        self.in_table = self.in_table or tag == "table"

    def handle_endtag(self, tag):
        self.current_tag = None
        if tag == "table":
            self.in_table = False

    def handle_data(self, data):
        if not self.in_table:
            return
        if data == "Image Not Found":
            self.current_img = None
        elif self.current_tag == "a":
            pattern = os.path.join(self.root, data.split("/")[-2] + "_*.jpg")
            matches = glob.glob(pattern)
            if not matches:
                raise FileNotFoundError(f"Flickr8k: no image file matches {pattern}")
            self.current_img = matches[0]
            self.annotations[self.current_img] = []
        elif self.current_tag == "li" and self.current_img:
            self.annotations[self.current_img].append(data.strip())


class _CaptionDataset(VisionDataset):
    """Images with their list of captions: ``ids`` and ``annotations[id]``; ``_path(id)`` is the image file."""

    def __getitem__(self, index: int):
        img_id = self.ids[index]
        return self._apply(self.loader(self._path(img_id)), self.annotations[img_id])

    def __len__(self) -> int:
        return len(self.ids)


class Flickr8k(_CaptionDataset):
    """Flickr8k: ``ann_file`` is the captions HTML page; the images ``<id>_*.jpg`` sit in ``root``."""

    def __init__(self, root, ann_file: str, transform=None, target_transform=None, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.ann_file = os.path.expanduser(ann_file)
        parser = Flickr8kParser(self.root)
        with open(self.ann_file) as f:
            parser.feed(f.read())
        self.annotations = parser.annotations
        self.ids = sorted(self.annotations)
        self.loader = loader

    def _path(self, img_id):
        return img_id


class Flickr30k(_CaptionDataset):
    """Flickr30k: ``ann_file`` has lines ``<image>#<n>\\t<caption>``; the images sit in ``root``."""

    def __init__(self, root, ann_file: str, transform=None, target_transform=None, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.ann_file = os.path.expanduser(ann_file)
        self.annotations = defaultdict(list)
        with open(self.ann_file) as f:
            for line in f:
                img_id, caption = line.strip().split("\t")
                self.annotations[img_id[:-2]].append(caption)
        self.ids = sorted(self.annotations)
        self.loader = loader

    def _path(self, img_id):
        return os.path.join(self.root, img_id)
