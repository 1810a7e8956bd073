"""The base of HMDB51 and UCF101: the ``.avi`` videos under ``root/<class>/``, one fold's train or test
videos cut into clips."""
from __future__ import annotations

from .folder import find_classes, make_dataset
from .video_utils import VideoClips
from .vision import VisionDataset


class _VideoFoldDataset(VisionDataset):
    """Subclasses give ``_select_fold(video_paths, annotation_path, fold, train) -> indices``."""

    def __init__(self, root, annotation_path: str, frames_per_clip: int, step_between_clips: int = 1,
                 frame_rate: int | None = None, fold: int = 1, train: bool = True, transform=None,
                 _precomputed_metadata: dict | None = None, num_workers: int = 1, _video_width: int = 0,
                 _video_height: int = 0, _video_min_dimension: int = 0, _audio_samples: int = 0,
                 output_format: str = "THWC") -> None:
        super().__init__(root)
        if fold not in (1, 2, 3):
            raise ValueError(f"fold should be between 1 and 3, got {fold}")
        self.fold, self.train = fold, train
        self.classes, class_to_idx = find_classes(self.root)
        self.samples = make_dataset(self.root, class_to_idx, ("avi",))
        video_paths = [path for path, _ in self.samples]
        self.full_video_clips = VideoClips(video_paths, frames_per_clip, step_between_clips, frame_rate,
                                           _precomputed_metadata, num_workers=num_workers,
                                           _video_width=_video_width, _video_height=_video_height,
                                           _video_min_dimension=_video_min_dimension,
                                           _audio_samples=_audio_samples, output_format=output_format)
        self.indices = self._select_fold(video_paths, annotation_path, fold, train)
        self.video_clips = self.full_video_clips.subset(self.indices)
        self.transform = transform

    def _select_fold(self, video_list: list, annotation_path: str, fold: int, train: bool) -> list:
        raise NotImplementedError

    @property
    def metadata(self) -> dict:
        """The metadata of every video's clips (all folds), to pass back as ``_precomputed_metadata``."""
        return self.full_video_clips.metadata

    def __len__(self) -> int:
        return self.video_clips.num_clips()

    def __getitem__(self, idx: int):
        video, audio, _, video_idx = self.video_clips.get_clip(idx)
        label = self.samples[self.indices[video_idx]][1]
        if self.transform is not None:
            video = self.transform(video)
        return video, audio, label
