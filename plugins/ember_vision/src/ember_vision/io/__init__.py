"""torchvision.io on Pillow and PyAV: images (``io.image``) as uint8 tensors, and video through PyAV.

>>> from ember_vision.io import ImageReadMode
>>> ImageReadMode["RGB"].value
3
"""
from __future__ import annotations

import os

import numpy as np

import ember

from . import image
from .image import (ImageReadMode, decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg, decode_png,
                    decode_webp, encode_jpeg, encode_png, read_file, read_image, write_file, write_jpeg, write_png)

__all__ = image.__all__ + ["read_video"]


def read_video(filename, start_pts=0, end_pts=None, pts_unit: str = "pts", output_format: str = "THWC"):
    """Decode a video file's frames through PyAV: ``(frames uint8 (T, H, W, C) or (T, C, H, W), audio, info)``.

    Frames with ``start_pts <= pts <= end_pts`` (in ``pts_unit`` "pts" or "sec") are kept. Audio is not
    decoded (an empty ``(1, 0)`` float tensor); ``info`` holds ``video_fps``.
    """
    output_format = output_format.upper()
    if output_format not in ("THWC", "TCHW"):
        raise ValueError(f"output_format should be either 'THWC' or 'TCHW', got {output_format}.")
    if pts_unit not in ("pts", "sec"):
        raise ValueError(f"read_video: pts_unit must be 'pts' or 'sec', got {pts_unit!r}")
    try:
        import av
    except ImportError:
        raise ImportError("read_video needs PyAV to decode video: pip install av") from None
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise RuntimeError(f"File not found: {filename}")
    frames, info = [], {}
    with av.open(filename) as container:
        stream = container.streams.video[0]
        if stream.average_rate is not None:
            info["video_fps"] = float(stream.average_rate)
        for frame in container.decode(stream):
            t = frame.time if pts_unit == "sec" else frame.pts
            if t is not None and t < start_pts:
                continue
            if end_pts is not None and t is not None and t > end_pts:
                break
            frames.append(frame.to_ndarray(format="rgb24"))
    video = np.stack(frames) if frames else np.zeros((0, 1, 1, 3), np.uint8)
    if output_format == "TCHW":
        video = video.transpose(0, 3, 1, 2)
    return ember.from_numpy(np.ascontiguousarray(video)), ember.zeros((1, 0)), info
