"""Fixed-length clips over a list of video files (torchvision's ``datasets.video_utils``), decoded through PyAV.

A video's frames are numbered from 0 in decoding order (torchvision 0.28 counts frames, not stream
timestamps); clip ``k`` of a video is frames ``k * step .. k * step + num_frames - 1``, after resampling to
``frame_rate`` when one is given.  Clips short of ``num_frames`` are dropped.
"""
from __future__ import annotations

import bisect
import math
import warnings

import numpy as np

import ember

from ..io import video as _video

__all__ = ["VideoClips", "unfold"]


def unfold(tensor: ember.Tensor, size: int, step: int, dilation: int = 1) -> ember.Tensor:
    """Every window of ``size`` elements of a 1-D tensor, ``step`` apart, elements ``dilation`` apart:
    ``(windows, size)`` (``(0, size)`` when none fits)."""
    if tensor.dim() != 1:
        raise ValueError(f"tensor should have 1 dimension instead of {tensor.dim()}")
    count = max((tensor.numel() - (dilation * (size - 1) + 1)) // step + 1, 0)
    index = ember.arange(count).mul(step).unsqueeze(1) + ember.arange(size).mul(dilation).unsqueeze(0)
    return tensor[index.reshape(-1)].reshape(count, size)


class _VideoTimestampsDataset:
    """One item per video file: ``(frame numbers, fps)``, for reading them in DataLoader workers."""

    def __init__(self, video_paths: list) -> None:
        self.video_paths = video_paths

    def __len__(self) -> int:
        return len(self.video_paths)

    def __getitem__(self, idx: int):
        count, fps = _video._frame_count_and_fps(self.video_paths[idx])
        return list(range(count)), fps


def _collate_fn(x):
    return x


def _progress(iterable):
    """``iterable`` with a tqdm progress bar where tqdm is installed."""
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable)


