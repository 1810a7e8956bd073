"""HMDB51 (torchvision's ``datasets.HMDB51``): clips of ``root/<class>/*.avi``, a fold chosen by the
``*test_split<fold>.txt`` files (tag 1: train, 2: test)."""
from __future__ import annotations

import glob
import os

from ._video_folds import _VideoFoldDataset

__all__ = ["HMDB51"]


class HMDB51(_VideoFoldDataset):
    """Clips of ``frames_per_clip`` frames, ``step_between_clips`` apart, of fold ``fold``'s training (or test)
    videos; an item is ``(video uint8 (T, H, W, C), audio, label)``."""

    data_url = "https://serre-lab.clps.brown.edu/wp-content/uploads/2013/10/hmdb51_org.rar"
    splits = {
        "url": "https://serre-lab.clps.brown.edu/wp-content/uploads/2013/10/test_train_splits.rar",
        "md5": "15e67781e70dcfbdce2d7dbb9b3344b5",
    }
    TRAIN_TAG = 1
    TEST_TAG = 2

    def _select_fold(self, video_list: list, annotations_dir: str, fold: int, train: bool) -> list:
        target = self.TRAIN_TAG if train else self.TEST_TAG
        selected = set()
        for path in glob.glob(os.path.join(annotations_dir, f"*test_split{fold}.txt")):
            with open(path) as f:
                for line in f:
                    name, tag = line.split()
                    if int(tag) == target:
                        selected.add(name)
        return [i for i, path in enumerate(video_list) if os.path.basename(path) in selected]
