"""Video files through PyAV (the ``video`` extra: ``pip install ember-vision[video]``): torchvision's
``read_video``, ``read_video_timestamps``, ``write_video`` and ``VideoReader``.

Frames are uint8 tensors, ``(T, H, W, C)`` (or ``(T, C, H, W)`` with ``output_format="TCHW"``); audio is a
float ``(channels, samples)`` tensor, ``(1, 0)`` for a file without sound.  Times are in the stream's ``pts``
units or, with ``pts_unit="sec"``, in seconds.
"""
from __future__ import annotations

import fractions
import os

import numpy as np

import ember

__all__ = ["read_video", "read_video_timestamps", "write_video", "VideoReader"]


def _av():
    """The PyAV module, or an ImportError naming the extra that installs it."""
    try:
        import av
    except ImportError:
        raise ImportError("ember-vision decodes and encodes video with PyAV, which is not installed: "
                          "pip install 'ember-vision[video]' (or pip install av)") from None
    return av


def _open_input(filename, op: str):
    av = _av()
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise RuntimeError(f"{op}: file not found: {filename}")
    return av.open(filename)


def _check_units(pts_unit: str, output_format: str = "THWC") -> str:
    if pts_unit not in ("pts", "sec"):
        raise ValueError(f"pts_unit must be 'pts' or 'sec', got {pts_unit!r}")
    output_format = output_format.upper()
    if output_format not in ("THWC", "TCHW"):
        raise ValueError(f"output_format should be either 'THWC' or 'TCHW', got {output_format}.")
    return output_format


def _in_range(frame, start, end, pts_unit: str) -> int:
    """-1 before ``[start, end]``, 0 inside, 1 after (a frame without a time counts as inside)."""
    t = frame.pts if pts_unit == "pts" else (None if frame.pts is None else frame.pts * frame.time_base)
    if t is None:
        return 0
    return -1 if t < start else (1 if end is not None and t > end else 0)


def _decode(container, stream, start, end, pts_unit: str, to_array) -> list:
    out = []
    for frame in container.decode(stream):
        where = _in_range(frame, start, end, pts_unit)
        if where > 0:
            break
        if where == 0:
            out.append(to_array(frame))
    return out


def read_video(filename, start_pts=0, end_pts=None, pts_unit: str = "pts", output_format: str = "THWC"):
    """The frames of a video file with ``start_pts <= time <= end_pts``, its audio over the same span and
    ``info`` (``video_fps``, and ``audio_fps`` where there is sound): ``(video, audio, info)``."""
    output_format = _check_units(pts_unit, output_format)
    if end_pts is not None and end_pts < start_pts:
        raise ValueError(f"end_pts should be larger than start_pts, got start_pts={start_pts} and end_pts={end_pts}")
    info, audio = {}, ember.zeros((1, 0))
    with _open_input(filename, "read_video") as container:
        frames = []
        if container.streams.video:
            stream = container.streams.video[0]
            if stream.average_rate is not None:
                info["video_fps"] = float(stream.average_rate)
            frames = _decode(container, stream, start_pts, end_pts, pts_unit,
                             lambda f: f.to_ndarray(format="rgb24"))
        if container.streams.audio:
            info["audio_fps"] = container.streams.audio[0].rate
            # the span in seconds: "pts" counts in the video stream's time base (the audio's without video)
            base = (container.streams.video or container.streams.audio)[0].time_base
            to_sec = (lambda t: float(t)) if pts_unit == "sec" else (lambda t: float(t * base))
            container.seek(0)
            audio = _audio_span(container, to_sec(start_pts), None if end_pts is None else to_sec(end_pts))
    video = np.stack(frames) if frames else np.zeros((0, 1, 1, 3), np.uint8)
    if output_format == "TCHW":
        video = video.transpose(0, 3, 1, 2)
    return ember.from_numpy(np.ascontiguousarray(video)), audio, info


def _planar_audio(frame) -> np.ndarray:
    """An audio frame as a ``(channels, samples)`` float32 array."""
    data = frame.to_ndarray()
    channels = len(frame.layout.channels)
    if not frame.format.is_planar:  # interleaved samples
        data = data.reshape(-1, channels).T
    return data.astype(np.float32)


