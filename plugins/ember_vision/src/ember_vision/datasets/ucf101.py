"""UCF101 (torchvision's ``datasets.UCF101``): clips of ``root/<class>/*.avi``, a fold chosen by
``{train,test}list0<fold>.txt``."""
from __future__ import annotations

import os

from ._video_folds import _VideoFoldDataset

__all__ = ["UCF101"]


class UCF101(_VideoFoldDataset):
    """Clips of ``frames_per_clip`` frames, ``step_between_clips`` apart, of fold ``fold``'s training (or test)
    videos; an item is ``(video uint8 (T, H, W, C), audio, label)``."""

    def _select_fold(self, video_list: list, annotation_path: str, fold: int, train: bool) -> list:
        name = f"{'train' if train else 'test'}list{fold:02d}.txt"
        with open(os.path.join(annotation_path, name)) as f:
            selected = {os.path.join(self.root, *line.strip().split(" ")[0].split("/")) for line in f}
        return [i for i, path in enumerate(video_list) if path in selected]
