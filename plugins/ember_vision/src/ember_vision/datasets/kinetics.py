"""Kinetics-400/600/700 (torchvision's ``datasets.Kinetics``): clips of the videos in
``root/<split>/<class>/*.{avi,mp4}``, with the official download (per-split archive lists and annotations)."""
from __future__ import annotations

import csv
import os
import urllib.parse
from functools import partial
from multiprocessing import Pool

from .folder import find_classes, make_dataset
from .utils import check_integrity, download_and_extract_archive, download_url, verify_str_arg
from .video_utils import VideoClips
from .vision import VisionDataset

__all__ = ["Kinetics"]


def _dl_wrap(tarpath: str, videopath: str, line: str) -> None:
    download_and_extract_archive(line, tarpath, videopath)


class Kinetics(VisionDataset):
    """Clips of ``frames_per_clip`` frames, ``step_between_clips`` apart (resampled to ``frame_rate`` if given),
    of the videos under ``root/<split>/<class>/``; an item is ``(video, audio, label)``, video uint8 ``(T, C, H,
    W)`` by default (``output_format="THWC"`` for ``(T, H, W, C)``).  ``num_classes`` "400", "600" or "700";
    ``_legacy=True`` reads ``root/<class>/`` directly."""

    _TAR_URLS = {
        "400": "https://s3.amazonaws.com/kinetics/400/{split}/k400_{split}_path.txt",
        "600": "https://s3.amazonaws.com/kinetics/600/{split}/k600_{split}_path.txt",
        "700": "https://s3.amazonaws.com/kinetics/700_2020/{split}/k700_2020_{split}_path.txt",
    }
    _ANNOTATION_URLS = {
        "400": "https://s3.amazonaws.com/kinetics/400/annotations/{split}.csv",
        "600": "https://s3.amazonaws.com/kinetics/600/annotations/{split}.csv",
        "700": "https://s3.amazonaws.com/kinetics/700_2020/annotations/{split}.csv",
    }

    def __init__(self, root, frames_per_clip: int, num_classes: str = "400", split: str = "train",
                 frame_rate: int | None = None, step_between_clips: int = 1, transform=None,
                 extensions=("avi", "mp4"), download: bool = False, num_download_workers: int = 1,
                 num_workers: int = 1, _precomputed_metadata: dict | None = None, _video_width: int = 0,
                 _video_height: int = 0, _video_min_dimension: int = 0, _audio_samples: int = 0,
                 _audio_channels: int = 0, _legacy: bool = False, output_format: str = "TCHW") -> None:
        self.num_classes = verify_str_arg(num_classes, arg="num_classes", valid_values=["400", "600", "700"])
        self.extensions = extensions
        self.num_download_workers = num_download_workers
        self.root = root
        self._legacy = _legacy
        if _legacy:
            self.split_folder, self.split, output_format = root, "unknown", "THWC"
            if download:
                raise ValueError("Cannot download the videos using legacy_structure.")
        else:
            self.split_folder = os.path.join(root, split)
            self.split = verify_str_arg(split, arg="split", valid_values=["train", "val", "test"])
        if download:
            self.download_and_process_videos()
        super().__init__(self.root)
        self.classes, class_to_idx = find_classes(self.split_folder)
        self.samples = make_dataset(self.split_folder, class_to_idx, extensions, is_valid_file=None)
        self.video_clips = VideoClips([path for path, _ in self.samples], frames_per_clip, step_between_clips,
                                      frame_rate, _precomputed_metadata, num_workers=num_workers,
                                      _video_width=_video_width, _video_height=_video_height,
                                      _video_min_dimension=_video_min_dimension, _audio_samples=_audio_samples,
                                      _audio_channels=_audio_channels, output_format=output_format)
        self.transform = transform

    def download_and_process_videos(self) -> None:
        """Download the split's video archives into ``root/<split>`` and sort the videos into class folders."""
        self._download_videos()
        self._make_ds_structure()

    def _download_videos(self) -> None:
        if os.path.exists(self.split_folder):
            return
        tar_path = os.path.join(self.root, "tars")
        file_list_path = os.path.join(self.root, "files")
        split_url = self._TAR_URLS[self.num_classes].format(split=self.split)
        split_url_filepath = os.path.join(file_list_path, os.path.basename(split_url))
        if not check_integrity(split_url_filepath):
            download_url(split_url, file_list_path)
        with open(split_url_filepath) as file:
            urls = [urllib.parse.quote(line, safe="/,:") for line in file.read().splitlines()]
        if self.num_download_workers == 1:
            for url in urls:
                download_and_extract_archive(url, tar_path, self.split_folder)
        else:
            with Pool(self.num_download_workers) as pool:
                pool.map(partial(_dl_wrap, tar_path, self.split_folder), urls)

    def _make_ds_structure(self) -> None:
        """Move ``<split>/<youtube id>_<start>_<end>.mp4`` into ``<split>/<label>/`` by the split's annotations."""
        annotation_path = os.path.join(self.root, "annotations")
        annotations = os.path.join(annotation_path, f"{self.split}.csv")
        if not check_integrity(annotations):
            download_url(self._ANNOTATION_URLS[self.num_classes].format(split=self.split), annotation_path)
        with open(annotations) as csvfile:
            for row in csv.DictReader(csvfile):
                name = f"{row['youtube_id']}_{int(row['time_start']):06}_{int(row['time_end']):06}.mp4"
                label = row["label"].replace(" ", "_").replace("'", "").replace("(", "").replace(")", "")
                os.makedirs(os.path.join(self.split_folder, label), exist_ok=True)
                downloaded = os.path.join(self.split_folder, name)
                if os.path.isfile(downloaded):
                    os.replace(downloaded, os.path.join(self.split_folder, label, name))

    @property
    def metadata(self) -> dict:
        """The clips' metadata, to pass back as ``_precomputed_metadata``."""
        return self.video_clips.metadata

    def __len__(self) -> int:
        return self.video_clips.num_clips()

    def __getitem__(self, idx: int):
        video, audio, _, video_idx = self.video_clips.get_clip(idx)
        label = self.samples[video_idx][1]
        if self.transform is not None:
            video = self.transform(video)
        return video, audio, label