def read_video_timestamps(filename, pts_unit: str = "pts"):
    """The times of a video file's frames (``pts`` ints, or ``Fraction`` seconds with ``pts_unit="sec"``) and
    its frame rate: ``(times, video_fps)``."""
    _check_units(pts_unit)
    with _open_input(filename, "read_video_timestamps") as container:
        if not container.streams.video:
            return [], None
        stream = container.streams.video[0]
        pts = sorted(p.pts for p in container.demux(stream) if p.pts is not None)
        fps = float(stream.average_rate) if stream.average_rate is not None else None
        if pts_unit == "sec":
            pts = [fractions.Fraction(p) * stream.time_base for p in pts]
    return pts, fps


def write_video(filename, video_array, fps: float, video_codec: str = "libx264", options=None,
                audio_array=None, audio_fps=None, audio_codec=None, audio_options=None) -> None:
    """Encode a ``(T, H, W, C)`` uint8 tensor of RGB frames (and optionally a ``(channels, samples)`` float
    audio tensor at ``audio_fps``) into ``filename``."""
    av = _av()
    video = np.asarray(ember.as_tensor(video_array).detach().cpu().numpy())
    if video.ndim != 4 or video.shape[-1] != 3:
        raise ValueError(f"write_video: video_array should be a (T, H, W, 3) tensor, got shape {tuple(video.shape)}")
    video = video.astype(np.uint8)
    if isinstance(fps, float):
        fps = np.round(fps)
    with av.open(os.fspath(filename), mode="w") as container:
        stream = container.add_stream(video_codec, rate=int(fps))
        stream.width, stream.height = video.shape[2], video.shape[1]
        stream.pix_fmt = "yuv420p" if video_codec != "libx264rgb" else "rgb24"
        stream.options = dict(options or {})
        if audio_array is not None:
            audio = np.asarray(ember.as_tensor(audio_array).detach().cpu().numpy(), dtype=np.float32)
            a_stream = container.add_stream(audio_codec or "aac", rate=audio_fps)
            a_stream.options = dict(audio_options or {})
            layout = "stereo" if audio.shape[0] > 1 else "mono"
            frame = av.AudioFrame.from_ndarray(audio, format="fltp", layout=layout)
            frame.sample_rate = audio_fps
            for packet in a_stream.encode(frame):
                container.mux(packet)
            for packet in a_stream.encode():
                container.mux(packet)
        for img in video:
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


class VideoReader:
    """Frame-by-frame reading of one stream of a video file (``"video"``, ``"audio"``, or ``"video:1"``):
    iterating yields ``{"data": tensor, "pts": seconds}`` (video frames ``(C, H, W)`` uint8, audio
    ``(samples, channels)`` float); ``seek(seconds)`` moves to a time, ``get_metadata()`` gives each stream's
    duration and rate, ``set_current_stream`` switches streams."""

    def __init__(self, src, stream: str = "video", num_threads: int = 0) -> None:
        av = _av()
        if ember.is_tensor(src) or isinstance(src, bytes):
            import io as _io
            data = src if isinstance(src, bytes) else src.detach().cpu().numpy().tobytes()
            self.container = av.open(_io.BytesIO(data))
        else:
            self.container = _open_input(src, "VideoReader")
        self.num_threads = num_threads
        self._stream = None
        self._frames = None
        if not self.set_current_stream(stream):
            raise ValueError(f"VideoReader: the file has no stream {stream!r}")

    def set_current_stream(self, stream: str) -> bool:
        """Read ``stream`` (``"video"``, ``"audio"``, optionally with ``:index``) from the start; False if the
        file has no such stream."""
        kind, _, index = stream.partition(":")
        if kind not in ("video", "audio"):
            raise ValueError(f"VideoReader: stream should be 'video' or 'audio' (optionally ':index'), got {stream!r}")
        streams = getattr(self.container.streams, kind)
        index = int(index or 0)
        if index >= len(streams):
            return False
        self._stream = streams[index]
        self._stream.thread_count = self.num_threads or 0
        self.container.seek(0)
        self._frames = self.container.decode(self._stream)
        return True

    def __iter__(self):
        return self

    def _item(self, frame) -> dict:
        if self._stream.type == "video":
            data = ember.from_numpy(np.ascontiguousarray(frame.to_ndarray(format="rgb24").transpose(2, 0, 1)))
        else:
            data = ember.from_numpy(np.ascontiguousarray(_planar_audio(frame).T))
        return {"data": data, "pts": float(frame.pts * frame.time_base) if frame.pts is not None else 0.0}

    def __next__(self) -> dict:
        return self._item(next(self._frames))

    def seek(self, time_s: float, keyframes_only: bool = False) -> "VideoReader":
        """Move to ``time_s`` seconds: the next frame is the first at or after it (the key frame before it with
        ``keyframes_only``)."""
        stream = self._stream
        self.container.seek(int(time_s / stream.time_base), stream=stream, backward=True, any_frame=False)
        frames = self.container.decode(stream)
        if not keyframes_only:
            frames = _after(frames, time_s)
        self._frames = frames
        return self

    def get_metadata(self) -> dict:
        """``{"video": {"duration": [...], "fps": [...]}, "audio": {"duration": [...], "framerate": [...]}}``."""
        out: dict = {}
        for s in self.container.streams:
            if s.type not in ("video", "audio"):
                continue
            entry = out.setdefault(s.type, {"duration": [], "fps" if s.type == "video" else "framerate": []})
            duration = s.duration * s.time_base if s.duration is not None else (
                self.container.duration / 1e6 if self.container.duration is not None else 0.0)
            entry["duration"].append(float(duration))
            rate = s.average_rate if s.type == "video" else s.rate
            entry["fps" if s.type == "video" else "framerate"].append(float(rate) if rate is not None else 0.0)
        return out

    def close(self) -> None:
        """Close the file."""
        self.container.close()

    def __del__(self):
        container = getattr(self, "container", None)
        if container is not None:
            container.close()


