"""16-bit PNGs decode at their full depth (torchvision gives uint16; ember, without uint16 tensors, int32 of the
same values), grey and colour, with or without alpha, and converted by ImageReadMode."""
import io

import numpy as np
import pytest

pytest.importorskip("ember_vision")
png = pytest.importorskip("png")

import ember  # noqa: E402
from ember_vision import io as vio  # noqa: E402

RNG = np.random.default_rng(0)


def png16(pixels: np.ndarray, greyscale: bool, alpha: bool) -> ember.Tensor:
    """``(H, W, planes)`` 16-bit values written by pypng, as a tensor of the file's bytes."""
    h, w, planes = pixels.shape
    buf = io.BytesIO()
    png.Writer(w, h, greyscale=greyscale, alpha=alpha, bitdepth=16).write(buf, pixels.reshape(h, w * planes).tolist())
    return ember.from_numpy(np.frombuffer(buf.getvalue(), np.uint8).copy())


@pytest.mark.parametrize("greyscale,alpha", [(False, False), (False, True), (True, False), (True, True)])
def test_unchanged_keeps_every_bit(greyscale, alpha):
    planes = (1 if greyscale else 3) + alpha
    pixels = RNG.integers(0, 65536, (3, 4, planes))
    out = vio.decode_png(png16(pixels, greyscale, alpha))
    assert out.dtype == ember.int32 and tuple(out.shape) == (planes, 3, 4)
    assert np.array_equal(out.numpy(), pixels.transpose(2, 0, 1))
    assert np.array_equal(vio.decode_image(png16(pixels, greyscale, alpha)).numpy(), out.numpy())


def test_modes_convert_at_16_bits(tmp_path):
    rgba = RNG.integers(0, 65536, (2, 3, 4))
    data = png16(rgba, False, True)
    assert np.array_equal(vio.decode_png(data, vio.ImageReadMode.RGB).numpy(), rgba[..., :3].transpose(2, 0, 1))
    grey = vio.decode_png(data, "GRAY").numpy()[0]
    weights = np.array([6968, 23434, 2366]) / 32768
    assert np.abs(grey - rgba[..., :3] @ weights).max() <= 1
    grey_pixels = RNG.integers(0, 65536, (2, 3, 1))
    rgb_alpha = vio.decode_png(png16(grey_pixels, True, False), "RGB_ALPHA").numpy()
    assert np.array_equal(rgb_alpha[:3], np.repeat(grey_pixels.transpose(2, 0, 1), 3, 0))
    assert (rgb_alpha[3] == 65535).all()
    path = tmp_path / "deep.png"
    vio.write_file(str(path), data)
    assert np.array_equal(vio.read_image(str(path)).numpy(), rgba.transpose(2, 0, 1))


def test_eight_bit_pngs_and_errors_unchanged():
    eight = vio.encode_png(ember.from_numpy(RNG.integers(0, 256, (3, 2, 2)).astype(np.uint8)))
    assert vio.decode_png(eight).dtype == ember.uint8
    truncated = png16(RNG.integers(0, 65536, (2, 3, 3)), False, False)[:60]
    with pytest.raises(RuntimeError, match="decode_png: could not decode the image"):
        vio.decode_png(truncated)
