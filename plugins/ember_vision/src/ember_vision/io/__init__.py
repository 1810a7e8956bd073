"""torchvision.io on Pillow and PyAV: images (``io.image``) as uint8 tensors, and video (``io.video``) through PyAV
(the ``video`` extra).

>>> from ember_vision.io import ImageReadMode
>>> ImageReadMode["RGB"].value
3
"""
from . import image, video
from .image import (ImageReadMode, decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg, decode_png,
                    decode_webp, encode_jpeg, encode_png, read_file, read_image, write_file, write_jpeg, write_png)
from .video import VideoReader, read_video, read_video_timestamps, write_video

__all__ = image.__all__ + video.__all__