class VideoClips:
    """All clips of ``clip_length_in_frames`` frames, ``frames_between_clips`` apart, of ``video_paths``
    (resampled to ``frame_rate`` when given).  ``get_clip(i)`` returns ``(video, audio, info, video_idx)``;
    ``metadata`` (frame numbers and rates per video) can be passed back as ``_precomputed_metadata`` to skip
    reading the files again."""

    def __init__(self, video_paths: list, clip_length_in_frames: int = 16, frames_between_clips: int = 1,
                 frame_rate: float | None = None, _precomputed_metadata: dict | None = None, num_workers: int = 0,
                 _video_width: int = 0, _video_height: int = 0, _video_min_dimension: int = 0,
                 _video_max_dimension: int = 0, _audio_samples: int = 0, _audio_channels: int = 0,
                 output_format: str = "THWC") -> None:
        self.video_paths = video_paths
        self.num_workers = num_workers
        # accepted for torchvision's signature; its decoder ignores them too
        self._video_width, self._video_height = _video_width, _video_height
        self._video_min_dimension, self._video_max_dimension = _video_min_dimension, _video_max_dimension
        self._audio_samples, self._audio_channels = _audio_samples, _audio_channels
        self.output_format = output_format.upper()
        if self.output_format not in ("THWC", "TCHW"):
            raise ValueError(f"output_format should be either 'THWC' or 'TCHW', got {output_format}.")
        if _precomputed_metadata is None:
            self._compute_frame_pts()
        else:
            self._init_from_metadata(_precomputed_metadata)
        self.compute_clips(clip_length_in_frames, frames_between_clips, frame_rate)

    def _compute_frame_pts(self) -> None:
        from ember.utils.data import DataLoader

        loader = DataLoader(_VideoTimestampsDataset(self.video_paths), batch_size=16, num_workers=self.num_workers,
                            collate_fn=_collate_fn)
        self.video_pts, self.video_fps = [], []
        for batch in _progress(loader):
            for pts, fps in batch:
                self.video_pts.append(ember.as_tensor(pts, dtype=ember.int64))
                self.video_fps.append(fps)

    def _init_from_metadata(self, metadata: dict) -> None:
        self.video_paths = metadata["video_paths"]
        self.video_pts = metadata["video_pts"]
        self.video_fps = metadata["video_fps"]
        if not len(self.video_paths) == len(self.video_pts) == len(self.video_fps):
            raise ValueError("VideoClips: the metadata's video_paths, video_pts and video_fps differ in length")

    @property
    def metadata(self) -> dict:
        """``{"video_paths", "video_pts", "video_fps"}``: what ``_precomputed_metadata`` takes."""
        return {"video_paths": self.video_paths, "video_pts": self.video_pts, "video_fps": self.video_fps}

    def subset(self, indices: list) -> "VideoClips":
        """The clips of the videos at ``indices`` only, with the same clip settings."""
        metadata = {key: [value[i] for i in indices] for key, value in self.metadata.items()}
        return type(self)(metadata["video_paths"], clip_length_in_frames=self.num_frames,
                          frames_between_clips=self.step, frame_rate=self.frame_rate,
                          _precomputed_metadata=metadata, num_workers=self.num_workers,
                          _video_width=self._video_width, _video_height=self._video_height,
                          _video_min_dimension=self._video_min_dimension,
                          _video_max_dimension=self._video_max_dimension, _audio_samples=self._audio_samples,
                          _audio_channels=self._audio_channels, output_format=self.output_format)

    @staticmethod
    def _resample_video_idx(num_frames: int, original_fps: float, new_fps: float):
        """The frames to keep to turn ``original_fps`` into ``new_fps``: a slice for a whole ratio, else indices."""
        step = original_fps / new_fps
        if float(step).is_integer():
            return slice(None, None, int(step))
        return (ember.arange(num_frames, dtype=ember.float32) * step).floor().to(ember.int64)

    @staticmethod
    def compute_clips_for_video(video_pts: ember.Tensor, num_frames: int, step: int, fps: float | None,
                                frame_rate: float | None = None):
        """One video's clips ``(clips, resampling indices)``: ``clips`` is ``(n, num_frames)`` frame numbers."""
        fps = 1 if fps is None else fps  # a file without video: no frames, any rate
        frame_rate = fps if frame_rate is None else frame_rate
        total_frames = len(video_pts) * frame_rate / fps
        idxs = VideoClips._resample_video_idx(int(math.floor(total_frames)), fps, frame_rate)
        clips = unfold(video_pts[idxs], num_frames, step)
        if not clips.numel():
            warnings.warn("There aren't enough frames in the current video to get a clip for the given clip length "
                          "and frames between clips. The video (and potentially others) will be skipped.")
        return clips, ([idxs] * len(clips) if isinstance(idxs, slice) else unfold(idxs, num_frames, step))

    def compute_clips(self, num_frames: int, step: int, frame_rate: float | None = None) -> None:
        """Recompute the clips for a new length, step or frame rate (fast: the files are not read)."""
        self.num_frames, self.step, self.frame_rate = num_frames, step, frame_rate
        self.clips, self.resampling_idxs = [], []
        for video_pts, fps in zip(self.video_pts, self.video_fps):
            clips, idxs = self.compute_clips_for_video(video_pts, num_frames, step, fps, frame_rate)
            self.clips.append(clips)
            self.resampling_idxs.append(idxs)
        self.cumulative_sizes = np.cumsum([len(c) for c in self.clips]).tolist()

    def __len__(self) -> int:
        return self.num_clips()

    def num_videos(self) -> int:
        """How many videos."""
        return len(self.video_paths)

    def num_clips(self) -> int:
        """How many clips, over all videos."""
        return self.cumulative_sizes[-1] if self.cumulative_sizes else 0

    def get_clip_location(self, idx: int) -> tuple:
        """``(video index, clip index within that video)`` of clip ``idx``."""
        video_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        return video_idx, idx - (self.cumulative_sizes[video_idx - 1] if video_idx else 0)

    def get_clip(self, idx: int):
        """Clip ``idx``: ``(video uint8 (T, H, W, C) or (T, C, H, W), audio (channels, samples), info,
        video_idx)``, ``info`` holding ``video_fps``."""
        if idx >= self.num_clips():
            raise IndexError(f"Index {idx} out of range ({self.num_clips()} number of clips)")
        video_idx, clip_idx = self.get_clip_location(idx)
        path = self.video_paths[video_idx]
        clip_pts = self.clips[video_idx][clip_idx]
        start, end = int(clip_pts[0].item()), int(clip_pts[-1].item())
        video = _video._read_frames(path, start, end, self.output_format)
        fps = self.video_fps[video_idx]
        audio = _video._read_audio(path, start / fps, (end + 1) / fps)
        info = {"video_fps": fps}
        if self.frame_rate is not None:
            resampling = self.resampling_idxs[video_idx][clip_idx]
            if ember.is_tensor(resampling):
                resampling = resampling - resampling[0]
            video = video[resampling]
            info["video_fps"] = self.frame_rate
        if len(video) != self.num_frames:
            raise RuntimeError(f"VideoClips: clip {idx} of {path} decoded to {len(video)} frames, expected "
                               f"{self.num_frames}")
        return video, audio, info, video_idx

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["video_pts_sizes"] = [len(v) for v in self.video_pts]
        state["video_pts"] = (np.concatenate([v.to(ember.int64).numpy() for v in self.video_pts])
                              if self.video_pts else [])
        for derived in ("clips", "resampling_idxs", "cumulative_sizes"):
            del state[derived]
        state["_version"] = 2
        return state

    def __setstate__(self, state: dict) -> None:
        if "_version" not in state:
            self.__dict__ = state
            return
        flat = np.asarray(state.pop("video_pts"), dtype=np.int64)
        sizes = state.pop("video_pts_sizes")
        state["video_pts"] = [ember.from_numpy(p.copy()) for p in np.split(flat, np.cumsum(sizes)[:-1])] if sizes \
            else []
        self.__dict__ = state
        self.compute_clips(self.num_frames, self.step, self.frame_rate)
