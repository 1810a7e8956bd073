"""ember-vision io (Pillow-backed image files as uint8 tensors) and the drawing utils.

torchvision's own decoders are C++ ops that do not load in the reference process, so io is checked against
Pillow's reading of the same bytes; the drawing utils are pure Python in torchvision and are compared with
torchvision 0.28 in the reference process on the same inputs.
"""
import io
import os
import sys

import numpy as np
import pytest

import ember

pytest.importorskip("ember_vision")
Image = pytest.importorskip("PIL.Image")
from ember_vision import io as vio  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import vision_reference  # noqa: E402

RNG = np.random.default_rng(0)


def _png_bytes(array, mode=None):
    buf = io.BytesIO()
    Image.fromarray(array, mode).save(buf, format="PNG")
    return buf.getvalue()


def _tensor(data: bytes):
    return ember.from_numpy(np.frombuffer(data, np.uint8).copy())


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_round_trip(channels, tmp_path):
    chw = RNG.integers(0, 256, (channels, 7, 5), dtype=np.uint8)
    encoded = vio.encode_png(ember.from_numpy(chw), compression_level=9)
    assert encoded.dtype == ember.uint8 and encoded.dim() == 1
    assert np.array_equal(vio.decode_png(encoded).numpy(), chw)
    pil = np.asarray(Image.open(io.BytesIO(encoded.numpy().tobytes())))
    assert np.array_equal(pil.reshape(7, 5, channels).transpose(2, 0, 1), chw)
    vio.write_png(ember.from_numpy(chw), tmp_path / "a.png")
    assert np.array_equal(vio.read_image(str(tmp_path / "a.png")).numpy(), chw)
    assert np.array_equal(vio.read_file(tmp_path / "a.png").numpy(), np.fromfile(tmp_path / "a.png", np.uint8))


def test_modes_match_pillow(tmp_path):
    rgba = RNG.integers(0, 256, (6, 9, 4), dtype=np.uint8)
    data = _tensor(_png_bytes(rgba, "RGBA"))
    pil = Image.fromarray(rgba, "RGBA")
    for mode, pil_mode in ((vio.ImageReadMode.GRAY, "L"), ("gray_alpha", "LA"), ("RGB", "RGB"),
                           (vio.ImageReadMode.RGBA, "RGBA")):
        want = np.asarray(pil.convert(pil_mode)).reshape(6, 9, -1).transpose(2, 0, 1)
        assert np.array_equal(vio.decode_image(data, mode=mode).numpy(), want), mode
    palette = Image.fromarray(rgba[:, :, :3]).convert("P")
    buf = io.BytesIO()
    palette.save(buf, format="PNG")
    out = vio.decode_image(_tensor(buf.getvalue()))
    assert out.shape == (3, 6, 9) and np.array_equal(out.numpy().transpose(1, 2, 0), np.asarray(palette.convert("RGB")))
    grey16 = (RNG.integers(0, 65536, (4, 3))).astype(np.uint16)
    path = tmp_path / "g16.png"
    Image.fromarray(grey16).save(path)
    out = vio.read_image(path)
    assert out.dtype == ember.int32 and np.array_equal(out.numpy()[0], grey16)


def test_jpeg(device, tmp_path):
    smooth = np.stack(np.meshgrid(np.arange(32) * 8, np.arange(24) * 10), 0).astype(np.uint8)
    chw = np.concatenate([smooth, smooth[:1] // 2], 0)  # 3 channels, smooth so JPEG keeps it close
    encoded = vio.encode_jpeg(ember.from_numpy(chw).to(device), quality=95)
    raw = encoded.numpy().tobytes()
    assert raw[:2] == b"\xff\xd8"
    decoded = vio.decode_jpeg(encoded, device=device)
    assert decoded.device == ember.device(device) and decoded.shape == (3, 24, 32)
    want = np.asarray(Image.open(io.BytesIO(raw))).transpose(2, 0, 1)
    assert np.array_equal(decoded.cpu().numpy(), want)
    assert np.abs(want.astype(int) - chw).mean() < 3
    grey = vio.decode_jpeg(encoded, mode="GRAY")
    assert np.array_equal(grey.numpy()[0], np.asarray(Image.open(io.BytesIO(raw)).convert("L")))
    batch = vio.decode_jpeg(vio.encode_jpeg([ember.from_numpy(chw), ember.from_numpy(chw[:1])]))
    assert [tuple(t.shape) for t in batch] == [(3, 24, 32), (1, 24, 32)]
    vio.write_jpeg(ember.from_numpy(chw), str(tmp_path / "x.jpg"), quality=50)
    assert vio.decode_image(str(tmp_path / "x.jpg")).shape == (3, 24, 32)
    vio.write_file(tmp_path / "copy.jpg", encoded)
    assert (tmp_path / "copy.jpg").read_bytes() == raw


def test_io_errors():
    png = _tensor(_png_bytes(np.zeros((2, 2, 3), np.uint8)))
    before = png.numpy().copy()
    with pytest.raises(RuntimeError, match="decode_jpeg: not a JPEG"):
        vio.decode_jpeg(png)
    assert np.array_equal(png.numpy(), before)
    with pytest.raises(RuntimeError, match="decode_image: could not decode"):
        vio.decode_image(_tensor(b"not an image at all"))
    with pytest.raises(RuntimeError, match="decode_png: expected a 1-D uint8 tensor"):
        vio.decode_png(ember.zeros(4))
    with pytest.raises(ValueError, match="mode must be one of"):
        vio.decode_image(png, mode="CMYK")
    rgba = ember.zeros((4, 2, 2), dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="encode_jpeg: the number of channels must be 1 or 3, got 4"):
        vio.encode_jpeg(rgba)
    with pytest.raises(ValueError, match="between 1 and 100"):
        vio.encode_jpeg(rgba[:3], quality=0)
    with pytest.raises(RuntimeError, match=r"encode_png: expected a 3-D \(C, H, W\) uint8 tensor"):
        vio.encode_png(ember.zeros((3, 2, 2)))
    with pytest.raises(ValueError, match="at least one element"):
        vio.decode_jpeg([])


def test_read_video_needs_pyav(tmp_path):
    try:
        import av  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="PyAV"):
            vio.read_video(str(tmp_path / "clip.mp4"))
    else:
        with pytest.raises(RuntimeError, match="clip.mp4"):
            vio.read_video(str(tmp_path / "clip.mp4"))
    with pytest.raises(ValueError, match="output_format"):
        vio.read_video("clip.mp4", output_format="HWC")