def _after(frames, time_s: float):
    for frame in frames:
        if frame.pts is None or frame.pts * frame.time_base >= time_s:
            yield frame
            yield from frames
            return


def _read_frames(filename, first: int, last: int, output_format: str = "THWC") -> ember.Tensor:
    """Frames ``first`` to ``last`` (inclusive, counted from 0 in decoding order) of a video file, uint8."""
    frames = []
    with _open_input(filename, "VideoClips") as container:
        for i, frame in enumerate(container.decode(video=0)):
            if i > last:
                break
            if i >= first:
                frames.append(frame.to_ndarray(format="rgb24"))
    video = np.stack(frames) if frames else np.zeros((0, 1, 1, 3), np.uint8)
    if output_format == "TCHW":
        video = video.transpose(0, 3, 1, 2)
    return ember.from_numpy(np.ascontiguousarray(video))


def _audio_span(container, start_sec: float, end_sec: float | None) -> ember.Tensor:
    """The first audio stream's samples from ``start_sec`` to ``end_sec`` (None: the end) as ``(channels,
    samples)`` float32, cut at the sample; ``(1, 0)`` when none fall there."""
    stream = container.streams.audio[0]
    chunks, first = [], None
    for frame in container.decode(stream):
        t0 = float(frame.pts * frame.time_base) if frame.pts is not None else 0.0
        if end_sec is not None and t0 >= end_sec:
            break
        data = _planar_audio(frame)
        if t0 + data.shape[1] / stream.rate <= start_sec:
            continue
        first = t0 if first is None else first
        chunks.append(data)
    if not chunks:
        return ember.zeros((1, 0))
    audio = np.concatenate(chunks, axis=1)
    lo = max(int(round((start_sec - first) * stream.rate)), 0)
    hi = audio.shape[1] if end_sec is None or end_sec == float("inf") else int(round((end_sec - first) * stream.rate))
    return ember.from_numpy(np.ascontiguousarray(audio[:, lo:hi]))


def _read_audio(filename, start_sec: float, end_sec: float) -> ember.Tensor:
    """A video file's sound from ``start_sec`` to ``end_sec`` (see :func:`_audio_span`); ``(1, 0)`` without
    sound."""
    with _open_input(filename, "VideoClips") as container:
        return _audio_span(container, start_sec, end_sec) if container.streams.audio else ember.zeros((1, 0))


def _frame_count_and_fps(filename):
    """How many frames a video file decodes to, and its average frame rate (None without a video stream)."""
    with _open_input(filename, "VideoClips") as container:
        if not container.streams.video:
            return 0, None
        stream = container.streams.video[0]
        count = sum(1 for _ in container.decode(stream))
        return count, float(stream.average_rate) if stream.average_rate is not None else None
